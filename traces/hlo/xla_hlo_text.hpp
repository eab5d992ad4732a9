#pragma once
// Pieces of XLA's HLO text as TPU profilers put it into trace events: op names such as
// "all-reduce-start.1", shapes such as "bf16[1024,1024]{1,0}" or tuples "(f32[8]{0}, s32[])",
// and the replica_groups / source_target_pairs attributes of an instruction's "long_name".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/program.hpp"

namespace tpusim::trace {

/// An XLA op name split into its parts.
struct XlaOpName {
  std::string base;  ///< "all-reduce", "fusion", "convolution" (no '%', no ".N" suffixes)
  std::optional<CollectiveKind> collective;
  bool is_start = false;  ///< "...-start": an asynchronous collective begins
  bool is_done = false;   ///< "...-done": it ends
  std::string suffix;     ///< ".1" in "all-reduce-start.1" (empty if none)
};
XlaOpName parse_xla_op_name(const std::string& name);

struct ArrayShape {
  std::string element_type;  ///< "bf16", "f32", "s32", "pred", ...
  std::vector<std::int64_t> dims;
  double bytes() const;
};
/// Bytes per element of an XLA element type; 0 for "token"; nullopt if unknown.
std::optional<int> xla_element_bytes(const std::string& type);
/// Parses one shape or a tuple of shapes (nested tuples are flattened). Layouts "{1,0}" are
/// skipped. nullopt if the text is not a shape.
std::optional<std::vector<ArrayShape>> parse_hlo_shapes(const std::string& text);
/// tpusim's dtype for an XLA element type: bf16/f16 -> bf16, f32 -> f32, s32/u32 -> i32.
std::optional<DType> dtype_for_xla(const std::string& type);

/// The result shape of an instruction in HLO text: "%x.1 = bf16[8,16]{1,0} add(...)" gives
/// "bf16[8,16]{1,0}". Empty if the text has no " = ".
std::string hlo_result_shape_text(const std::string& long_name);
/// The value of `attr={...}` (the braces included) in HLO text; nullopt if absent.
std::optional<std::string> hlo_attribute(const std::string& long_name, const std::string& attr);
/// Parses "{{0,1},{2,3}}" (also "{}" = no groups listed). nullopt if malformed or a device id
/// is out of [0, 2^24).
std::optional<std::vector<std::vector<int>>> parse_int_groups(const std::string& text);

}  // namespace tpusim::trace

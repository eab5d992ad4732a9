#pragma once
// Building and reading Chakra node attributes (AttributeProto, a name and a one-of value).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/chakra/chakra_et.pb.h"

namespace tpusim::trace::chakra {

using Attributes = google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>;

void add_bool(Attributes& attrs, const std::string& name, bool v);
void add_int(Attributes& attrs, const std::string& name, std::int64_t v);
void add_double(Attributes& attrs, const std::string& name, double v);
void add_string(Attributes& attrs, const std::string& name, const std::string& v);
void add_int_list(Attributes& attrs, const std::string& name, const std::vector<std::int64_t>& v);
void add_bool_list(Attributes& attrs, const std::string& name, const std::vector<bool>& v);
void add_string_list(Attributes& attrs, const std::string& name, const std::vector<std::string>& v);

/// The attribute called `name`, or null.
const ChakraProtoMsg::AttributeProto* find(const Attributes& attrs, const std::string& name);

/// Typed values; ConfigError at `where` if the attribute holds another kind of value. Integers
/// accept any of the integer fields (int32, int64, uint32, uint64); a double also a float or an
/// integer.
std::optional<std::int64_t> get_int(const Attributes& attrs, const std::string& name,
                                    const std::string& where);
std::optional<double> get_double(const Attributes& attrs, const std::string& name,
                                 const std::string& where);
std::optional<std::string> get_string(const Attributes& attrs, const std::string& name,
                                      const std::string& where);
std::optional<bool> get_bool(const Attributes& attrs, const std::string& name,
                             const std::string& where);
std::optional<std::vector<std::int64_t>> get_int_list(const Attributes& attrs,
                                                      const std::string& name,
                                                      const std::string& where);
std::optional<std::vector<bool>> get_bool_list(const Attributes& attrs, const std::string& name,
                                               const std::string& where);

}  // namespace tpusim::trace::chakra

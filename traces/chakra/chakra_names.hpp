#pragma once
// The names tpusim gives Chakra attributes and values, shared by the exporter and importer.
#include <optional>

#include "models/program.hpp"

namespace tpusim::trace::chakra {

/// The CollectiveCommType of a tpusim collective (collective-permute has none: it is exported
/// as a send and a receive node).
int comm_type_of(CollectiveKind kind);
/// The tpusim kind of a CollectiveCommType value; nullopt for types tpusim does not model.
std::optional<CollectiveKind> kind_of_comm_type(long long comm_type);

// Attributes of the Chakra schema and its feeders.
inline constexpr const char* kIsCpuOp = "is_cpu_op";
inline constexpr const char* kNumOps = "num_ops";
inline constexpr const char* kTensorSize = "tensor_size";
inline constexpr const char* kCommType = "comm_type";
inline constexpr const char* kCommSize = "comm_size";
inline constexpr const char* kCommSrc = "comm_src";
inline constexpr const char* kCommDst = "comm_dst";
inline constexpr const char* kCommTag = "comm_tag";
inline constexpr const char* kInvolvedDim = "involved_dim";
inline constexpr const char* kPgName = "pg_name";

// tpusim's own attributes: the exact inputs of its cost model, so import is lossless.
inline constexpr const char* kKind = "tpusim_kind";
inline constexpr const char* kPhase = "tpusim_phase";
inline constexpr const char* kDtype = "tpusim_dtype";
inline constexpr const char* kFlops = "tpusim_flops";
inline constexpr const char* kBytesRead = "tpusim_bytes_read";
inline constexpr const char* kBytesWritten = "tpusim_bytes_written";
inline constexpr const char* kVpuElements = "tpusim_vpu_elements";
inline constexpr const char* kVpuOpsPerElement = "tpusim_vpu_ops_per_element";
inline constexpr const char* kMatmul = "tpusim_matmul";  ///< [batch, m, k, n]
inline constexpr const char* kMeasuredNs = "tpusim_measured_ns";
inline constexpr const char* kCommBytes = "tpusim_comm_bytes";
inline constexpr const char* kCommDtype = "tpusim_comm_dtype";
inline constexpr const char* kShift = "tpusim_shift";
inline constexpr const char* kWrap = "tpusim_wrap";
// GlobalMetadata attributes.
inline constexpr const char* kMesh = "tpusim_mesh";  ///< "data=4,model=2"
inline constexpr const char* kModel = "tpusim_model";
inline constexpr const char* kExamplesPerStep = "tpusim_examples_per_step";
inline constexpr const char* kRecordedOn = "tpusim_recorded_on";  ///< JSON text

}  // namespace tpusim::trace::chakra

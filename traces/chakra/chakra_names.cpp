#include "traces/chakra/chakra_names.hpp"

#include "traces/chakra/chakra_et.pb.h"

namespace tpusim::trace::chakra {

int comm_type_of(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce:
      return ChakraProtoMsg::ALL_REDUCE;
    case CollectiveKind::ReduceScatter:
      return ChakraProtoMsg::REDUCE_SCATTER;
    case CollectiveKind::AllGather:
      return ChakraProtoMsg::ALL_GATHER;
    case CollectiveKind::AllToAll:
      return ChakraProtoMsg::ALL_TO_ALL;
    case CollectiveKind::CollectivePermute:
      break;
  }
  return -1;
}

std::optional<CollectiveKind> kind_of_comm_type(long long comm_type) {
  switch (comm_type) {
    case ChakraProtoMsg::ALL_REDUCE:
      return CollectiveKind::AllReduce;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK:
      return CollectiveKind::ReduceScatter;
    case ChakraProtoMsg::ALL_GATHER:
      return CollectiveKind::AllGather;
    case ChakraProtoMsg::ALL_TO_ALL:
      return CollectiveKind::AllToAll;
    default:
      return std::nullopt;
  }
}

}  // namespace tpusim::trace::chakra

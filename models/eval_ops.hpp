#pragma once
// Constructors of the on-device post-processing ops of evaluation programs (ModelBuilder::
// build_eval), so every model's metric ops follow one set of cost rules.
#include <cstdint>
#include <string>

#include "models/op_graph.hpp"

namespace tpusim {

/// The k best of `classes` scores in each of `rows` rows (k = 1: argmax), then the compare with
/// the label and the count of hits (an accuracy metric). Costed as k compare-and-select passes of
/// the vector unit over the scores plus the compare (a selection for small k, no full sort).
/// `split_classes`: the scores are divided over the model axis (vocabulary-split logits); each
/// core then holds its own k best per row (f32 value and i32 index), combined by an all-reduce.
OpNode top_k_select(std::string name, std::int64_t rows, std::int64_t classes, std::int64_t k,
                    bool split_classes);

}  // namespace tpusim

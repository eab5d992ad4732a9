#pragma once
// Rows of cells as fixed-width text columns, for tables printed to a terminal.
#include <string>
#include <vector>

namespace tpusim::sweep {

/// One line per row, columns padded to their widest cell and separated by two spaces. Columns
/// whose index is in `right_aligned` (numbers) are padded on the left.
std::string text_table(const std::vector<std::vector<std::string>>& rows,
                       const std::vector<std::size_t>& right_aligned = {});

}  // namespace tpusim::sweep

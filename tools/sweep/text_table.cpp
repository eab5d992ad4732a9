#include "tools/sweep/text_table.hpp"

#include <algorithm>

namespace tpusim::sweep {

std::string text_table(const std::vector<std::vector<std::string>>& rows,
                       const std::vector<std::size_t>& right_aligned) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    if (r.size() > width.size()) width.resize(r.size(), 0);
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string pad(width[i] - r[i].size(), ' ');
      const bool right =
          std::find(right_aligned.begin(), right_aligned.end(), i) != right_aligned.end();
      const bool last = i + 1 == r.size();
      out += right ? pad + r[i] : (last ? r[i] : r[i] + pad);
      if (!last) out += "  ";
    }
    out += "\n";
  }
  return out;
}

}  // namespace tpusim::sweep

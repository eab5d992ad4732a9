#pragma once
// A CSV table of strings (RFC 4180 quoting). Lines that start with '#' before the header are
// comments (goldens use them to say what they are).
#include <optional>
#include <string>
#include <vector>

namespace tpusim::sweep {

struct CsvTable {
  std::vector<std::string> comments;  ///< without the leading "# "
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  /// Column index, or -1.
  int column(const std::string& name) const;
  /// The cell of `row` in column `name` ("" if the column is absent).
  const std::string& cell(std::size_t row, const std::string& name) const;
  /// The cell as a number, if it is one.
  std::optional<double> number(std::size_t row, const std::string& name) const;
};

/// Throws ConfigError(path...) if the file cannot be read or a row has the wrong cell count.
CsvTable read_csv(const std::string& path);
std::string to_csv_text(const CsvTable& table);
/// Writes with write_output_file (core/output_file.hpp): a regular file is replaced atomically.
void write_csv(const std::string& path, const CsvTable& table);

/// A number as text with 9 significant digits (enough for regression comparisons).
std::string number_text(double v);

}  // namespace tpusim::sweep

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
  std::string path;                ///< the file read_csv read ("" for a table built in memory)
  std::vector<std::size_t> lines;  ///< read_csv: the file line of each row

  /// "PATH:LINE" of `row` for messages (or "results" for a table built in memory).
  std::string where(std::size_t row) const;

  /// Column index, or -1.
  int column(const std::string& name) const;
  /// The cell of `row` in column `name` ("" if the column is absent).
  const std::string& cell(std::size_t row, const std::string& name) const;
  /// The cell as a number, if it is one (a table read_csv read holds only finite ones).
  std::optional<double> number(std::size_t row, const std::string& name) const;
};

/// True for the columns of a results table that hold text even where it reads as a number
/// (id, status, series, model, layout, error).
bool is_text_column(const std::string& name);

/// Throws ConfigError(path...) if the file cannot be read, a row has the wrong cell count, or a
/// cell outside the text columns reads as a number that is not finite (inf, -inf, nan, 1e999):
/// every reader of results tables and goldens (plot, diff, sweep --check, the Python module)
/// goes through here, so none meets one.
CsvTable read_csv(const std::string& path);
std::string to_csv_text(const CsvTable& table);
/// Writes with write_output_file (core/output_file.hpp): a regular file is replaced atomically.
void write_csv(const std::string& path, const CsvTable& table);

/// Appends `row` as one line to the CSV file at `path` with a single write (O_APPEND): a reader
/// or a killed writer never leaves half a row. Throws ConfigError(path, "cannot write: ...").
void append_csv_row(const std::string& path, const std::vector<std::string>& row);

/// A number as text with 9 significant digits (enough for regression comparisons).
std::string number_text(double v);

}  // namespace tpusim::sweep

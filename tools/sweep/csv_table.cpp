#include "tools/sweep/csv_table.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/output_file.hpp"

namespace tpusim::sweep {
namespace {

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

/// Splits one record starting at `pos`; advances `pos` past its line end.
std::vector<std::string> parse_record(const std::string& text, std::size_t& pos) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  while (pos < text.size()) {
    char c = text[pos++];
    if (quoted) {
      if (c == '"' && pos < text.size() && text[pos] == '"') {
        cells.back() += '"';
        ++pos;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

}  // namespace

int CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

const std::string& CsvTable::cell(std::size_t row, const std::string& name) const {
  static const std::string empty;
  int c = column(name);
  return c < 0 ? empty : rows[row][static_cast<std::size_t>(c)];
}

std::string CsvTable::where(std::size_t row) const {
  if (path.empty()) return "results row " + std::to_string(row + 1);
  return path + ":" + std::to_string(row < lines.size() ? lines[row] : row + 2);
}

namespace {
/// The cell as a number if all of it is one (finite or not).
std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

std::optional<double> CsvTable::number(std::size_t row, const std::string& name) const {
  return parse_number(cell(row, name));
}

bool is_text_column(const std::string& name) {
  for (const char* c : {"id", "status", "series", "model", "layout", "error"})
    if (name == c) return true;
  return false;
}

CsvTable read_csv(const std::string& path) {
  // Bounded like every input file; a folder is named as one (it read as an empty file before).
  const std::string text = read_file_bounded(path, kMaxTraceFileBytes, "kMaxTraceFileBytes");
  CsvTable t;
  std::size_t pos = 0, line = 0;
  while (pos < text.size()) {
    ++line;
    if (t.header.empty() && text[pos] == '#') {
      std::size_t end = text.find('\n', pos);
      std::string c =
          text.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
      if (!c.empty() && c[0] == ' ') c.erase(0, 1);
      t.comments.push_back(c);
      pos = end == std::string::npos ? text.size() : end + 1;
      continue;
    }
    auto cells = parse_record(text, pos);
    if (cells.size() == 1 && cells[0].empty()) continue;  // blank line
    if (t.header.empty()) {
      t.header = std::move(cells);
      continue;
    }
    if (cells.size() != t.header.size())
      throw ConfigError(path + ":" + std::to_string(line),
                        "row has " + std::to_string(cells.size()) + " cells, the header " +
                            std::to_string(t.header.size()));
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (is_text_column(t.header[c])) continue;
      const auto v = parse_number(cells[c]);
      if (v && !std::isfinite(*v))
        throw ConfigError(path + ":" + std::to_string(line),
                          "column " + t.header[c] + ": '" + cells[c] +
                              "' is not a finite number; allowed: finite numbers or an empty cell");
    }
    t.rows.push_back(std::move(cells));
    t.lines.push_back(line);
  }
  if (t.header.empty()) throw ConfigError(path, "no header line: not a results CSV");
  t.path = path;
  return t;
}

std::string to_csv_text(const CsvTable& table) {
  std::string out;
  for (const auto& c : table.comments) out += "# " + c + "\n";
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + quote(cells[i]);
    out += "\n";
  };
  line(table.header);
  for (const auto& r : table.rows) line(r);
  return out;
}

void write_csv(const std::string& path, const CsvTable& table) {
  write_output_file(path, to_csv_text(table));
}

void append_csv_row(const std::string& path, const std::vector<std::string>& row) {
  std::string line;
  for (std::size_t i = 0; i < row.size(); ++i) line += (i ? "," : "") + quote(row[i]);
  line += "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw ConfigError(path, std::string("cannot write: ") + std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = n < 0 ? errno : 0;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    throw ConfigError(path, std::string("cannot write: ") +
                                (err ? std::strerror(err) : "a short write (disk full?)"));
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace tpusim::sweep

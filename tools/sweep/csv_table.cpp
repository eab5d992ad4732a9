#include "tools/sweep/csv_table.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/errors.hpp"
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

std::optional<double> CsvTable::number(std::size_t row, const std::string& name) const {
  const std::string& s = cell(row, name);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
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
    t.rows.push_back(std::move(cells));
  }
  if (t.header.empty()) throw ConfigError(path, "no header line: not a results CSV");
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

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace tpusim::sweep

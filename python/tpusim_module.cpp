// tpusim._tpusim: the parts of tpusim that Python calls in its own process. Nothing here
// simulates (SystemC elaborates one design per process; simulations run as `tpusim` child
// processes, see python/tpusim/__init__.py): reading results tables and traces. Values cross as
// JSON text, which the Python side decodes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "tools/sweep/csv_table.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/format/trace_summary.hpp"

namespace py = pybind11;

namespace {

// A CSV cell as JSON: empty -> null, a whole number -> integer, another number -> double,
// anything else -> the string.
nlohmann::json cell_value(const std::string& text) {
  if (text.empty()) return nullptr;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return text;
  if (v == static_cast<double>(static_cast<long long>(v)) &&
      text.find_first_of(".eE") == std::string::npos)
    return static_cast<long long>(v);
  return v;
}

std::string results_json(const std::string& path) {
  const tpusim::sweep::CsvTable table = tpusim::sweep::read_csv(path);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : table.rows) {
    nlohmann::ordered_json r = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < table.header.size() && i < row.size(); ++i)
      r[table.header[i]] = tpusim::sweep::is_text_column(table.header[i]) ? nlohmann::json(row[i])
                                                                          : cell_value(row[i]);
    rows.push_back(std::move(r));
  }
  return rows.dump();
}

std::string trace_info_json(const std::string& path) {
  const tpusim::trace::TraceFile t = tpusim::trace::read_trace_file(path);
  nlohmann::ordered_json s = tpusim::trace::summarize(t.program);
  s["recorded_on"] = nlohmann::ordered_json::parse(t.recorded_on.dump());
  return s.dump();
}

}  // namespace

PYBIND11_MODULE(_tpusim, m) {
  m.doc() = "tpusim's in-process helpers (no simulation): results tables and traces";
  // tpusim's ConfigError (bad input: the problems, one line each) as tpusim.ConfigError's base.
  static py::exception<tpusim::ConfigError> config_error(m, "NativeConfigError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tpusim::ConfigError& e) {
      config_error(e.what());
    }
  });
  m.def(
      "version", [] { return std::string(TPUSIM_VERSION); }, "the tpusim version");
  m.def("results_json", &results_json, py::arg("path"),
        "a sweep's results.csv (or a golden) as a JSON array of row objects");
  m.def("trace_info_json", &trace_info_json, py::arg("path"),
        "what `tpusim trace info --json` prints for a trace file");
}

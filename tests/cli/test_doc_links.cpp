// The repository carries its own docs: every relative link in its Markdown files resolves to a
// file inside the repository (and to a heading, when it names one), and nothing cites a file
// outside it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/run_tpusim.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = fs::canonical(TPUSIM_SOURCE_DIR);

/// README.md and every .md file under the source tree, outside build and hidden directories.
std::vector<fs::path> markdown_files() {
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name.rfind('.', 0) == 0)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".md") out.push_back(it->path());
  }
  return out;
}

/// Calls `visit(line, in_code_block)` for every line; fence lines count as inside.
template <typename Visit>
void for_each_line(const std::string& text, Visit visit) {
  bool fenced = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const bool fence =
        line.find_first_not_of(' ') == line.find("```") && line.find("```") != std::string::npos;
    if (fence) fenced = !fenced;
    visit(line, fenced || fence);
  }
}

/// The text outside fenced code blocks and inline code spans (links there are examples).
std::string prose(const std::string& text) {
  std::string out;
  for_each_line(text, [&](const std::string& line, bool code_block) {
    bool code = false;
    for (char c : code_block ? std::string() : line) {
      if (c == '`')
        code = !code;
      else if (!code)
        out += c;
    }
    out += '\n';
  });
  return out;
}

/// GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens; repeats get
/// -1, -2, ...
std::set<std::string> anchors_of(const std::string& text) {
  std::set<std::string> out;
  for_each_line(text, [&](const std::string& line, bool code_block) {
    if (code_block || line.empty() || line[0] != '#') return;
    const std::size_t start = line.find_first_not_of('#');
    if (start == std::string::npos || line[start] != ' ') return;
    std::string slug;
    for (char c : line.substr(start + 1)) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalnum(u) || c == '-' || c == '_')
        slug += static_cast<char>(std::tolower(u));
      else if (c == ' ')
        slug += '-';
    }
    std::string unique = slug;
    for (int k = 1; out.count(unique); ++k) unique = slug + "-" + std::to_string(k);
    out.insert(unique);
  });
  return out;
}

}  // namespace

TEST_CASE("every relative link in the repository's Markdown resolves inside the repository") {
  const auto files = markdown_files();
  REQUIRE(std::find(files.begin(), files.end(), kRoot / "README.md") != files.end());
  const std::regex link(R"(\]\(([^)\s]+)(\s+"[^"]*")?\))");
  int checked = 0;
  for (const auto& file : files) {
    const std::string text = slurp(file.string());
    const std::string body = prose(text);
    for (auto m = std::sregex_iterator(body.begin(), body.end(), link); m != std::sregex_iterator();
         ++m) {
      const std::string target = (*m)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      INFO(fs::relative(file, kRoot).string() << ": (" << target << ")");
      const std::size_t hash = target.find('#');
      const std::string path = target.substr(0, hash);
      const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
      const fs::path resolved =
          path.empty() ? file : fs::weakly_canonical(file.parent_path() / path);
      CHECK(fs::exists(resolved));
      // Inside the repository: the resolved path starts with the root.
      const std::string r = resolved.string(), root = kRoot.string() + "/";
      CHECK(r.compare(0, root.size(), root) == 0);
      if (!anchor.empty() && fs::exists(resolved) && resolved.extension() == ".md")
        CHECK(anchors_of(slurp(resolved.string())).count(anchor) == 1);
      ++checked;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("no Markdown file cites the engineers' shared directory outside the repository") {
  for (const auto& file : markdown_files()) {
    INFO(fs::relative(file, kRoot).string());
    const std::string text = slurp(file.string());
    CHECK(text.find("shared/reference") == std::string::npos);
    CHECK(text.find("DESIGN.md](") == std::string::npos);
  }
}

TEST_CASE("the anchor rule matches GitHub's for the headings the docs link to") {
  const auto a = anchors_of(
      "# Title\n## Charts of a sweep: `tpusim plot`\n### Where the code "
      "leaves DESIGN.md, and why\n## Title\n```\n# not a heading\n```\n");
  CHECK(a == std::set<std::string>{"title", "charts-of-a-sweep-tpusim-plot",
                                   "where-the-code-leaves-designmd-and-why", "title-1"});
}

TEST_CASE("files the Markdown names in plain text or code spans exist (not only links)") {
  // A repository path in prose or inline code (`docs/results.md`, traces/FORMAT.md); fenced
  // blocks are examples. Placeholders (configs/NAME.json, configs/tpu_vN.json) are not files.
  const std::regex path_re(
      R"((?:^|[^A-Za-z0-9_/.\-])((?:docs|traces|tests|tools|configs|core|sim|models|topologies|python)/[A-Za-z0-9_./\-]*\.(?:md|json|cpp|hpp|sh|py|csv|proto)))");
  const std::regex placeholder(R"([A-Z]{2,}|\*|vN\b)");
  int checked = 0;
  for (const auto& file : markdown_files()) {
    for_each_line(slurp(file.string()), [&](const std::string& line, bool code_block) {
      if (code_block) return;
      for (auto m = std::sregex_iterator(line.begin(), line.end(), path_re);
           m != std::sregex_iterator(); ++m) {
        std::string path = (*m)[1];
        const std::string name = fs::path(path).filename().string();
        if (std::regex_search(name, placeholder) && name != "README.md" && name != "FORMAT.md")
          continue;
        INFO(fs::relative(file, kRoot).string() << ": " << path);
        CHECK((fs::exists(kRoot / path) || fs::exists(file.parent_path() / path)));
        ++checked;
      }
    });
  }
  CHECK(checked > 50);
}

// parse_json_text (declared in core/config.hpp): JSON text to a document, through a SAX handler
// of our own that builds the document and enforces, as it goes, the depth limit and unique keys.
// nlohmann's callback parser would do the depth check too, but costs about ten times the plain
// parse on large traces; this handler adds little to it.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/errors.hpp"

namespace tpusim {
namespace {

using json = nlohmann::json;

class Builder : public nlohmann::json_sax<json> {
 public:
  Builder(json& root, const std::string& text, const std::string& name, int max_depth)
      : root_(root), text_(text), name_(name), max_depth_(max_depth) {}

  bool null() override { return add(nullptr); }
  bool boolean(bool v) override { return add(v); }
  bool number_integer(number_integer_t v) override { return add(v); }
  bool number_unsigned(number_unsigned_t v) override { return add(v); }
  bool number_float(number_float_t v, const string_t&) override { return add(v); }
  bool string(string_t& v) override { return add(std::move(v)); }
  bool binary(binary_t& v) override { return add(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (stack_.back()->contains(k))
      throw ConfigError(name_ + ": " + where(k),
                        "duplicate key (JSON keys must be unique; which one would count?)");
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // Turn the byte offset into line:column.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string msg = e.what();
    // nlohmann's text is "[json.exception.parse_error.101] parse error at line 1, column 2:
    // syntax error while parsing value - ..."; the position is given as ours, the rest kept.
    for (const char* from : {"syntax error", "number overflow"})
      if (auto pos = msg.find(from); pos != std::string::npos) {
        msg = msg.substr(pos);
        break;
      }
    throw ConfigError(name_ + ":" + std::to_string(line) + ":" + std::to_string(col),
                      "malformed JSON (" + msg + ")");
  }

 private:
  template <class V>
  bool add(V&& v) {
    insert(json(std::forward<V>(v)));
    return true;
  }
  json* insert(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool open(json container) {
    if (static_cast<int>(stack_.size()) >= max_depth_)
      throw ConfigError(name_, "JSON nested deeper than " + std::to_string(max_depth_) + " levels");
    segments_.push_back(stack_.empty() ? ""
                        : stack_.back()->is_array()
                            ? "[" + std::to_string(stack_.back()->size()) + "]"
                            : (segments_.size() > 1 ? "." : "") + key_);
    stack_.push_back(insert(std::move(container)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    segments_.pop_back();
    return true;
  }
  std::string where(const std::string& key) const {
    std::string path;
    for (const auto& s : segments_) path += s;
    return path.empty() ? key : path + "." + key;
  }

  json& root_;
  const std::string& text_;
  const std::string& name_;
  int max_depth_;
  std::vector<json*> stack_;           ///< the open objects and arrays, outermost first
  std::vector<std::string> segments_;  ///< the JSON path of each, piece by piece
  std::string key_;                    ///< the key of the next value in the innermost object
};

}  // namespace

json parse_json_text(const std::string& text, const std::string& name, int max_depth) {
  json root;
  Builder builder(root, text, name, max_depth);
  json::sax_parse(text, &builder);
  return root;
}

}  // namespace tpusim

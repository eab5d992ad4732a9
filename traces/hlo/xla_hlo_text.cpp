#include "traces/hlo/xla_hlo_text.hpp"

#include <cctype>

namespace tpusim::trace {

XlaOpName parse_xla_op_name(const std::string& name) {
  XlaOpName out;
  std::string s = name;
  if (!s.empty() && s[0] == '%') s.erase(0, 1);
  // Strip trailing ".N" groups ("all-reduce.3", "fusion.12.1"); keep the first as the suffix.
  std::size_t cut = s.size();
  for (;;) {
    std::size_t dot = s.rfind('.', cut == 0 ? 0 : cut - 1);
    if (dot == std::string::npos || dot + 1 >= cut) break;
    bool digits = true;
    for (std::size_t i = dot + 1; i < cut; ++i)
      digits = digits && std::isdigit(static_cast<unsigned char>(s[i]));
    if (!digits) break;
    cut = dot;
  }
  out.suffix = s.substr(cut);
  s.resize(cut);
  auto ends_with = [&](const char* tail) {
    std::string t = tail;
    return s.size() > t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  if (ends_with("-start")) {
    out.is_start = true;
    s.resize(s.size() - 6);
  } else if (ends_with("-done")) {
    out.is_done = true;
    s.resize(s.size() - 5);
  }
  out.collective = parse_collective_kind(s);
  if (!out.collective) {  // "-start"/"-done" of something else (copy-start, send-done) is compute
    if (out.is_start) s += "-start";
    if (out.is_done) s += "-done";
    out.is_start = out.is_done = false;
  }
  out.base = s;
  return out;
}

std::optional<int> xla_element_bytes(const std::string& t) {
  if (t == "pred" || t == "s8" || t == "u8" || t.rfind("f8", 0) == 0 || t == "s4" || t == "u4")
    return 1;
  if (t == "bf16" || t == "f16" || t == "s16" || t == "u16") return 2;
  if (t == "f32" || t == "s32" || t == "u32") return 4;
  if (t == "f64" || t == "s64" || t == "u64" || t == "c64") return 8;
  if (t == "c128") return 16;
  if (t == "token") return 0;
  return std::nullopt;
}

double ArrayShape::bytes() const {
  double n = xla_element_bytes(element_type).value_or(0);
  for (auto d : dims) n *= static_cast<double>(d);
  return n;
}

std::optional<DType> dtype_for_xla(const std::string& t) {
  if (t == "bf16" || t == "f16") return DType::BF16;
  if (t == "f32") return DType::F32;
  if (t == "s32" || t == "u32") return DType::I32;
  return std::nullopt;
}

namespace {
struct Cursor {
  const std::string& s;
  std::size_t i = 0;
  void skip_space() {
    while (i < s.size() && s[i] == ' ') ++i;
  }
  bool eat(char c) {
    skip_space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
};

bool parse_shape_into(Cursor& c, std::vector<ArrayShape>& out, int depth) {
  if (depth > 8) return false;
  if (c.eat('(')) {
    if (c.eat(')')) return true;  // the empty tuple
    do {
      if (!parse_shape_into(c, out, depth + 1)) return false;
    } while (c.eat(','));
    return c.eat(')');
  }
  c.skip_space();
  ArrayShape a;
  while (c.i < c.s.size() && std::isalnum(static_cast<unsigned char>(c.s[c.i])))
    a.element_type += c.s[c.i++];
  if (!xla_element_bytes(a.element_type)) return false;
  if (a.element_type != "token") {
    if (!c.eat('[')) return false;
    if (!c.eat(']')) {
      do {
        c.skip_space();
        std::int64_t d = 0;
        bool any = false;
        while (c.i < c.s.size() && std::isdigit(static_cast<unsigned char>(c.s[c.i]))) {
          if (d > (std::int64_t{1} << 40)) return false;  // beyond any real tensor dimension
          d = d * 10 + (c.s[c.i++] - '0');
          any = true;
        }
        if (!any) return false;
        a.dims.push_back(d);
      } while (c.eat(','));
      if (!c.eat(']')) return false;
    }
  } else if (c.eat('[')) {
    if (!c.eat(']')) return false;
  }
  if (c.i < c.s.size() && c.s[c.i] == '{') {  // a layout such as {1,0} or {1,0:T(8,128)}
    int level = 0;
    for (; c.i < c.s.size(); ++c.i) {
      if (c.s[c.i] == '{') ++level;
      if (c.s[c.i] == '}' && --level == 0) break;
    }
    if (level != 0) return false;
    ++c.i;
  }
  out.push_back(std::move(a));
  return true;
}
}  // namespace

std::optional<std::vector<ArrayShape>> parse_hlo_shapes(const std::string& text) {
  Cursor c{text};
  std::vector<ArrayShape> out;
  if (!parse_shape_into(c, out, 0)) return std::nullopt;
  c.skip_space();
  if (c.i != text.size()) return std::nullopt;
  return out;
}

std::string hlo_result_shape_text(const std::string& long_name) {
  std::size_t eq = long_name.find(" = ");
  if (eq == std::string::npos) return "";
  std::size_t begin = eq + 3;
  if (begin < long_name.size() && long_name[begin] == '(') {
    int level = 0;
    for (std::size_t i = begin; i < long_name.size(); ++i) {
      if (long_name[i] == '(') ++level;
      if (long_name[i] == ')' && --level == 0) return long_name.substr(begin, i - begin + 1);
    }
    return "";
  }
  std::size_t end = long_name.find(' ', begin);
  return long_name.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::optional<std::string> hlo_attribute(const std::string& long_name, const std::string& attr) {
  const std::string key = attr + "={";
  std::size_t pos = long_name.find(key);
  if (pos == std::string::npos) return std::nullopt;
  std::size_t begin = pos + key.size() - 1;
  int level = 0;
  for (std::size_t i = begin; i < long_name.size(); ++i) {
    if (long_name[i] == '{') ++level;
    if (long_name[i] == '}' && --level == 0) return long_name.substr(begin, i - begin + 1);
  }
  return std::nullopt;
}

std::optional<std::vector<std::vector<int>>> parse_int_groups(const std::string& text) {
  Cursor c{text};
  std::vector<std::vector<int>> groups;
  if (!c.eat('{')) return std::nullopt;
  if (c.eat('}')) return groups;
  do {
    if (!c.eat('{')) return std::nullopt;
    std::vector<int> g;
    if (!c.eat('}')) {
      do {
        c.skip_space();
        long v = 0;
        bool any = false;
        while (c.i < c.s.size() && std::isdigit(static_cast<unsigned char>(c.s[c.i]))) {
          v = v * 10 + (c.s[c.i++] - '0');
          if (v >= (1L << 24)) return std::nullopt;
          any = true;
        }
        if (!any) return std::nullopt;
        g.push_back(static_cast<int>(v));
      } while (c.eat(','));
      if (!c.eat('}')) return std::nullopt;
    }
    groups.push_back(std::move(g));
  } while (c.eat(','));
  if (!c.eat('}')) return std::nullopt;
  c.skip_space();
  if (c.i != text.size()) return std::nullopt;
  return groups;
}

}  // namespace tpusim::trace

#include "traces/chakra/chakra_attrs.hpp"

#include "core/errors.hpp"

namespace tpusim::trace::chakra {
namespace {
using ChakraProtoMsg::AttributeProto;

AttributeProto& add(Attributes& attrs, const std::string& name) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  return *a;
}

[[noreturn]] void wrong(const std::string& where, const std::string& name, const char* expected) {
  throw ConfigError(where,
                    "attribute '" + name + "' holds another kind of value; expected " + expected);
}
}  // namespace

void add_bool(Attributes& attrs, const std::string& name, bool v) {
  add(attrs, name).set_bool_val(v);
}
void add_int(Attributes& attrs, const std::string& name, std::int64_t v) {
  add(attrs, name).set_int64_val(v);
}
void add_double(Attributes& attrs, const std::string& name, double v) {
  add(attrs, name).set_double_val(v);
}
void add_string(Attributes& attrs, const std::string& name, const std::string& v) {
  add(attrs, name).set_string_val(v);
}
void add_int_list(Attributes& attrs, const std::string& name, const std::vector<std::int64_t>& v) {
  auto* list = add(attrs, name).mutable_int64_list();
  for (auto x : v) list->add_values(x);
}
void add_bool_list(Attributes& attrs, const std::string& name, const std::vector<bool>& v) {
  auto* list = add(attrs, name).mutable_bool_list();
  for (bool x : v) list->add_values(x);
}
void add_string_list(Attributes& attrs, const std::string& name,
                     const std::vector<std::string>& v) {
  auto* list = add(attrs, name).mutable_string_list();
  for (const auto& x : v) list->add_values(x);
}

const AttributeProto* find(const Attributes& attrs, const std::string& name) {
  for (const auto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<std::int64_t> get_int(const Attributes& attrs, const std::string& name,
                                    const std::string& where) {
  const AttributeProto* a = find(attrs, name);
  if (!a) return std::nullopt;
  switch (a->value_case()) {
    case AttributeProto::kInt32Val:
      return a->int32_val();
    case AttributeProto::kInt64Val:
      return a->int64_val();
    case AttributeProto::kUint32Val:
      return a->uint32_val();
    case AttributeProto::kUint64Val:
      if (a->uint64_val() > static_cast<std::uint64_t>(INT64_MAX))
        throw ConfigError(where, "attribute '" + name + "' = " + std::to_string(a->uint64_val()) +
                                     " is too large; expected at most 2^63-1");
      return static_cast<std::int64_t>(a->uint64_val());
    default:
      wrong(where, name, "an integer");
  }
}

std::optional<double> get_double(const Attributes& attrs, const std::string& name,
                                 const std::string& where) {
  const AttributeProto* a = find(attrs, name);
  if (!a) return std::nullopt;
  if (a->value_case() == AttributeProto::kDoubleVal) return a->double_val();
  if (a->value_case() == AttributeProto::kFloatVal) return a->float_val();
  return static_cast<double>(*get_int(attrs, name, where));
}

std::optional<std::string> get_string(const Attributes& attrs, const std::string& name,
                                      const std::string& where) {
  const AttributeProto* a = find(attrs, name);
  if (!a) return std::nullopt;
  if (a->value_case() != AttributeProto::kStringVal) wrong(where, name, "a string");
  return a->string_val();
}

std::optional<bool> get_bool(const Attributes& attrs, const std::string& name,
                             const std::string& where) {
  const AttributeProto* a = find(attrs, name);
  if (!a) return std::nullopt;
  if (a->value_case() != AttributeProto::kBoolVal) wrong(where, name, "a bool");
  return a->bool_val();
}

std::optional<std::vector<std::int64_t>> get_int_list(const Attributes& attrs,
                                                      const std::string& name,
                                                      const std::string& where) {
  const AttributeProto* a = find(attrs, name);
  if (!a) return std::nullopt;
  if (a->value_case() != AttributeProto::kInt64List) wrong(where, name, "an int64 list");
  return std::vector<std::int64_t>(a->int64_list().values().begin(),
                                   a->int64_list().values().end());
}

std::optional<std::vector<bool>> get_bool_list(const Attributes& attrs, const std::string& name,
                                               const std::string& where) {
  const AttributeProto* a = find(attrs, name);
  if (!a) return std::nullopt;
  if (a->value_case() != AttributeProto::kBoolList) wrong(where, name, "a bool list");
  return std::vector<bool>(a->bool_list().values().begin(), a->bool_list().values().end());
}

}  // namespace tpusim::trace::chakra

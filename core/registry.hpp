#pragma once
// A registry of named things (models, collective algorithms, network levels): filled by
// registrar objects of the layers above during static initialisation, read afterwards. It lists
// what it holds, and every choice list of an error message or of `tpusim params` comes from one.
//
//   Registry<Factory>& models() { static Registry<Factory> r{"model"}; return r; }
//   const ModelRegistrar kMyNet{"my_net", ...};  // calls models().add("my_net", ...)
//
// A function-local static, as above: registrars in other files run in any order.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim {

template <class T>
class Registry {
 public:
  /// `what` names one entry in messages ("model", "collective algorithm").
  explicit Registry(std::string what) : what_(std::move(what)) {}

  /// Adds `item` under `name`. A second entry of the same name is a tpusim bug (two files
  /// registering one name): refused with std::logic_error.
  void add(const std::string& name, T item) {
    if (name.empty()) throw std::logic_error("tpusim bug: a " + what_ + " registered without name");
    if (!items_.emplace(name, std::move(item)).second)
      throw std::logic_error("tpusim bug: the " + what_ + " '" + name + "' is registered twice");
  }
  /// The entry of `name`, or nullptr.
  const T* find(const std::string& name) const {
    auto it = items_.find(name);
    return it == items_.end() ? nullptr : &it->second;
  }
  /// The names it holds, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, item] : items_) out.push_back(name);
    return out;
  }
  /// The names as a message writes them: "a, b, c".
  std::string names_text() const {
    std::string out;
    for (const auto& [name, item] : items_) out += (out.empty() ? "" : ", ") + name;
    return out;
  }
  const std::string& what() const { return what_; }
  std::size_t size() const { return items_.size(); }

 private:
  std::string what_;
  std::map<std::string, T> items_;
};

}  // namespace tpusim

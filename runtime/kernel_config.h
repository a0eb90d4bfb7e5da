// The constants a plan specializes its agent template with, typed. Codegen
// prints each as `static constexpr <type> <name> = <value>;` in the generated
// Config; `sgtopk plan`, the description and the tests read them back by name.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sgtopk::detail {

class KernelConfig {
 public:
  using Value = std::variant<bool, int, long long>;

  // Adds a constant (or replaces one of that name, keeping its place).
  KernelConfig& flag(const std::string& name, bool value);
  KernelConfig& integer(const std::string& name, int64_t value);  // an int: throws internal if it does not fit
  KernelConfig& wide(const std::string& name, int64_t value);     // a long long (widths, pitches)

  bool has(const std::string& name) const;
  // The value as type T (bool, int or long long); throws internal when the
  // name is missing or holds another type.
  template <class T>
  T get(const std::string& name) const;
  // The value as codegen prints it: "true", "2048".
  std::string text(const std::string& name) const;

  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  static const char* type_name(const Value& value);  // "bool", "int", "long long"
  static std::string value_text(const Value& value);

 private:
  KernelConfig& set(const std::string& name, Value value);
  const Value& find(const std::string& name) const;

  std::vector<std::pair<std::string, Value>> entries_;
};

}  // namespace sgtopk::detail

#include "runtime/kernel_config.h"

#include <limits>

#include "runtime/error.h"

namespace sgtopk::detail {

KernelConfig& KernelConfig::set(const std::string& name, Value value) {
  for (auto& [key, held] : entries_)
    if (key == name) {
      held = value;
      return *this;
    }
  entries_.emplace_back(name, value);
  return *this;
}

KernelConfig& KernelConfig::flag(const std::string& name, bool value) { return set(name, value); }

KernelConfig& KernelConfig::integer(const std::string& name, int64_t value) {
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    fail(SGTOPK_ERROR_INTERNAL, "kernel constant " + name + " = " + std::to_string(value) + " does not fit an int");
  return set(name, static_cast<int>(value));
}

KernelConfig& KernelConfig::wide(const std::string& name, int64_t value) {
  return set(name, static_cast<long long>(value));
}

bool KernelConfig::has(const std::string& name) const {
  for (const auto& [key, value] : entries_)
    if (key == name) return true;
  return false;
}

const KernelConfig::Value& KernelConfig::find(const std::string& name) const {
  for (const auto& [key, value] : entries_)
    if (key == name) return value;
  fail(SGTOPK_ERROR_INTERNAL, "the plan has no kernel constant " + name);
}

template <class T>
T KernelConfig::get(const std::string& name) const {
  const Value& value = find(name);
  if (!std::holds_alternative<T>(value))
    fail(SGTOPK_ERROR_INTERNAL, "kernel constant " + name + " is a " + type_name(value));
  return std::get<T>(value);
}
template bool KernelConfig::get<bool>(const std::string&) const;
template int KernelConfig::get<int>(const std::string&) const;
template long long KernelConfig::get<long long>(const std::string&) const;

std::string KernelConfig::text(const std::string& name) const { return value_text(find(name)); }

const char* KernelConfig::type_name(const Value& value) {
  switch (value.index()) {
    case 0: return "bool";
    case 1: return "int";
    default: return "long long";
  }
}

std::string KernelConfig::value_text(const Value& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int* i = std::get_if<int>(&value)) return std::to_string(*i);
  return std::to_string(std::get<long long>(value));
}

}  // namespace sgtopk::detail

#include "runtime/toml_input.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "runtime/error.h"

namespace sgtopk::detail {

std::string toml_value_text(const toml::node& n) {
  std::ostringstream os;
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: {
      std::string s(n.as_string()->get());
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      os << "a string (\"" << s << "\")";
      break;
    }
    case toml::node_type::integer: os << "an integer (" << n.as_integer()->get() << ")"; break;
    case toml::node_type::floating_point: os << "a floating-point number (" << n.as_floating_point()->get() << ")"; break;
    case toml::node_type::boolean: os << "a boolean (" << (n.as_boolean()->get() ? "true" : "false") << ")"; break;
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
  return os.str();
}

void TomlIssues::add(uint32_t line, uint32_t column, std::string text) {
  items_.push_back({line, column, std::move(text)});
}

void TomlIssues::raise_if_any() {
  if (items_.empty()) return;
  std::stable_sort(items_.begin(), items_.end(),
                   [](const Item& a, const Item& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); });
  std::string message;
  for (const Item& it : items_) {
    if (!message.empty()) message += '\n';
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive)
    // about `": " + text` chains.
    message.append(source_);
    if (it.line) message.append(":").append(std::to_string(it.line)).append(":").append(std::to_string(it.column));
    message.append(": ").append(it.text);
  }
  fail(status_, message);
}

toml::table parse_ascii_toml(std::string_view text, const std::string& source, sgtopk_status status) {
  TomlIssues issues(source, status);
  uint32_t line = 1, column = 1;
  for (const char ch : text) {
    if (static_cast<unsigned char>(ch) >= 0x80) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
      issues.add(line, column, std::string("byte ") + hex + " is not ASCII (sgtopk's TOML files are ASCII, comments included)");
      issues.raise_if_any();
    }
    if (ch == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    issues.add(e.source(), "TOML syntax error: " + std::string(e.description()));
    issues.raise_if_any();
  }
  return {};
}

}  // namespace sgtopk::detail

// What sgtopk's TOML readers share (the policy, the CLI's manifests and
// problem files): parsing of ASCII text only, the description of a value for
// "expected X, got Y", and a collector that reports every problem at once,
// in file order, as "SOURCE:LINE:COLUMN: text".
#pragma once

#include <sgtopk/sgtopk.h>

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sgtopk::detail {

// "an integer (80)", "a string (\"values\")", "a table", ...
std::string toml_value_text(const toml::node& node);

class TomlIssues {
 public:
  // Problems are raised as sgtopk::Error with `status`.
  TomlIssues(std::string source, sgtopk_status status) : source_(std::move(source)), status_(status) {}
  void add(uint32_t line, uint32_t column, std::string text);  // line 0: no position
  void add(const toml::source_region& where, std::string text) {
    add(where.begin.line, where.begin.column, std::move(text));
  }
  bool empty() const { return items_.empty(); }
  void raise_if_any();

 private:
  struct Item {
    uint32_t line, column;
    std::string text;
  };
  std::string source_;
  sgtopk_status status_;
  std::vector<Item> items_;
};

// The text parsed as TOML; a byte that is not ASCII (toml++ 3.3.0, Debian's,
// reaches undefined behaviour on some: upstream issues 190 and 295) or a
// syntax error is raised with `status`, naming the source, line and column.
toml::table parse_ascii_toml(std::string_view text, const std::string& source, sgtopk_status status);

}  // namespace sgtopk::detail

// The CLI's problem files and deployment manifests, parsed from text
// (config_files.h). Every issue is collected and reported together, in file
// order, as "SOURCE:LINE:COLUMN: DOTTED.KEY: text".
#include "tools/cli/config_files.h"

#include <sgtopk/sgtopk.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "runtime/error.h"
#include "runtime/policy.h"
#include "runtime/toml_input.h"

namespace sgtopk::cli {
namespace {

// Every problem of a file, reported at once in file order, as "KEY: text".
class Issues : public detail::TomlIssues {
 public:
  explicit Issues(std::string source) : TomlIssues(std::move(source), SGTOPK_ERROR_INVALID_ARGUMENT) {}
  void add(const toml::source_region& where, const std::string& key, const std::string& text) {
    TomlIssues::add(where, key.empty() ? text : key + ": " + text);
  }
  void add(const std::string& key, const std::string& text) { add(toml::source_region{}, key, text); }
};

std::string got(const toml::node& n) { return detail::toml_value_text(n); }

toml::table parse_toml(std::string_view text, const std::string& source_name) {
  return detail::parse_ascii_toml(text, source_name, SGTOPK_ERROR_INVALID_ARGUMENT);
}

// A non-empty string, or an issue.
std::optional<std::string> string_of(const toml::node& node, const std::string& key, Issues& issues) {
  const auto* s = node.as_string();
  if (!s) {
    issues.add(node.source(), key, "expected a string, got " + got(node));
    return std::nullopt;
  }
  if (s->get().empty()) {
    issues.add(node.source(), key, "must not be empty");
    return std::nullopt;
  }
  return s->get();
}

std::optional<int64_t> integer_of(const toml::node& node, const std::string& key, Issues& issues) {
  if (const auto* i = node.as_integer()) return i->get();
  issues.add(node.source(), key, "expected an integer, got " + got(node));
  return std::nullopt;
}

constexpr const char* kKnownFlags = "values, sorted, starts, route_stats, index_offsets";
constexpr const char* kProblemKeys = "name, k, rows, width, pitch, out_pitch, page_size, page_table_pitch, flags, family";

uint32_t flag_of(std::string_view name) {
  if (name == "values") return SGTOPK_VALUES;
  if (name == "sorted") return SGTOPK_SORTED;
  if (name == "starts") return SGTOPK_STARTS;
  if (name == "route_stats") return SGTOPK_ROUTE_STATS;
  if (name == "index_offsets") return SGTOPK_INDEX_OFFSETS;
  return 0;
}

// The keys of one problem table; `prefix` is its dotted path plus '.' ("" at
// the top level).
ProblemSpec read_problem(const toml::table& t, const std::string& prefix, Issues& issues) {
  ProblemSpec p;
  p.line = t.source().begin.line;
  for (const auto& [key, node] : t) {
    const std::string_view k = key.str();
    const std::string dotted = prefix + std::string(k);
    if (k == "name") {
      p.name = string_of(node, dotted, issues);
    } else if (k == "family") {
      p.family = string_of(node, dotted, issues);
    } else if (k == "k") {
      if (auto v = integer_of(node, dotted, issues)) {
        if (*v < INT32_MIN || *v > INT32_MAX)
          issues.add(node.source(), dotted, std::to_string(*v) + " does not fit in int32");
        else
          p.k = static_cast<int32_t>(*v);
      }
    } else if (k == "rows") {
      p.rows = integer_of(node, dotted, issues);
    } else if (k == "width") {
      p.width = integer_of(node, dotted, issues);
    } else if (k == "pitch") {
      p.pitch = integer_of(node, dotted, issues);
    } else if (k == "out_pitch") {
      p.out_pitch = integer_of(node, dotted, issues);
    } else if (k == "page_size") {
      p.page_size = integer_of(node, dotted, issues);
      if (p.page_size && (*p.page_size < INT32_MIN || *p.page_size > INT32_MAX)) {
        issues.add(node.source(), dotted, std::to_string(*p.page_size) + " does not fit in int32");
        p.page_size.reset();
      }
    } else if (k == "page_table_pitch") {
      p.page_table_pitch = integer_of(node, dotted, issues);
    } else if (k == "flags") {
      const toml::array* flags = node.as_array();
      if (!flags) {
        issues.add(node.source(), dotted, std::string("expected an array of strings (any of ") + kKnownFlags +
                                               "), got " + got(node));
        continue;
      }
      size_t i = 0;
      for (const toml::node& f : *flags) {
        const std::string item = dotted + "[" + std::to_string(i++) + "]";
        const auto* s = f.as_string();
        if (!s) {
          issues.add(f.source(), item, std::string("expected a flag name (") + kKnownFlags + "), got " + got(f));
        } else if (const uint32_t bit = flag_of(s->get())) {
          p.flags |= bit;
        } else {
          issues.add(f.source(), item, "unknown flag '" + std::string(s->get()) + "' (known: " + kKnownFlags + ")");
        }
      }
    } else {
      issues.add(key.source(), dotted, std::string("unknown key (known: ") + kProblemKeys + ")");
    }
  }
  return p;
}

// A grid value as TOML text ("" when it is not one a policy key takes).
std::string grid_value_text(const toml::node& v) {
  if (const auto* i = v.as_integer()) return std::to_string(i->get());
  if (const auto* b = v.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* f = v.as_floating_point()) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", f->get());
    std::string t = text;
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // a float stays a float (inf/nan: the range check)
    return t;
  }
  if (const auto* s = v.as_string()) {
    const std::string& t = s->get();
    if (t.find_first_of("\"\\\n\r") != std::string::npos) return "";
    return "\"" + t + "\"";
  }
  if (const auto* a = v.as_array()) {
    std::string t = "[";
    for (const toml::node& e : *a) {
      if (!e.is_integer()) return "";
      t += (t.size() > 1 ? ", " : "") + grid_value_text(e);
    }
    return t + "]";
  }
  return "";
}

}  // namespace

std::vector<PolicyGridPoint> parse_policy_grid(std::string_view text, const std::string& source_name,
                                               const detail::Policy& base) {
  const toml::table doc = parse_toml(text, source_name);
  Issues issues(source_name);
  struct Axis {
    std::string section, key;
    std::vector<std::string> values;  // TOML text
  };
  std::vector<Axis> axes;
  for (const auto& [name, node] : doc) {
    if (name.str() != "grid" || !node.is_table()) {
      issues.add(node.source(), std::string(name.str()), "an experiment file holds only a [grid] table");
      continue;
    }
    for (const auto& [dotted, values] : *node.as_table()) {
      const std::string key(dotted.str());
      const size_t dot = key.rfind('.');
      const auto* array = values.as_array();
      if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
        issues.add(values.source(), "grid." + key, "a grid key is a dotted policy key, e.g. \"select.sampled.stride_wide\"");
        continue;
      }
      if (array == nullptr || array->empty()) {
        issues.add(values.source(), "grid." + key, "expected a non-empty array of the values to try, got " + got(values));
        continue;
      }
      Axis axis{key.substr(0, dot), key.substr(dot + 1), {}};
      for (const toml::node& v : *array) {
        const std::string value = grid_value_text(v);
        if (value.empty())
          issues.add(v.source(), "grid." + key,
                     "a value must be an integer, a number, a boolean, a string or an array of integers, got " + got(v));
        else if (std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end())
          issues.add(v.source(), "grid." + key, value + " is listed twice");
        else
          axis.values.push_back(value);
      }
      if (!axis.values.empty()) axes.push_back(std::move(axis));
    }
  }
  if (axes.empty() && issues.empty()) issues.add("", "no [grid] keys: nothing to vary");
  size_t combinations = 1;
  for (const Axis& a : axes) {
    combinations *= a.values.size();
    if (combinations > kMaxPolicyGridPoints) {
      issues.add("", "the grid has more than " + std::to_string(kMaxPolicyGridPoints) + " policies");
      break;
    }
  }
  issues.raise_if_any();
  std::vector<PolicyGridPoint> out;
  for (size_t c = 0; c < combinations; ++c) {
    // Axis values of combination c (the first axis varies slowest), grouped
    // by section so each table header appears once.
    std::vector<std::pair<std::string, std::string>> lines;  // section, "key = value"
    std::string label;
    size_t rest = c, stride = combinations;
    for (const Axis& a : axes) {
      stride /= a.values.size();
      const std::string& v = a.values[rest / stride];
      rest %= stride;
      lines.emplace_back(a.section, a.key + " = " + v);
      label += (label.empty() ? "" : " ") + a.key + "=" + v;
    }
    std::stable_sort(lines.begin(), lines.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::string overlay, section;
    for (const auto& [sec, line] : lines) {
      if (sec != section) overlay += "[" + (section = sec) + "]\n";
      overlay += line + "\n";
    }
    out.push_back({label, detail::parse_policy_string(overlay, source_name + " (grid point " + label + ")", base)});
  }
  return out;
}

ProblemSpec parse_problem_toml(std::string_view text, const std::string& source_name) {
  const toml::table doc = parse_toml(text, source_name);
  Issues issues(source_name);
  ProblemSpec p;
  if (const toml::node* problem = doc.get("problem")) {
    if (const toml::table* t = problem->as_table())
      p = read_problem(*t, "problem.", issues);
    else
      issues.add(problem->source(), "problem", "expected a table ([problem]), got " + got(*problem));
    for (const auto& [key, node] : doc) {
      (void)node;
      if (key.str() != "problem")
        issues.add(key.source(), std::string(key.str()),
                   "unknown key: a problem file holds a [problem] table, or its keys at the top level, not both");
    }
  } else {
    p = read_problem(doc, "", issues);
  }
  issues.raise_if_any();
  return p;
}

Manifest parse_manifest_toml(std::string_view text, const std::string& source_name) {
  const toml::table doc = parse_toml(text, source_name);
  Issues issues(source_name);
  Manifest m;
  bool have_plans = false;
  for (const auto& [key, node] : doc) {
    const std::string_view k = key.str();
    if (k == "arch") {
      if (const toml::array* list = node.as_array()) {
        if (list->empty()) issues.add(node.source(), "arch", "expected a string or a non-empty array of strings, got []");
        size_t i = 0;
        for (const toml::node& entry : *list) {
          const std::string dotted = "arch[" + std::to_string(i++) + "]";
          if (auto a = string_of(entry, dotted, issues)) {
            if (std::find(m.archs.begin(), m.archs.end(), *a) != m.archs.end())
              issues.add(entry.source(), dotted, "'" + *a + "' is listed twice");
            else
              m.archs.push_back(*a);
          }
        }
      } else if (auto a = string_of(node, "arch", issues)) {
        m.archs.push_back(*a);
      }
    } else if (k == "policy") {
      m.policy = string_of(node, "policy", issues);
    } else if (k == "plan") {
      const toml::array* plans = node.as_array();
      if (!plans || (!plans->empty() && !plans->is_array_of_tables())) {
        issues.add(node.source(), "plan", "expected [[plan]] tables, got " + got(node));
        have_plans = true;  // named already
        continue;
      }
      have_plans = !plans->empty();
      size_t i = 0;
      for (const toml::node& entry : *plans) {
        const std::string dotted = "plan[" + std::to_string(i++) + "]";
        const toml::table& t = *entry.as_table();
        ProblemSpec p = read_problem(t, dotted + ".", issues);
        for (const auto& [required, present] :
             {std::pair<const char*, bool>{"k", t.contains("k")}, {"rows", t.contains("rows")}, {"width", t.contains("width")}})
          if (!present) issues.add(t.source(), dotted, std::string("the required key '") + required + "' is missing");
        m.plans.push_back(std::move(p));
      }
    } else {
      issues.add(key.source(), std::string(k), "unknown key (known: arch, policy, [[plan]])");
    }
  }
  if (!have_plans) issues.add("", "no [[plan]] entries");
  issues.raise_if_any();
  return m;
}

}  // namespace sgtopk::cli

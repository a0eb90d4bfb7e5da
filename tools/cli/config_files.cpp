// The CLI's problem files and deployment manifests, parsed from text
// (config_files.h). Every issue is collected and reported together, in file
// order, as "SOURCE:LINE:COLUMN: DOTTED.KEY: text".
#include "tools/cli/config_files.h"

#include <sgtopk/sgtopk.h>

#include <toml++/toml.h>

#include <algorithm>
#include <sstream>
#include <tuple>

#include "runtime/error.h"
#include "runtime/policy.h"

namespace sgtopk::cli {
namespace {

struct Issue {
  uint32_t line = 0, column = 0;  // 0: no position
  std::string text;
};

class Issues {
 public:
  explicit Issues(std::string source) : source_(std::move(source)) {}
  void add(const toml::source_region& where, const std::string& key, const std::string& text) {
    items_.push_back({where.begin.line, where.begin.column, key.empty() ? text : key + ": " + text});
  }
  void add(const std::string& key, const std::string& text) { add(toml::source_region{}, key, text); }
  void raise_if_any() {
    if (items_.empty()) return;
    std::stable_sort(items_.begin(), items_.end(), [](const Issue& a, const Issue& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::string message;
    for (const Issue& it : items_) {
      if (!message.empty()) message += '\n';
      // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive)
      // about `": " + text` here.
      message.append(source_);
      if (it.line) message.append(":").append(std::to_string(it.line)).append(":").append(std::to_string(it.column));
      message.append(": ").append(it.text);
    }
    detail::invalid_argument(message);
  }

 private:
  std::string source_;
  std::vector<Issue> items_;
};

// What a node holds, for "expected X, got Y".
std::string got(const toml::node& n) {
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

toml::table parse_toml(std::string_view text, const std::string& source_name) {
  // ASCII only, as every sgtopk TOML file: toml++ 3.3.0 reaches undefined
  // behaviour on some other bytes (runtime/policy.h).
  try {
    detail::require_ascii_toml(text, source_name);
  } catch (const detail::Error& e) {
    detail::invalid_argument(e.what());  // a bad input file, like every other problem here
  }
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    Issues issues(source_name);
    issues.add(e.source(), "", "TOML syntax error: " + std::string(e.description()));
    issues.raise_if_any();
  }
  return {};
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

constexpr const char* kKnownFlags = "values, sorted, starts, route_stats";
constexpr const char* kProblemKeys = "name, k, rows, width, pitch, out_pitch, flags, family";

uint32_t flag_of(std::string_view name) {
  if (name == "values") return SGTOPK_VALUES;
  if (name == "sorted") return SGTOPK_SORTED;
  if (name == "starts") return SGTOPK_STARTS;
  if (name == "route_stats") return SGTOPK_ROUTE_STATS;
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

}  // namespace

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
      m.arch = string_of(node, "arch", issues);
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

// The policy table and its TOML reader/writer (over runtime/toml_input).
//
// One table (sections(), below) describes every key: its section, name, type,
// bounds, the accessor of its struct member and a one-line comment. The
// parser, the range checks, validate_policy() and to_toml() all walk it, so a
// new tunable is one struct member (the default, in policy.h) plus one row.
#include "runtime/policy.h"

#include "cache/files.h"
#include "runtime/error.h"
#include "runtime/toml_input.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <variant>

namespace sgtopk::detail {

namespace {

// ---------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------

struct IntRule {
  int64_t lo;
  int64_t hi;
  bool power_of_two = false;
  bool zero_allowed = false;  // 0 is accepted besides lo..hi (a "let the tool choose" value)
};

// Concatenation by appending: GCC 12 gives false -Wrestrict warnings on some
// `"literal" + std::string` chains.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(parts), ...);
  return out;
}

std::string bound_text(int64_t v) {
  // Large powers of two read better as 2^n.
  if (v >= (int64_t{1} << 20) && (v & (v - 1)) == 0) {
    int n = 0;
    while ((int64_t{1} << n) != v) ++n;
    return "2^" + std::to_string(n);
  }
  return std::to_string(v);
}

// "in 1..4096", "a power of two in 128..1024", "0 or in 16..255"
std::string rule_text(const IntRule& r) {
  std::string range = bound_text(r.lo) + ".." + bound_text(r.hi);
  if (r.power_of_two) return "a power of two in " + range;
  if (r.zero_allowed) return "0 or in " + range;
  return "in " + range;
}

bool rule_allows(const IntRule& r, int64_t v) {
  if (r.zero_allowed && v == 0) return true;
  if (v < r.lo || v > r.hi) return false;
  return !r.power_of_two || (v > 0 && (v & (v - 1)) == 0);
}

// Shortest text that reads back as the same double, always with a '.' or an
// exponent so that TOML sees a float.
std::string double_text(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n': inf, nan
  return s;
}

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(u));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool is_arch_name(std::string_view s) {  // sm_[0-9]+a?
  if (s.substr(0, 3) != "sm_") return false;
  s.remove_prefix(3);
  if (!s.empty() && s.back() == 'a') s.remove_suffix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---------------------------------------------------------------------------
// The field table
// ---------------------------------------------------------------------------

template <class T>
using Ref = T& (*)(Policy&);

template <class T>  // int or int64_t
struct IntSpec {
  Ref<T> ref;
  IntRule rule;
};
struct DoubleSpec {
  Ref<double> ref;
  double lo, hi;
};
struct BoolSpec {
  Ref<bool> ref;
};
struct StringSpec {
  Ref<std::string> ref;
  bool (*valid)(std::string_view);
  const char* requirement;  // e.g. "sm_[0-9]+a? (sm_90, sm_90a, sm_100a, ...)"
};
struct IntListSpec {  // a non-empty, strictly ascending list
  Ref<std::vector<int>> ref;
  IntRule each;
  size_t max_entries;
};
using Spec = std::variant<IntSpec<int>, IntSpec<int64_t>, DoubleSpec, BoolSpec, StringSpec, IntListSpec>;

struct Field {
  std::string_view name;
  Spec spec;
  std::string_view comment;
};

struct Section {
  std::string_view name;  // dotted: "select.direct"
  std::string_view comment;
  std::vector<Field> fields;
};

// A cross-field rule: `key` must stand in `relation` to `other`.
struct Consistency {
  std::string_view key;
  std::string_view relation;  // ">=", shown in the message
  std::string_view other;
  bool (*holds)(const Policy&);
};

Field integer(std::string_view name, Ref<int> ref, IntRule rule, std::string_view comment) {
  return {name, IntSpec<int>{ref, rule}, comment};
}
Field integer(std::string_view name, Ref<int64_t> ref, IntRule rule, std::string_view comment) {
  return {name, IntSpec<int64_t>{ref, rule}, comment};
}
Field real(std::string_view name, Ref<double> ref, double lo, double hi, std::string_view comment) {
  return {name, DoubleSpec{ref, lo, hi}, comment};
}
Field boolean(std::string_view name, Ref<bool> ref, std::string_view comment) {
  return {name, BoolSpec{ref}, comment};
}


constexpr int64_t kMaxWidth = int64_t{1} << 40;
constexpr bool kPow2 = true;

// One field per knob of policy.h's lists; `member` names the Policy member
// holding the section.
#define SGTOPK_FIELD(member, kind, name, value, range, comment) SGTOPK_FIELD_##kind(member, name, range, comment),
#define SGTOPK_REF(member, name) +[](Policy& p) -> auto& { return p.member.name; }
#define SGTOPK_FIELD_INT(member, name, range, comment) integer(#name, SGTOPK_REF(member, name), IntRule{SGTOPK_UNPAREN range}, comment)
#define SGTOPK_FIELD_WIDE SGTOPK_FIELD_INT
#define SGTOPK_FIELD_REAL(member, name, range, comment) real(#name, SGTOPK_REF(member, name), SGTOPK_UNPAREN range, comment)
#define SGTOPK_FIELD_BOOL(member, name, range, comment) boolean(#name, SGTOPK_REF(member, name), comment)
#define SGTOPK_FIELD_ARCH(member, name, range, comment) \
  Field{#name, StringSpec{SGTOPK_REF(member, name), is_arch_name, "sm_[0-9]+a?"}, comment}
#define SGTOPK_LIST_RULE(each, max_entries) IntRule{SGTOPK_UNPAREN each}, max_entries
#define SGTOPK_FIELD_LIST(member, name, range, comment) \
  Field{#name, IntListSpec{SGTOPK_REF(member, name), SGTOPK_LIST_RULE range}, comment}
#define SGTOPK_FIELD_DIRECT(...) SGTOPK_FIELD(direct, __VA_ARGS__)
#define SGTOPK_FIELD_SAMPLED(...) SGTOPK_FIELD(sampled, __VA_ARGS__)
#define SGTOPK_FIELD_SPLIT(...) SGTOPK_FIELD(split, __VA_ARGS__)
#define SGTOPK_FIELD_CLUSTER(...) SGTOPK_FIELD(cluster, __VA_ARGS__)
#define SGTOPK_FIELD_SHORT_ROW(...) SGTOPK_FIELD(short_row, __VA_ARGS__)
#define SGTOPK_FIELD_DISPATCH(...) SGTOPK_FIELD(dispatch, __VA_ARGS__)
#define SGTOPK_FIELD_FILTER(...) SGTOPK_FIELD(filter, __VA_ARGS__)
#define SGTOPK_FIELD_FILTER_SPLIT(...) SGTOPK_FIELD(filter_split, __VA_ARGS__)
#define SGTOPK_FIELD_COMPILE(...) SGTOPK_FIELD(compile, __VA_ARGS__)

const std::vector<Section>& sections() {
  static const std::vector<Section> table = {
      {"select.direct",
       "Row-local exact family: one CTA owns a row, builds the exact coarse boundary and refines the\n"
       "frontier (paper 5.5, row-local exact). Also the exact recovery route of the sampled family.",
       {SGTOPK_POLICY_SELECT_DIRECT(SGTOPK_FIELD_DIRECT)}},
      {"select.sampled",
       "Persistent sampled family: a stride-s view proposes a coarse boundary, one full pass certifies\n"
       "the candidate set, refinement runs on the frontier only (paper 4, 5.5).",
       {SGTOPK_POLICY_SELECT_SAMPLED(SGTOPK_FIELD_SAMPLED)}},
      {"select.split",
       "KV-split family for a few long rows (paper 5.5): each row's segments on several CTAs, every CTA\n"
       "proposing from the same view; the last segment to arrive finishes the row.",
       {SGTOPK_POLICY_SELECT_SPLIT(SGTOPK_FIELD_SPLIT)}},
      {"select.cluster",
       "Cluster family for a few long rows on sm_90 (paper 5.5): one thread-block cluster a row, each\n"
       "CTA over one segment, the exact body's histograms summed through distributed shared memory.",
       {SGTOPK_POLICY_SELECT_CLUSTER(SGTOPK_FIELD_CLUSTER)}},
      {"select.short_row",
       "Short-row family for rows a CTA holds in registers (paper 5.5, row-local): one CTA a row, the\n"
       "row read once, radix rounds over its keys in shared memory, the selection written in row order.",
       {SGTOPK_POLICY_SELECT_SHORT_ROW(SGTOPK_FIELD_SHORT_ROW)}},
      {"select.dispatch",
       "Which family the planner picks for a shape.",
       {SGTOPK_POLICY_SELECT_DISPATCH(SGTOPK_FIELD_DISPATCH)}},
      {"filter",
       "Top-k / top-p filter. block_threads shapes the filter_row family (one CTA a row, exact:\n"
       "docs/filter-design.md); sample_size, top_p_sample_size and sample_sigmas steer its sampled route (speed only),\n"
       "loads_in_flight the loads a thread keeps in flight in that route's passes over the row;\n"
       "the Qrita keys (Gaussian outlier cutoff, quaternary pivot search) are reserved and not read.",
       {SGTOPK_POLICY_FILTER(SGTOPK_FIELD_FILTER)}},
      {"filter.split",
       "Top-k filter of a few rows: each row's vocabulary in segments on several CTAs, every CTA\n"
       "sampling the same threshold; the last segment to arrive decides the row (the filter_split\n"
       "family, exact as filter_row; rows without top-k take filter_row's code on one CTA).",
       {SGTOPK_POLICY_FILTER_SPLIT(SGTOPK_FIELD_FILTER_SPLIT)}},
      {"compile",
       "NVRTC compilation of the generated kernels.",
       {SGTOPK_POLICY_COMPILE(SGTOPK_FIELD_COMPILE)}},
  };
  return table;
}

const std::vector<Consistency>& consistency_rules() {
  static const std::vector<Consistency> rules = {
      {"select.sampled.secondary_margin", ">=", "select.sampled.primary_margin",
       [](const Policy& p) { return p.sampled.secondary_margin >= p.sampled.primary_margin; }},
      {"select.sampled.primary_excess_sigmas", "0 (off) or >=", "select.sampled.primary_confidence",
       [](const Policy& p) {
         return p.sampled.primary_excess_sigmas == 0.0 || p.sampled.primary_excess_sigmas >= p.sampled.primary_confidence;
       }},
      {"select.short_row.max_block_threads", ">=", "select.short_row.min_block_threads",
       [](const Policy& p) { return p.short_row.max_block_threads >= p.short_row.min_block_threads; }},
  };
  return rules;
}


std::string dotted(const Section& s, const Field& f) { return std::string(s.name) + "." + std::string(f.name); }

const Field* find_field(std::string_view key, const Section** section_out = nullptr) {
  for (const Section& s : sections()) {
    if (key.size() <= s.name.size() + 1 || key.substr(0, s.name.size()) != s.name || key[s.name.size()] != '.') continue;
    for (const Field& f : s.fields) {
      if (key.substr(s.name.size() + 1) == f.name) {
        if (section_out) *section_out = &s;
        return &f;
      }
    }
  }
  return nullptr;
}

const Section* find_section(std::string_view name) {
  for (const Section& s : sections())
    if (s.name == name) return &s;
  return nullptr;
}

// "select" is the parent of "select.direct"; "" (the root) is the parent of all.
bool is_section_parent(std::string_view name) {
  for (const Section& s : sections())
    if (name.empty() || (s.name.size() > name.size() && s.name.substr(0, name.size()) == name &&
                         s.name[name.size()] == '.'))
      return true;
  return false;
}

// The value of a field, as TOML text.
std::string value_text(const Field& f, const Policy& policy) {
  Policy p = policy;  // accessors take a mutable Policy
  return std::visit(
      [&](const auto& spec) -> std::string {
        using S = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<S, IntSpec<int>> || std::is_same_v<S, IntSpec<int64_t>>) {
          return std::to_string(spec.ref(p));
        } else if constexpr (std::is_same_v<S, DoubleSpec>) {
          return double_text(spec.ref(p));
        } else if constexpr (std::is_same_v<S, BoolSpec>) {
          return spec.ref(p) ? "true" : "false";
        } else if constexpr (std::is_same_v<S, StringSpec>) {
          return toml_string(spec.ref(p));
        } else {
          std::string out = "[";
          for (size_t i = 0; i < spec.ref(p).size(); ++i) out += (i ? ", " : "") + std::to_string(spec.ref(p)[i]);
          return out + "]";
        }
      },
      f.spec);
}

// The allowed values, for the comment in to_toml(): "1..32", "power of two,
// 128..1024", "0 or 16..255"; empty for booleans.
std::string doc_text(const Field& f) {
  auto range = [](const IntRule& r) {
    std::string text = bound_text(r.lo) + ".." + bound_text(r.hi);
    if (r.power_of_two) return "power of two, " + text;
    if (r.zero_allowed) return "0 or " + text;
    return text;
  };
  return std::visit(
      [&](const auto& spec) -> std::string {
        using S = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<S, IntSpec<int>> || std::is_same_v<S, IntSpec<int64_t>>) {
          return range(spec.rule);
        } else if constexpr (std::is_same_v<S, DoubleSpec>) {
          return double_text(spec.lo) + ".." + double_text(spec.hi);
        } else if constexpr (std::is_same_v<S, BoolSpec>) {
          return {};
        } else if constexpr (std::is_same_v<S, StringSpec>) {
          return spec.requirement;
        } else {
          return cat("each ", range(spec.each), ", strictly ascending, 1..", std::to_string(spec.max_entries),
                     " entries");
        }
      },
      f.spec);
}

// ---------------------------------------------------------------------------
// Checks shared by the reader and validate_policy(): each returns the reason a
// value is refused ("= 0 is out of range: must be in 1..4096"), empty if fine.
// ---------------------------------------------------------------------------

template <class T>
std::string check_int(const IntRule& rule, T v) {
  if (rule_allows(rule, static_cast<int64_t>(v))) return {};
  return " = " + std::to_string(v) + " is out of range: must be " + rule_text(rule);
}

std::string check_double(const DoubleSpec& spec, double v) {
  if (v >= spec.lo && v <= spec.hi) return {};  // false for NaN
  return " = " + double_text(v) + " is out of range: must be in " + double_text(spec.lo) + ".." +
         double_text(spec.hi);
}

std::string check_string(const StringSpec& spec, const std::string& v) {
  if (spec.valid(v)) return {};
  return " = " + toml_string(v) + " is invalid: must match " + spec.requirement;
}

// For a list, the reason names the entry: "[1] = 0 is out of range ...".
struct ListIssue {
  std::optional<size_t> index;
  std::string reason;
};
std::optional<ListIssue> check_list(const IntListSpec& spec, const std::vector<int>& v) {
  if (v.empty() || v.size() > spec.max_entries)
    return ListIssue{std::nullopt, " has " + std::to_string(v.size()) + " entries: must have 1.." +
                                       std::to_string(spec.max_entries)};
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::string r = check_int(spec.each, v[i]); !r.empty()) return ListIssue{i, r};
    if (i > 0 && v[i] <= v[i - 1])
      return ListIssue{i, " = " + std::to_string(v[i]) + " is out of order: the list must be strictly ascending"};
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------

struct Pos {
  uint32_t line = 0, column = 0;  // 0: unknown
};

Pos pos_of(const toml::source_region& r) { return {r.begin.line, r.begin.column}; }

// Every problem of a document, reported at once in file order.
class Report : public TomlIssues {
 public:
  explicit Report(std::string source) : TomlIssues(std::move(source), SGTOPK_ERROR_POLICY) {}
  void add(Pos pos, std::string text) { TomlIssues::add(pos.line, pos.column, std::move(text)); }
};


size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The one candidate close to `name` ("stride_wide" for "stride_wid"), or empty.
std::string suggestion(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  bool tie = false;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
      tie = false;
    } else if (d == best_d && !best.empty()) {
      tie = true;
    }
  }
  return tie ? std::string() : best;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<std::string> all_section_headers() {
  std::vector<std::string> v;
  for (const Section& s : sections()) v.push_back(cat("[", s.name, "]"));
  return v;
}

// ---------------------------------------------------------------------------
// Reading a document onto a Policy
// ---------------------------------------------------------------------------

struct Reader {
  Policy& policy;
  Report& report;
  std::map<std::string, Pos, std::less<>> present;  // dotted key -> where its value is

  void read_field(const std::string& key, const Field& f, const toml::node& node) {
    const Pos pos = pos_of(node.source());
    present[key] = pos;
    std::visit([&](const auto& spec) { read(key, spec, node, pos); }, f.spec);
  }

  template <class T>
  void read(const std::string& key, const IntSpec<T>& spec, const toml::node& node, Pos pos) {
    const auto* v = node.as_integer();
    if (!v) return report.add(pos, key + " must be an integer, got " + toml_value_text(node));
    const int64_t x = v->get();
    if (std::string r = check_int(spec.rule, x); !r.empty()) return report.add(pos, key + r);
    spec.ref(policy) = static_cast<T>(x);  // in range, so exact
  }

  void read(const std::string& key, const DoubleSpec& spec, const toml::node& node, Pos pos) {
    double x;
    if (const auto* f = node.as_floating_point())
      x = f->get();
    else if (const auto* i = node.as_integer())
      x = static_cast<double>(i->get());
    else
      return report.add(pos, key + " must be a number, got " + toml_value_text(node));
    if (std::string r = check_double(spec, x); !r.empty()) return report.add(pos, key + r);
    spec.ref(policy) = x;
  }

  void read(const std::string& key, const BoolSpec& spec, const toml::node& node, Pos pos) {
    const auto* v = node.as_boolean();
    if (!v) return report.add(pos, key + " must be a boolean (true or false), got " + toml_value_text(node));
    spec.ref(policy) = v->get();
  }

  void read(const std::string& key, const StringSpec& spec, const toml::node& node, Pos pos) {
    const auto* v = node.as_string();
    if (!v) return report.add(pos, key + " must be a string, got " + toml_value_text(node));
    if (std::string r = check_string(spec, v->get()); !r.empty()) return report.add(pos, key + r);
    spec.ref(policy) = v->get();
  }

  void read(const std::string& key, const IntListSpec& spec, const toml::node& node, Pos pos) {
    const auto* arr = node.as_array();
    if (!arr) return report.add(pos, key + " must be an array of integers, got " + toml_value_text(node));
    std::vector<int> values;
    std::vector<Pos> where;
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::node& e = *arr->get(i);
      const auto* v = e.as_integer();
      const std::string name = key + "[" + std::to_string(i) + "]";
      if (!v) return report.add(pos_of(e.source()), name + " must be an integer, got " + toml_value_text(e));
      if (std::string r = check_int(spec.each, v->get()); !r.empty()) return report.add(pos_of(e.source()), name + r);
      values.push_back(static_cast<int>(v->get()));
      where.push_back(pos_of(e.source()));
    }
    if (auto issue = check_list(spec, values)) {
      if (issue->index) return report.add(where[*issue->index], key + "[" + std::to_string(*issue->index) + "]" + issue->reason);
      return report.add(pos, key + issue->reason);
    }
    spec.ref(policy) = std::move(values);
  }

  // Walks a table whose dotted name is `prefix` ("" for the document root).
  void walk(const toml::table& table, const std::string& prefix) {
    for (auto&& [k, node] : table) {
      const std::string name(k.str());
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      const Pos kpos = pos_of(k.source());
      if (const Field* f = find_section(prefix) ? find_field(key) : nullptr) {
        read_field(key, *f, node);
      } else if (find_section(key) || is_section_parent(key)) {
        if (const auto* sub = node.as_table())
          walk(*sub, key);
        else
          report.add(kpos, key + " must be a table (section [" + key + "]), got " + toml_value_text(node));
      } else if (node.is_table()) {
        // Candidates: the known next components under `prefix` ("select" at the root).
        std::vector<std::string> children;
        for (const Section& s : sections()) {
          if (!prefix.empty() && (s.name.size() <= prefix.size() || s.name.substr(0, prefix.size()) != prefix)) continue;
          std::string_view rest = s.name.substr(prefix.empty() ? 0 : prefix.size() + 1);
          std::string child(rest.substr(0, rest.find('.')));
          if (std::find(children.begin(), children.end(), child) == children.end()) children.push_back(child);
        }
        std::string hint = suggestion(name, children);
        if (!hint.empty()) hint = cat("did you mean [", prefix, prefix.empty() ? "" : ".", hint, "]? ");
        report.add(kpos, cat("unknown section [", key, "] (", hint, "known sections: ", join(all_section_headers()), ")"));
      } else if (const Section* s = find_section(prefix)) {
        std::vector<std::string> names;
        for (const Field& fld : s->fields) names.emplace_back(fld.name);
        std::string hint = suggestion(name, names);
        if (!hint.empty()) hint = cat("did you mean '", hint, "'? ");
        report.add(kpos, cat("unknown key '", key, "' (", hint, "known keys in [", prefix, "]: ", join(names), ")"));
      } else {
        report.add(kpos, "unknown key '" + key + "' (every key belongs to one of the sections " +
                             join(all_section_headers()) + ")");
      }
    }
  }
};

// Range checks over a whole policy, then the cross-field rules. `where` gives
// the position of a key in the document, if it came from there.
template <class Where>
void check_policy(const Policy& policy, Report& report, Where where, const char* inherited_note) {
  Policy p = policy;
  for (const Section& s : sections()) {
    for (const Field& f : s.fields) {
      const std::string key = dotted(s, f);
      const std::optional<Pos> pos = where(key);
      const std::string note = pos ? "" : inherited_note;
      std::visit(
          [&](const auto& spec) {
            using S = std::decay_t<decltype(spec)>;
            std::string reason;
            if constexpr (std::is_same_v<S, IntSpec<int>> || std::is_same_v<S, IntSpec<int64_t>>) {
              reason = check_int(spec.rule, spec.ref(p));
            } else if constexpr (std::is_same_v<S, DoubleSpec>) {
              reason = check_double(spec, spec.ref(p));
            } else if constexpr (std::is_same_v<S, StringSpec>) {
              reason = check_string(spec, spec.ref(p));
            } else if constexpr (std::is_same_v<S, IntListSpec>) {
              if (auto issue = check_list(spec, spec.ref(p)))
                reason = (issue->index ? "[" + std::to_string(*issue->index) + "]" : std::string()) + issue->reason;
            }
            if (!reason.empty()) report.add(pos.value_or(Pos{}), key + reason + note);
          },
          f.spec);
    }
  }
  if (!report.empty()) return;  // cross-field rules assume each value is in range
  for (const Consistency& c : consistency_rules()) {
    if (c.holds(policy)) continue;
    const Field* kf = find_field(c.key);
    const Field* of = find_field(c.other);
    std::optional<Pos> pos = where(c.key);
    if (!pos) pos = where(c.other);
    report.add(pos.value_or(Pos{}), std::string(c.key) + " = " + value_text(*kf, policy) +
                                        " is inconsistent: must be " + std::string(c.relation) + " " +
                                        std::string(c.other) + " = " + value_text(*of, policy));
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Public
// ---------------------------------------------------------------------------

Policy Policy::defaults() { return Policy{}; }

std::string Policy::to_toml() const {
  const Policy base = defaults();
  std::vector<std::string> changed;
  for (const Section& s : sections())
    for (const Field& f : s.fields)
      if (value_text(f, *this) != value_text(f, base)) changed.push_back(dotted(s, f));

  std::string out =
      "# sgtopk policy: every tunable of the planner and the kernel templates (runtime/policy.h).\n"
      "# `sgtopk plan` prints the policy in effect in this form. A policy file needs only the keys\n"
      "# it changes; absent keys keep their value. Unknown keys, wrong types, out-of-range and\n"
      "# inconsistent values are errors.\n";
  if (changed.empty())
    out +=
        "# These are the compiled-in defaults (`sgtopk policy` prints them; the build writes them to\n"
        "# default.toml, installed in share/sgtopk).\n";
  else
    out += "# Differs from the compiled-in defaults in: " + join(changed) + ".\n";

  auto comment = [&](std::string_view text) {
    std::string c;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      c += "# " + std::string(text.substr(start, end - start)) + "\n";
      start = end + 1;
    }
    return c;
  };
  for (const Section& s : sections()) {
    out += cat("\n", comment(s.comment), "[", s.name, "]\n");
    for (const Field& f : s.fields) {
      std::string c(f.comment);
      if (const std::string doc = doc_text(f); !doc.empty()) c += cat(" [", doc, "]");
      const std::string value = value_text(f, *this);
      if (const std::string def = value_text(f, base); def != value) c += cat(" (default: ", def, ")");
      out += comment(c) + std::string(f.name) + " = " + value + "\n";
    }
  }
  return out;
}

Policy parse_policy_string(std::string_view toml_text, const std::string& source_name, const Policy& base) {
  const toml::table doc = parse_ascii_toml(toml_text, source_name, SGTOPK_ERROR_POLICY);

  Policy result = base;
  Report report(source_name);
  Reader reader{result, report, {}};
  reader.walk(doc, "");
  report.raise_if_any();

  check_policy(
      result, report,
      [&](std::string_view key) -> std::optional<Pos> {
        auto it = reader.present.find(key);
        return it == reader.present.end() ? std::nullopt : std::optional<Pos>(it->second);
      },
      " (inherited from the base policy)");
  report.raise_if_any();
  return result;
}

Policy parse_policy_file(const std::string& path, const Policy& base) {
  // A policy is a few KB; a device (/dev/zero), a FIFO or a huge file is the
  // caller's mistake, refused before it is read.
  constexpr uint64_t kMaxPolicyBytes = uint64_t{1} << 20;
  const FileBytes file = read_regular_file(path, kMaxPolicyBytes, /*follow_links=*/true);
  if (!file.error.empty()) fail(SGTOPK_ERROR_POLICY, path + ": cannot read policy file: " + file.error);
  return parse_policy_string(std::string_view(file.bytes.data(), file.bytes.size()), path, base);
}

void validate_policy(const Policy& policy, const std::string& source_name) {
  Report report(source_name);
  check_policy(policy, report, [](std::string_view) { return std::optional<Pos>(); }, "");
  report.raise_if_any();
}

}  // namespace sgtopk::detail

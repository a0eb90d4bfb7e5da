#include "runtime/knobs.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unistd.h>
#include <cstdlib>
#include <mutex>
#include <optional>

namespace sgtopk::detail {

namespace {

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/sgtopk";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/sgtopk";
  // Never a path shared by users: the cache holds code this process runs.
  return "/tmp/sgtopk-cache-" + std::to_string(::geteuid());
}

// Knobs are read before the logger (which reads SGTOPK_VERBOSE), so a bad
// value is reported here, once per variable and value.
void report_bad(const char* variable, const std::string& value, const char* expected, const std::string& used) {
  static std::mutex mutex;
  static std::vector<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = std::string(variable) + "=" + value;
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
  seen.push_back(key);
  std::fprintf(stderr, "sgtopk: warning: %s=\"%s\" is not %s; using %s\n", variable, value.c_str(), expected,
               used.c_str());
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string read_PATH(const char* name, const std::string& fallback) { return env(name).value_or(fallback); }

bool read_FLAG(const char* name, bool fallback) {
  const std::optional<std::string> v = env(name);
  if (!v) return fallback;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  report_bad(name, *v, "a flag (0/1, false/true, no/yes, off/on)", fallback ? "1" : "0");
  return fallback;
}

int read_LEVEL(const char* name, int fallback) {
  const std::optional<std::string> v = env(name);
  if (!v) return fallback;
  if (*v == "0" || *v == "1" || *v == "2") return (*v)[0] - '0';
  report_bad(name, *v, "a level (0, 1 or 2)", std::to_string(fallback));
  return fallback;
}

Knobs read_knobs() {
  Knobs k;
#define SGTOPK_KNOB_READ(kind, member, variable, value, text, help) k.member = read_##kind(variable, value);
  SGTOPK_ENV_KNOBS(SGTOPK_KNOB_READ)
#undef SGTOPK_KNOB_READ
  return k;
}

std::mutex g_mutex;
Knobs g_knobs = read_knobs();

}  // namespace

const std::vector<Knob>& all_knobs() {
  static const std::vector<Knob> table = {
#define SGTOPK_KNOB_ROW(kind, member, variable, value, text, help) {variable, text, help},
      SGTOPK_ENV_KNOBS(SGTOPK_KNOB_ROW)
#undef SGTOPK_KNOB_ROW
  };
  return table;
}

const Knobs& knobs() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_knobs;
}

void reload_knobs() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_knobs = read_knobs();
}

}  // namespace sgtopk::detail

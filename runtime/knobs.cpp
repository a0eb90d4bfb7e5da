#include "runtime/knobs.h"

#include <cstdlib>
#include <mutex>

namespace sgtopk::detail {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

bool env_flag(const char* name) {
  std::string v = env_or(name, "0");
  return !(v == "0" || v == "false" || v == "no" || v == "off");
}

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/sgtopk";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/sgtopk";
  return "/tmp/sgtopk-cache";
}

Knobs read_knobs() {
  Knobs k;
  k.cache_dir = env_or("SGTOPK_CACHE_DIR", default_cache_dir());
  k.verbose = std::atoi(env_or("SGTOPK_VERBOSE", "1").c_str());
  k.keep_sources = env_flag("SGTOPK_KEEP_SOURCES");
  k.disable_disk_cache = env_flag("SGTOPK_DISABLE_DISK_CACHE");
  k.dump_dir = env_or("SGTOPK_DUMP_DIR", k.cache_dir + "/dumps");
  return k;
}

std::mutex g_mutex;
Knobs g_knobs = read_knobs();

}  // namespace

const std::vector<Knob>& all_knobs() {
  static const std::vector<Knob> table = {
      {"SGTOPK_CACHE_DIR", "$XDG_CACHE_HOME/sgtopk or ~/.cache/sgtopk", "directory of the on-disk cubin cache"},
      {"SGTOPK_VERBOSE", "1", "0: silent, 1: warnings, 2: also compile/cache events"},
      {"SGTOPK_KEEP_SOURCES", "0", "1: write every generated kernel source under SGTOPK_DUMP_DIR"},
      {"SGTOPK_DISABLE_DISK_CACHE", "0", "1: cache compiled kernels in memory only"},
      {"SGTOPK_DUMP_DIR", "$SGTOPK_CACHE_DIR/dumps", "where failed-compile reproductions and kept sources go"},
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

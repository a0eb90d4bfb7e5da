// Every environment variable sgtopk reads, declared once (cf. Triton's knobs).
// Read lazily on first use; `sgtopk env` prints them.
#pragma once

#include <string>
#include <vector>

namespace sgtopk::detail {

struct Knob {
  const char* name;
  const char* default_text;
  const char* help;
};

// The table of all knobs, for `sgtopk env` and the README.
const std::vector<Knob>& all_knobs();

struct Knobs {
  std::string cache_dir;       // SGTOPK_CACHE_DIR
  int verbose = 1;             // SGTOPK_VERBOSE
  bool keep_sources = false;   // SGTOPK_KEEP_SOURCES
  bool disable_disk_cache = false;  // SGTOPK_DISABLE_DISK_CACHE
  std::string dump_dir;        // SGTOPK_DUMP_DIR (failed-compile reproductions, kept sources)
};

// Process-wide values, read from the environment once.
const Knobs& knobs();
// Re-read the environment (tests).
void reload_knobs();

}  // namespace sgtopk::detail

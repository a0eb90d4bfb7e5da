// Every environment variable sgtopk reads, declared once, typed (Triton's
// knobs.py is the model): one X(...) line each gives the variable, its kind,
// the member it fills, its default and its help. Read on first use; `sgtopk
// env` prints them. A value that does not parse as its kind is reported once
// (naming the variable) and the default is used.
#pragma once

#include <string>
#include <vector>

// X(kind, member, VARIABLE, default expression, default as text, help). The
// default expression sees the knobs read above it as `k`.
#define SGTOPK_ENV_KNOBS(X)                                                                                  \
  X(PATH, cache_dir, "SGTOPK_CACHE_DIR", default_cache_dir(), "$XDG_CACHE_HOME/sgtopk, ~/.cache/sgtopk or /tmp/sgtopk-cache-<uid>",   \
    "directory of the on-disk cubin cache")                                                                  \
  X(FLAG, disable_disk_cache, "SGTOPK_DISABLE_DISK_CACHE", false, "0",                                       \
    "1: cache compiled kernels in memory only")                                                              \
  X(FLAG, cache_read_only, "SGTOPK_CACHE_READ_ONLY", false, "0",                                             \
    "1: read the disk cache (a shipped, prewarmed one) but never write it")                                  \
  X(LEVEL, verbose, "SGTOPK_VERBOSE", 1, "1", "0: silent, 1: warnings, 2: also compile/cache events")         \
  X(FLAG, keep_sources, "SGTOPK_KEEP_SOURCES", false, "0",                                                   \
    "1: write every generated kernel source under SGTOPK_DUMP_DIR")                                          \
  X(PATH, dump_dir, "SGTOPK_DUMP_DIR", k.cache_dir + "/dumps", "$SGTOPK_CACHE_DIR/dumps",                    \
    "where failed-compile reproductions and kept sources go")

namespace sgtopk::detail {

// The kinds: PATH a non-empty string, FLAG 0/1 (also false/true, no/yes,
// off/on, any case), LEVEL 0, 1 or 2.
#define SGTOPK_KNOB_TYPE_PATH std::string
#define SGTOPK_KNOB_TYPE_FLAG bool
#define SGTOPK_KNOB_TYPE_LEVEL int
#define SGTOPK_KNOB_MEMBER(kind, member, variable, value, text, help) SGTOPK_KNOB_TYPE_##kind member{};

struct Knobs {
  SGTOPK_ENV_KNOBS(SGTOPK_KNOB_MEMBER)
};

#undef SGTOPK_KNOB_MEMBER

struct Knob {
  const char* name;
  const char* default_text;
  const char* help;
};

// The table of all knobs, for `sgtopk env` and the README.
const std::vector<Knob>& all_knobs();

// Process-wide values, read from the environment once.
const Knobs& knobs();
// Re-read the environment (tests).
void reload_knobs();

}  // namespace sgtopk::detail

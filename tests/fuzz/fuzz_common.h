// Shared by the fuzz targets: how a finding is reported, and the one known
// dependency bug the TOML targets step around (tests/fuzz/README.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace sgtopk_fuzz {

// A property failed: say which, then abort so libFuzzer saves the input.
[[noreturn]] inline void finding(const char* target, const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING (%s): %s\n", target, what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace sgtopk_fuzz

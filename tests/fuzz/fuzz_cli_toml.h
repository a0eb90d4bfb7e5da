// The manifest and problem-file targets share this body: the parser
// (tools/cli/config_files.h) returns a value within its documented shape, or
// throws sgtopk::detail::Error(SGTOPK_ERROR_INVALID_ARGUMENT) with a message;
// anything else is a finding.
#pragma once

#include <sgtopk/sgtopk.h>

#include <exception>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "runtime/error.h"
#include "tools/cli/config_files.h"

namespace sgtopk_fuzz {

inline constexpr uint32_t kKnownFlags = SGTOPK_VALUES | SGTOPK_SORTED | SGTOPK_STARTS | SGTOPK_ROUTE_STATS;

// What both parsers promise of every problem they return.
inline void check_problem_spec(const char* target, const sgtopk::cli::ProblemSpec& p) {
  if (p.flags & ~kKnownFlags) finding(target, "flags outside the SGTOPK_* bits: " + std::to_string(p.flags));
  if ((p.name && p.name->empty()) || (p.family && p.family->empty()))
    finding(target, "an empty name or family was accepted (line " + std::to_string(p.line) + ")");
}

template <typename Parse, typename Check>
int fuzz_cli_toml(const char* target, const uint8_t* data, size_t size, Parse&& parse, Check&& check) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check(parse(text));
  } catch (const sgtopk::detail::Error& e) {
    if (e.status() != SGTOPK_ERROR_INVALID_ARGUMENT)
      finding(target, std::string("threw ") + sgtopk_status_string(e.status()) + " (want invalid argument): " + e.what());
    if (std::string_view(e.what()).empty()) finding(target, "threw an empty message");
  } catch (const std::exception& e) {
    finding(target, std::string("threw a non-sgtopk exception: ") + e.what());
  } catch (...) {
    finding(target, "threw a non-std exception");
  }
  return 0;
}

}  // namespace sgtopk_fuzz

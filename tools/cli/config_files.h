// The CLI's two TOML inputs, parsed from text: a problem file (`sgtopk plan
// PROBLEM.toml`) and a deployment manifest (`sgtopk prewarm MANIFEST.toml`).
//
// Pure functions: no I/O, no exit(). A byte that is not ASCII is refused
// first (detail::parse_ascii_toml). Every problem in the text (a syntax
// error, an unknown key, a key of the wrong type, a number out of its type's
// range, a missing required key) is reported, all at once, as one
// sgtopk::detail::Error (SGTOPK_ERROR_INVALID_ARGUMENT) whose message has a
// line per problem: "SOURCE:LINE:COLUMN: DOTTED.KEY: what is wrong".
// The problem's own limits (K in 1..8192, width <= pitch, ...) are the
// library's to check, at compile time, with its own messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/policy.h"

namespace sgtopk::cli {

// One problem as a file writes it; a key not written is empty.
struct ProblemSpec {
  std::optional<std::string> name;
  std::optional<int32_t> k;
  std::optional<int64_t> rows, width, pitch, out_pitch, page_size, page_table_pitch;
  uint32_t flags = 0;  // the SGTOPK_* bits the `flags` array names
  std::optional<std::string> family;
  uint32_t line = 0;   // where its table starts (0: unknown)
};

// A problem file: a [problem] table, or its keys at the top level.
// Keys: name, k, rows, width, pitch, out_pitch, page_size, page_table_pitch
// (integers; page_size sets the page_table flag), flags (an array of
// "values", "sorted", "starts", "route_stats", "index_offsets"), family (a string). All
// optional here: the command line may give the rest.
ProblemSpec parse_problem_toml(std::string_view text, const std::string& source_name);

// A deployment manifest: optional `arch` (a string, or an array of distinct
// strings: every plan is compiled for each) and `policy` (a string: the path
// as written, relative to the manifest), then one or more [[plan]] tables
// with the keys of a problem file, of which k, rows and width are required.
struct Manifest {
  std::vector<std::string> archs;  // empty: none given
  std::optional<std::string> policy;
  std::vector<ProblemSpec> plans;
};
Manifest parse_manifest_toml(std::string_view text, const std::string& source_name);

// An experiment file (`sgtopk simulate --grid`): one [grid] table of dotted
// policy keys, each an array of the values to try; every combination (at most
// kMaxPolicyGridPoints, the first key varying slowest) is one policy over
// `base`, validated as a policy file is. Grid problems are reported together
// (SGTOPK_ERROR_INVALID_ARGUMENT); a combination the policy rules refuse
// throws the policy parser's error (SGTOPK_ERROR_POLICY), which names the
// grid point and the key.
inline constexpr size_t kMaxPolicyGridPoints = 256;
struct PolicyGridPoint {
  std::string label;  // "key=value key=value"
  detail::Policy policy;
};
std::vector<PolicyGridPoint> parse_policy_grid(std::string_view text, const std::string& source_name,
                                               const detail::Policy& base);

}  // namespace sgtopk::cli

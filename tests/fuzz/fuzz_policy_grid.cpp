// Fuzz target: the experiment-file parser of `sgtopk simulate --grid`
// (sgtopk::cli::parse_policy_grid, tools/cli/config_files.h): returns 1 to
// kMaxPolicyGridPoints policies, each with a distinct non-empty label and
// each passing the policy rules (validate_policy), or throws
// Error(SGTOPK_ERROR_INVALID_ARGUMENT) for the grid or Error(SGTOPK_ERROR_POLICY)
// for a combination, with a message; anything else is a finding.
#include <sgtopk/sgtopk.h>

#include <exception>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "runtime/error.h"
#include "runtime/policy.h"
#include "tools/cli/config_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const char* target = "policy_grid";
  try {
    const auto grid = sgtopk::cli::parse_policy_grid(text, "<fuzz>", sgtopk::detail::Policy::defaults());
    if (grid.empty() || grid.size() > sgtopk::cli::kMaxPolicyGridPoints)
      sgtopk_fuzz::finding(target, "returned " + std::to_string(grid.size()) + " policies");
    std::set<std::string> labels;
    for (const auto& point : grid) {
      if (point.label.empty() || !labels.insert(point.label).second)
        sgtopk_fuzz::finding(target, "an empty or repeated label: '" + point.label + "'");
      try {
        sgtopk::detail::validate_policy(point.policy, "<fuzz grid point>");
      } catch (const sgtopk::detail::Error& e) {
        sgtopk_fuzz::finding(target, std::string("a returned policy breaks the rules: ") + e.what());
      }
    }
  } catch (const sgtopk::detail::Error& e) {
    if (e.status() != SGTOPK_ERROR_INVALID_ARGUMENT && e.status() != SGTOPK_ERROR_POLICY)
      sgtopk_fuzz::finding(target, std::string("threw ") + sgtopk_status_string(e.status()) + ": " + e.what());
    if (std::string_view(e.what()).empty()) sgtopk_fuzz::finding(target, "threw an empty message");
  } catch (const std::exception& e) {
    sgtopk_fuzz::finding(target, std::string("threw a non-sgtopk exception: ") + e.what());
  } catch (...) {
    sgtopk_fuzz::finding(target, "threw a non-std exception");
  }
  return 0;
}

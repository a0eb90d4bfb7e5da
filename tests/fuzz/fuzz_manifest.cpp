// Fuzz target: the CLI's deployment-manifest parser
// (sgtopk::cli::parse_manifest_toml, tools/cli/config_files.h): returns a
// Manifest with at least one plan, each with k, rows and width, only SGTOPK_*
// flag bits, no empty string and no arch twice, or throws Error(SGTOPK_ERROR_INVALID_ARGUMENT).
#include "fuzz_cli_toml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sgtopk_fuzz::fuzz_cli_toml(
      "manifest", data, size,
      [](std::string_view text) { return sgtopk::cli::parse_manifest_toml(text, "<fuzz>"); },
      [](const sgtopk::cli::Manifest& m) {
        if (m.plans.empty()) sgtopk_fuzz::finding("manifest", "a manifest without plans was accepted");
        bool empty_arch = false;
        for (size_t i = 0; i < m.archs.size(); ++i) {
          empty_arch |= m.archs[i].empty();
          for (size_t j = 0; j < i; ++j)
            if (m.archs[j] == m.archs[i]) sgtopk_fuzz::finding("manifest", "an arch listed twice was accepted");
        }
        if (empty_arch || (m.policy && m.policy->empty()))
          sgtopk_fuzz::finding("manifest", "an empty arch or policy was accepted");
        for (const sgtopk::cli::ProblemSpec& p : m.plans) {
          if (!p.k || !p.rows || !p.width)
            sgtopk_fuzz::finding("manifest", "a plan without k, rows or width was accepted (line " +
                                                 std::to_string(p.line) + ")");
          sgtopk_fuzz::check_problem_spec("manifest", p);
        }
      });
}

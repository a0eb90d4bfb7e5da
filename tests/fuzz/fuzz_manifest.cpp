// Fuzz target: the CLI's deployment-manifest parser
// (sgtopk::cli::parse_manifest_toml, tools/cli/config_files.h): returns a
// Manifest with at least one plan, each with k, rows and width, only SGTOPK_*
// flag bits and no empty string, or throws Error(SGTOPK_ERROR_INVALID_ARGUMENT).
#include "fuzz_cli_toml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sgtopk_fuzz::fuzz_cli_toml(
      "manifest", data, size,
      [](std::string_view text) { return sgtopk::cli::parse_manifest_toml(text, "<fuzz>"); },
      [](const sgtopk::cli::Manifest& m) {
        if (m.plans.empty()) sgtopk_fuzz::finding("manifest", "a manifest without plans was accepted");
        if ((m.arch && m.arch->empty()) || (m.policy && m.policy->empty()))
          sgtopk_fuzz::finding("manifest", "an empty arch or policy was accepted");
        for (const sgtopk::cli::ProblemSpec& p : m.plans) {
          if (!p.k || !p.rows || !p.width)
            sgtopk_fuzz::finding("manifest", "a plan without k, rows or width was accepted (line " +
                                                 std::to_string(p.line) + ")");
          sgtopk_fuzz::check_problem_spec("manifest", p);
        }
      });
}

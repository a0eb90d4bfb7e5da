// Fuzz target: the CLI's problem-file parser (sgtopk::cli::parse_problem_toml,
// tools/cli/config_files.h): returns a ProblemSpec whose flags are only
// SGTOPK_* bits and whose strings are not empty, or throws
// Error(SGTOPK_ERROR_INVALID_ARGUMENT).
#include "fuzz_cli_toml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sgtopk_fuzz::fuzz_cli_toml(
      "problem_file", data, size,
      [](std::string_view text) { return sgtopk::cli::parse_problem_toml(text, "<fuzz>"); },
      [](const sgtopk::cli::ProblemSpec& spec) { sgtopk_fuzz::check_problem_spec("problem_file", spec); });
}

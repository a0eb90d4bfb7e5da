// The pieces the `sgtopk` subcommands share: exit statuses, the strict
// integer validator, the problem options, one plan request, bounded file
// reading. Each subcommand is declared by an add_* function that adds its
// CLI11 subcommand (options, help) and returns what runs it after the parse.
#pragma once

#include <sgtopk/sgtopk.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace sgtopk::cli {

// 0: done; 1: a failure (compile, launch, store, output); 2: bad usage or input.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Something the user gave is wrong (an option's value, a file): exit 2, the
// message after "sgtopk <command>: ".
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A decimal integer (an optional '-', then digits: no base prefix, sign '+',
// spaces, exponent or suffix) in lo..hi. Added with ->transform(), it
// rewrites the option's text to its canonical form, so CLI11's conversion
// (strtoll, base 0) reads it as written: "010" is ten, not eight. Out of range: "<label>=<v> is invalid:
// <label> must be in lo..hi", the library's own wording.
CLI::Validator integer_in(int64_t lo, int64_t hi, const std::string& label);

// The problem options a subcommand takes (plan: all; selftest: all but
// --out-pitch; simulate: --k, --rows and --width).
struct ProblemOptions {
  int64_t k = 0, rows = 0, width = 0, pitch = 0, out_pitch = 0;
  bool values = false, sorted = false, starts = false, route_stats = false, index_offsets = false;
  int64_t page_size = 0, page_table_pitch = 0;
  CLI::Option *k_opt = nullptr, *rows_opt = nullptr, *width_opt = nullptr, *pitch_opt = nullptr,
              *out_pitch_opt = nullptr, *page_size_opt = nullptr, *page_table_pitch_opt = nullptr;

  enum class Set { shape, shape_pitch_flags, all };
  // Declares them on `app` in the "Problem" group; the defaults are for the
  // help text.
  void add(CLI::App* app, Set set, int64_t default_k, int64_t default_rows, int64_t default_width);
  // The options given on the command line, over `p` (flags are added).
  void apply(sgtopk_problem* p) const;
};

// One plan request: the problem plus how to compile it.
struct Request {
  std::string name = "cli";
  sgtopk_problem problem = SGTOPK_PROBLEM_INIT;
  std::string arch;
  int device = -1;
  std::string policy_file;
  std::string family;
};
sgtopk_compile_options options_for(const Request& r);

// The "Compile" options of the commands that run on a GPU (selftest, replay):
// --device, --policy, --family, into `r`.
void add_gpu_compile_options(CLI::App* sub, Request& r);

// A manifest, problem or policy file's text: a regular file of at most
// 1 MiB (as a policy file), opened without blocking (a FIFO is refused, not waited on).
// Throws UsageError naming the path.
std::string read_config_file(const std::string& path);

// Every subcommand: adds itself to `app`; the function runs it.
using Runner = std::function<int()>;
Runner add_plan(CLI::App& app);
Runner add_prewarm(CLI::App& app);
Runner add_policy(CLI::App& app);
Runner add_env(CLI::App& app);
Runner add_selftest(CLI::App& app);
Runner add_simulate(CLI::App& app);
Runner add_cache(CLI::App& app);
Runner add_replay(CLI::App& app);
Runner add_capture(CLI::App& app);

}  // namespace sgtopk::cli

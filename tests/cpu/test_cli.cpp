// The `sgtopk` command-line tool, run as a subprocess: plan, prewarm (cold,
// warm, after a corrupted entry, bad manifests, plans not stored), env,
// selftest without a GPU, simulate, the degraded cache modes, and the option
// parsing (help, range checks, unused options, problem-file overrides, write
// errors). Each test has its own cache directory, passed
// in the command's environment.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "runtime/knobs.h"
#include "runtime/policy.h"
#include "support/test_support.h"

#ifndef SGTOPK_CLI_PATH
#error "SGTOPK_CLI_PATH must name the built sgtopk CLI"
#endif
#ifndef SGTOPK_SOURCE_DIR
#error "SGTOPK_SOURCE_DIR must name the source tree"
#endif

namespace fs = std::filesystem;

namespace {

using sgtopk::testing::contains;
using sgtopk::testing::read_text;
using sgtopk::testing::write_text;
using sgtopk::testing::files_under;




std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) out.push_back(line);
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> warning_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(text))
    if (contains(lower(line), "warning")) out.push_back(line);
  return out;
}

std::vector<fs::path> cache_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& p : files_under(dir))
    if (p.extension() == ".sgtopkbin") out.push_back(p);
  return out;
}

struct CliResult {
  int exit_code = -1;
  std::string out, err;
  std::string all() const { return out + err; }
  std::string show() const {
    return "exit " + std::to_string(exit_code) + "\n--- stdout ---\n" + out + "--- stderr ---\n" + err;
  }
};

// "prewarm summary: N plans: H cache hits, C compiled, F failed, S not stored"
struct Summary {
  bool found = false;
  int plans = -1, hits = -1, compiled = -1, failed = -1, not_stored = -1;
};

Summary prewarm_summary(const std::string& out) {
  static const std::regex re(
      R"(prewarm summary: (\d+) plans: (\d+) cache hits, (\d+) compiled, (\d+) failed, (\d+) not stored)");
  std::smatch m;
  Summary s;
  if (std::regex_search(out, m, re)) {
    s.found = true;
    s.plans = std::stoi(m[1]);
    s.hits = std::stoi(m[2]);
    s.compiled = std::stoi(m[3]);
    s.failed = std::stoi(m[4]);
    s.not_stored = std::stoi(m[5]);
  }
  return s;
}

// Distinct cache keys named by the per-plan lines of a prewarm run.
std::set<std::string> prewarm_keys(const std::string& out) {
  static const std::regex re(R"(key ([0-9a-f]{32}))");
  std::set<std::string> keys;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it)
    keys.insert((*it)[1].str());
  return keys;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "sgtopk_cli_XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr) << "mkdtemp failed";
    root_ = templ;
    cache_ = root_ / "cache";
    dumps_ = root_ / "dumps";
    ASSERT_TRUE(fs::exists(SGTOPK_CLI_PATH)) << "the CLI is not built: " << SGTOPK_CLI_PATH;
  }

  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_directory()) ::chmod(it->path().c_str(), 0755);
    fs::remove_all(root_, ec);
  }

  // Runs `sgtopk <args>` with this test's cache and dump directories (or
  // `cache_dir` when given) and any `env` assignments, capturing its output.
  // `stdout_to`, when given, replaces the captured standard output (/dev/full).
  CliResult run(const std::string& args, const std::string& env = "", const fs::path& cache_dir = {},
                const std::string& stdout_to = "") {
    const fs::path out = stdout_to.empty() ? root_ / ("out." + std::to_string(runs_)) : fs::path(stdout_to);
    const fs::path err = root_ / ("err." + std::to_string(runs_));
    ++runs_;
    const std::string command =
        "timeout " + std::to_string(timeout_s_) + " env -u SGTOPK_KEEP_SOURCES -u SGTOPK_DISABLE_DISK_CACHE SGTOPK_VERBOSE=1 SGTOPK_CACHE_DIR=" +
        shell_quote((cache_dir.empty() ? cache_ : cache_dir).string()) + " SGTOPK_DUMP_DIR=" + shell_quote(dumps_.string()) +
        " " + env + " " + shell_quote(SGTOPK_CLI_PATH) + " " + args + " >" + shell_quote(out.string()) + " 2>" +
        shell_quote(err.string()) + " </dev/null";
    const int status = std::system(command.c_str());
    CliResult r;
    r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    if (stdout_to.empty()) r.out = read_text(out);
    r.err = read_text(err);
    return r;
  }

  // A small manifest of our own, using every manifest key, with a policy
  // file next to it (two workers per SM, 4-byte loads: the latter changes the
  // kernel, so the policy's effect shows in the cache key). Returns its path.
  fs::path own_manifest() {
    write_text(root_ / "policy.toml", "# test policy\n[select.direct]\nworkers_per_sm = 2\nvector_bytes = 4\n");
    write_text(root_ / "deploy.toml",
               "# test deployment manifest\n"
               "arch = \"sm_90\"\n"
               "policy = \"policy.toml\"\n"
               "\n"
               "[[plan]]\n"
               "name = \"indexer-2048\"\n"
               "k = 2048\n"
               "rows = 64\n"
               "width = 100000\n"
               "\n"
               "[[plan]]\n"
               "name = \"short-sorted\"\n"
               "k = 64\n"
               "rows = 16\n"
               "width = 4096\n"
               "flags = [\"values\", \"sorted\"]\n"
               "\n"
               "[[plan]]\n"
               "name = \"windows\"\n"
               "k = 512\n"
               "rows = 32\n"
               "width = 65536\n"
               "pitch = 70000\n"
               "out_pitch = 520\n"
               "flags = [\"starts\"]\n"
               "family = \"direct_exact\"\n");
    return root_ / "deploy.toml";
  }

  // configs/deploy-example.toml when it exists, else own_manifest().
  fs::path deployment_manifest() {
    const fs::path example = fs::path(SGTOPK_SOURCE_DIR) / "configs" / "deploy-example.toml";
    if (fs::exists(example)) return example;
    return own_manifest();
  }

  fs::path root_, cache_, dumps_;
  int runs_ = 0;
  int timeout_s_ = 600;  // each command's limit (exit 124 past it)
};

}  // namespace

// ------------------------------------------------------------------ plan ----

TEST_F(CliTest, PlanSaysHowKChangedTheViewAndTheFrontier) {
  // K = 256: the confidence raises the ranks, and the view's blocks halve for them.
  const CliResult small = run("plan --k 256 --rows 4096 --width 262144 --arch sm_90 --family sampled");
  ASSERT_EQ(small.exit_code, 0) << small.show();
  EXPECT_TRUE(contains(small.out, "derived:   view stride 32, blocks of 4 [select.sampled.view_block 16 halved for "
                                  "min_view_blocks 4], sample ranks q0 17 / q1 19 [select.sampled.primary_confidence 3 "
                                  "raised the margins' 12 / 14]\n"))
      << small.show();
  EXPECT_FALSE(contains(small.out, "derived:   frontier")) << small.show();
  // K = 4096: the excess cap lowers the ranks; the shared frontier grows to 2 x K.
  const CliResult large = run("plan --k 4096 --rows 4096 --width 262144 --arch sm_90 --family sampled");
  ASSERT_EQ(large.exit_code, 0) << large.show();
  EXPECT_TRUE(contains(large.out, "derived:   view stride 32, blocks of 16, sample ranks q0 174 / q1 206 "
                                  "[select.sampled.primary_excess_sigmas 4 lowered the margins' 192 / 224]\n"))
      << large.show();
  // K = 2048: neither moves them.
  const CliResult middle = run("plan --k 2048 --rows 4096 --width 262144 --arch sm_90 --family sampled");
  ASSERT_EQ(middle.exit_code, 0) << middle.show();
  EXPECT_TRUE(contains(middle.out, "derived:   view stride 32, blocks of 16, sample ranks q0 96 / q1 112\n")) << middle.show();
  EXPECT_TRUE(contains(large.out, "derived:   frontier 8192 shared entries [select.direct.frontier_shared_per_k 2 x K, "
                                  "up to frontier_shared_limit 8192; frontier_shared_capacity 4096]\n"))
      << large.show();
  // The direct family has no view and keeps its frontier.
  const CliResult direct = run("plan --k 4096 --rows 4096 --width 262144 --arch sm_90 --family direct_exact");
  ASSERT_EQ(direct.exit_code, 0) << direct.show();
  EXPECT_FALSE(contains(direct.out, "derived:")) << direct.show();
}

TEST_F(CliTest, PlanPrintsThePlanAndThePolicy) {
  const CliResult r = run("plan --k 2048 --rows 200 --width 20000 --arch sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "family:")) << r.show();
  EXPECT_TRUE(contains(r.out, "direct_exact")) << r.show();
  EXPECT_TRUE(contains(r.out, "because:   neither sampled (width 20000 vs select.dispatch.sampled_min_width 32768"))
      << r.show();
  EXPECT_TRUE(contains(r.out, "grid")) << r.show();
  EXPECT_TRUE(contains(r.out, "workspace")) << r.show();
  EXPECT_TRUE(std::regex_search(r.out, std::regex("cache key: [0-9a-f]{32}"))) << r.show();
  EXPECT_TRUE(contains(r.out, "sm_90")) << r.show();
  EXPECT_TRUE(contains(r.out, "K=2048")) << r.show();
  EXPECT_TRUE(contains(r.out, "[select.direct]")) << r.show();
  EXPECT_TRUE(warning_lines(r.all()).empty()) << r.show();
  // The kernel went into this test's cache.
  EXPECT_EQ(cache_entries(cache_).size(), 1u) << r.show();
}

TEST_F(CliTest, PlanDescribesAFilterPlan) {
  const CliResult r = run("plan --filter --rows 8 --width 32000 --arch sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "problem:   filter rows=8 width=32000")) << r.show();
  // 8 rows of 32000: 15 segments a row (filter.split.min_segment_width 2048).
  EXPECT_TRUE(contains(r.out, "family:    filter_split")) << r.show();
  EXPECT_TRUE(contains(r.out, "filter.split.min_segments")) << r.show();
  EXPECT_TRUE(contains(r.out, "kThreads = 512")) << r.show();
  EXPECT_TRUE(contains(r.out, "kSegments = 15")) << r.show();
  const CliResult many = run("plan --filter --rows 4096 --width 32000 --arch sm_90");
  ASSERT_EQ(many.exit_code, 0) << many.show();
  EXPECT_TRUE(contains(many.out, "family:    filter_row")) << many.show();
  EXPECT_TRUE(contains(many.out, "filter.block_threads 512")) << many.show();
  EXPECT_TRUE(contains(r.out, "kSampleSize = 2048")) << r.show();
  EXPECT_TRUE(contains(r.out, "dtype=f32")) << r.show();
  // --dtype: the logits' element type, in the problem and the kernel's Config.
  const CliResult bf16 = run("plan --filter --dtype bf16 --rows 8 --width 32000 --arch sm_90");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.show();
  EXPECT_TRUE(contains(bf16.out, "problem:   filter rows=8 width=32000 pitch=32000 dtype=bf16")) << bf16.show();
  EXPECT_TRUE(contains(bf16.out, "kDtype = 1")) << bf16.show();
  const CliResult f16 = run("plan --filter --dtype f16 --rows 8 --width 32000 --arch sm_90");
  ASSERT_EQ(f16.exit_code, 0) << f16.show();
  EXPECT_TRUE(contains(f16.out, "dtype=f16")) << f16.show();
  const CliResult bad = run("plan --filter --dtype f64 --rows 8 --width 32000 --arch sm_90");
  EXPECT_NE(bad.exit_code, 0) << bad.show();
  // Select takes f32 only: the library says so.
  const CliResult select = run("plan --dtype bf16 --arch sm_90");
  EXPECT_NE(select.exit_code, 0) << select.show();
  EXPECT_TRUE(contains(select.err, "dtype=1 is invalid")) << select.show();
  // K is the candidate output's capacity: --candidates K, not --k.
  const CliResult k = run("plan --filter --k 50 --rows 8 --width 32000 --arch sm_90");
  EXPECT_NE(k.exit_code, 0) << k.show();
  EXPECT_TRUE(contains(k.err, "candidate output")) << k.show();
  EXPECT_TRUE(contains(r.out, "kOutputs = 1")) << r.show();  // the mask alone
  // The outputs: the mask with the candidates and the sample, or without the mask.
  const CliResult outputs = run("plan --filter --candidates 64 --sample --rows 8 --width 32000 --arch sm_90");
  ASSERT_EQ(outputs.exit_code, 0) << outputs.show();
  EXPECT_TRUE(contains(outputs.out, "+mask +candidates(K=64 out_pitch=64) +sample")) << outputs.show();
  EXPECT_TRUE(contains(outputs.out, "kOutputs = 7")) << outputs.show();
  const CliResult no_mask = run("plan --filter --sample --no-mask --rows 8 --width 32000 --arch sm_90");
  ASSERT_EQ(no_mask.exit_code, 0) << no_mask.show();
  EXPECT_TRUE(contains(no_mask.out, "dtype=f32 +sample")) << no_mask.show();
  EXPECT_TRUE(contains(no_mask.out, "kOutputs = 4")) << no_mask.show();
  const CliResult nothing = run("plan --filter --no-mask --rows 8 --width 32000 --arch sm_90");
  EXPECT_NE(nothing.exit_code, 0) << nothing.show();
  EXPECT_TRUE(contains(nothing.err, "no output")) << nothing.show();
  const CliResult too_many = run("plan --filter --candidates 9000 --rows 8 --width 32000 --arch sm_90");
  EXPECT_NE(too_many.exit_code, 0) << too_many.show();
  EXPECT_TRUE(contains(too_many.err, "K=9000 is invalid")) << too_many.show();
}

TEST_F(CliTest, PolicyPrintsTheDefaultsAndAnOverlay) {
  const CliResult defaults = run("policy");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.show();
  EXPECT_EQ(defaults.out, sgtopk::detail::Policy::defaults().to_toml());

  const fs::path file = fs::path(::testing::TempDir()) / "cli-policy-overlay.toml";
  write_text(file, "[select.direct]\nloads_in_flight = 4\n");
  const fs::path out = fs::path(::testing::TempDir()) / "cli-policy-out.toml";
  const CliResult overlay = run("policy --policy " + shell_quote(file.string()) + " --out " + shell_quote(out.string()));
  ASSERT_EQ(overlay.exit_code, 0) << overlay.show();
  EXPECT_TRUE(contains(read_text(out), "loads_in_flight = 4")) << read_text(out);
  EXPECT_TRUE(contains(read_text(out), "Differs from the compiled-in defaults in: select.direct.loads_in_flight"));

  write_text(file, "[select.direct]\nloads_in_flight = 0\n");
  const CliResult bad = run("policy --policy " + shell_quote(file.string()));
  EXPECT_NE(bad.exit_code, 0) << bad.show();
  EXPECT_TRUE(contains(bad.err, "select.direct.loads_in_flight = 0 is out of range")) << bad.show();
}

TEST_F(CliTest, PlanRejectsABadProblem) {
  const CliResult r = run("plan --k 0 --rows 64 --width 100000 --arch sm_90");
  EXPECT_NE(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.err, "K=0 is invalid: K must be in 1..8192")) << r.show();
}

// `sgtopk help` (asked for) goes to standard output and exits 0; a missing
// command is a usage error: the same overview on standard error, exit 2.
TEST_F(CliTest, UsageNamesEveryProblemFlag) {
  const CliResult r = run("help");
  EXPECT_EQ(r.exit_code, 0) << r.show();
  for (const char* flag : {"--values", "--sorted", "--starts", "--route-stats", "--allow-memory-only"})
    EXPECT_TRUE(contains(r.out, flag)) << flag << "\n" << r.show();
  const CliResult none = run("");
  EXPECT_EQ(none.exit_code, 2) << none.show();
  EXPECT_TRUE(contains(none.err, "--route-stats")) << none.show();
}

// Every subcommand answers --help (and `sgtopk help COMMAND`) with its own
// usage and options, on standard output, exit 0.
TEST_F(CliTest, EverySubcommandHasHelp) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"plan", {"--k", "--out-pitch", "--arch", "--device", "--family", "PROBLEM.toml"}},
      {"prewarm", {"MANIFEST.toml", "--jobs", "--allow-memory-only", "not stored"}},
      {"policy", {"--policy", "--out"}},
      {"env", {}},
      {"selftest", {"--k", "--device", "--route-stats"}},
      {"simulate", {"--k", "--family", "--causal"}},
  };
  for (const auto& [command, options] : commands) {
    for (const std::string& args : {command + " --help", "help " + command, command + " -h"}) {
      const CliResult r = run(args);
      EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.show();
      EXPECT_TRUE(contains(r.out, "Usage: sgtopk " + command)) << args << "\n" << r.show();
      for (const std::string& option : options) EXPECT_TRUE(contains(r.out, option)) << args << ": " << option << "\n" << r.show();
    }
  }
  EXPECT_FALSE(contains(run("plan --help").out, "--jobs")) << "plan's help names prewarm's options";
  const CliResult unknown = run("help frobnicate");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.show();
  EXPECT_TRUE(contains(unknown.err, "frobnicate")) << unknown.show();
}

// Options a subcommand does not use are errors that name them (before any
// compile: the manifest's one plan would fail if it were compiled).
TEST_F(CliTest, OptionsASubcommandDoesNotUseAreRejected) {
  write_text(root_ / "k0.toml", "arch = \"sm_90\"\n[[plan]]\nname = \"zero\"\nk = 0\nrows = 4\nwidth = 1000\n");
  const std::string manifest = shell_quote((root_ / "k0.toml").string());
  for (const auto& [args, named] : std::vector<std::pair<std::string, std::string>>{
           {"prewarm " + manifest + " --k 5", "--k"},
           {"prewarm " + manifest + " --values", "--values"},
           {"prewarm " + manifest + " --device 0", "--device"},
           {"simulate --rows 4 --width 1000 --k 8 --pitch 2000", "--pitch"},
           {"simulate --rows 4 --width 1000 --k 8 --values", "--values"},
           {"selftest --arch sm_90", "--arch"},
           {"selftest --jobs 2", "--jobs"},
           {"env --jobs 2", "--jobs"},
           {"policy --k 64", "--k"},
           {"plan --k 64 --rows 4 --width 4096 --causal", "--causal"},
           {"plan --k 64 --rows 4 --width 4096 a.toml b.toml", "b.toml"},
       }) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.show();
    EXPECT_TRUE(contains(r.err, named)) << args << "\n" << r.show();
    EXPECT_FALSE(contains(r.out, "prewarm summary")) << args << "\n" << r.show();
  }
  // Two targets at once: --arch and --device exclude each other.
  const CliResult both = run("plan --k 64 --rows 4 --width 4096 --arch sm_90 --device 0");
  EXPECT_EQ(both.exit_code, 2) << both.show();
  EXPECT_TRUE(contains(both.err, "--arch and --device")) << both.show();
  EXPECT_TRUE(cache_entries(cache_).empty());
}

// Every number is range-checked before it is used: nothing aborts
// (bad_alloc, system_error), nothing runs unbounded, each message names the
// option and its range. `timeout` bounds the old unbounded run.
TEST_F(CliTest, NumbersAreRangeCheckedAndNothingAborts) {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"simulate --width 1099511627776", "--width: width=1099511627776 is invalid: width must be in 1..1073741824"},
           {"simulate --width 2^40", "--width: '2^40' is not a decimal integer"},
           {"simulate --rows 1099511627776 --width 1000", "rows must be in 1..2147483647"},
           {"simulate --rows 2147483647 --width 1000", "over simulate's limit"},
           {"simulate --k 9000", "K=9000 is invalid: K must be in 1..8192"},
           {"simulate --k 0x10", "'0x10' is not a decimal integer"},
           {"prewarm " + shell_quote(deployment_manifest().string()) + " --jobs 100000",
            "--jobs: jobs=100000 is invalid: jobs must be in 1..256"},
           {"prewarm " + shell_quote(deployment_manifest().string()) + " --jobs 0", "jobs must be in 1..256"},
           {"plan --k 64 --rows 4 --width 4096 --device 1024", "device must be in 0..1023"},
           {"plan --k 64 --rows 4 --width 4096 --pitch -1", "pitch must be in 0.."},
           {"plan --k 64 --rows 4 --width 4096 --out-pitch 99999999999999999999", "out_pitch must be in 0.."},
           {"plan --rows 1e3", "'1e3' is not a decimal integer"},
           {"selftest --rows 2147483647", "over the selftest's limit"},
           {"selftest --pitch 4294967296", "pitch must be in 0..2147483647"},
       }) {
    timeout_s_ = 60;  // each is refused at once
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.show();
    EXPECT_TRUE(contains(r.err, message)) << args << "\n" << r.show();
    EXPECT_FALSE(contains(r.err, "terminate")) << args << "\n" << r.show();
  }
  // Decimal as written: a leading zero is not octal.
  const CliResult decimal = run("simulate --rows 010 --width 3000 --k 64 --family uniform");
  ASSERT_EQ(decimal.exit_code, 0) << decimal.show();
  EXPECT_TRUE(std::regex_search(decimal.out, std::regex(R"(\nuniform +10 )"))) << decimal.show();
  EXPECT_TRUE(cache_entries(cache_).empty());
}

// A problem file's keys, then the command line over them.
TEST_F(CliTest, CommandLineOptionsOverrideTheProblemFile) {
  write_text(root_ / "problem.toml",
             "[problem]\nname = \"p\"\nk = 64\nrows = 8\nwidth = 4096\npitch = 5000\nflags = [\"values\"]\n"
             "family = \"sampled\"\n");
  const CliResult r = run("plan " + shell_quote((root_ / "problem.toml").string()) +
                          " --rows 4 --pitch 8192 --out-pitch 80 --family direct_exact --sorted --arch sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "select K=64 rows=4 width=4096 pitch=8192 out_pitch=80 +values +sorted")) << r.show();
  EXPECT_TRUE(contains(r.out, "family:    direct_exact")) << r.show();

  // The file's k, rows and width, or the options: a missing one is named.
  write_text(root_ / "partial.toml", "rows = 4\nwidth = 4096\n");
  const CliResult partial = run("plan " + shell_quote((root_ / "partial.toml").string()) + " --arch sm_90");
  EXPECT_EQ(partial.exit_code, 2) << partial.show();
  EXPECT_TRUE(contains(partial.err, "no k")) << partial.show();
}

// Keys of the wrong type are errors naming the file, line, column and
// dotted key, never silently dropped (which would prewarm a kernel the engine
// never asks for). Nothing is compiled.
TEST_F(CliTest, WrongTypedManifestKeysAreRejectedWithFileLineAndKey) {
  write_text(root_ / "typed.toml",
             "arch = 80\n"
             "policy = 5\n"
             "[[plan]]\n"
             "name = \"a\"\n"
             "k = 64\n"
             "rows = 4\n"
             "width = 4096\n"
             "flags = \"values\"\n"
             "[[plan]]\n"
             "name = \"b\"\n"
             "k = 64\n"
             "rows = 4.0\n"
             "flags = [\"values\", 3]\n");
  const std::string file = (root_ / "typed.toml").string();
  const CliResult r = run("prewarm " + shell_quote(file));
  EXPECT_EQ(r.exit_code, 2) << r.show();
  for (const std::string& line : {file + ":1:8: arch: expected a string, got an integer (80)",
                                  file + ":2:10: policy: expected a string, got an integer (5)",
                                  file + ":8:9: plan[0].flags: expected an array of strings",
                                  file + ":9:1: plan[1]: the required key 'width' is missing",
                                  file + ":12:8: plan[1].rows: expected an integer, got a floating-point number",
                                  file + ":13:20: plan[1].flags[1]: expected a flag name"})
    EXPECT_TRUE(contains(r.err, line)) << line << "\n" << r.show();
  EXPECT_FALSE(contains(r.out, "prewarm summary")) << r.show();
  EXPECT_TRUE(cache_entries(cache_).empty());

  // Not ASCII (a comment in Latin-1 or UTF-8): refused before toml++ reads it.
  write_text(root_ / "latin.toml", "arch = \"sm_90\"\n# caf\xc3\xa9\n[[plan]]\nname = \"zero\"\nk = 0\nrows = 4\nwidth = 1000\n");
  const CliResult latin = run("prewarm " + shell_quote((root_ / "latin.toml").string()));
  EXPECT_EQ(latin.exit_code, 2) << latin.show();
  EXPECT_TRUE(contains(latin.err, "latin.toml:2:6: byte 0xc3 is not ASCII")) << latin.show();

  write_text(root_ / "plan-table.toml", "arch = \"sm_90\"\n[plan]\nk = 64\n");
  const CliResult table = run("prewarm " + shell_quote((root_ / "plan-table.toml").string()));
  EXPECT_EQ(table.exit_code, 2) << table.show();
  EXPECT_TRUE(contains(table.err, ":2:1: plan: expected [[plan]] tables, got a table")) << table.show();
}

TEST_F(CliTest, WrongTypedProblemFileKeysAreRejectedWithFileLineAndKey) {
  write_text(root_ / "problem.toml",
             "[problem]\nk = 64\nrows = 4\nwidth = 4096\nflags = \"values\"\nfamily = 5\npitch = \"4096\"\n");
  const std::string file = (root_ / "problem.toml").string();
  const CliResult r = run("plan " + shell_quote(file) + " --arch sm_90");
  EXPECT_EQ(r.exit_code, 2) << r.show();
  for (const std::string& line : {file + ":5:9: problem.flags: expected an array of strings",
                                  file + ":6:10: problem.family: expected a string, got an integer (5)",
                                  file + ":7:9: problem.pitch: expected an integer, got a string"})
    EXPECT_TRUE(contains(r.err, line)) << line << "\n" << r.show();
  EXPECT_FALSE(contains(r.out, "family:")) << r.show();

  // Not a regular file: refused, not waited on.
  ASSERT_EQ(::mkfifo((root_ / "fifo.toml").c_str(), 0600), 0);
  timeout_s_ = 30;  // the old CLI waited on the FIFO for ever
  const CliResult fifo = run("plan " + shell_quote((root_ / "fifo.toml").string()));
  EXPECT_EQ(fifo.exit_code, 2) << fifo.show();
  EXPECT_TRUE(contains(fifo.err, "not a regular file")) << fifo.show();
}

// A full standard output is an error, not a silent exit 0.
TEST_F(CliTest, WriteErrorsAreReported) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (const char* args : {"env", "version", "help", "plan --help", "policy",
                           "simulate --rows 4 --width 3000 --k 64 --family uniform"}) {
    const CliResult r = run(args, "", {}, "/dev/full");
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.show();
    EXPECT_TRUE(contains(r.err, "cannot write to standard output")) << args << "\n" << r.show();
  }
}

// The route-statistics flag, from a manifest and from the command line: the
// same problem, so the plan is the prewarmed kernel (one compile in all).
TEST_F(CliTest, RouteStatsFlagInAManifestAndOnTheCommandLine) {
  write_text(root_ / "stats.toml",
             "arch = \"sm_90\"\n[[plan]]\nname = \"stats\"\nk = 64\nrows = 4\nwidth = 4096\n"
             "flags = [\"values\", \"route_stats\"]\n");
  const CliResult warm = run("prewarm " + shell_quote((root_ / "stats.toml").string()) + " --jobs 1");
  ASSERT_EQ(warm.exit_code, 0) << warm.show();
  EXPECT_TRUE(contains(warm.out, "1 plans: 0 cache hits, 1 compiled, 0 failed")) << warm.show();

  const CliResult r = run("plan --k 64 --rows 4 --width 4096 --values --route-stats --arch sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "+values +route_stats")) << r.show();
  EXPECT_TRUE(contains(r.out, "kRouteStats = true")) << r.show();
  EXPECT_TRUE(contains(r.out, "(disk cache)")) << "not the manifest's kernel:\n" << r.show();
}

TEST_F(CliTest, PlanRejectsAnUnknownOption) {
  const CliResult r = run("plan --frobnicate 3");
  EXPECT_EQ(r.exit_code, 2) << r.show();
  EXPECT_TRUE(contains(r.err, "--frobnicate")) << r.show();
}

// BUG (tools/sgtopk_cli.cpp, parse_options): `--k` is read as int64 and
// narrowed with static_cast<int32_t>, so --k 4294969344 (2^32 + 2048) silently
// becomes K=2048 and the plan "succeeds" for a K the user never asked for.
// The same narrowing applies to `k` in a manifest/problem table
// (request_from_table) and to --device. The contract: bad input never causes a
// wrong answer silently.
TEST_F(CliTest, PlanRejectsAKThatDoesNotFitInt32) {
  const CliResult r = run("plan --k 4294969344 --rows 1 --width 4096 --arch sm_90");
  const std::string first_line = lines_of(r.out).empty() ? "" : lines_of(r.out).front();
  EXPECT_NE(r.exit_code, 0) << "--k 4294969344 was accepted; the CLI printed: " << first_line;
  EXPECT_FALSE(contains(first_line, "K=2048")) << "--k 4294969344 was silently narrowed to K=2048: " << first_line;
}

// --------------------------------------------------------------- prewarm ----

// ------------------------------------------------------------------ cache ----

// `sgtopk cache`: stat and verify after a compile, a damaged entry named by
// verify (exit 1), prune and clear, and the error paths (a missing
// directory, a missing --max-bytes, no action: exit 2 with a message).
TEST_F(CliTest, CacheStatVerifyPruneClear) {
  ASSERT_EQ(run("plan --k 64 --rows 4 --width 4096 --arch sm_90").exit_code, 0);
  ASSERT_EQ(run("plan --k 64 --rows 400 --width 40000 --arch sm_90").exit_code, 0);
  const auto entries = cache_entries(cache_);
  ASSERT_EQ(entries.size(), 2u);

  const CliResult stat = run("cache stat");
  ASSERT_EQ(stat.exit_code, 0) << stat.show();
  EXPECT_TRUE(contains(stat.out, "entries       2")) << stat.show();
  const CliResult good = run("cache verify");
  EXPECT_EQ(good.exit_code, 0) << good.show();
  EXPECT_TRUE(contains(good.out, "verified 2 entries")) << good.show();
  EXPECT_TRUE(contains(good.out, "2 valid, 0 invalid")) << good.show();

  {
    std::fstream f(entries.front(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  const CliResult bad = run("cache verify --dir " + shell_quote(cache_.string()));
  EXPECT_EQ(bad.exit_code, 1) << bad.show();
  EXPECT_TRUE(contains(bad.out, "INVALID " + entries.front().string() + ": ")) << bad.show();
  EXPECT_TRUE(contains(bad.out, "1 valid, 1 invalid")) << bad.show();

  const CliResult no_limit = run("cache prune");
  EXPECT_EQ(no_limit.exit_code, 2) << no_limit.show();
  EXPECT_TRUE(contains(no_limit.err, "--max-bytes is required")) << no_limit.show();
  const CliResult no_action = run("cache");
  EXPECT_EQ(no_action.exit_code, 2) << no_action.show();
  const CliResult missing = run("cache verify --dir " + shell_quote((root_ / "missing").string()));
  EXPECT_EQ(missing.exit_code, 2) << missing.show();
  EXPECT_TRUE(contains(missing.err, "missing: no such cache directory")) << missing.show();

  const CliResult pruned = run("cache prune --max-bytes 0");
  EXPECT_EQ(pruned.exit_code, 0) << pruned.show();
  EXPECT_TRUE(contains(pruned.out, "removed 2 entries")) << pruned.show();
  EXPECT_TRUE(cache_entries(cache_).empty());
  ASSERT_EQ(run("plan --k 64 --rows 4 --width 4096 --arch sm_90").exit_code, 0);
  const CliResult cleared = run("cache clear");
  EXPECT_EQ(cleared.exit_code, 0) << cleared.show();
  EXPECT_TRUE(contains(cleared.out, "removed 1 entries")) << cleared.show();
  EXPECT_TRUE(cache_entries(cache_).empty());
  const CliResult empty = run("cache stat --dir " + shell_quote((root_ / "missing").string()));
  EXPECT_EQ(empty.exit_code, 0) << empty.show();
  EXPECT_TRUE(contains(empty.out, "no such directory (nothing cached)")) << empty.show();
}

TEST_F(CliTest, PrewarmColdWarmAndAfterACorruptedEntry) {
  const fs::path manifest = deployment_manifest();
  SCOPED_TRACE("manifest " + manifest.string());

  // Cold: everything compiled.
  const CliResult cold = run("prewarm " + shell_quote(manifest.string()) + " --jobs 2");
  ASSERT_EQ(cold.exit_code, 0) << cold.show();
  const Summary s1 = prewarm_summary(cold.out);
  ASSERT_TRUE(s1.found) << cold.show();
  const int n = s1.plans;
  ASSERT_GT(n, 0);
  const size_t distinct = prewarm_keys(cold.out).size();
  EXPECT_EQ(s1.failed, 0) << cold.show();
  EXPECT_EQ(s1.not_stored, 0) << cold.show();
  EXPECT_EQ(s1.compiled, static_cast<int>(distinct)) << cold.show();
  EXPECT_EQ(s1.hits + s1.compiled, n) << cold.show();
  if (distinct == static_cast<size_t>(n)) {
    EXPECT_TRUE(contains(cold.out, std::to_string(n) + " plans: 0 cache hits, " + std::to_string(n) + " compiled, 0 failed"))
        << cold.show();
  }
  EXPECT_TRUE(warning_lines(cold.all()).empty()) << cold.show();
  const auto entries = cache_entries(cache_);
  EXPECT_EQ(entries.size(), distinct) << cold.show();

  // Warm, in a new process: all from the disk cache, nothing compiled.
  const CliResult warm = run("prewarm " + shell_quote(manifest.string()) + " --jobs 2");
  ASSERT_EQ(warm.exit_code, 0) << warm.show();
  EXPECT_TRUE(contains(warm.out, std::to_string(n) + " cache hits, 0 compiled, 0 failed")) << warm.show();
  EXPECT_TRUE(warning_lines(warm.all()).empty()) << warm.show();

  // Flip one byte in the middle of one entry: reported once, rebuilt.
  ASSERT_FALSE(entries.empty());
  const fs::path victim = entries.front();
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << victim;
    const auto size = static_cast<std::streamoff>(fs::file_size(victim));
    f.seekg(size / 2);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(size / 2);
    f.write(&c, 1);
    ASSERT_TRUE(f.good());
  }
  const CliResult healed = run("prewarm " + shell_quote(manifest.string()) + " --jobs 2");
  ASSERT_EQ(healed.exit_code, 0) << healed.show();
  EXPECT_TRUE(contains(healed.out, std::to_string(n - 1) + " cache hits, 1 compiled, 0 failed")) << healed.show();
  const auto warnings = warning_lines(healed.all());
  ASSERT_EQ(warnings.size(), 1u) << healed.show();
  EXPECT_TRUE(contains(warnings[0], victim.filename().string())) << warnings[0];
  EXPECT_TRUE(fs::exists(victim)) << "the corrupted entry was not rebuilt";

  // And the rebuilt entry is good: a fourth run is all hits, silently.
  const CliResult again = run("prewarm " + shell_quote(manifest.string()) + " --jobs 2");
  ASSERT_EQ(again.exit_code, 0) << again.show();
  EXPECT_TRUE(contains(again.out, std::to_string(n) + " cache hits, 0 compiled, 0 failed")) << again.show();
  EXPECT_TRUE(warning_lines(again.all()).empty()) << again.show();
}

TEST_F(CliTest, PrewarmHonoursEveryManifestKeyAndThePolicy) {
  const fs::path manifest = own_manifest();
  const CliResult r = run("prewarm " + shell_quote(manifest.string()) + " --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "3 plans: 0 cache hits, 3 compiled, 0 failed")) << r.show();
  EXPECT_TRUE(contains(r.out, "indexer-2048")) << r.show();
  EXPECT_TRUE(contains(r.out, "windows")) << r.show();
  EXPECT_EQ(cache_entries(cache_).size(), 3u) << r.show();

  // The manifest's policy (relative to the manifest) was used: the same
  // problem under that policy is a disk hit, under the defaults it is not.
  const std::string problem = "plan --k 2048 --rows 64 --width 100000 --arch sm_90";
  const CliResult with_policy = run(problem + " --policy " + shell_quote((root_ / "policy.toml").string()));
  ASSERT_EQ(with_policy.exit_code, 0) << with_policy.show();
  EXPECT_TRUE(contains(with_policy.out, "(disk cache)")) << with_policy.show();
  EXPECT_TRUE(contains(with_policy.out, "vector_bytes = 4")) << with_policy.show();
  EXPECT_TRUE(contains(with_policy.out, "workers_per_sm = 2")) << with_policy.show();
  const CliResult defaults = run(problem);
  ASSERT_EQ(defaults.exit_code, 0) << defaults.show();
  EXPECT_TRUE(contains(defaults.out, "(compiled now)")) << defaults.show();
}

// A manifest naming several architectures: every plan compiled for each
// (its name marked with the arch); an arch listed twice or an empty list is
// an error naming the line; --arch replaces the list.
TEST_F(CliTest, PrewarmSeveralArchitectures) {
  write_text(root_ / "archs.toml",
             "arch = [\"sm_90\", \"sm_80\"]\n[[plan]]\nname = \"small\"\nk = 64\nrows = 4\nwidth = 4096\n");
  const CliResult r = run("prewarm " + shell_quote((root_ / "archs.toml").string()) + " --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "small @sm_90: short_row sm_90")) << r.show();
  EXPECT_TRUE(contains(r.out, "small @sm_80: short_row sm_80")) << r.show();
  EXPECT_TRUE(contains(r.out, "prewarm summary: 2 plans")) << r.show();
  const CliResult one = run("prewarm " + shell_quote((root_ / "archs.toml").string()) + " --arch sm_90");
  ASSERT_EQ(one.exit_code, 0) << one.show();
  EXPECT_TRUE(contains(one.out, "prewarm summary: 1 plans")) << one.show();
  EXPECT_TRUE(contains(one.out, "small: short_row sm_90")) << one.show();

  write_text(root_ / "twice.toml", "arch = [\"sm_90\", \"sm_90\"]\n[[plan]]\nk = 64\nrows = 4\nwidth = 4096\n");
  const CliResult twice = run("prewarm " + shell_quote((root_ / "twice.toml").string()));
  EXPECT_EQ(twice.exit_code, 2) << twice.show();
  EXPECT_TRUE(contains(twice.err, "twice.toml:1:")) << twice.show();
  EXPECT_TRUE(contains(twice.err, "arch[1]: 'sm_90' is listed twice")) << twice.show();
  write_text(root_ / "none.toml", "arch = []\n[[plan]]\nk = 64\nrows = 4\nwidth = 4096\n");
  const CliResult none = run("prewarm " + shell_quote((root_ / "none.toml").string()));
  EXPECT_EQ(none.exit_code, 2) << none.show();
  EXPECT_TRUE(contains(none.err, "arch: expected a string or a non-empty array of strings")) << none.show();
}

TEST_F(CliTest, PrewarmRejectsAnUnknownKey) {
  write_text(root_ / "bad.toml",
             "arch = \"sm_90\"\n[[plan]]\nname = \"typo\"\nk = 8\nrows = 4\nwidth = 1000\nwdith = 2000\n");
  const CliResult r = run("prewarm " + shell_quote((root_ / "bad.toml").string()));
  EXPECT_NE(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.err, "wdith")) << r.show();
  EXPECT_TRUE(cache_entries(cache_).empty());
}

// BUG (tools/sgtopk_cli.cpp, cmd_prewarm): only the keys of [[plan]] tables
// are checked; an unknown top-level key is silently ignored. A typo such as
// `polcy = "tuned.toml"` makes prewarm succeed with the default policy, i.e.
// it fills the cache with kernels the deployment will never ask for.
TEST_F(CliTest, PrewarmRejectsAnUnknownTopLevelKey) {
  write_text(root_ / "top.toml",
             "arch = \"sm_90\"\npolcy = \"tuned.toml\"\n[[plan]]\nname = \"a\"\nk = 8\nrows = 4\nwidth = 1000\n");
  const CliResult r = run("prewarm " + shell_quote((root_ / "top.toml").string()));
  EXPECT_NE(r.exit_code, 0) << "an unknown top-level manifest key was ignored:\n" << r.show();
  EXPECT_TRUE(contains(r.err, "polcy")) << "the unknown key is not named:\n" << r.show();
}

TEST_F(CliTest, PrewarmRejectsAnUnknownFlag) {
  write_text(root_ / "bad.toml",
             "arch = \"sm_90\"\n[[plan]]\nname = \"f\"\nk = 8\nrows = 4\nwidth = 1000\nflags = [\"values\", \"fast\"]\n");
  const CliResult r = run("prewarm " + shell_quote((root_ / "bad.toml").string()));
  EXPECT_NE(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.err, "fast")) << r.show();
  EXPECT_TRUE(contains(r.err, "(known: values, sorted, starts, route_stats, index_offsets)")) << r.show();
}

// The fused index transform from the command line and from a manifest.
TEST_F(CliTest, PlanAndPrewarmTakeTheIndexTransform) {
  CliResult r = run("plan --k 64 --rows 8 --width 5000 --arch sm_90 --page-size 16 --page-table-pitch 400");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "+page_table(page_size=16 pitch=400)")) << r.show();
  EXPECT_TRUE(contains(r.out, "kPageSize = 16")) << r.show();
  r = run("plan --k 64 --rows 8 --width 5000 --arch sm_90 --index-offsets");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "+index_offsets")) << r.show();
  r = run("plan --k 64 --rows 8 --width 5000 --arch sm_90 --page-size 16 --page-table-pitch 100");
  EXPECT_NE(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.err, "page_table_pitch 100 is smaller than the 313 pages")) << r.show();
  r = run("plan --k 64 --rows 8 --width 5000 --arch sm_90 --page-table-pitch 100");
  EXPECT_NE(r.exit_code, 0) << "a page-table pitch without a page size was accepted:\n" << r.show();
  write_text(root_ / "paged.toml",
             "arch = \"sm_90\"\n[[plan]]\nname = \"paged\"\nk = 64\nrows = 8\nwidth = 5000\npage_size = 64\n"
             "[[plan]]\nname = \"offsets\"\nk = 64\nrows = 8\nwidth = 5000\nflags = [\"index_offsets\"]\n");
  r = run("prewarm " + shell_quote((root_ / "paged.toml").string()));
  EXPECT_EQ(r.exit_code, 0) << r.show();
}

TEST_F(CliTest, PrewarmReportsAPlanThatFailsValidation) {
  write_text(root_ / "k0.toml", "arch = \"sm_90\"\n[[plan]]\nname = \"zero\"\nk = 0\nrows = 4\nwidth = 1000\n");
  const CliResult r = run("prewarm " + shell_quote((root_ / "k0.toml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.show();
  const Summary s = prewarm_summary(r.out);
  ASSERT_TRUE(s.found) << r.show();
  EXPECT_EQ(s.plans, 1);
  EXPECT_EQ(s.failed, 1) << r.show();
  EXPECT_EQ(s.compiled, 0) << r.show();
  EXPECT_TRUE(contains(r.all(), "K=0 is invalid")) << r.show();
  EXPECT_TRUE(contains(r.all(), "zero")) << "the failing plan is named:\n" << r.show();
}

// A prewarm that leaves a plan out of the disk cache fails, naming the plan,
// unless --allow-memory-only accepts a memory-only run.
TEST_F(CliTest, PrewarmFailsWhenAPlanIsNotStored) {
  write_text(root_ / "one.toml", "arch = \"sm_90\"\n[[plan]]\nname = \"small\"\nk = 64\nrows = 4\nwidth = 4096\n");
  const std::string prewarm = "prewarm " + shell_quote((root_ / "one.toml").string()) + " --jobs 1";

  const CliResult off = run(prewarm, "SGTOPK_DISABLE_DISK_CACHE=1");
  EXPECT_EQ(off.exit_code, 1) << off.show();
  const Summary s = prewarm_summary(off.out);
  ASSERT_TRUE(s.found) << off.show();
  EXPECT_EQ(s.compiled, 1) << off.show();
  EXPECT_EQ(s.failed, 0) << off.show();
  EXPECT_EQ(s.not_stored, 1) << off.show();
  EXPECT_TRUE(contains(off.out, "small: short_row sm_90")) << off.show();
  EXPECT_TRUE(contains(off.out, "NOT STORED")) << off.show();
  EXPECT_TRUE(contains(off.err, "1 plan(s) not stored (the disk cache is off): small")) << off.show();
  EXPECT_TRUE(contains(off.err, "--allow-memory-only")) << off.show();

  const CliResult allowed = run(prewarm + " --allow-memory-only", "SGTOPK_DISABLE_DISK_CACHE=1");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.show();
  EXPECT_EQ(prewarm_summary(allowed.out).not_stored, 1) << allowed.show();

  // A read-only cache without the entry: compiled, not stored.
  const CliResult read_only = run(prewarm, "SGTOPK_CACHE_READ_ONLY=1");
  EXPECT_EQ(read_only.exit_code, 1) << read_only.show();
  EXPECT_EQ(prewarm_summary(read_only.out).not_stored, 1) << read_only.show();
  EXPECT_TRUE(contains(read_only.err, "small")) << read_only.show();
  EXPECT_TRUE(cache_entries(cache_).empty());
}

// The store itself fails (the entry's fan-out directory is a regular file):
// non-zero; once stored, a read-only prewarm of the same cache is all hits
// and passes (a shipped cache is complete).
TEST_F(CliTest, PrewarmFailsWhenTheStoreFailsAndPassesOnACompleteReadOnlyCache) {
  write_text(root_ / "one.toml", "arch = \"sm_90\"\n[[plan]]\nname = \"small\"\nk = 64\nrows = 4\nwidth = 4096\n");
  const std::string prewarm = "prewarm " + shell_quote((root_ / "one.toml").string()) + " --jobs 1";
  const CliResult first = run(prewarm);
  ASSERT_EQ(first.exit_code, 0) << first.show();
  const auto keys = prewarm_keys(first.out);
  ASSERT_EQ(keys.size(), 1u) << first.show();
  const std::string key = *keys.begin();

  fs::remove_all(cache_);
  fs::create_directories(cache_);
  write_text(cache_ / key.substr(0, 2), "a regular file where the fan-out directory goes\n");
  const CliResult blocked = run(prewarm);
  EXPECT_EQ(blocked.exit_code, 1) << blocked.show();
  const Summary s = prewarm_summary(blocked.out);
  EXPECT_EQ(s.compiled, 1) << blocked.show();
  EXPECT_EQ(s.not_stored, 1) << blocked.show();
  EXPECT_TRUE(contains(blocked.err, "not stored (storing the entry failed): small")) << blocked.show();

  fs::remove(cache_ / key.substr(0, 2));
  const CliResult stored = run(prewarm);
  ASSERT_EQ(stored.exit_code, 0) << stored.show();
  EXPECT_TRUE(contains(stored.out, "compiled, on disk")) << stored.show();
  const CliResult shipped = run(prewarm, "SGTOPK_CACHE_READ_ONLY=1");
  EXPECT_EQ(shipped.exit_code, 0) << shipped.show();
  EXPECT_TRUE(contains(shipped.out, "1 plans: 1 cache hits, 0 compiled, 0 failed, 0 not stored")) << shipped.show();
}

// ------------------------------------------------------------ env, selftest ----

TEST_F(CliTest, EnvListsEveryKnob) {
  const CliResult r = run("env");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  ASSERT_FALSE(sgtopk::detail::all_knobs().empty());
  for (const auto& knob : sgtopk::detail::all_knobs()) EXPECT_TRUE(contains(r.out, knob.name)) << knob.name << "\n" << r.show();
  // The effective cache directory is the one this command was given.
  EXPECT_TRUE(contains(r.out, cache_.string())) << r.show();
}

// Knobs are typed: OFF reads as off, a value of no kind is named, then the
// default is used (never silently).
TEST_F(CliTest, EnvironmentKnobsParseByKind) {
  const CliResult off = run("plan --k 64 --rows 4 --width 4096 --arch sm_90", "SGTOPK_DISABLE_DISK_CACHE=OFF");
  ASSERT_EQ(off.exit_code, 0) << off.show();
  EXPECT_TRUE(warning_lines(off.all()).empty()) << off.show();
  EXPECT_EQ(cache_entries(cache_).size(), 1u) << "OFF keeps the disk cache on\n" << off.show();

  const CliResult on = run("env", "SGTOPK_DISABLE_DISK_CACHE=Yes");
  EXPECT_TRUE(warning_lines(on.err).empty()) << on.show();

  const CliResult bad = run("env", "SGTOPK_DISABLE_DISK_CACHE=maybe SGTOPK_VERBOSE=loud");
  EXPECT_EQ(bad.exit_code, 0) << bad.show();
  EXPECT_TRUE(contains(bad.err, "SGTOPK_DISABLE_DISK_CACHE=\"maybe\" is not a flag")) << bad.show();
  EXPECT_TRUE(contains(bad.err, "SGTOPK_VERBOSE=\"loud\" is not a level (0, 1 or 2); using 1")) << bad.show();
}

TEST_F(CliTest, SelftestSkipsWithoutAGpu) {
  if (void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(handle);
    GTEST_SKIP() << "a CUDA driver is present: selftest would run for real";
  }
  const CliResult r = run("selftest");
  EXPECT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(std::regex_search(r.out, std::regex("skipped: .*\\S"))) << r.show();
  EXPECT_TRUE(contains(r.out, "no CUDA driver")) << "the reason is given:\n" << r.show();
  // The problem flags parse before the skip.
  const CliResult stats = run("selftest --route-stats --values --sorted");
  EXPECT_EQ(stats.exit_code, 0) << stats.show();
  EXPECT_TRUE(contains(stats.out, "skipped")) << stats.show();
}

// -------------------------------------------------------------- simulate ----

TEST_F(CliTest, SimulateReportsTheSampledRoutes) {
  const CliResult r = run("simulate --rows 8 --width 20000 --k 256 --family uniform");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  for (const char* word : {"primary", "band", "exact", "admitted", "stride"})
    EXPECT_TRUE(contains(r.out, word)) << word << "\n" << r.show();
  // One line for the family: 8 rows at the narrow stride (20000 < wide_row_threshold).
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nuniform +8 .* 32\n)"))) << r.show();
  EXPECT_TRUE(warning_lines(r.all()).empty()) << r.show();
  // Deterministic: a second run prints the same.
  const CliResult again = run("simulate --rows 8 --width 20000 --k 256 --family uniform");
  EXPECT_EQ(again.out, r.out);
}

TEST_F(CliTest, SimulateRejectsAnUnknownFamilyNamingTheKnownOnes) {
  const CliResult r = run("simulate --rows 8 --width 20000 --k 256 --family no_such_family");
  EXPECT_EQ(r.exit_code, 2) << r.show();
  EXPECT_TRUE(contains(r.err, "no_such_family")) << r.show();
  for (const char* known : {"uniform", "indexer_like", "periodic_128", "all"})
    EXPECT_TRUE(contains(r.err, known)) << known << "\n" << r.show();
}

// A grid of policies from an experiment TOML: one line per combination (the
// first key varies slowest), all decided on the same rows; a bad file is a
// usage error naming the file, the line and the key.
TEST_F(CliTest, SimulateGridOfPolicies) {
  write_text(root_ / "grid.toml",
             "# strides x margins\n[grid]\n\"select.sampled.stride_narrow\" = [16, 64]\n"
             "\"select.sampled.primary_margin\" = [1.25, 1.5]\n");
  const CliResult r = run("simulate --rows 8 --width 20000 --k 256 --family uniform --grid " +
                          shell_quote((root_ / "grid.toml").string()));
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "4 policies from")) << r.show();
  for (const char* word : {"primary%", "a/K50", "a/K99", "reads"}) EXPECT_TRUE(contains(r.out, word)) << word << "\n" << r.show();
  const size_t first = r.out.find("primary_margin=1.25 stride_narrow=16"),
               last = r.out.find("primary_margin=1.5 stride_narrow=64");
  EXPECT_NE(first, std::string::npos) << r.show();
  EXPECT_NE(last, std::string::npos) << r.show();
  EXPECT_LT(first, last) << r.show();
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.-]+ +[0-9.-]+ +[0-9.-]+ +1\.[0-9]{3}  primary_margin=1.5 stride_narrow=64\n)")))
      << r.show();

  const auto expect_usage_error = [&](const std::string& text, const std::vector<std::string>& parts) {
    write_text(root_ / "bad.toml", text);
    const CliResult bad = run("simulate --rows 2 --width 20000 --k 256 --grid " + shell_quote((root_ / "bad.toml").string()));
    EXPECT_EQ(bad.exit_code, 2) << text << "\n" << bad.show();
    for (const std::string& part : parts) EXPECT_TRUE(contains(bad.err, part)) << part << "\n" << bad.show();
  };
  const std::string bad = (root_ / "bad.toml").string();
  expect_usage_error("[grid]\n\"select.sampled.stride_narrow\" = 16\n",
                     {bad + ":2:", "grid.select.sampled.stride_narrow: expected a non-empty array"});
  expect_usage_error("[grid]\n\"select.sampled.stride_narow\" = [16]\n", {bad + " (grid point stride_narow=16)", "stride_narow"});
  expect_usage_error("[grid]\n\"select.sampled.stride_narrow\" = [0]\n", {"select.sampled.stride_narrow = 0 is out of range"});
  expect_usage_error("[select.sampled]\nstride_narrow = 16\n", {"an experiment file holds only a [grid] table"});
  expect_usage_error("[grid]\n\"select.sampled.stride_narrow\" = [64, 64, 128]\n",
                     {bad + ":2:", "grid.select.sampled.stride_narrow: 64 is listed twice"});
  expect_usage_error("[grid]\n\"select.sampled.stride_narrow\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]\n"
                     "\"select.sampled.primary_margin\" = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4, 2.5]\n",
                     {"more than 256 policies"});
  expect_usage_error("[grid]\n", {"nothing to vary"});
}

// -------------------------------------------------------- capture, replay ----

namespace {

// A .npy file (format 1.0) with `dict` as its header and `data` bytes after it.
void write_npy_bytes(const fs::path& path, std::string dict, const std::string& data) {
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  write_text(path, bytes + dict + data);
}

}  // namespace

// capture writes what numpy.load reads (checked byte by byte here: float32,
// C order, the shape); replay checks its files before it needs a GPU, and
// each bad file is a usage error naming it and what is wrong.
TEST_F(CliTest, CaptureAndReplayFiles) {
  const fs::path scores = root_ / "s.npy", lengths = root_ / "l.npy";
  const CliResult cap = run("capture --rows 6 --width 5000 --k 100 --family uniform --causal --out " +
                            shell_quote(scores.string()) + " --lengths-out " + shell_quote(lengths.string()));
  ASSERT_EQ(cap.exit_code, 0) << cap.show();
  const std::string head = read_text(scores).substr(0, 128);
  EXPECT_EQ(head.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_TRUE(contains(head, "{'descr': '<f4', 'fortran_order': False, 'shape': (6, 5000), }")) << head;
  EXPECT_EQ(fs::file_size(scores), 128u + 6u * 5000u * 4u);
  EXPECT_TRUE(contains(read_text(lengths).substr(0, 128), "'descr': '<i4', 'fortran_order': False, 'shape': (6,), }"));

  const CliResult ok = run("replay " + shell_quote(scores.string()) + " --lengths " + shell_quote(lengths.string()) + " --k 100");
  EXPECT_EQ(ok.exit_code, 0) << ok.show();
  EXPECT_TRUE(contains(ok.out, "replay: ")) << ok.show();  // skipped without a driver; on a GPU: exact and timed
  if (contains(ok.out, "skipped")) {
    EXPECT_TRUE(contains(ok.out, "no CUDA driver")) << ok.show();
  } else {
    EXPECT_TRUE(contains(ok.out, "exact")) << ok.show();
  }

  const std::string f32x2x3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string six_floats(24, '\0');
  const auto expect_bad = [&](const std::string& name, const std::string& args, const std::string& message) {
    const CliResult r = run("replay " + args);
    EXPECT_EQ(r.exit_code, 2) << name << "\n" << r.show();
    EXPECT_TRUE(contains(r.err, message)) << name << ": " << message << "\n" << r.show();
  };
  expect_bad("missing", shell_quote((root_ / "missing.npy").string()), "missing.npy: cannot read");
  write_text(root_ / "garbage.npy", "not numpy");
  expect_bad("garbage", shell_quote((root_ / "garbage.npy").string()), "garbage.npy: not a .npy file");
  write_npy_bytes(root_ / "f8.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", std::string(48, '\0'));
  expect_bad("float64", shell_quote((root_ / "f8.npy").string()), "dtype <f8 is not supported");
  write_npy_bytes(root_ / "fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six_floats);
  expect_bad("fortran", shell_quote((root_ / "fortran.npy").string()), "Fortran order is not supported");
  write_npy_bytes(root_ / "short.npy", f32x2x3, six_floats.substr(4));
  expect_bad("truncated", shell_quote((root_ / "short.npy").string()), "holds 20 bytes of data but its shape and dtype need 24");
  write_npy_bytes(root_ / "flat.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six_floats);
  expect_bad("1-D", shell_quote((root_ / "flat.npy").string()), "scores must be a 2-D array");
  write_npy_bytes(root_ / "ok.npy", f32x2x3, six_floats);
  write_npy_bytes(root_ / "len_f4.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
  expect_bad("float lengths", shell_quote((root_ / "ok.npy").string()) + " --lengths " + shell_quote((root_ / "len_f4.npy").string()),
             "lengths must be integers");
  const std::string lengths_4_9 = std::string("\x04\0\0\0\x09\0\0\0", 8);
  write_npy_bytes(root_ / "len_big.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", lengths_4_9);
  expect_bad("lengths past the width", shell_quote((root_ / "ok.npy").string()) + " --lengths " + shell_quote((root_ / "len_big.npy").string()),
             "lengths[0] = 4 is out of range 0..3");
  write_npy_bytes(root_ / "len_3.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", std::string(24, '\0'));
  expect_bad("lengths count", shell_quote((root_ / "ok.npy").string()) + " --lengths " + shell_quote((root_ / "len_3.npy").string()),
             "lengths must be a 1-D array of 2 values");
  const CliResult no_file = run("replay");
  EXPECT_EQ(no_file.exit_code, 2) << no_file.show();
}

// ------------------------------------------------------ degraded cache ----

TEST_F(CliTest, UnusableCacheDirWarnsOnceAndStillPlans) {
  write_text(root_ / "a-file", "not a directory\n");
  const fs::path under_file = root_ / "a-file" / "cache";
  const CliResult r = run("plan --k 64 --rows 4 --width 4096 --arch sm_90", "", under_file);
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "family:")) << r.show();
  const auto warnings = warning_lines(r.all());
  ASSERT_EQ(warnings.size(), 1u) << r.show();
  EXPECT_TRUE(contains(warnings[0], under_file.string())) << warnings[0];
}

TEST_F(CliTest, ReadOnlyCacheDirWarnsOnceAndStillPlans) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: a read-only directory is still writable";
  fs::create_directories(cache_);
  ::chmod(cache_.c_str(), 0555);
  const CliResult r = run("plan --k 64 --rows 4 --width 4096 --arch sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_EQ(warning_lines(r.all()).size(), 1u) << r.show();
  EXPECT_TRUE(files_under(cache_).empty());
}

// A prewarmed cache shipped read-only (SGTOPK_CACHE_READ_ONLY=1, as root
// too) serves its kernels and is never written.
TEST_F(CliTest, ReadOnlyCacheServesAPrewarmedKernel) {
  const CliResult warm = run("plan --k 64 --rows 4 --width 4096 --arch sm_90");
  ASSERT_EQ(warm.exit_code, 0) << warm.show();
  const auto shipped = files_under(cache_);
  const CliResult hit = run("plan --k 64 --rows 4 --width 4096 --arch sm_90", "SGTOPK_CACHE_READ_ONLY=1");
  ASSERT_EQ(hit.exit_code, 0) << hit.show();
  EXPECT_TRUE(contains(hit.out, "(disk cache)")) << hit.show();
  EXPECT_TRUE(warning_lines(hit.err).empty()) << hit.show();
  const CliResult miss = run("plan --k 64 --rows 4 --width 8192 --arch sm_90", "SGTOPK_CACHE_READ_ONLY=1");
  ASSERT_EQ(miss.exit_code, 0) << miss.show();
  EXPECT_TRUE(contains(miss.out, "(compiled now)")) << miss.show();
  EXPECT_TRUE(contains(miss.out, "on disk:   no")) << miss.show();
  EXPECT_EQ(files_under(cache_), shipped);
}

TEST_F(CliTest, DisabledDiskCacheWritesNothing) {
  const CliResult r = run("plan --k 64 --rows 4 --width 4096 --arch sm_90", "SGTOPK_DISABLE_DISK_CACHE=1");
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(contains(r.out, "compiled now")) << r.show();
  EXPECT_TRUE(warning_lines(r.all()).empty()) << r.show();
  const auto written = files_under(cache_);
  EXPECT_TRUE(written.empty()) << written.size() << " file(s) written, e.g. " << written.front();
  // A second process therefore compiles again.
  const CliResult again = run("plan --k 64 --rows 4 --width 4096 --arch sm_90", "SGTOPK_DISABLE_DISK_CACHE=1");
  ASSERT_EQ(again.exit_code, 0) << again.show();
  EXPECT_TRUE(contains(again.out, "compiled now")) << again.show();
  EXPECT_TRUE(files_under(cache_).empty());
}

// Rows from a score file (.npy, as replay reads it) instead of the generator:
// one line for the file, the grid over it too, and usage errors for what does
// not apply.
TEST_F(CliTest, SimulateOverAScoreFile) {
  const fs::path scores = root_ / "s.npy", lengths = root_ / "l.npy";
  const CliResult cap = run("capture --rows 6 --width 20000 --k 256 --family uniform --causal --out " +
                            shell_quote(scores.string()) + " --lengths-out " + shell_quote(lengths.string()));
  ASSERT_EQ(cap.exit_code, 0) << cap.show();
  const std::string files = shell_quote(scores.string()) + " --lengths " + shell_quote(lengths.string());
  const CliResult r = run("simulate --k 256 --scores " + files);
  ASSERT_EQ(r.exit_code, 0) << r.show();
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n\S*s\.npy +6 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ )"))) << r.show();
  write_text(root_ / "grid.toml", "[grid]\n\"select.sampled.stride_narrow\" = [16, 64]\n");
  const CliResult g = run("simulate --k 256 --scores " + files + " --grid " + shell_quote((root_ / "grid.toml").string()));
  ASSERT_EQ(g.exit_code, 0) << g.show();
  EXPECT_TRUE(contains(g.out, "2 policies from")) << g.show();
  EXPECT_TRUE(contains(g.out, "s.npy (6 rows)")) << g.show();

  const auto expect_usage_error = [&](const std::string& args, const std::string& message) {
    const CliResult bad = run("simulate " + args);
    EXPECT_EQ(bad.exit_code, 2) << args << "\n" << bad.show();
    EXPECT_TRUE(contains(bad.err, message)) << message << "\n" << bad.show();
  };
  expect_usage_error("--lengths " + shell_quote(lengths.string()), "--lengths needs --scores");
  expect_usage_error("--scores " + shell_quote(scores.string()) + " --rows 3", "--rows does not apply to --scores");
  expect_usage_error("--scores " + shell_quote(scores.string()) + " --family uniform", "--family does not apply");
  expect_usage_error("--scores " + shell_quote((root_ / "missing.npy").string()), "missing.npy: cannot read");
  write_npy_bytes(root_ / "flat.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", std::string(24, '\0'));
  expect_usage_error("--scores " + shell_quote((root_ / "flat.npy").string()), "scores must be a 2-D array");
  write_npy_bytes(root_ / "long.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }",
                  std::string("\x21\x4e\x00\x00", 4) + std::string(20, '\0'));  // 20001 > the width
  expect_usage_error("--scores " + shell_quote(scores.string()) + " --lengths " + shell_quote((root_ / "long.npy").string()),
                     "lengths");
}

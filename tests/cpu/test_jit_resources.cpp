// Register spills in the default kernels, without a GPU: each case's plan is
// compiled for sm_90 exactly as the library compiles it (same source, headers
// and options) plus --ptxas-options=-v, and ptxas's resource report in the
// NVRTC log must say 0 bytes stack frame and 0 bytes spill stores / loads.
// Under the kernels' __launch_bounds__ register cap (64 for 512 x 2 and
// 1024 x 1) a small template change can make ptxas spill, which costs
// performance silently; this catches it in CI. The reports are printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/codegen.h"
#include "runtime/compile_request.h"
#include "runtime/error.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/plan.h"
#include "runtime/policy.h"
#include "runtime/problem.h"
#include "runtime/target.h"

using namespace sgtopk;
using namespace sgtopk::detail;

namespace {

// ------------------------------------------------------ the ptxas report ----

// One "Function properties for <name>" block of ptxas -v.
struct FunctionResources {
  std::string function;  // "" when the line came without a "Function properties for" header
  long long stack_frame = 0, spill_stores = 0, spill_loads = 0;
};

struct PtxasReport {
  std::vector<FunctionResources> functions;   // every "... bytes stack frame, ..." line
  std::vector<std::string> entries;           // "Compiling entry function '<name>'"
  std::vector<int> registers;                 // every "Used <n> registers"
  std::string lines;                          // the report's lines, for messages
};

// Parses ptxas's -v output as NVRTC passes it on in the program log:
//   ptxas info    : Compiling entry function 'sgtopk_select_sampled' for 'sm_90'
//   ptxas info    : Function properties for sgtopk_select_sampled
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 64 registers, used 1 barriers, 16 bytes smem
// (nvcc -Xptxas -v prints the third line without the "ptxas         ." prefix).
// Tolerates other lines (warnings, gmem, compile time) and spacing.
PtxasReport parse_ptxas_report(const std::string& log) {
  static const std::regex entry_re(R"(Compiling entry function\s+'([^']+)')");
  static const std::regex props_re(R"(Function properties for\s+(\S+))");
  static const std::regex frame_re(
      R"((\d+)\s+bytes\s+stack\s+frame\s*,\s*(\d+)\s+bytes\s+spill\s+stores\s*,\s*(\d+)\s+bytes\s+spill\s+loads)");
  static const std::regex regs_re(R"(Used\s+(\d+)\s+registers)");
  PtxasReport report;
  std::string current_function;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    bool relevant = false;
    if (std::regex_search(line, m, entry_re)) {
      report.entries.push_back(m[1].str());
      relevant = true;
    }
    if (std::regex_search(line, m, props_re)) {
      current_function = m[1].str();
      relevant = true;
    }
    if (std::regex_search(line, m, frame_re)) {
      report.functions.push_back(
          {current_function, std::stoll(m[1].str()), std::stoll(m[2].str()), std::stoll(m[3].str())});
      current_function.clear();
      relevant = true;
    }
    if (std::regex_search(line, m, regs_re)) {
      report.registers.push_back(std::stoi(m[1].str()));
      relevant = true;
    }
    if (relevant) report.lines += line + "\n";
  }
  return report;
}

// "" when the report exists, names `entry` and says no function spills or has
// a stack frame; else what is wrong.
// `allowed_spill_bytes`: the spill stores (and as many bytes of stack) a case
// is known to need; 0 for every kernel but the split family's.
std::string spill_problems(const PtxasReport& report, const std::string& entry, int allowed_spill_bytes = 0) {
  if (report.functions.empty())
    return "no ptxas resource line (\"N bytes stack frame, N bytes spill stores, N bytes spill loads\") in the "
           "NVRTC log; was --ptxas-options=-v passed, or has the report's format changed?\n";
  std::string problems;
  bool entry_seen = false;
  for (const std::string& e : report.entries) entry_seen |= e == entry;
  if (!entry_seen) problems += "ptxas did not report compiling the entry function '" + entry + "'\n";
  if (report.registers.empty()) problems += "no \"Used N registers\" line in the ptxas report\n";
  for (const FunctionResources& f : report.functions) {
    const bool within = allowed_spill_bytes > 0 && f.spill_stores <= allowed_spill_bytes &&
                        f.stack_frame <= allowed_spill_bytes;
    if (!within && (f.stack_frame != 0 || f.spill_stores != 0 || f.spill_loads != 0))
      problems += (f.function.empty() ? std::string("a function") : "'" + f.function + "'") + ": " +
                  std::to_string(f.stack_frame) + " bytes stack frame, " + std::to_string(f.spill_stores) +
                  " bytes spill stores, " + std::to_string(f.spill_loads) + " bytes spill loads\n";
  }
  return problems;
}

// ------------------------------------------------------------ the cases ----

struct SpillCase {
  std::string name;
  int k = 0;
  int64_t rows = 0;
  int64_t width = 0;
  std::string family;            // "": the planner's choice
  bool register_rows = false;    // the case is there for direct_exact's register-resident body
  bool coarse_proposal = false;  // the opt-out select.sampled.fine_proposal_excess = 0
  bool filter = false;           // the filter operator (k 0: the mask output)
  std::string policy_toml;       // applied over the defaults
  sgtopk_dtype dtype = SGTOPK_F32;  // the filter's logits
  uint32_t flags = 0;               // the filter's outputs (0: the mask; k the candidate capacity)
  int allowed_spill_bytes = 0;      // see spill_problems
};

void PrintTo(const SpillCase& c, std::ostream* os) { *os << c.name; }

std::vector<SpillCase> spill_cases() {
  return {
      {"sampled_K2048_rows512_w131072", 2048, 512, 131072, "sampled", false},
      {"direct_exact_K2048_rows512_w131072", 2048, 512, 131072, "direct_exact", false},
      {"planner_K2048_rows4096_w262144", 2048, 4096, 262144, "", false},
      {"direct_exact_K8_rows64_w1000_register_rows", 8, 64, 1000, "direct_exact", true},
      {"planner_K2048_rows65536_w4096_short_row", 2048, 65536, 4096, "short_row", false},
      {"planner_K2048_rows16384_w8192_short_row", 2048, 16384, 8192, "short_row", false},
      {"short_row_K2048_rows16_w16384", 2048, 16, 16384, "short_row", false},
      {"planner_K2048_rows16384_w16384_short_row", 2048, 16384, 16384, "short_row", false},
      {"sampled_coarse_proposal_K2048_rows512_w131072", 2048, 512, 131072, "sampled", false, true},
      // One CTA of 1024 an SM: 64 registers.
      {"cluster_K2048_rows4_w1048576", 2048, 4, 1048576, "cluster", false},
      // The planner's split for a few long rows (one CTA of 1024 an SM: 64
      // registers), its finisher's candidates in shared memory; and with the
      // stored frontier. Known to spill a few values that live across its
      // phases (20 bytes each since its view has two strides, 16 with one;
      // at 683d045's 12 bytes, each stored or loaded once a phase and none in
      // a loop over the row: docs/decisions/2026-12-03-split-finisher-in-shared-memory.md);
      // more fails.
      {"planner_K2048_rows1_w262144_split", 2048, 1, 262144, "split", false, false, false, "", SGTOPK_F32, 0, 24},
      {"planner_K2048_rows64_w1048576_split", 2048, 64, 1048576, "split", false, false, false, "", SGTOPK_F32, 0, 24},
      {"split_frontier_finisher_K2048_rows64_w262144", 2048, 64, 262144, "split", false, false, false,
       "[select.split]\nfinisher_items = 0\n", SGTOPK_F32, 0, 24},
      // Its segment asked of L2 after the view and ahead of the pass (off by
      // default, 2026-12-05-filter-split-latency-stack-and-l2-prefetch-off.md):
      // with all three on, 28 bytes since the finisher's batched loads.
      {"split_prefetch_K2048_rows16_w262144", 2048, 16, 262144, "split", false, false, false,
       "[select.split]\nprefetch_before_view_kb = 32\nprefetch_after_view_kb = 128\nprefetch_ahead_chunks = 2\n", SGTOPK_F32, 0, 28},
      // The short-row scores kept in registers, two CTAs of 512 an SM: 64 registers.
      {"short_row_registers_K2048_rows16384_w16384", 2048, 16384, 16384, "short_row", false, false, false,
       "[select.short_row]\nscores_in_registers = true\nthreads_per_sm = 1024\n"},
      // A row or so an SM: CTAs of 1024, with the top-p-alone rows' second
      // kernel (its spills as below, at 4096 rows).
      {"filter_row_rows130_w128256", 0, 130, 128256, "filter_row", false, false, true, "", SGTOPK_F32, 0, 28},
      {"filter_row_bf16_rows130_w128256", 0, 130, 128256, "filter_row", false, false, true, "", SGTOPK_BF16, 0, 8},
      {"filter_row_f16_rows130_w128256", 0, 130, 128256, "filter_row", false, false, true, "", SGTOPK_F16, 0, 8},
      // Every output compiled in: the candidates' sort and the sampled token's search.
      {"filter_row_outputs_rows130_w128256", 64, 130, 128256, "filter_row", false, false, true, "", SGTOPK_F32,
       SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE},
      // With 16-bit logits the same kernels keep two values (the row's length
      // and k) on the stack across the outputs' passes: 8 bytes in bf16, 12
      // in fp16 (docs/filter-design.md); more fails.
      {"filter_row_outputs_bf16_rows130_w128256", 64, 130, 128256, "filter_row", false, false, true, "", SGTOPK_BF16,
       SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE, 12},
      {"filter_row_outputs_f16_rows4096_w128256", 64, 4096, 128256, "filter_row", false, false, true, "", SGTOPK_F16,
       SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE, 12},
      // Past one row an SM: two CTAs of 512 an SM with 4 loads in flight (64
      // registers); the top-p-alone rows in the plan's second kernel, CTAs of
      // 1024 with the pattern counts, whose fp32 form spills 28 bytes and
      // the 16-bit forms 4 (an 8-byte frame; bf16's since the mask pass
      // gathers the boundary's copies); the first kernel none. More fails.
      {"filter_row_rows4096_w128256", 0, 4096, 128256, "filter_row", false, false, true, "", SGTOPK_F32, 0, 28},
      {"filter_row_f16_rows4096_w128256", 0, 4096, 128256, "filter_row", false, false, true, "", SGTOPK_F16, 0, 8},
      {"filter_row_bf16_rows4096_w128256", 0, 4096, 128256, "filter_row", false, false, true, "", SGTOPK_BF16, 0, 8},
      // Below filter.top_p_by_patterns_min_width: one kernel.
      {"filter_row_rows4096_w16384", 0, 4096, 16384, "filter_row", false, false, true},
      // With its L2 look-ahead on (off by default: measured slower), 32 bytes
      // since the passes' scaling left their loops (by_scaling, 2026-12-06);
      // more fails.
      {"filter_row_prefetch_bf16_rows4096_w128256", 0, 4096, 128256, "filter_row", false, false, true,
       "[filter]\nprefetch_ahead_steps = 4\n", SGTOPK_BF16, 0, 32},
      {"filter_row_outputs_rows4096_w128256", 64, 4096, 128256, "filter_row", false, false, true, "", SGTOPK_F32,
       SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE},
      // A few rows: the planner's filter_split, CTAs of 512 (two an SM, 64 registers).
      {"filter_split_rows1_w128256", 0, 1, 128256, "", false, false, true},
      {"filter_split_prefetch_rows64_w128256", 0, 64, 128256, "", false, false, true,
       "[filter.split]\nprefetch_before_sample_kb = 16\nprefetch_ahead_steps = 2\n"},
      {"filter_split_bf16_rows64_w128256", 0, 64, 128256, "", false, false, true, "", SGTOPK_BF16},
      {"filter_split_f16_rows1_w262208", 0, 1, 262208, "", false, false, true, "", SGTOPK_F16},
      {"filter_split_outputs_rows8_w128256", 64, 8, 128256, "", false, false, true, "", SGTOPK_F32,
       SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE},
  };
}

Plan plan_for(const SpillCase& c) {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.op = c.filter ? SGTOPK_OP_FILTER : SGTOPK_OP_SELECT;
  p.k = c.k;
  p.rows = c.rows;
  p.width = c.width;
  p.dtype = c.dtype;
  p.flags = c.flags;
  Policy policy = c.policy_toml.empty() ? Policy::defaults() : parse_policy_string(c.policy_toml);
  if (c.coarse_proposal) policy.sampled.fine_proposal_excess = 0.0;
  const Problem problem = validate_problem(&p);
  const Target target = resolve_target(-1, "sm_90", policy.compile.default_arch);
  return make_plan(problem, policy, target, c.family);
}

// Compiles the plan as the library does, with ptxas's report on; returns the NVRTC log.
std::string compile_with_ptxas_report(const Plan& plan, const std::string& tag) {
  std::vector<std::string> options = nvrtc_options(plan.arch, plan.policy.compile);
  options.push_back("--ptxas-options=-v");
  std::string log;
  const std::vector<char> cubin = compile_cubin(generate_source(plan), options, plan.arch, tag, &log);
  EXPECT_FALSE(cubin.empty());
  return log;
}

}  // namespace

// The parser and the check on canned logs: a spill and a missing report fail.
TEST(JitResourceReport, ParsesSpillsAndAMissingReport) {
  const std::string clean =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'sgtopk_select_sampled' for 'sm_90'\n"
      "ptxas info    : Function properties for sgtopk_select_sampled\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 64 registers, used 1 barriers, 16 bytes smem\n"
      "ptxas info    : Compile time = 601.287 ms\n";
  const PtxasReport ok = parse_ptxas_report(clean);
  ASSERT_EQ(ok.functions.size(), 1u);
  EXPECT_EQ(ok.functions[0].function, "sgtopk_select_sampled");
  EXPECT_EQ(ok.entries, std::vector<std::string>{"sgtopk_select_sampled"});
  EXPECT_EQ(ok.registers, std::vector<int>{64});
  EXPECT_EQ(spill_problems(ok, "sgtopk_select_sampled"), "");
  EXPECT_NE(spill_problems(ok, "sgtopk_select_direct_exact"), "") << "a report for another entry passed";

  std::string spilling = clean;
  const std::string zero = "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
  spilling.replace(spilling.find(zero), zero.size(), "24 bytes stack frame, 20 bytes spill stores, 20 bytes spill loads");
  const PtxasReport bad = parse_ptxas_report(spilling);
  ASSERT_EQ(bad.functions.size(), 1u);
  EXPECT_EQ(bad.functions[0].stack_frame, 24);
  EXPECT_EQ(bad.functions[0].spill_stores, 20);
  EXPECT_NE(spill_problems(bad, "sgtopk_select_sampled").find("20 bytes spill stores"), std::string::npos);
  // A case's known spill passes up to its allowance, and fails past it.
  EXPECT_EQ(spill_problems(bad, "sgtopk_select_sampled", 24), "");
  EXPECT_NE(spill_problems(bad, "sgtopk_select_sampled", 20), "") << "a 24-byte stack frame passed an allowance of 20";

  // A non-entry function with a stack frame (e.g. a noinline helper) counts
  // too; nvcc's spelling of the line (no "ptxas ." prefix) parses the same.
  const PtxasReport helper = parse_ptxas_report(clean +
                                                "ptxas info    : Function properties for helper\n"
                                                "    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n");
  ASSERT_EQ(helper.functions.size(), 2u);
  EXPECT_NE(spill_problems(helper, "sgtopk_select_sampled").find("'helper': 8 bytes stack frame"), std::string::npos);

  // No report at all (ptxas -v not passed, or its format changed) fails.
  EXPECT_NE(spill_problems(parse_ptxas_report(""), "sgtopk_select_sampled").find("no ptxas resource line"),
            std::string::npos);
  EXPECT_NE(spill_problems(parse_ptxas_report("ptxas info    : 0 bytes gmem\n"), "sgtopk_select_sampled"), "");
}

class JitResources : public ::testing::TestWithParam<SpillCase> {};

TEST_P(JitResources, DefaultKernelsDoNotSpill) {
  const SpillCase& c = GetParam();
  const Plan plan = plan_for(c);
  ASSERT_EQ(plan.arch, "sm_90");
  if (!c.family.empty()) {
    ASSERT_EQ(plan.family, c.family);
  }
  if (c.register_rows) {
    ASSERT_EQ(plan.family, "direct_exact") << "the case no longer covers the register-resident body";
    ASSERT_NE(plan.constant("kRegisterItems"), "0") << "the case no longer covers the register-resident body";
  }

  std::string log;
  const auto start = std::chrono::steady_clock::now();
  try {
    log = compile_with_ptxas_report(plan, "jit-resources-" + c.name);
  } catch (const Error& e) {
    FAIL() << c.name << ": " << e.what();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  const PtxasReport report = parse_ptxas_report(log);
  std::printf("[ ptxas    ] %s (%s, block %u x %u per SM, %.0f ms)\n%s", c.name.c_str(), plan.family.c_str(),
              plan.block, plan.min_blocks_per_sm, ms, report.lines.c_str());
  std::fflush(stdout);

  std::string problems = spill_problems(report, plan.entry, c.allowed_spill_bytes);
  if (!plan.second.entry.empty()) {  // the plan's second kernel, in the same module
    bool seen = false;
    for (const std::string& e : report.entries) seen |= e == plan.second.entry;
    if (!seen) problems += "ptxas did not report compiling the second entry function '" + plan.second.entry + "'\n";
  }
  EXPECT_TRUE(problems.empty()) << c.name << " (" << plan.family << ", entry " << plan.entry
                                << ", default policy, sm_90):\n"
                                << problems << "ptxas report:\n"
                                << (report.lines.empty() ? "(none)\n" : report.lines) << "full NVRTC log:\n"
                                << (log.empty() ? "(empty)\n" : log) << "plan parameters:\n"
                                << plan.parameters_text();
}

INSTANTIATE_TEST_SUITE_P(Sm90, JitResources, ::testing::ValuesIn(spill_cases()),
                         [](const ::testing::TestParamInfo<SpillCase>& p) { return p.param.name; });

// Code generation and NVRTC without a GPU: what the generated source holds,
// that it is deterministic and self-contained, the planner's family choice
// and the sampled plan's parameters, a real NVRTC compile of every
// kernel variant the planner can emit for sm_90 (the cold compile figures are
// printed), what the cache key covers, and a failing compile (reproduction
// folder kept, nothing cached).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "cache/kernel_cache.h"
#include "runtime/codegen.h"
#include "runtime/compile_request.h"
#include "runtime/compiled_plan.h"
#include "runtime/embedded_templates.h"
#include "runtime/error.h"
#include "runtime/knobs.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/plan.h"
#include "runtime/policy.h"
#include "runtime/families/select_common.h"
#include "runtime/launch.h"
#include "runtime/problem.h"
#include "runtime/target.h"
#include "templates/sgtopk/abi.h"
#include "support/key_probes.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace sgtopk;
using namespace sgtopk::detail;

namespace {

using sgtopk::testing::contains;
using sgtopk::testing::read_text;
using sgtopk::testing::files_under;

constexpr int64_t kShortWidth = 5000;          // <= 1024 threads x 16 items: the register path
constexpr int64_t kLongWidth = int64_t{1} << 20;  // the streaming path

Plan plan_for(int k, int64_t width, uint32_t flags = 0, const std::string& arch = "sm_90",
              const Policy& policy = Policy::defaults(), const std::string& family = "", int64_t rows = 64,
              int64_t pitch = 0) {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.k = k;
  p.rows = rows;
  p.width = width;
  p.pitch = pitch;
  p.flags = flags;
  const Problem problem = validate_problem(&p);
  const Target target = resolve_target(-1, arch.c_str(), policy.compile.default_arch);
  return make_plan(problem, policy, target, family);
}

CacheKey key_of(const Plan& plan) { return make_cache_key(make_compile_request(generate_source(plan), plan.arch, plan.policy.compile).key_inputs); }



std::string make_temp_dir(const std::string& stem) {
  std::string templ = (fs::temp_directory_path() / (stem + "_XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) return {};
  return templ;
}

// Quoted includes of a source text ("sgtopk/x.cuh"); angle-bracket includes
// are NVRTC's built-in headers and not ours to embed.
std::vector<std::string> quoted_includes(const std::string& text) {
  static const std::regex include_re(R"(^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\")", std::regex::multiline);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), include_re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

// ------------------------------------------------------------ variants ----

struct Variant {
  std::string family;
  int k = 0;
  int64_t width = 0;
  uint32_t flags = 0;
  int vector_bytes = 16;
  int frontier_global = 65536;
  bool opt_in = false;  // every kernel option of the policy away from its default
  int64_t pitch = 0;    // 0: width

  std::string name() const {
    std::string n = family + "_K" + std::to_string(k) + (width == kShortWidth ? "_short" : "_long") + std::to_string(width);
    if (flags == 0) n += "_plain";
    if (flags & SGTOPK_VALUES) n += "_values";
    if (flags & SGTOPK_SORTED) n += "_sorted";
    if (flags & SGTOPK_STARTS) n += "_starts";
    if (flags & SGTOPK_ROUTE_STATS) n += "_routestats";
    if (pitch != 0) n += "_pitch" + std::to_string(pitch);
    n += "_vec" + std::to_string(vector_bytes);
    if (frontier_global != 65536) n += "_fglobal" + std::to_string(frontier_global);
    if (opt_in) n += "_optin";
    return n;
  }
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name(); }

// The planner's axes, per family. direct_exact: {K 1, 7, 2048, 8192} x
// {short, long} rows, with each flag on in some variant and none in others,
// and the policy's vector width (4, 16) and global frontier capacity (0)
// varied. sampled has no register-resident body (it streams every row, short
// or long), so it gets fewer variants: plain, every flag with a
// pitch, K = 1 and 8192, scalar loads (with no global frontier), the route
// statistics, and the opt-in options (endpoint classification among them).
// split (the sampled body on segments) gets three: plain; K = 1 with every
// flag, a pitch, scalar loads and no global frontier; K = 8192 opt-in.
// short_row (registers only: no loads, frontier or opt-in options to vary)
// gets three: plain; K = 1 with every flag and a pitch; K = 8192 sorted.
std::vector<Variant> jit_variants() {
  constexpr uint32_t V = SGTOPK_VALUES, S = SGTOPK_SORTED, T = SGTOPK_STARTS, R = SGTOPK_ROUTE_STATS;
  struct Spec {
    const char* family;
    int k;
    int64_t width;
    uint32_t flags;
    int vector_bytes;
    int frontier_global;
    bool opt_in = false;
    int64_t pitch = 0;
  };
  const Spec specs[] = {
      {"direct_exact", 1, kShortWidth, 0, 16, 65536},
      {"direct_exact", 7, kShortWidth, V, 16, 65536},
      {"direct_exact", 2048, kShortWidth, S, 16, 65536},
      {"direct_exact", 8192, kShortWidth, V | S | T, 16, 65536},
      {"direct_exact", 2048, kShortWidth, T, 4, 65536},
      {"direct_exact", 1, kLongWidth, T, 16, 65536},
      {"direct_exact", 7, kLongWidth, V | S, 16, 65536},
      {"direct_exact", 2048, kLongWidth, 0, 16, 65536},
      {"direct_exact", 8192, kLongWidth, S, 16, 65536},
      {"direct_exact", 2048, kLongWidth, V | T, 4, 65536},
      {"direct_exact", 2048, kLongWidth, 0, 16, 0},
      {"direct_exact", 8192, kLongWidth, V | S | T | R, 4, 0},
      {"direct_exact", 2048, kLongWidth, V, 16, 65536, true},
      {"direct_exact", 2048, kShortWidth, S | T, 16, 65536, true},
      {"sampled", 2048, kLongWidth, 0, 16, 65536},
      {"sampled", 2048, kLongWidth, V | S | T, 16, 65536, false, kLongWidth + 13},
      {"sampled", 1, kLongWidth, 0, 16, 65536},
      {"sampled", 8192, kLongWidth, S, 16, 65536},
      {"sampled", 2048, kLongWidth, V, 4, 0},
      {"sampled", 2048, kLongWidth, R, 16, 65536},
      {"sampled", 2048, kLongWidth, 0, 16, 65536, true},
      {"split", 2048, kLongWidth, 0, 16, 65536},
      {"split", 1, kLongWidth, V | S | T | R, 4, 0, false, kLongWidth + 13},
      {"split", 8192, kLongWidth, S, 16, 65536, true},
      {"cluster", 2048, kLongWidth, 0, 16, 65536},
      {"cluster", 1, kLongWidth, V | S | T | R, 4, 0, false, kLongWidth + 13},
      {"cluster", 8192, kLongWidth, S, 16, 65536, true},
      {"short_row", 2048, kShortWidth, 0, 16, 65536},
      {"short_row", 1, kShortWidth, V | S | T | R, 16, 65536, false, kShortWidth + 13},
      {"short_row", 8192, 16384, V | S, 16, 65536},
  };
  std::vector<Variant> out;
  for (const Spec& s : specs)
    out.push_back({s.family, s.k, s.width, s.flags, s.vector_bytes, s.frontier_global, s.opt_in, s.pitch});
  return out;
}

Policy policy_for(const Variant& v) {
  Policy policy = Policy::defaults();
  policy.direct.vector_bytes = v.vector_bytes;
  policy.direct.frontier_global_capacity = v.frontier_global;
  if (v.opt_in) {
    policy.direct.prefetch_next_chunk = true;
    policy.direct.endpoint_classification = false;  // the default is on: coarse keys are the opt-out
    policy.direct.aggregate_histogram = true;
    policy.direct.prefetch_l2_chunks = 2;
    policy.direct.small_group = 64;  // the direct default is off, the sampled one on
    policy.sampled.small_group = 0;
    policy.sampled.fine_proposal_excess = 0.0;  // the default sharpens wide coarse bins: off is the opt-out
  }
  validate_policy(policy, "<jit test policy>");
  return policy;
}

}  // namespace

// ------------------------------------------------------- generated source ----

TEST(JitSource, HoldsTheConfigAndTheEntry) {
  const Plan plan = plan_for(2048, 100000, SGTOPK_VALUES | SGTOPK_SORTED);
  const GeneratedSource src = generate_source(plan);
  EXPECT_EQ(src.entry, plan.entry);
  EXPECT_EQ(src.name, plan.entry + ".cu");
  EXPECT_TRUE(contains(src.text, "#include \"" + plan.agent_header + "\"")) << src.text;
  EXPECT_TRUE(contains(src.text, "struct Config {")) << src.text;
  ASSERT_FALSE(plan.config.entries().empty());
  for (const auto& [name, value] : plan.config.entries()) {
    const std::string line = std::string("static constexpr ") + KernelConfig::type_name(value) + " " + name + " = " +
                             KernelConfig::value_text(value) + ";";
    EXPECT_TRUE(contains(src.text, line)) << line << " missing:\n" << src.text;
  }
  // Each constant keeps the type it was declared with: K an int, widths 64-bit, flags bool.
  EXPECT_EQ(plan.config.get<int>("kK"), 2048);
  EXPECT_EQ(plan.config.get<long long>("kWidth"), 100000);
  EXPECT_TRUE(plan.config.get<bool>("kValues"));
  EXPECT_THROW(plan.config.get<int>("kWidth"), Error);
  EXPECT_THROW(plan.config.get<int>("kNoSuchConstant"), Error);
  EXPECT_TRUE(contains(src.text, "static constexpr int kK = 2048;")) << src.text;
  EXPECT_TRUE(contains(src.text, "static constexpr long long kWidth = 100000;")) << src.text;
  EXPECT_TRUE(contains(src.text, "static constexpr bool kValues = true;")) << src.text;
  EXPECT_TRUE(contains(src.text, "static constexpr bool kSorted = true;")) << src.text;
  EXPECT_TRUE(contains(src.text, "static constexpr bool kStarts = false;")) << src.text;
  EXPECT_TRUE(contains(src.text, "extern \"C\" __global__")) << src.text;
  EXPECT_TRUE(contains(src.text, plan.entry + "(const sgtopk::SelectParams params)")) << src.text;
  EXPECT_TRUE(contains(src.text, "__launch_bounds__(" + std::to_string(plan.block))) << src.text;
  EXPECT_TRUE(contains(src.text, plan.agent + "<Config>::run(params)")) << src.text;
  EXPECT_TRUE(contains(src.text, std::to_string(plan.dynamic_smem_bytes) + "u")) << "shared-memory static_assert";
}

TEST(JitSource, IsDeterministic) {
  const Plan a = plan_for(2048, 100000, SGTOPK_VALUES);
  const Plan b = plan_for(2048, 100000, SGTOPK_VALUES);
  const GeneratedSource sa = generate_source(a), sb = generate_source(b), sa2 = generate_source(a);
  EXPECT_EQ(sa.text, sb.text);
  EXPECT_EQ(sa.text, sa2.text);
  EXPECT_EQ(sa.name, sb.name);
  EXPECT_EQ(sa.entry, sb.entry);
  EXPECT_EQ(sa.headers, sb.headers);
  EXPECT_EQ(a.config.entries(), b.config.entries());
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.dynamic_smem_bytes, b.dynamic_smem_bytes);
  EXPECT_EQ(a.workspace_bytes, b.workspace_bytes);
  // ... and it does depend on the problem.
  EXPECT_NE(generate_source(plan_for(1024, 100000, SGTOPK_VALUES)).text, sa.text);
}

TEST(JitSource, EveryIncludedHeaderIsEmbedded) {
  const GeneratedSource src = generate_source(plan_for(2048, 100000));
  std::map<std::string, std::string> headers;
  for (const auto& [name, text] : src.headers) {
    EXPECT_TRUE(headers.emplace(name, text).second) << "header " << name << " given twice";
  }
  // Every embedded template is handed to NVRTC ...
  for (const EmbeddedHeader& h : embedded_headers()) {
    auto it = headers.find(h.name);
    ASSERT_NE(it, headers.end()) << h.name << " is embedded but not in GeneratedSource::headers";
    EXPECT_EQ(it->second, std::string(h.text)) << h.name;
  }
  // ... and every header reachable from the source is among them.
  std::vector<std::string> todo = quoted_includes(src.text);
  ASSERT_FALSE(todo.empty()) << src.text;
  std::set<std::string> seen;
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    auto it = headers.find(name);
    ASSERT_NE(it, headers.end()) << "\"" << name << "\" is included but not in GeneratedSource::headers";
    for (const auto& inner : quoted_includes(it->second)) todo.push_back(inner);
  }
  EXPECT_GT(seen.size(), 1u);
}

// --------------------------------------------------------------- planner ----

namespace {

Policy edited_policy(const std::function<void(Policy&)>& edit) {
  Policy p = Policy::defaults();
  edit(p);
  validate_policy(p, "<jit test policy>");
  return p;
}

// The family the planner picks for a compile-only sm_90 target (132 SMs).
std::string family_for(int k, int64_t rows, int64_t width, const Policy& policy = Policy::defaults()) {
  return plan_for(k, width, 0, "sm_90", policy, "", rows).family;
}

}  // namespace

TEST(JitPlanner, CompileOnlySm90HasTheH100SmCount) {
  EXPECT_EQ(resolve_target(-1, "sm_90", "sm_90").sm_count, 132);
}

TEST(JitPlanner, PicksSampledForManyLongRows) {
  const Plan plan = plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "", 4096);
  EXPECT_EQ(plan.family, "sampled");
  EXPECT_EQ(plan.agent_header, "sgtopk/agent/sampled.cuh");
  EXPECT_EQ(plan.agent, "sgtopk::SampledAgent");
  EXPECT_EQ(plan.entry, "sgtopk_select_sampled");
  // Rows a CTA holds: short_row; wider narrow rows: the direct family; too
  // few long rows to fill 132 SMs: split.
  EXPECT_EQ(family_for(2048, 4096, 16384), "short_row");
  EXPECT_EQ(family_for(2048, 4096, 16385), "direct_exact");
  EXPECT_EQ(family_for(2048, 16, 262144), "split");
}

TEST(JitPlanner, DispatchBoundaries) {
  const Policy d = Policy::defaults();
  ASSERT_EQ(d.dispatch.sampled_min_width, 32768);
  ASSERT_EQ(d.dispatch.sampled_min_rows_per_sm, 2);
  ASSERT_EQ(d.split.min_width, 65536);
  // width >= sampled_min_width ...
  EXPECT_EQ(family_for(2048, 4096, 32768), "sampled");
  EXPECT_EQ(family_for(2048, 4096, 32767), "direct_exact");
  // ... and rows >= SMs x sampled_min_rows_per_sm ...
  EXPECT_EQ(family_for(2048, 264, 262144), "sampled");
  EXPECT_EQ(family_for(2048, 263, 262144), "direct_exact");
  EXPECT_EQ(family_for(2048, 132, 262144), "direct_exact");  // too many rows to split
  // ... below that, split while two CTAs per row fit one per SM (66 rows) ...
  ASSERT_EQ(d.split.ctas_per_sm, 1);
  EXPECT_EQ(family_for(2048, 66, 262144), "split");
  EXPECT_TRUE(contains(plan_for(2048, 262144, 0, "sm_90", d, "", 66).reason,
                       "2 CTAs a row (the largest of select.split.split_counts"))
      << plan_for(2048, 262144, 0, "sm_90", d, "", 66).reason;
  EXPECT_EQ(plan_for(2048, 262144, 0, "sm_90", d, "split", 66).reason, "forced (options.family / --family)");
  EXPECT_EQ(family_for(2048, 67, 262144), "direct_exact");
  // ... and rows of at least select.split.min_width.
  EXPECT_EQ(family_for(2048, 1, 65536), "split");
  EXPECT_EQ(family_for(2048, 1, 65535), "direct_exact");
  EXPECT_EQ(family_for(2048, 1, 16384), "short_row");  // at most select.short_row.max_width
  const Policy no_short = edited_policy([](Policy& p) {
    p.short_row.max_width = 0;
    p.split.min_width = 16384;
  });
  EXPECT_EQ(family_for(2048, 1, 16384, no_short), "split");
  EXPECT_EQ(family_for(2048, 1, 16383, no_short), "direct_exact");  // below select.split.min_width
  const Policy one = edited_policy([](Policy& p) { p.dispatch.sampled_min_rows_per_sm = 1; });
  EXPECT_EQ(family_for(2048, 132, 262144, one), "sampled");
  EXPECT_EQ(family_for(2048, 131, 262144, one), "direct_exact");  // too many rows to split
  const Policy any_rows = edited_policy([](Policy& p) { p.dispatch.sampled_min_rows_per_sm = 0; });
  EXPECT_EQ(family_for(2048, 1, 262144, any_rows), "sampled");
  // ... and width > K: a row no longer than K needs no selection.
  const Policy any_width = edited_policy([](Policy& p) {
    p.dispatch.sampled_min_width = 0;
    p.short_row.max_width = 0;
  });
  EXPECT_EQ(family_for(2048, 4096, 2049, any_width), "sampled");
  EXPECT_EQ(family_for(2048, 4096, 2048, any_width), "direct_exact");
}

// The short-row family: rows up to select.short_row.max_width, in the fewest
// threads (a power of two, at least min_block_threads) that hold the row in
// items_per_thread scores each, up to max_block_threads; launches of at most
// a row per SM in few_rows_items_per_thread each, up to 1024 threads; the
// scores a thread rounded up to whole runs of four (a float4 each).
TEST(JitPlanner, ShortRowShapes) {
  const Policy d = Policy::defaults();
  ASSERT_EQ(d.short_row.max_width, 16384);
  ASSERT_EQ(d.short_row.items_per_thread, 16);
  ASSERT_EQ(d.short_row.min_block_threads, 128);
  ASSERT_EQ(d.short_row.max_block_threads, 512);
  ASSERT_EQ(d.short_row.few_rows_items_per_thread, 4);
  const auto shape_for = [&](int64_t width, int64_t rows) {
    const Plan plan = plan_for(2048, width, 0, "sm_90", d, "short_row", rows);
    return std::to_string(plan.block) + "x" + plan.constant("kRegisterItems");
  };
  const auto shape = [&](int64_t width) { return shape_for(width, 1000); };
  EXPECT_EQ(shape_for(100, 132), "128x4");  // at most a row per SM: 4 scores a thread, up to 1024 threads
  EXPECT_EQ(shape_for(4096, 132), "1024x4");
  EXPECT_EQ(shape_for(16384, 1), "1024x16");
  EXPECT_EQ(shape_for(4096, 133), "256x16");
  EXPECT_EQ(shape(100), "128x4");
  EXPECT_EQ(shape(2048), "128x16");
  EXPECT_EQ(shape(2049), "256x12");
  EXPECT_EQ(shape(4096), "256x16");
  EXPECT_EQ(shape(8192), "512x16");
  EXPECT_EQ(shape(8193), "512x20");  // past max_block_threads: more scores a thread
  EXPECT_EQ(shape(16384), "512x32");
  const Plan plan = plan_for(2048, 4096, 0, "sm_90", d, "", 65536);
  EXPECT_EQ(plan.family, "short_row");
  EXPECT_EQ(plan.grid, 65536u);  // one CTA a row
  EXPECT_EQ(plan.workspace_bytes, 0u);
  EXPECT_TRUE(contains(plan.reason, "width 4096 <= select.short_row.max_width 16384: one CTA of 256 threads a row"))
      << plan.reason;
  const Policy wide = edited_policy([](Policy& p) { p.short_row.max_block_threads = 1024; });
  EXPECT_EQ(plan_for(2048, 32768, 0, "sm_90", wide, "short_row", 1000).constant("kRegisterItems"), "32");
  EXPECT_EQ(plan_for(2048, 32768, 0, "sm_90", d, "short_row", 4).constant("kRegisterItems"), "32");  // few rows: 1024
  for (const auto& [width, policy, limit] : {std::tuple<int64_t, Policy, int>{16385, d, 16384}, {32769, wide, 32768}}) {
    try {
      (void)plan_for(2048, width, 0, "sm_90", policy, "short_row", 1000);
      FAIL() << "a row too wide for the short-row family was planned";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT);
      EXPECT_TRUE(contains(e.what(), "rows of width " + std::to_string(width) +
                                         " are too wide for the short_row family (at most " + std::to_string(limit)))
          << e.what();
    }
  }
  // A max_width past what the CTA holds: the planner passes the family over.
  const Policy past = edited_policy([](Policy& p) { p.short_row.max_width = 32768; });
  EXPECT_EQ(family_for(2048, 4096, 20000, past), "direct_exact");
}

// The split's segments keep at least select.split.segment_capacity
// candidates in shared memory: the kernel's constant and its shared memory
// grow, the plan says why, and a capacity past the target's shared memory is
// refused naming that key.
TEST(JitPlanner, SplitSegmentCapacity) {
  const Policy off = edited_policy([](Policy& p) { p.split.segment_capacity = 0; });
  const Plan base = plan_for(2048, 262144, 0, "sm_90", off, "split", 64);
  EXPECT_EQ(base.constant("kFrontierSharedCapacity"), "4096");
  const Plan plan = plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "split", 64);
  EXPECT_EQ(plan.constant("kFrontierSharedCapacity"), "8192");
  EXPECT_GE(plan.dynamic_smem_bytes, base.dynamic_smem_bytes);  // the finisher's shared form may hold more already
  bool said = false;
  for (const std::string& d : plan.derived) said = said || contains(d, "[select.split.segment_capacity 8192]");
  EXPECT_TRUE(said) << plan.parameters_text();
  // The default fits every target's shared memory at every K the split takes.
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90"})
    for (int k : {1, 256, 2048, 8192}) EXPECT_NO_THROW((void)plan_for(k, 262144, 0, arch, Policy::defaults(), "split", 4)) << arch << " K=" << k;
  // Below the direct family's entries it changes nothing.
  const Policy low = edited_policy([](Policy& p) { p.split.segment_capacity = 1024; });
  EXPECT_EQ(plan_for(2048, 262144, 0, "sm_90", low, "split", 64).constant("kFrontierSharedCapacity"), "4096");
  const Policy huge = edited_policy([](Policy& p) { p.split.segment_capacity = 16384; });
  try {
    (void)plan_for(2048, 262144, 0, "sm_86", huge, "split", 64);
    FAIL() << "a split plan past sm_86's shared memory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e.what(), "select.split.segment_capacity (now 16384)")) << e.what();
  }
}

// The cluster family: off by default (select.cluster.max_rows = 0); opened,
// it takes a few long rows whose clusters all fit the GPU at once, on sm_90
// or newer; elsewhere the split family does, and forcing it there is refused.
TEST(JitPlanner, ClusterWhereThePolicyOpensIt) {
  EXPECT_EQ(Policy::defaults().cluster.max_rows, 0);
  EXPECT_EQ(family_for(2048, 4, 262144), "split");
  EXPECT_TRUE(contains(plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "", 4).reason,
                       "not cluster: rows 4 > select.cluster.max_rows 0"));
  const Policy open = edited_policy([](Policy& p) { p.cluster.max_rows = 16; });
  EXPECT_EQ(family_for(2048, 4, 262144, open), "cluster");
  EXPECT_EQ(family_for(2048, 16, 262144, open), "cluster");  // 16 x 8 CTAs fit 132 SMs
  const Plan plan = plan_for(2048, 262144, 0, "sm_90", open, "", 4);
  EXPECT_EQ(plan.grid, 32u);
  EXPECT_EQ(plan.cluster, 8u);
  EXPECT_TRUE(contains(plan.reason, "select.cluster.max_rows 16")) << plan.reason;
  EXPECT_TRUE(contains(generate_source(plan).text, "__cluster_dims__(8, 1, 1)"));
  EXPECT_EQ(family_for(2048, 17, 262144, open), "split");  // past max_rows
  const Policy wider = edited_policy([](Policy& p) { p.cluster.max_rows = 64; });
  EXPECT_EQ(family_for(2048, 16, 262144, wider), "cluster");
  EXPECT_EQ(family_for(2048, 17, 262144, wider), "split");  // 17 x 8 CTAs do not fit 132 SMs
  EXPECT_TRUE(contains(plan_for(2048, 262144, 0, "sm_90", wider, "", 17).reason,
                       "not cluster: sm_90 has no clusters, or rows x select.cluster.cluster_size 8 > 132 SMs"))
      << plan_for(2048, 262144, 0, "sm_90", wider, "", 17).reason;
  EXPECT_EQ(family_for(2048, 4, 32768, open), "direct_exact");  // below select.cluster.min_width
  EXPECT_EQ(plan_for(2048, 262144, 0, "sm_80", open, "", 4).family, "split");  // no clusters before sm_90
  try {
    (void)plan_for(2048, 262144, 0, "sm_80", open, "cluster", 4);
    FAIL() << "a cluster plan for sm_80 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e.what(), "sm_90 or newer")) << e.what();
  }
}

TEST(JitPlanner, ForcingAFamily) {
  // A shape the planner gives to direct_exact, forced to sampled, and back.
  const Plan sampled = plan_for(2048, 8192, 0, "sm_90", Policy::defaults(), "sampled", 16);
  EXPECT_EQ(sampled.family, "sampled");
  EXPECT_EQ(sampled.entry, "sgtopk_select_sampled");
  const Plan direct = plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "direct_exact", 4096);
  EXPECT_EQ(direct.family, "direct_exact");
  EXPECT_EQ(direct.entry, "sgtopk_select_direct_exact");
}

TEST(JitPlanner, UnknownFamilyListsTheKnownOnes) {
  EXPECT_EQ(select_families(), (std::vector<std::string>{"direct_exact", "sampled", "split", "short_row", "cluster"}));
  try {
    (void)plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "sampeld", 4096);
    FAIL() << "an unknown family was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e.what(), "family 'sampeld' is unknown (known: direct_exact, sampled, split, short_row, cluster)")) << e.what();
  }
}

TEST(JitPlanner, MinSampleRankFixesSmallerStridesForSmallK) {
  Policy policy = Policy::defaults();
  policy.sampled.stride_wide = 128;  // the paper's strides, so that the two differ
  policy.sampled.stride_narrow = 64;
  policy.sampled.min_sample_rank = 16;
  policy.sampled.primary_confidence = 0.0;  // the margin's ranks alone
  // K = 256: both strides shrink to 25, where q0 = ceil(1.5 * 256 / 25) = 16.
  const std::string small_k = plan_for(256, 262144, 0, "sm_90", policy, "sampled", 4096).parameters_text();
  for (const char* line : {"kStrideWide=25\n", "kStrideNarrow=25\n", "kQ0Wide=16\n", "kQ1Wide=18\n"})
    EXPECT_TRUE(contains(small_k, line)) << line << "not in:\n" << small_k;
  // K = 2048 already reaches the rank: the policy's strides stand.
  const std::string k2048 = plan_for(2048, 262144, 0, "sm_90", policy, "sampled", 4096).parameters_text();
  for (const char* line : {"kStrideWide=128\n", "kStrideNarrow=64\n", "kQ0Wide=24\n"})
    EXPECT_TRUE(contains(k2048, line)) << line << "not in:\n" << k2048;
}

TEST(JitPlanner, SmallKGetsSmallerViewBlocks) {
  // q0 = ceil(8 + 3 sqrt(8)) = 17 (the confidence) spans at least
  // min_view_blocks = 4 blocks of 4; the margin's 12 alone, 4 blocks of 2.
  const std::string text = plan_for(256, 262144, 0, "sm_90", Policy::defaults(), "sampled", 4096).parameters_text();
  for (const char* line : {"kViewBlock=4\n", "kQ0Wide=17\n", "kQ1Wide=19\n"})
    EXPECT_TRUE(contains(text, line)) << line << "not in:\n" << text;
  Policy margins = Policy::defaults();
  margins.sampled.primary_confidence = 0.0;
  const std::string paper = plan_for(256, 262144, 0, "sm_90", margins, "sampled", 4096).parameters_text();
  EXPECT_TRUE(contains(paper, "kViewBlock=2\n")) << paper;
}

TEST(JitPlanner, SharedFrontierGrowsWithK) {
  // frontier_shared_per_k = 2: 2 x K entries when above frontier_shared_capacity
  // (4096), up to frontier_shared_limit (8192).
  const Policy d = Policy::defaults();
  EXPECT_EQ(frontier_shared_entries(1024, d), 4096);
  EXPECT_EQ(frontier_shared_entries(2048, d), 4096);
  EXPECT_EQ(frontier_shared_entries(3000, d), 6144);  // 6000 rounded up to 256
  EXPECT_EQ(frontier_shared_entries(4096, d), 8192);
  EXPECT_EQ(frontier_shared_entries(8192, d), 8192);
  Policy off = d;
  off.direct.frontier_shared_per_k = 0.0;
  EXPECT_EQ(frontier_shared_entries(8192, off), 4096);
  Policy big = d;
  big.direct.frontier_shared_capacity = 16384;  // the capacity is a floor, the limit caps only the rise
  EXPECT_EQ(frontier_shared_entries(8192, big), 16384);
  Policy split_off = d;
  split_off.split.segment_capacity = 0;  // the split's own floor (SplitSegmentCapacity) aside
  for (const char* family : {"sampled", "split"}) {
    const int64_t rows = std::string(family) == "split" ? 4 : 4096;
    const Policy& policy = std::string(family) == "split" ? split_off : d;
    const Plan k4096 = plan_for(4096, 262144, 0, "sm_90", policy, family, rows);
    EXPECT_TRUE(contains(k4096.parameters_text(), "kFrontierSharedCapacity=8192\n")) << family << k4096.parameters_text();
    const Plan k2048 = plan_for(2048, 262144, 0, "sm_90", policy, family, rows);
    EXPECT_TRUE(contains(k2048.parameters_text(), "kFrontierSharedCapacity=4096\n")) << family << k2048.parameters_text();
    // The sampled block's shared memory is sized for the larger frontier: 8
    // bytes an entry more (split's finisher reuses the frontier's bytes).
    if (std::string(family) == "sampled") EXPECT_EQ(k4096.dynamic_smem_bytes, k2048.dynamic_smem_bytes + 4096u * 8u);
  }
  // The direct family keeps frontier_shared_capacity: its floor marks share
  // the block, and two of its CTAs must still fit an SM at 1M scores.
  const Plan direct = plan_for(4096, 1 << 20, 0, "sm_90", d, "direct_exact", 4096);
  EXPECT_TRUE(contains(direct.parameters_text(), "kFrontierSharedCapacity=4096\n")) << direct.parameters_text();
  EXPECT_LE(2u * (direct.dynamic_smem_bytes + 1024u), 228u * 1024u);
}

TEST(JitPlanner, SampledParametersAtTheDefaultPolicy) {
  const Plan plan = plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "", 4096);
  ASSERT_EQ(plan.family, "sampled");
  // Sample ranks ceil(margin * K / stride): 1.5 and 1.75 x 2048 over stride 32.
  const std::string text = plan.parameters_text();
  for (const char* line : {"kQ0Wide=96\n", "kQ1Wide=112\n", "kQ0Narrow=96\n", "kQ1Narrow=112\n", "kStrideWide=32\n",
                           "kStrideNarrow=32\n", "kViewBlock=16\n", "kWideRowThreshold=131072\n", "kK=2048\n", "kThreads=512\n",
                           "kRegisterItems=0\n", "kRouteStats=false\n"})
    EXPECT_TRUE(contains(text, line)) << line << "not in:\n" << text;
  // The launch: 512-thread persistent workers, two per SM.
  EXPECT_EQ(plan.block, 512u);
  EXPECT_EQ(plan.min_blocks_per_sm, 2u);
  EXPECT_EQ(plan.grid, 132u * 2u);
  EXPECT_TRUE(contains(generate_source(plan).text, "__launch_bounds__(512, 2) sgtopk_select_sampled("))
      << generate_source(plan).text;
  // The direct family's streamed rows: 512-thread workers, two per SM too.
  const Plan direct = plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "direct_exact", 4096);
  EXPECT_EQ(direct.min_blocks_per_sm, 2u);
  EXPECT_TRUE(contains(generate_source(direct).text, "__launch_bounds__(512, 2) sgtopk_select_direct_exact("));
  // Both families share the selection state and the frontier layout; the
  // direct family adds its floor marks: 262144 / 4 vectors in chunks of
  // 512 x 8, 4 chunks of 8 bits per word: 4 words per thread; and their
  // bins, 2 bytes per vector of the first 3 chunks.
  ASSERT_EQ(Policy::defaults().direct.loads_in_flight, 8);
  ASSERT_EQ(Policy::defaults().direct.block_threads, 512);
  EXPECT_TRUE(contains(text, "kFloorMarkWords=0\n")) << text;
  EXPECT_TRUE(contains(direct.parameters_text(), "kFloorMarkWords=4\n")) << direct.parameters_text();
  ASSERT_EQ(Policy::defaults().direct.marked_bin_chunks, 3);
  EXPECT_EQ(plan.dynamic_smem_bytes + 4u * 512u * 4u + 3u * 4096u * 2u, direct.dynamic_smem_bytes);
}

// The direct family's streamed rows: block_threads x workers_per_sm per SM,
// but a launch of no more rows than SMs gives each row one CTA of all its
// SM's threads (so plan_for's 64 rows below run 1024-thread CTAs).
TEST(JitPlanner, DirectRowsTakeTheirSMsThreadsWhenRowsAreFew) {
  const Policy d = Policy::defaults();
  ASSERT_EQ(d.direct.block_threads * d.direct.workers_per_sm, 1024);
  const Plan many = plan_for(2048, 131072, 0, "sm_90", d, "direct_exact", 4096);
  EXPECT_EQ(many.block, 512u);
  EXPECT_EQ(many.min_blocks_per_sm, 2u);
  EXPECT_EQ(many.grid, 132u * 2u);
  for (int64_t rows : {1, 64, 132}) {
    const Plan few = plan_for(2048, 131072, 0, "sm_90", d, "direct_exact", rows);
    EXPECT_EQ(few.block, 1024u) << rows;
    EXPECT_EQ(few.min_blocks_per_sm, 1u) << rows;
    EXPECT_EQ(few.grid, static_cast<unsigned>(rows)) << rows;
  }
  EXPECT_EQ(plan_for(2048, 131072, 0, "sm_90", d, "direct_exact", 133).block, 512u);
  // select.direct.row_per_sm = false: few rows keep block_threads CTAs.
  Policy off = d;
  off.direct.row_per_sm = false;
  const Plan kept = plan_for(2048, 131072, 0, "sm_90", off, "direct_exact", 64);
  EXPECT_EQ(kept.block, 512u);
  EXPECT_EQ(kept.min_blocks_per_sm, 2u);
  EXPECT_EQ(kept.grid, 64u);
  EXPECT_EQ(sgtopk::detail::parse_policy_string("[select.direct]\nrow_per_sm = false\n"), off);
  // Register rows keep their own CTA size whatever the rows.
  EXPECT_EQ(plan_for(2048, 8000, 0, "sm_90", d, "direct_exact", 4096).block, 1024u);
  EXPECT_EQ(plan_for(2048, 8000, 0, "sm_90", d, "direct_exact", 4096).min_blocks_per_sm, 1u);
}

// The kernel raises at every (warps / n)-th claim of a chunk, the last one
// always: n is rounded down to a power of two, at most the block's warps.
TEST(JitPlanner, RaisesPerChunkDivideTheWarps) {
  const auto raises = [](int asked, int64_t rows) {
    return plan_for(2048, 131072, 0, "sm_90", edited_policy([&](Policy& p) { p.direct.raises_per_chunk = asked; }),
                    "direct_exact", rows)
        .constant("kRaisesPerChunk");
  };
  EXPECT_EQ(raises(1, 4096), "1");
  EXPECT_EQ(raises(2, 4096), "2");
  EXPECT_EQ(raises(3, 4096), "2");
  EXPECT_EQ(raises(12, 4096), "8");
  EXPECT_EQ(raises(32, 4096), "16");  // 512 threads: 16 warps
  EXPECT_EQ(raises(32, 64), "32");    // one 1024-thread CTA a row
}

TEST(JitPlanner, FloorMarksOnlyWhereTheyApplyAndFit) {
  const auto words = [](const Plan& plan) { return plan.constant("kFloorMarkWords"); };
  const Policy d = Policy::defaults();
  ASSERT_TRUE(d.direct.floor_marks);
  // 2^20 scores: 32 chunks of 8192 vectors (1024 threads x 8), 4 per word;
  // 32 KB beside the rest (and the bins of the first chunks read).
  ASSERT_EQ(d.direct.loads_in_flight, 8);
  const Plan wide = plan_for(2048, 1 << 20, 0, "sm_90", d, "direct_exact", 64);
  EXPECT_EQ(words(wide), "8");
  EXPECT_EQ(wide.dynamic_smem_bytes, plan_for(2048, 1 << 20, 0, "sm_90", d, "sampled", 64).dynamic_smem_bytes + 32768u +
                                         d.direct.marked_bin_chunks * 8192u * 2u);
  // A chunk's field rounds loads_in_flight up to a power of two: 3 -> 4 bits.
  Policy three = d;
  three.direct.loads_in_flight = 3;
  EXPECT_EQ(words(plan_for(2048, 1 << 20, 0, "sm_90", three, "direct_exact", 64)), "11");  // ceil(86 / 8)
  // Register rows read their scores from registers: nothing to skip.
  EXPECT_EQ(words(plan_for(64, 4096, 0, "sm_90", d, "direct_exact", 64)), "0");
  // Off by policy, and with scalar loads (no vectors to mark).
  Policy off = d;
  off.direct.floor_marks = false;
  EXPECT_EQ(words(plan_for(2048, 1 << 20, 0, "sm_90", off, "direct_exact", 64)), "0");
  Policy scalar = d;
  scalar.direct.vector_bytes = 4;
  EXPECT_EQ(words(plan_for(2048, 1 << 20, 0, "sm_90", scalar, "direct_exact", 64)), "0");
  // Where they do not fit (sm_86: 99 KB; 4 M scores need 124 KB of marks),
  // the plan drops them rather than failing.
  const Plan tight = plan_for(2048, 4000000, 0, "sm_86", d, "direct_exact", 64);
  EXPECT_EQ(words(tight), "0");
  EXPECT_EQ(words(plan_for(2048, 4000000, 0, "sm_90", d, "direct_exact", 64)), "31");
  EXPECT_EQ(words(plan_for(2048, 1536000, 0, "sm_90", d, "direct_exact", 64)), "12");
}

TEST(JitPlanner, GatheredMarksAndWorkUnitsWhereTheyApply) {
  const Policy d = Policy::defaults();
  ASSERT_TRUE(d.direct.gather_marked);
  ASSERT_TRUE(d.direct.work_units);
  const auto constant = [](const Policy& policy, int64_t width, const char* name) {
    return plan_for(2048, width, 0, "sm_90", policy, "direct_exact", 64).constant(name);
  };
  // Streamed rows with marks gather them; register rows and rows without
  // marks have none to gather.
  EXPECT_EQ(constant(d, 1 << 20, "kGatherMarked"), "true");
  EXPECT_EQ(constant(d, 4096, "kGatherMarked"), "false");
  EXPECT_EQ(constant(edited_policy([](Policy& p) { p.direct.floor_marks = false; }), 1 << 20, "kGatherMarked"), "false");
  EXPECT_EQ(constant(edited_policy([](Policy& p) { p.direct.gather_marked = false; }), 1 << 20, "kGatherMarked"), "false");
  // Work units need the 16-byte body and give way to both look-aheads.
  EXPECT_EQ(constant(d, 1 << 20, "kWorkUnits"), "true");
  EXPECT_EQ(constant(edited_policy([](Policy& p) { p.direct.vector_bytes = 4; }), 1 << 20, "kWorkUnits"), "false");
  EXPECT_EQ(constant(edited_policy([](Policy& p) { p.direct.prefetch_next_chunk = true; }), 1 << 20, "kWorkUnits"),
            "false");
  EXPECT_EQ(constant(edited_policy([](Policy& p) { p.direct.prefetch_l2_chunks = 1; }), 1 << 20, "kWorkUnits"), "false");
  EXPECT_EQ(constant(edited_policy([](Policy& p) { p.direct.work_units = false; }), 1 << 20, "kWorkUnits"), "false");
  // The sampled family's exact recovery route follows the same policy.
  EXPECT_EQ(plan_for(2048, 1 << 20, 0, "sm_90", d, "sampled", 4096).constant("kWorkUnits"), "true");
}

TEST(JitPlanner, MarkedBinsForTheFirstChunksRead) {
  const Policy d = Policy::defaults();
  ASSERT_EQ(d.direct.marked_bin_chunks, 3);
  const auto plan = [](const Policy& policy, int64_t width) {
    return plan_for(2048, width, 0, "sm_90", policy, "direct_exact", 64);
  };
  const auto chunks = [&](const Policy& policy, int64_t width) { return plan(policy, width).constant("kMarkedBinChunks"); };
  EXPECT_EQ(chunks(d, 131072), "3");
  EXPECT_EQ(chunks(d, 1 << 20), "3");
  // No more chunks than the widest row has: 131072 / 4 vectors in chunks of
  // 1024 x 8 (loads_in_flight 4: chunks of 1024 x 4).
  ASSERT_EQ(d.direct.loads_in_flight, 8);
  const Policy sixteen = edited_policy([](Policy& p) { p.direct.marked_bin_chunks = 16; });
  EXPECT_EQ(chunks(sixteen, 131072), "4");
  const Policy sixteen_by_4 = edited_policy([](Policy& p) {
    p.direct.marked_bin_chunks = 16;
    p.direct.loads_in_flight = 4;
  });
  EXPECT_EQ(chunks(sixteen_by_4, 131072), "8");
  EXPECT_EQ(chunks(sixteen_by_4, 1 << 20), "16");
  // 2 bytes a vector of each chunk, on top of the marks.
  const Policy none = edited_policy([](Policy& p) { p.direct.marked_bin_chunks = 0; });
  EXPECT_EQ(chunks(none, 131072), "0");
  EXPECT_EQ(plan(d, 131072).dynamic_smem_bytes, plan(none, 131072).dynamic_smem_bytes + 3u * 1024u * 8u * 2u);
  EXPECT_EQ(plan(sixteen, 131072).dynamic_smem_bytes, plan(none, 131072).dynamic_smem_bytes + 4u * 1024u * 8u * 2u);
  // Where they would not fit beside the rest (16 chunks of 16 KB at 2^20), none.
  EXPECT_EQ(chunks(sixteen, 1 << 20), "0");
  // Only with marks: not for register rows, nor without floor marks, nor in
  // the sampled family's recovery.
  EXPECT_EQ(chunks(d, 4096), "0");
  EXPECT_EQ(chunks(edited_policy([](Policy& p) { p.direct.floor_marks = false; }), 131072), "0");
  EXPECT_EQ(plan_for(2048, 131072, 0, "sm_90", d, "sampled", 4096).constant("kMarkedBinChunks"), "0");
  // Not where they would not fit beside the rest (sm_86: 99 KB in all).
  EXPECT_EQ(plan_for(2048, 131072, 0, "sm_86", sixteen, "direct_exact", 64).constant("kMarkedBinChunks"), "0");
  EXPECT_EQ(plan_for(2048, 131072, 0, "sm_90", sixteen, "direct_exact", 64).constant("kMarkedBinChunks"), "4");
}

TEST(JitPlanner, EachFamilyHasItsOwnLoadsInFlightAndSmallGroup) {
  const Policy d = Policy::defaults();
  ASSERT_EQ(d.direct.loads_in_flight, 8);
  ASSERT_EQ(d.sampled.loads_in_flight, 4);
  ASSERT_EQ(d.direct.small_group, 0);
  ASSERT_EQ(d.sampled.small_group, 64);
  const Policy direct2 = edited_policy([](Policy& p) {
    p.direct.loads_in_flight = 2;
    p.direct.small_group = 32;
  });
  const Policy sampled2 = edited_policy([](Policy& p) {
    p.sampled.loads_in_flight = 2;
    p.sampled.small_group = 16;
  });
  const auto constant = [](const Policy& policy, const char* family, const char* name) {
    return plan_for(2048, 1 << 20, 0, "sm_90", policy, family, 4096).constant(name);
  };
  EXPECT_EQ(constant(direct2, "direct_exact", "kLoadsInFlight"), "2");
  EXPECT_EQ(constant(direct2, "direct_exact", "kSmallGroup"), "32");
  EXPECT_EQ(constant(direct2, "sampled", "kLoadsInFlight"), "4");
  EXPECT_EQ(constant(direct2, "sampled", "kSmallGroup"), "64");
  EXPECT_EQ(constant(sampled2, "sampled", "kLoadsInFlight"), "2");
  EXPECT_EQ(constant(sampled2, "sampled", "kSmallGroup"), "16");
  EXPECT_EQ(constant(sampled2, "direct_exact", "kLoadsInFlight"), "8");
  EXPECT_EQ(constant(sampled2, "direct_exact", "kSmallGroup"), "0");
  // The gathered batch: 4 by default, the family's loads when 0.
  EXPECT_EQ(plan_for(2048, 1 << 20, 0, "sm_90", d, "direct_exact", 64).constant("kGatherBatch"), "4");
  const Policy follows = edited_policy([](Policy& p) { p.direct.gather_batch = 0; });
  EXPECT_EQ(plan_for(2048, 1 << 20, 0, "sm_90", follows, "direct_exact", 64).constant("kGatherBatch"), "8");
}

TEST(JitPlanner, SampledWorkspaceIsTheRowCountersAndOneSlicePerWorker) {
  const Policy d = Policy::defaults();
  ASSERT_EQ(d.sampled.workers_per_sm, 2);
  ASSERT_EQ(d.direct.frontier_global_capacity, 16384);
  for (int64_t rows : {int64_t{1}, int64_t{200}, int64_t{264}, int64_t{265}, int64_t{4096}}) {
    SCOPED_TRACE("rows=" + std::to_string(rows));
    const Plan plan = plan_for(2048, 262144, 0, "sm_90", d, "sampled", rows);
    const int64_t workers = std::min<int64_t>(rows, 132 * 2);
    EXPECT_EQ(plan.grid, static_cast<unsigned>(workers));
    EXPECT_EQ(plan.workspace_bytes, 256u + static_cast<uint64_t>(workers) * 16384u * 8u);
  }
  // The policy's worker count sizes the pool and the bounds; no global frontier leaves the counters.
  const Plan three = plan_for(2048, 262144, 0, "sm_90", edited_policy([](Policy& p) { p.sampled.workers_per_sm = 3; }),
                              "sampled", 4096);
  EXPECT_EQ(three.grid, 132u * 3u);
  EXPECT_EQ(three.min_blocks_per_sm, 3u);
  EXPECT_EQ(three.workspace_bytes, 256u + 132u * 3u * 16384u * 8u);
  const Plan none = plan_for(2048, 262144, 0, "sm_90",
                             edited_policy([](Policy& p) { p.direct.frontier_global_capacity = 0; }), "sampled", 4096);
  EXPECT_EQ(none.workspace_bytes, 256u);
}

// ------------------------------------------------------ NVRTC variants ----

TEST(JitVariants, CoverThePlannersAxes) {
  const auto variants = jit_variants();
  struct Axes {
    std::set<int> ks;
    bool short_row = false, long_row = false, values = false, sorted = false, starts = false, route_stats = false,
         none = false, pitch = false, vec4 = false, vec16 = false, fglobal0 = false, opt_in = false;
  };
  std::map<std::string, Axes> by_family;
  for (const auto& v : variants) {
    Axes& a = by_family[v.family];
    a.ks.insert(v.k);
    a.short_row |= v.width == kShortWidth;
    a.long_row |= v.width == kLongWidth;
    a.values |= (v.flags & SGTOPK_VALUES) != 0;
    a.sorted |= (v.flags & SGTOPK_SORTED) != 0;
    a.starts |= (v.flags & SGTOPK_STARTS) != 0;
    a.route_stats |= (v.flags & SGTOPK_ROUTE_STATS) != 0;
    a.none |= v.flags == 0;
    a.pitch |= v.pitch != 0 && v.pitch != v.width;
    a.vec4 |= v.vector_bytes == 4;
    a.vec16 |= v.vector_bytes == 16;
    a.fglobal0 |= v.frontier_global == 0;
    a.opt_in |= v.opt_in;
  }
  std::set<std::string> families;
  for (const auto& [family, a] : by_family) families.insert(family);
  const std::vector<std::string> names = select_families();
  EXPECT_EQ(families, std::set<std::string>(names.begin(), names.end()));
  for (const auto& [family, a] : by_family) {
    SCOPED_TRACE(family);
    EXPECT_TRUE(a.ks.count(1) && a.ks.count(2048) && a.ks.count(8192));
    EXPECT_TRUE(a.values && a.sorted && a.starts && a.route_stats && a.none);
    if (family == "short_row") {
      EXPECT_TRUE(a.pitch);
      continue;
    }
    EXPECT_TRUE(a.long_row && a.vec4 && a.vec16 && a.fglobal0 && a.opt_in);
  }
  // Only direct_exact has a short-row (register-resident) body.
  const Axes& direct = by_family["direct_exact"];
  EXPECT_EQ(direct.ks, (std::set<int>{1, 7, 2048, 8192}));
  EXPECT_TRUE(direct.short_row);
  EXPECT_TRUE(by_family["sampled"].pitch);
  // The short-row variants compile in well under a second; the others take seconds.
  EXPECT_LE(variants.size() - 3u, 27u) << "each variant is a cold NVRTC compile of several seconds (three a long-row family)";
  const Policy defaults = Policy::defaults();
  EXPECT_LE(kShortWidth, int64_t{defaults.direct.register_block_threads} * defaults.direct.items_per_thread);
  EXPECT_GT(kLongWidth, int64_t{defaults.direct.register_block_threads} * defaults.direct.items_per_thread);
}

class JitCompile : public ::testing::TestWithParam<Variant> {};

TEST_P(JitCompile, NvrtcBuildsACubin) {
  const Variant& v = GetParam();
  const Policy policy = policy_for(v);
  const Plan plan = plan_for(v.k, v.width, v.flags, "sm_90", policy, v.family, 64, v.pitch);
  ASSERT_EQ(plan.family, v.family);
  ASSERT_EQ(plan.arch, "sm_90");
  // The variant really exercises what its name says.
  const bool register_path = plan.constant("kRegisterItems") != "0";
  EXPECT_EQ(register_path, (plan.family == "direct_exact" && v.width == kShortWidth) || plan.family == "short_row")
      << "kRegisterItems=" << plan.constant("kRegisterItems");
  EXPECT_EQ(plan.constant("kVectorLoads"), v.vector_bytes == 16 ? "true" : "false");
  EXPECT_EQ(plan.constant("kFrontierGlobalCapacity"), std::to_string(v.frontier_global));
  EXPECT_EQ(plan.constant("kRouteStats"), (v.flags & SGTOPK_ROUTE_STATS) ? "true" : "false");
  EXPECT_EQ(plan.constant("kEndpointClassification"), v.opt_in ? "false" : "true");
  EXPECT_EQ(plan.constant("kPrefetchL2Chunks"), v.opt_in ? "2" : "0");
  // The small-group finish: on by default in the sampled family (and the
  // split one, which takes its value), off in the direct one.
  const bool sampled_body = plan.family == "sampled" || plan.family == "split" || plan.family == "cluster";
  // (The cluster's group is spread over its CTAs: no small-group finish.)
  EXPECT_EQ(plan.constant("kSmallGroup"), sampled_body != v.opt_in && plan.family != "cluster" ? "64" : "0");
  if (sampled_body) {
    EXPECT_EQ(plan.constant("kFineTriggerWide") == "0", v.opt_in) << plan.constant("kFineTriggerWide");
    EXPECT_EQ(plan.constant("kFineTriggerNarrow") == "0", v.opt_in) << plan.constant("kFineTriggerNarrow");
  }
  EXPECT_EQ(plan.config.get<long long>("kPitch"), v.pitch != 0 ? v.pitch : v.width);

  const GeneratedSource src = generate_source(plan);
  const std::vector<std::string> options = nvrtc_options(plan.arch, plan.policy.compile);
  std::vector<char> cubin;
  const auto start = std::chrono::steady_clock::now();
  try {
    cubin = compile_cubin(src, options, plan.arch, "jit-test-" + v.name());
  } catch (const Error& e) {
    FAIL() << v.name() << ": " << e.what();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ jit cold ] %-58s %8.1f ms  cubin %7zu B  smem %6u B  regs-path %s\n", v.name().c_str(), ms,
              cubin.size(), plan.dynamic_smem_bytes, register_path ? "yes" : "no");
  std::fflush(stdout);

  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(std::memcmp(cubin.data(), "\x7f" "ELF", 4), 0) << "not an ELF cubin";
  // The extern "C" entry is in the symbol table under its plain name.
  EXPECT_NE(std::search(cubin.begin(), cubin.end(), plan.entry.begin(), plan.entry.end()), cubin.end())
      << plan.entry << " not found in the cubin";
}

INSTANTIATE_TEST_SUITE_P(JitSm90, JitCompile, ::testing::ValuesIn(jit_variants()),
                         [](const ::testing::TestParamInfo<Variant>& p) { return p.param.name(); });

// ------------------------------------------------------------ cache key ----

TEST(JitCacheKey, IdenticalPlansGiveIdenticalInputs) {
  const Plan a = plan_for(2048, 100000, SGTOPK_VALUES);
  const Plan b = plan_for(2048, 100000, SGTOPK_VALUES);
  const CacheKeyInputs ia = make_compile_request(generate_source(a), a.arch, a.policy.compile).key_inputs;
  const CacheKeyInputs ib = make_compile_request(generate_source(b), b.arch, b.policy.compile).key_inputs;
  EXPECT_EQ(ia.source, ib.source);
  EXPECT_EQ(ia.headers, ib.headers);
  EXPECT_EQ(ia.options, ib.options);
  EXPECT_EQ(ia.target, ib.target);
  EXPECT_EQ(ia.nvrtc_version, ib.nvrtc_version);
  EXPECT_EQ(ia.library_version, ib.library_version);
  EXPECT_EQ(make_cache_key(ia), make_cache_key(ib));
  EXPECT_EQ(make_manifest(ia), make_manifest(ib));

  // What the inputs are made of.
  EXPECT_EQ(ia.target, "sm_90");
  EXPECT_EQ(ia.nvrtc_version, nvrtc_version());
  EXPECT_EQ(ia.library_version, std::string(sgtopk_version_string()));
  EXPECT_NE(std::find(ia.options.begin(), ia.options.end(), "--gpu-architecture=sm_90"), ia.options.end());
  EXPECT_EQ(ia.source, generate_source(a).text);
  EXPECT_FALSE(ia.headers.empty());
}

TEST(JitCacheKey, ChangesWhenThePlanChanges) {
  auto with_policy = [](auto&& edit) {
    Policy p = Policy::defaults();
    edit(p);
    validate_policy(p, "<jit test policy>");
    return p;
  };
  const Policy defaults = Policy::defaults();
  const std::vector<std::pair<std::string, Plan>> plans = {
      {"base", plan_for(2048, 100000)},
      {"K=1024", plan_for(1024, 100000)},
      {"K=1", plan_for(1, 100000)},
      {"width=200000", plan_for(2048, 200000)},
      {"width=5000 (register path)", plan_for(2048, 5000)},
      {"+values", plan_for(2048, 100000, SGTOPK_VALUES)},
      {"+sorted", plan_for(2048, 100000, SGTOPK_SORTED)},
      {"+starts", plan_for(2048, 100000, SGTOPK_STARTS)},
      {"+route_stats", plan_for(2048, 100000, SGTOPK_ROUTE_STATS)},
      {"family sampled", plan_for(2048, 100000, 0, "sm_90", defaults, "sampled")},
      {"family sampled, sampled.workers_per_sm=3",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.sampled.workers_per_sm = 3; }), "sampled")},
      {"family sampled, stride_wide=64",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.sampled.stride_wide = 64; }), "sampled")},
      {"sm_80", plan_for(2048, 100000, 0, "sm_80")},
      {"sm_90a", plan_for(2048, 100000, 0, "sm_90a")},
      {"vector_bytes=4", plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.direct.vector_bytes = 4; }))},
      {"frontier_global_capacity=0",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.direct.frontier_global_capacity = 0; }))},
      {"frontier_shared_capacity=12288",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.direct.frontier_shared_capacity = 12288; }))},
      {"split.segment_capacity=0",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.split.segment_capacity = 0; }))},
      {"primary_confidence=0", plan_for(1024, 100000, 0, "sm_90",
                                        with_policy([](Policy& p) { p.sampled.primary_confidence = 0.0; }), "sampled")},
      {"block_threads=256",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.split.block_threads = 256; }))},
      {"line_info", plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.compile.line_info = true; }))},
      {"max_registers=128",
       plan_for(2048, 100000, 0, "sm_90", with_policy([](Policy& p) { p.compile.max_registers = 128; }))},
  };
  (void)defaults;
  std::map<std::string, std::string> seen;  // key hex -> variant name
  for (const auto& [name, plan] : plans) {
    const std::string hex = key_of(plan).hex();
    EXPECT_EQ(hex.size(), 32u);
    auto [it, inserted] = seen.emplace(hex, name);
    EXPECT_TRUE(inserted) << "'" << name << "' has the same cache key as '" << it->second << "' (" << hex << ")";
  }
  // And the same plan twice is the same key.
  EXPECT_EQ(key_of(plan_for(2048, 100000)), key_of(plans.front().second));
}

// ------------------------------------------------------- failed compile ----

namespace {

GeneratedSource broken_source() {
  GeneratedSource src;
  src.name = "sgtopk_broken_test.cu";
  src.entry = "sgtopk_broken_test";
  src.text =
      "#include \"sgtopk/broken_helper.cuh\"\n"
      "extern \"C\" __global__ void sgtopk_broken_test(int* out) {\n"
      "  *out = helper_value() this is not C++;\n"
      "}\n";
  src.headers = {{"sgtopk/broken_helper.cuh", "__device__ inline int helper_value() { return 42; }\n"}};
  return src;
}

const std::vector<std::string>& broken_options() {
  static const std::vector<std::string> options = {"--gpu-architecture=sm_90", "--std=c++17", "-default-device"};
  return options;
}

std::string unique_tag(const std::string& stem) {
  static std::atomic<int> counter{0};
  return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

TEST(JitFailure, ThrowsCompileErrorAndKeepsAReproduction) {
  const GeneratedSource src = broken_source();
  const std::string tag = unique_tag("jit-test-broken");
  const std::string expected_dir = knobs().dump_dir + "/failed-" + tag;
  try {
    compile_cubin(src, broken_options(), "sm_90", tag);
    FAIL() << "a source with a syntax error compiled";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.status(), SGTOPK_ERROR_COMPILE) << message;
    EXPECT_TRUE(contains(message, "NVRTC failed")) << message;
    EXPECT_TRUE(contains(message, src.name)) << message;
    EXPECT_TRUE(contains(message, "error")) << "the NVRTC log belongs in the message:\n" << message;

    // The message names the reproduction folder ...
    const std::string marker = "reproduction in ";
    const size_t at = message.find(marker);
    ASSERT_NE(at, std::string::npos) << message;
    const size_t end = message.find(":\n", at);
    ASSERT_NE(end, std::string::npos) << message;
    const fs::path dir = message.substr(at + marker.size(), end - at - marker.size());
    EXPECT_EQ(dir.string(), expected_dir);

    // ... which exists and holds everything needed to reproduce.
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    EXPECT_EQ(read_text(dir / src.name), src.text);
    EXPECT_EQ(read_text(dir / "include" / "sgtopk" / "broken_helper.cuh"), src.headers[0].second);
    const std::string options = read_text(dir / "options.txt");
    for (const auto& o : broken_options()) EXPECT_TRUE(contains(options, o)) << options;
    ASSERT_TRUE(fs::exists(dir / "nvrtc.log"));
    const std::string log = read_text(dir / "nvrtc.log");
    EXPECT_FALSE(log.empty());
    EXPECT_TRUE(contains(message, log.substr(0, std::min<size_t>(log.size(), 40)))) << message;
  }
}

TEST(JitFailure, AFailedCompileIsNeverCached) {
  const std::string root = make_temp_dir("sgtopk_jit_cache");
  ASSERT_FALSE(root.empty());
  const fs::path dir = fs::path(root) / "cache";
  KernelCache cache(DiskCache(dir, false));
  ASSERT_TRUE(cache.disk().enabled());

  const GeneratedSource src = broken_source();
  CacheKeyInputs inputs;
  inputs.source = src.text;
  inputs.headers = src.headers;
  inputs.options = broken_options();
  inputs.target = "sm_90";
  inputs.nvrtc_version = nvrtc_version();
  inputs.library_version = sgtopk_version_string();
  const CacheKey key = make_cache_key(inputs);
  const std::string manifest = make_manifest(inputs);

  int calls = 0;
  auto compile = [&] {
    ++calls;
    return compile_cubin(src, broken_options(), "sm_90", unique_tag("jit-test-uncached"));
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    try {
      cache.get_or_compile(key, manifest, compile);
      FAIL() << "a broken source compiled";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SGTOPK_ERROR_COMPILE) << e.what();
      EXPECT_TRUE(contains(e.what(), "NVRTC failed")) << e.what();
    }
  }
  EXPECT_EQ(calls, 2) << "the failure was remembered instead of compiling again";
  const KernelCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.failed, 2u);
  EXPECT_EQ(stats.compiled, 0u);
  EXPECT_EQ(stats.disk_hits, 0u);
  EXPECT_EQ(stats.memory_hits, 0u);

  EXPECT_FALSE(fs::exists(cache.disk().entry_path(key)));
  // Nothing but the key's (empty) lock file, which serializes compiles across processes.
  std::vector<fs::path> left;
  for (const fs::path& f : files_under(dir))
    if (f.extension() != ".lock") left.push_back(f);
  EXPECT_TRUE(left.empty()) << "the cache directory holds " << left.size() << " file(s), e.g. "
                            << (left.empty() ? "" : left.front().string());
  std::error_code ec;
  fs::remove_all(root, ec);
}

// ------------------------------------------------------- kept sources ----
//
// SGTOPK_KEEP_SOURCES=1 writes each compiled source under SGTOPK_DUMP_DIR. It
// is a debugging aid: when the folder cannot be written the compile still
// succeeds (one warning per dump directory), it never turns into an error.

namespace {

GeneratedSource tiny_source() {
  GeneratedSource src;
  src.name = "sgtopk_keep_test.cu";
  src.entry = "sgtopk_keep_test";
  src.text =
      "#include \"sgtopk/keep_helper.cuh\"\n"
      "extern \"C\" __global__ void sgtopk_keep_test(int* out) { *out = helper_value(); }\n";
  // Compiled with broken_options(): plain sm_90 options.
  src.headers = {{"sgtopk/keep_helper.cuh", "__device__ inline int helper_value() { return 42; }\n"}};
  return src;
}

// Sets SGTOPK_KEEP_SOURCES=1, SGTOPK_VERBOSE=1 and SGTOPK_DUMP_DIR for the
// scope and re-reads the knobs; restores the previous environment after.
class KeepSourcesInto {
 public:
  explicit KeepSourcesInto(const fs::path& dump_dir) {
    set("SGTOPK_KEEP_SOURCES", "1");
    set("SGTOPK_VERBOSE", "1");  // the tests read the warning
    set("SGTOPK_DUMP_DIR", dump_dir.string());
    reload_knobs();
  }
  ~KeepSourcesInto() {
    for (const auto& [name, old] : saved_) {
      if (old.second) ::setenv(name.c_str(), old.first.c_str(), 1);
      else ::unsetenv(name.c_str());
    }
    reload_knobs();
  }
  KeepSourcesInto(const KeepSourcesInto&) = delete;
  KeepSourcesInto& operator=(const KeepSourcesInto&) = delete;

 private:
  void set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_[name] = {old ? old : "", old != nullptr};
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::map<std::string, std::pair<std::string, bool>> saved_;
};

int count_warnings(const std::string& err) {
  int n = 0;
  for (size_t at = err.find("sgtopk: warning:"); at != std::string::npos; at = err.find("sgtopk: warning:", at + 1)) ++n;
  return n;
}

void expect_elf(const std::vector<char>& cubin) {
  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(std::memcmp(cubin.data(), "\x7f" "ELF", 4), 0) << "not an ELF cubin";
}

}  // namespace

TEST(JitKeepSources, WritesTheSourceFolder) {
  const std::string root = make_temp_dir("sgtopk_jit_keep");
  ASSERT_FALSE(root.empty());
  const fs::path dumps = fs::path(root) / "dumps";
  const GeneratedSource src = tiny_source();
  const std::string tag = unique_tag("jit-test-keep");
  {
    KeepSourcesInto keep(dumps);
    ::testing::internal::CaptureStderr();
    std::vector<char> cubin;
    EXPECT_NO_THROW(cubin = compile_cubin(src, broken_options(), "sm_90", tag));
    const std::string err = ::testing::internal::GetCapturedStderr();
    expect_elf(cubin);
    EXPECT_EQ(count_warnings(err), 0) << err;
  }
  const fs::path dir = dumps / ("source-" + tag);
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  EXPECT_EQ(read_text(dir / src.name), src.text);
  EXPECT_EQ(read_text(dir / "include" / "sgtopk" / "keep_helper.cuh"), src.headers[0].second);
  EXPECT_TRUE(contains(read_text(dir / "options.txt"), "--gpu-architecture=sm_90"));
  std::error_code ec;
  fs::remove_all(root, ec);
}

TEST(JitKeepSources, AnUncreatableDumpDirStillCompilesAndWarnsOnce) {
  const std::string root = make_temp_dir("sgtopk_jit_keep");
  ASSERT_FALSE(root.empty());
  // A path below a regular file can never be created, even by root.
  const fs::path file = fs::path(root) / "plain_file";
  sgtopk::testing::write_text(file, "x");
  const fs::path dumps = file / "dumps";
  const GeneratedSource src = tiny_source();
  {
    KeepSourcesInto keep(dumps);
    ::testing::internal::CaptureStderr();
    std::vector<char> first, second;
    try {
      first = compile_cubin(src, broken_options(), "sm_90", unique_tag("jit-test-keep-ro"));
      second = compile_cubin(src, broken_options(), "sm_90", unique_tag("jit-test-keep-ro"));
    } catch (const Error& e) {
      ::testing::internal::GetCapturedStderr();
      FAIL() << "a good compile failed because its source could not be kept: "
             << sgtopk_status_string(e.status()) << ": " << e.what();
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    expect_elf(first);
    EXPECT_EQ(first, second);
    EXPECT_EQ(count_warnings(err), 1) << "warned once per dump directory:\n" << err;
    EXPECT_TRUE(contains(err, "SGTOPK_KEEP_SOURCES")) << err;
    EXPECT_TRUE(contains(err, dumps.string())) << "the warning names the directory: " << err;
  }
  EXPECT_TRUE(fs::is_regular_file(file));
  std::error_code ec;
  fs::remove_all(root, ec);
}

TEST(JitKeepSources, ALinkAtTheFolderNameIsReplacedNotFollowed) {
  // Another user who can write the dump directory plants a link where the
  // next dump will go: the dump replaces the link, and nothing is written
  // where it points.
  const std::string root = make_temp_dir("sgtopk_jit_keep");
  ASSERT_FALSE(root.empty());
  const fs::path dumps = fs::path(root) / "dumps";
  const fs::path victim = fs::path(root) / "victim";
  ASSERT_TRUE(fs::create_directories(dumps));
  ASSERT_TRUE(fs::create_directories(victim));
  const GeneratedSource src = tiny_source();
  const std::string tag = unique_tag("jit-test-keep-link");
  const fs::path folder = dumps / ("source-" + tag);
  fs::create_directory_symlink(victim, folder);
  {
    KeepSourcesInto keep(dumps);
    ::testing::internal::CaptureStderr();
    std::vector<char> cubin;
    EXPECT_NO_THROW(cubin = compile_cubin(src, broken_options(), "sm_90", tag));
    const std::string err = ::testing::internal::GetCapturedStderr();
    expect_elf(cubin);
    EXPECT_EQ(count_warnings(err), 0) << err;
  }
  EXPECT_TRUE(fs::is_empty(victim)) << "the dump was written through the link";
  EXPECT_FALSE(fs::is_symlink(folder));
  EXPECT_TRUE(fs::exists(folder / src.name));
  std::error_code ec;
  fs::remove_all(root, ec);
}

// Failure dumps stay few: the oldest go once there are 32.
TEST(JitFailure, DumpsAreBoundedInCount) {
  const std::string root = make_temp_dir("sgtopk_jit_dumps");
  ASSERT_FALSE(root.empty());
  const fs::path dumps = fs::path(root) / "dumps";
  ASSERT_TRUE(fs::create_directories(dumps));
  for (int i = 0; i < 40; ++i) {
    const fs::path old = dumps / ("failed-old-" + std::to_string(i));
    ASSERT_TRUE(fs::create_directories(old));
    fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::hours(100 - i));
  }
  {
    KeepSourcesInto keep(dumps);  // SGTOPK_DUMP_DIR for this test
    GeneratedSource src = tiny_source();
    src.text += "\nthis does not compile\n";
    EXPECT_THROW(compile_cubin(src, broken_options(), "sm_90", unique_tag("jit-test-bounded")), Error);
  }
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dumps)) count += entry.path().filename().string().rfind("failed-", 0) == 0;
  EXPECT_EQ(count, 32);
  EXPECT_FALSE(fs::exists(dumps / "failed-old-0")) << "the oldest goes first";
  EXPECT_TRUE(fs::exists(dumps / "failed-old-39"));
  std::error_code ec;
  fs::remove_all(root, ec);
}

// The device-key probes of tests/gpu/test_keys_gpu.cpp compile against the
// embedded templates (the GPU runs them; this catches a template change that
// breaks them without a GPU).
TEST(JitKeyProbes, CompileForSm90) {
  for (const auto& [text, entry] : {std::pair{sgtopk::testing::kProbeSource, "sgtopk_keys_probe"},
                                    std::pair{sgtopk::testing::kPairExhaustiveSource, "sgtopk_pair_exhaustive"}}) {
    GeneratedSource source;
    source.name = std::string(entry) + ".cu";
    source.entry = entry;
    source.text = text;
    for (const EmbeddedHeader& h : embedded_headers()) source.headers.emplace_back(h.name, h.text);
    std::vector<char> cubin;
    EXPECT_NO_THROW(cubin = compile_cubin(source, {"--gpu-architecture=sm_90", "--std=c++17", "-default-device"},
                                          "sm_90", std::string("jit-test-") + entry))
        << entry;
    EXPECT_FALSE(cubin.empty()) << entry;
  }
}

// filter.top_p_by_patterns_min_width: mask plans of filter_row whose rows
// are at least that wide get a second kernel for the top-p-alone rows, CTAs
// of 1024 with the patterns' 128 KB of counts after the row's shared state
// on sm_90 (every dtype), while the first keeps the other rows in its CTAs;
// narrower rows, the candidate output and sm_80's shared memory keep one
// kernel (sm_80's plan says why).
TEST(JitPlanner, TopPByPatternsOnlyWhereItFits) {
  const Policy on = edited_policy([](Policy& p) { p.filter.top_p_by_patterns_min_width = 100000; });
  const Policy off_policy = edited_policy([](Policy& p) { p.filter.top_p_by_patterns_min_width = 0; });
  struct Case {
    const char* arch;
    sgtopk_dtype dtype;
    uint32_t flags;
    int64_t width;
    bool patterns;
  };
  for (const Case c : {Case{"sm_90", SGTOPK_BF16, SGTOPK_FILTER_MASK, 128256, true},
                       Case{"sm_90", SGTOPK_F16, SGTOPK_FILTER_MASK, 128256, true},
                       Case{"sm_90", SGTOPK_F32, SGTOPK_FILTER_MASK, 100000, true},
                       Case{"sm_90", SGTOPK_F32, SGTOPK_FILTER_MASK, 99999, false},
                       Case{"sm_90", SGTOPK_BF16, SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES, 128256, false},
                       Case{"sm_80", SGTOPK_BF16, SGTOPK_FILTER_MASK, 128256, false}}) {
    SCOPED_TRACE(std::string(c.arch) + " dtype " + std::to_string(c.dtype) + " flags " + std::to_string(c.flags) + " width " +
                 std::to_string(c.width));
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.op = SGTOPK_OP_FILTER;
    p.rows = 1024;
    p.width = c.width;
    p.dtype = c.dtype;
    p.flags = c.flags;
    if (c.flags & SGTOPK_FILTER_CANDIDATES) p.k = 64;  // the candidate capacity
    const Target target = resolve_target(-1, c.arch, c.arch);
    const Plan plan = make_plan(validate_problem(&p), on, target);
    const Plan off = make_plan(validate_problem(&p), off_policy, target);
    EXPECT_EQ(plan.family, "filter_row");
    EXPECT_TRUE(off.second.entry.empty());
    // The first kernel as without the patterns, but for the rows it leaves.
    EXPECT_EQ(plan.constant("kPatternBins"), "0");
    EXPECT_EQ(plan.block, off.block);
    EXPECT_EQ(plan.grid, off.grid);
    EXPECT_EQ(plan.dynamic_smem_bytes, off.dynamic_smem_bytes);
    EXPECT_EQ(plan.constant("kCandidates"), off.constant("kCandidates"));
    EXPECT_EQ(plan.min_blocks_per_sm, off.min_blocks_per_sm);
    EXPECT_EQ(plan.launches, c.patterns ? 2u : 1u);
    if (c.patterns) {
      EXPECT_EQ(plan.constant("kRows"), std::to_string(sgtopk::kFilterRowsButTopPAlone));
      EXPECT_EQ(plan.second.entry, plan.entry + "_top_p_alone");
      EXPECT_EQ(plan.second.config.text("kRows"), std::to_string(sgtopk::kFilterRowsTopPAlone));
      EXPECT_EQ(plan.second.config.text("kPatternBins"), "1");
      EXPECT_EQ(plan.second.config.text("kThreads"), "1024");
      EXPECT_EQ(plan.second.block, 1024u);
      EXPECT_EQ(plan.second.dynamic_smem_bytes, sgtopk::filter_row_shared_bytes(sgtopk::kFilterCandidates) + sgtopk::kFilterPatternBinBytes);
      EXPECT_EQ(plan.second.min_blocks_per_sm, 1u);
      EXPECT_EQ(plan.second.grid, static_cast<unsigned>(std::min<int64_t>(1024, target.sm_count)));
      // One module, both entries; the parameters name the second's constants.
      const GeneratedSource source = generate_source(plan);
      EXPECT_TRUE(contains(source.text, "struct SecondConfig")) << source.text;
      EXPECT_TRUE(contains(source.text, " " + plan.second.entry + "(")) << source.text;
      EXPECT_TRUE(contains(plan.parameters_text(), "second.kPatternBins=1")) << plan.parameters_text();
    } else {
      EXPECT_TRUE(plan.second.entry.empty());
      EXPECT_FALSE(contains(plan.parameters_text(), "kRows")) << plan.parameters_text();
    }
    // Said where the rows qualify: the second kernel, or why the device has none.
    const bool qualifies = c.width >= 100000 && !(c.flags & SGTOPK_FILTER_CANDIDATES);
    const std::string said = c.patterns ? "counts each 16-bit pattern" : "no pattern counts: the device's shared memory";
    bool found = false;
    for (const std::string& d : plan.derived) found = found || contains(d, said);
    EXPECT_EQ(found, qualifies) << plan.parameters_text();
  }
  // Off: one kernel and no line.
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.op = SGTOPK_OP_FILTER;
  p.rows = 1024;
  p.width = 128256;
  p.dtype = SGTOPK_BF16;
  const Plan plan = make_plan(validate_problem(&p), off_policy, resolve_target(-1, "sm_90", "sm_90"));
  EXPECT_EQ(plan.constant("kPatternBins"), "0");
  EXPECT_TRUE(plan.second.entry.empty());
  for (const std::string& d : plan.derived) EXPECT_FALSE(contains(d, "top_p_by_patterns")) << d;
}

// filter.candidate_buffer sizes filter_row's shared candidates in plans that
// write only the mask: the kernel's constant and its shared memory follow,
// and so do the CTAs an SM holds (four of 256 threads at 4032 keys on
// sm_90, three at 4096, whose 57.7 KB miss the fourth by 304 bytes); the
// candidate and sample outputs keep 8192 and say so; the top-p-alone kernel
// keeps 8192 for its window.
TEST(JitPlanner, TheCandidateBufferSizesFilterRowsSharedMemory) {
  struct Case {
    int buffer;
    uint32_t flags;
    int held;
    unsigned ctas;
  };
  // The buffer of filter.candidate_buffer (filter.many_rows_per_sm off, CTAs
  // of filter.block_threads), and of filter.many_rows_candidate_buffer (1024
  // rows: the many-rows CTA, of filter.many_rows_block_threads, where the
  // plan writes only the mask; else the CTA of block_threads with 8192).
  for (const bool many : {false, true})
  for (const Case c : {Case{4032, SGTOPK_FILTER_MASK, 4032, 4u}, Case{4096, SGTOPK_FILTER_MASK, 4096, 3u},
                       Case{64, SGTOPK_FILTER_MASK, 64, 4u}, Case{4032, SGTOPK_FILTER_SAMPLE, sgtopk::kFilterCandidates, 2u},
                       Case{4032, SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES, sgtopk::kFilterCandidates, 2u}}) {
    SCOPED_TRACE(std::string(many ? "many_rows_" : "") + "buffer " + std::to_string(c.buffer) + " flags " +
                 std::to_string(c.flags));
    const Policy policy = edited_policy([&](Policy& p) {
      p.filter.block_threads = 256;
      p.filter.many_rows_block_threads = 256;
      if (many) {
        p.filter.many_rows_per_sm = 4;
        p.filter.many_rows_candidate_buffer = c.buffer;
      } else {
        p.filter.candidate_buffer = c.buffer;
        p.filter.many_rows_per_sm = 0;
      }
    });
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.op = SGTOPK_OP_FILTER;
    p.rows = 1024;
    p.width = 128256;
    p.dtype = SGTOPK_BF16;
    p.flags = c.flags;
    if (c.flags & SGTOPK_FILTER_CANDIDATES) p.k = 64;  // the candidate capacity
    const Target target = resolve_target(-1, "sm_90", "sm_90");
    const Plan plan = make_plan(validate_problem(&p), policy, target);
    EXPECT_EQ(plan.family, "filter_row");
    EXPECT_EQ(plan.constant("kCandidates"), std::to_string(c.held));
    EXPECT_EQ(plan.dynamic_smem_bytes, sgtopk::filter_row_shared_bytes(c.held));
    EXPECT_EQ(plan.block, 256u);
    EXPECT_EQ(plan.min_blocks_per_sm, c.ctas);
    EXPECT_EQ(plan.grid, static_cast<unsigned>(std::min<int64_t>(1024, int64_t{target.sm_count} * c.ctas)));
    bool said = false;
    for (const std::string& d : plan.derived) said = said || contains(d, "the candidate and sample outputs sort it");
    EXPECT_EQ(said, !many && c.held != c.buffer);  // the many-rows variant keeps filter.candidate_buffer 8192
    if (plan.launches == 2u) {
      EXPECT_EQ(plan.second.config.text("kCandidates"), std::to_string(sgtopk::kFilterCandidates));
      EXPECT_EQ(plan.second.dynamic_smem_bytes,
                sgtopk::filter_row_shared_bytes(sgtopk::kFilterCandidates) + sgtopk::kFilterPatternBinBytes);
    }
  }
  // Under 64 keys or past 8192 the policy is refused, naming the key.
  for (const char* text : {"[filter]\ncandidate_buffer = 63\n", "[filter]\ncandidate_buffer = 8193\n",
                           "[filter]\nmany_rows_candidate_buffer = 63\n", "[filter]\nmany_rows_candidate_buffer = 8193\n"}) {
    SCOPED_TRACE(text);
    EXPECT_THROW(sgtopk::detail::parse_policy_string(text), std::exception);
  }
}

// A plan of two kernels launches each where the scalars leave it rows: the
// second (top-p alone) where some row may have top-k off and p below 1, the
// first unless every row is top-p alone (no arrays, k off, p below 1, a
// temperature that is not greedy).
TEST(JitPlanner, TwoKernelPlanLaunchesWhereRowsMayBe) {
  const Policy on = edited_policy([](Policy& p) { p.filter.top_p_by_patterns_min_width = 1; });
  sgtopk_problem problem = SGTOPK_PROBLEM_INIT;
  problem.op = SGTOPK_OP_FILTER;
  problem.rows = 1024;
  problem.width = 128256;
  const Plan plan = make_plan(validate_problem(&problem), on, resolve_target(-1, "sm_90", "sm_90"));
  ASSERT_FALSE(plan.second.entry.empty());
  sgtopk::FilterParams fp{};
  fp.width = 128256;
  const int* some_k = reinterpret_cast<const int*>(uintptr_t{256});
  const float* some_p = reinterpret_cast<const float*>(uintptr_t{512});
  const float* some_t = reinterpret_cast<const float*>(uintptr_t{768});
  auto needed = [&](const int* k, int k_value, const float* p, float p_value, const float* t = nullptr,
                    float t_value = 1.0f) {
    fp.top_k = k;
    fp.top_k_value = k_value;
    fp.top_p = p;
    fp.top_p_value = p_value;
    fp.temperature = t;
    fp.temperature_value = t_value;
    return needed_launches(plan, fp);
  };
  EXPECT_EQ(needed(nullptr, 50, nullptr, 0.9f), 1u);         // top-k on every row: the first
  EXPECT_EQ(needed(nullptr, 0, nullptr, 1.0f), 1u);          // neither
  EXPECT_EQ(needed(nullptr, 0, nullptr, std::nanf("")), 1u);  // NaN p: off
  EXPECT_EQ(needed(nullptr, 0, nullptr, 0.9f), 2u);          // top-p alone everywhere: the second
  EXPECT_EQ(needed(nullptr, 128256, nullptr, 0.9f), 2u);     // k = width: off
  EXPECT_EQ(needed(nullptr, -3, nullptr, 0.9f, nullptr, 0.7f), 2u);
  EXPECT_EQ(needed(nullptr, 0, nullptr, 0.9f, nullptr, 0.0f), 3u);  // greedy: top-1 (the first's)
  EXPECT_EQ(needed(nullptr, 0, nullptr, 0.9f, some_t), 3u);  // per-row temperature may be greedy
  EXPECT_EQ(needed(some_k, 0, nullptr, 0.9f), 3u);           // per-row k
  EXPECT_EQ(needed(nullptr, 0, some_p, 0.9f), 3u);           // per-row p may be 1
  EXPECT_EQ(needed(nullptr, 50, some_p, 0.9f), 1u);          // top-k on everywhere
  EXPECT_EQ(needed(some_k, 50, nullptr, 1.0f), 1u);          // top-p off everywhere
}

// The L2 bulk prefetches (split, filter_split, filter_row): the policy's
// values are the kernels' constants on sm_90, the plan says so; before sm_90
// the constants are 0 and the plan says that the target has none.
TEST(JitPlanner, BulkPrefetchesOnSm90AndNoneBefore) {
  const auto said = [](const Plan& plan, const std::string& text) {
    for (const std::string& d : plan.derived)
      if (contains(d, text)) return true;
    return false;
  };
  const Policy on = edited_policy([](Policy& p) {
    p.split.prefetch_before_view_kb = 32;
    p.split.prefetch_after_view_kb = 96;
    p.split.prefetch_ahead_chunks = 2;
    p.filter_split.prefetch_before_sample_kb = 16;
    p.filter_split.prefetch_ahead_steps = 3;
    p.filter.prefetch_ahead_steps = 4;
  });
  for (const char* arch : {"sm_90", "sm_80"}) {
    SCOPED_TRACE(arch);
    const bool has = std::string(arch) == "sm_90";
    const Plan split = plan_for(2048, 262144, 0, arch, on, "split", 4);
    EXPECT_EQ(split.constant("kPrefetchBeforeViewKb"), has ? "32" : "0");
    EXPECT_EQ(split.constant("kPrefetchAfterViewKb"), has ? "96" : "0");
    EXPECT_EQ(split.constant("kPrefetchAheadChunks"), has ? "2" : "0");
    EXPECT_TRUE(said(split, has ? "segments asked of L2: 32 KB before the proposal" : "no L2 prefetches on sm_80"))
        << split.parameters_text();
    for (const int64_t rows : {int64_t{4}, int64_t{1024}}) {
      sgtopk_problem p = SGTOPK_PROBLEM_INIT;
      p.op = SGTOPK_OP_FILTER;
      p.rows = rows;
      p.width = 128256;
      const Plan filter = make_plan(validate_problem(&p), on, resolve_target(-1, arch, arch));
      const bool segments = filter.family == "filter_split";
      EXPECT_EQ(segments, rows == 4) << filter.family;
      EXPECT_EQ(filter.constant("kPrefetchAheadSteps"), !has ? "0" : segments ? "3" : "4");
      if (segments) EXPECT_EQ(filter.constant("kPrefetchBeforeSampleKb"), has ? "16" : "0");
      EXPECT_TRUE(said(filter, has ? "L2" : "no L2 prefetches on sm_80")) << filter.parameters_text();
    }
  }
  // Off (the defaults): no line.
  EXPECT_FALSE(said(plan_for(2048, 262144, 0, "sm_90", Policy::defaults(), "split", 4), "L2"));
}

// The filter's plan through the real pipeline (plan, generated source,
// compile request, NVRTC for sm_90): its logic is checked by
// tools/emulate/run, here that the generated specialization compiles with
// abi.h's FilterParams and shared-memory layout as the host lays them out, at
// the largest block (the default), 512 and the smallest the policy allows.
TEST(JitFilter, TheFilterPlanCompilesForSm90) {
  for (const int threads : {1024, 512, 128}) {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.op = SGTOPK_OP_FILTER;
    p.rows = 130;
    p.width = 128256;
    p.pitch = 128256 + 7;
    Policy policy = Policy::defaults();
    policy.filter.block_threads = threads;
    policy.filter.few_rows_per_sm = 0;  // 130 rows would take the few-rows CTA
    policy.filter_split.min_segments = 0;  // and two segments a row
    const Plan plan = make_plan(validate_problem(&p), policy, resolve_target(-1, "sm_90", "sm_90"));
    ASSERT_EQ(plan.family, "filter_row");
    const GeneratedSource src = generate_source(plan);
    EXPECT_EQ(src.entry, "sgtopk_filter_row");
    EXPECT_TRUE(contains(src.text, "#include \"sgtopk/agent/filter_row.cuh\"")) << src.text;
    EXPECT_TRUE(contains(src.text, "static constexpr int kThreads = " + std::to_string(threads) + ";")) << src.text;
    EXPECT_TRUE(contains(src.text, "sgtopk_filter_row(const sgtopk::FilterParams params)")) << src.text;
    EXPECT_TRUE(contains(src.text, "sizeof(sgtopk::FilterParams) == " + std::to_string(sizeof(sgtopk::FilterParams))))
        << src.text;
    // The CTAs an SM holds at 64 registers a thread: two of 512 or fewer (shared memory), one of 1024.
    EXPECT_TRUE(contains(src.text, "__launch_bounds__(" + std::to_string(threads) + ", " + (threads == 1024 ? "1" : "2") + ")"))
        << src.text;
    const CompileRequest request = make_compile_request(src, plan.arch, plan.policy.compile);
    std::string log;
    std::vector<char> cubin;
    try {
      cubin = compile_cubin(request.source, request.options, plan.arch, "jit-filter", &log);
    } catch (const Error& e) {
      FAIL() << threads << " threads: " << e.what();
    }
    ASSERT_GE(cubin.size(), 4u) << log;
    EXPECT_EQ(std::memcmp(cubin.data(), "\x7f" "ELF", 4), 0) << "not an ELF cubin";
    EXPECT_NE(std::search(cubin.begin(), cubin.end(), plan.entry.begin(), plan.entry.end()), cubin.end())
        << plan.entry << " not found in the cubin";
  }
}

// The filter_split family: chosen for a few rows (as many segments a row as
// the grid and the vocabulary allow, at least filter.split.min_segments),
// filter_row past that or with min_segments 0; its plan compiles for sm_90
// with one workspace record a row.
TEST(JitFilter, FewRowsTakeTheSplitFamily) {
  const Target target = resolve_target(-1, "sm_90", "sm_90");
  auto plan_for = [&](int64_t rows, int64_t width, const Policy& policy) {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.op = SGTOPK_OP_FILTER;
    p.rows = rows;
    p.width = width;
    return make_plan(validate_problem(&p), policy, target);
  };
  const Policy defaults = Policy::defaults();
  const int sms = target.sm_count;
  ASSERT_GT(sms, 0);
  const Plan one = plan_for(1, 128256, defaults);
  EXPECT_EQ(one.family, "filter_split") << one.reason;
  const int64_t by_width = 128256 / defaults.filter_split.min_segment_width;
  const int64_t segments = std::min<int64_t>(by_width, int64_t{sms} * defaults.filter_split.ctas_per_sm);
  EXPECT_EQ(one.grid, static_cast<unsigned>(segments));
  EXPECT_EQ(one.block, static_cast<unsigned>(defaults.filter_split.block_threads));
  EXPECT_EQ(one.workspace_bytes, sgtopk::filter_split_row_bytes());
  EXPECT_TRUE(contains(one.reason, "filter.split.min_segments")) << one.reason;
  // The mask-only kernel weighs top-p-alone rows in a second launch; with
  // the sample output (no top-p-alone window there) one launch.
  EXPECT_EQ(one.launches, 2u);
  {
    // The second launch only where a row may take top-p alone: per-row k or
    // p arrays, or scalars with top-k off (k <= 0 or k >= width) and p < 1.
    sgtopk::FilterParams fp{};
    fp.width = 128256;
    const int* some_k = reinterpret_cast<const int*>(uintptr_t{256});
    const float* some_p = reinterpret_cast<const float*>(uintptr_t{512});
    auto needed = [&](const int* k, int k_value, const float* p, float p_value) {
      fp.top_k = k;
      fp.top_k_value = k_value;
      fp.top_p = p;
      fp.top_p_value = p_value;
      return needed_launches(one, fp);
    };
    // A bit a launch: 1, the first alone; 3, both.
    EXPECT_EQ(needed(nullptr, 50, nullptr, 0.9f), 1u);       // top-k on every row
    EXPECT_EQ(needed(nullptr, 0, nullptr, 1.0f), 1u);        // neither
    EXPECT_EQ(needed(nullptr, 0, nullptr, 1.5f), 1u);        // p past 1: off
    EXPECT_EQ(needed(nullptr, 0, nullptr, std::nanf("")), 1u);  // NaN p: off
    EXPECT_EQ(needed(some_k, 0, nullptr, 1.0f), 1u);         // per-row k, p off
    EXPECT_EQ(needed(nullptr, 0, nullptr, 0.9f), 3u);        // top-p alone
    EXPECT_EQ(needed(nullptr, -3, nullptr, 0.9f), 3u);       // k <= 0: off
    EXPECT_EQ(needed(nullptr, 128256, nullptr, 0.9f), 3u);   // k = width: off
    EXPECT_EQ(needed(nullptr, 200000, nullptr, 0.9f), 3u);   // k past width: off
    EXPECT_EQ(needed(some_k, 50, nullptr, 0.9f), 3u);        // per-row k may be 0
    EXPECT_EQ(needed(nullptr, 50, some_p, 0.9f), 1u);        // per-row p, top-k on everywhere
    EXPECT_EQ(needed(some_k, 50, some_p, 0.9f), 3u);
  }
  {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.op = SGTOPK_OP_FILTER;
    p.rows = 1;
    p.width = 128256;
    p.flags = SGTOPK_FILTER_MASK | SGTOPK_FILTER_SAMPLE;
    const Plan sampled = make_plan(validate_problem(&p), defaults, target);
    EXPECT_EQ(sampled.family, "filter_split") << sampled.reason;
    EXPECT_EQ(sampled.launches, 1u);
  }
  // 64 rows: as many segments as 2 CTAs an SM give each row.
  const Plan batch = plan_for(64, 128256, defaults);
  EXPECT_EQ(batch.family, "filter_split") << batch.reason;
  EXPECT_EQ(batch.grid, static_cast<unsigned>(64 * (int64_t{sms} * 2 / 64)));
  EXPECT_EQ(batch.workspace_bytes, 64 * sgtopk::filter_split_row_bytes());
  // Rows that fill the GPU, a vocabulary below three segments, or the knob at 0: filter_row.
  EXPECT_EQ(plan_for(sms * 2, 128256, defaults).family, "filter_row");
  // Two segments a row are fewer than filter.split.min_segments (3); three are not.
  EXPECT_EQ(plan_for(sms * 2 / 2, 128256, defaults).family, "filter_row");
  EXPECT_EQ(plan_for(sms * 2 / 3, 128256, defaults).family, "filter_split");
  EXPECT_EQ(plan_for(1, 5000, defaults).family, "filter_row");  // two segments of 2048
  Policy off = defaults;
  off.filter_split.min_segments = 0;
  const Plan row = plan_for(1, 128256, off);
  EXPECT_EQ(row.family, "filter_row") << row.reason;
  EXPECT_EQ(row.workspace_bytes, 0u);
  EXPECT_TRUE(contains(row.reason, "filter.split.min_segments 0")) << row.reason;

  const GeneratedSource src = generate_source(one);
  EXPECT_EQ(src.entry, "sgtopk_filter_split");
  EXPECT_TRUE(contains(src.text, "#include \"sgtopk/agent/filter_split.cuh\"")) << src.text;
  EXPECT_TRUE(contains(src.text, "static constexpr int kSegments = " + std::to_string(segments) + ";")) << src.text;
  const CompileRequest request = make_compile_request(src, one.arch, one.policy.compile);
  std::string log;
  std::vector<char> cubin;
  try {
    cubin = compile_cubin(request.source, request.options, one.arch, "jit-filter-split", &log);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  ASSERT_GE(cubin.size(), 4u) << log;
  EXPECT_NE(std::search(cubin.begin(), cubin.end(), one.entry.begin(), one.entry.end()), cubin.end());
}

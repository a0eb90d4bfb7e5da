// GPU tests of the select operator against the CPU reference (label `gpu`).
// Every case poisons both outputs first, then checks the whole contract on
// every live row and that rows past live_rows stay untouched.
#include <gtest/gtest.h>
#include <sgtopk/sgtopk.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/driver.h"
#include "runtime/plan.h"
#include "runtime/problem.h"
#include "runtime/target.h"
#include "runtime/policy.h"
#include "runtime/families/select_common.h"
#include "reference/sampled_route.h"
#include "runtime/sampled_view.h"
#include "support/test_support.h"

namespace sgtopk::testing {
using namespace sgtopk::detail;
namespace {

struct Case {
  std::string name;
  int k = 2048;
  int64_t rows = 8;
  int64_t width = 10000;
  int64_t pitch = 0;      // 0: width
  int64_t out_pitch = 0;  // 0: k
  uint32_t flags = 0;
  int64_t live_rows = -1;  // < 0: all rows (no live_rows pointer)
  bool lengths = true;     // pass a lengths array (else every row is `width`)
  std::vector<RowFamily> families = all_row_families();
  std::string policy;      // TOML overlay
  std::string family;      // forced kernel family; empty: the planner's choice
  std::vector<int> expect_routes;  // SGTOPK_ROUTE_* the inputs must exercise (with SGTOPK_ROUTE_STATS)
  std::string planned_family;      // the family the planner must choose (with `family` empty)
  // The split finisher's forms the inputs must exercise (with
  // SGTOPK_ROUTE_STATS): 1, the row histogram's on some certified row; 2, it
  // and, on another certified row, the others (a boundary bin too full).
  int expect_split_forms = 0;
};

// gtest prints a parameter with PrintTo: show the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Lengths that probe the edges: 0, K-1, K, K+1, width, then random.
std::vector<int32_t> edge_lengths(const Case& c, std::mt19937_64& rng) {
  std::vector<int32_t> len(static_cast<size_t>(c.rows));
  const int64_t probes[] = {c.width, 0, c.k - 1, c.k, c.k + 1, c.width - 1, 1};
  for (int64_t r = 0; r < c.rows; ++r) {
    int64_t l = r < 7 ? probes[r] : static_cast<int64_t>(rng() % static_cast<uint64_t>(c.width + 1));
    len[static_cast<size_t>(r)] = static_cast<int32_t>(std::clamp<int64_t>(l, 0, c.width));
  }
  return len;
}

struct Inputs {
  std::vector<float> scores;
  std::vector<int32_t> lengths, starts;
};

Inputs make_inputs(const Case& c, int64_t pitch, std::mt19937_64& rng) {
  Inputs in;
  in.scores.assign(static_cast<size_t>(c.rows * pitch), 0.0f);
  // Garbage beyond each row's window: huge values and NaN, never to be read as scores.
  for (size_t i = 0; i < in.scores.size(); ++i) in.scores[i] = (i % 3 == 0) ? 3.0e38f : std::nanf("");
  in.lengths = c.lengths ? edge_lengths(c, rng) : std::vector<int32_t>(static_cast<size_t>(c.rows), static_cast<int32_t>(c.width));
  const bool with_starts = (c.flags & SGTOPK_STARTS) != 0;
  in.starts.assign(static_cast<size_t>(c.rows), 0);
  for (int64_t r = 0; r < c.rows; ++r) {
    const int32_t len = in.lengths[static_cast<size_t>(r)];
    const int64_t slack = pitch - len;
    const int32_t start = with_starts && slack > 0 ? static_cast<int32_t>(rng() % static_cast<uint64_t>(slack + 1)) : 0;
    in.starts[static_cast<size_t>(r)] = start;
    const RowFamily family = c.families[static_cast<size_t>(r) % c.families.size()];
    const std::vector<float> row = make_row(family, len, c.k, rng);
    std::copy(row.begin(), row.end(), in.scores.begin() + r * pitch + start);
  }
  return in;
}

sgtopk_plan compile_for_device(const Case& c) {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.k = c.k;
  p.rows = c.rows;
  p.width = c.width;
  p.pitch = c.pitch;
  p.out_pitch = c.out_pitch;
  p.flags = c.flags;
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = 0;
  o.own_workspace = 1;
  o.policy_toml = c.policy.empty() ? nullptr : c.policy.c_str();
  o.family = c.family.empty() ? nullptr : c.family.c_str();
  sgtopk_plan plan = nullptr;
  EXPECT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  return plan;
}

// Device copies of one input set plus poisoned outputs.
struct DeviceSet {
  DeviceBuffer scores, lengths, starts, live, indices, values, route_stats;
  sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;

  DeviceSet(const Case& c, const Inputs& in, int64_t out_pitch) {
    scores = DeviceBuffer(in.scores.size() * 4);
    scores.upload(in.scores);
    lengths = DeviceBuffer(in.lengths.size() * 4);
    lengths.upload(in.lengths);
    starts = DeviceBuffer(in.starts.size() * 4);
    starts.upload(in.starts);
    live = DeviceBuffer(4);
    const int32_t live_rows = static_cast<int32_t>(c.live_rows < 0 ? c.rows : c.live_rows);
    live.upload(&live_rows, 4);
    indices = DeviceBuffer(static_cast<size_t>(c.rows * out_pitch) * 4);
    values = DeviceBuffer(static_cast<size_t>(c.rows * out_pitch) * 4);
    route_stats = DeviceBuffer(SGTOPK_ROUTE_STAT_SLOTS * 8);
    route_stats.fill_u32(0u);
    poison();
    args.scores = scores.ptr();
    args.lengths = c.lengths ? lengths.ptr() : 0;
    args.starts = (c.flags & SGTOPK_STARTS) ? starts.ptr() : 0;
    args.live_rows = c.live_rows < 0 ? 0 : live.ptr();
    args.indices = indices.ptr();
    args.values = (c.flags & SGTOPK_VALUES) ? values.ptr() : 0;
    args.route_stats = (c.flags & SGTOPK_ROUTE_STATS) ? route_stats.ptr() : 0;
  }
  void poison() {
    indices.fill_u32(kPoison);
    values.fill_u32(kPoison);
  }
};

std::string check(const Case& c, const Inputs& in, const DeviceSet& d, int64_t pitch, int64_t out_pitch, int64_t live_rows) {
  const size_t slots = static_cast<size_t>(c.rows * out_pitch);
  const std::vector<int32_t> indices = d.indices.download_as<int32_t>(slots);
  const std::vector<float> values = d.values.download_as<float>(slots);
  SelectMatrixCheck m;
  m.scores = in.scores.data();
  m.rows = c.rows;
  m.pitch = pitch;
  m.width = c.width;
  m.lengths = c.lengths ? in.lengths.data() : nullptr;
  m.starts = (c.flags & SGTOPK_STARTS) ? in.starts.data() : nullptr;
  m.k = c.k;
  m.live_rows = live_rows;
  m.indices = indices.data();
  m.values = (c.flags & SGTOPK_VALUES) ? values.data() : nullptr;
  m.out_pitch = out_pitch;
  m.sorted = (c.flags & SGTOPK_SORTED) != 0;
  return check_select_matrix(m);
}

// Whether a cluster's CTA would hold more candidates x >= low of its segment
// than its frontier store: the cluster then takes the exact route
// (agent/cluster.cuh's certify; segments as its segment_width cuts them).
bool cluster_store_overflows(const Policy& policy, int k, const float* row, int64_t len, float low) {
  const int64_t ctas = policy.cluster.cluster_size;
  const int64_t width = ((len + ctas - 1) / ctas + 63) / 64 * 64;
  const int64_t capacity = int64_t{frontier_shared_entries(k, policy)} + policy.direct.frontier_global_capacity;
  for (int64_t begin = 0; begin < len; begin += width) {
    int64_t stored = 0;
    for (int64_t i = begin; i < std::min(len, begin + width); ++i) stored += row[i] >= low ? 1 : 0;
    if (stored > capacity) return true;
  }
  return false;
}

// The routes the kernel should have counted: the sampled family's decisions
// come from reference::decide_sampled_route, summed over the rows (the split
// and cluster families' too, under the split's view policy; the cluster has
// no band: its rows that would take it take the exact route); the direct
// family takes the exact route for every row longer than K.
std::vector<uint64_t> expected_route_stats(const Case& c, const Inputs& in, int64_t pitch, int64_t live_rows,
                                           const std::string& family) {
  const Policy policy = c.policy.empty() ? Policy::defaults() : parse_policy_string(c.policy);
  const bool cluster = family == "cluster";
  const bool sampled = family == "sampled" || family == "split" || cluster;
  const SelectSampledPolicy view =
      family == "split" ? split_view_policy(policy) : cluster ? cluster_view_policy(policy) : policy.sampled;
  std::vector<uint64_t> stats(SGTOPK_ROUTE_STAT_SLOTS, 0);
  for (int64_t r = 0; r < live_rows; ++r) {
    const int64_t len = c.lengths ? in.lengths[static_cast<size_t>(r)] : c.width;
    const float* row = in.scores.data() + r * pitch + in.starts[static_cast<size_t>(r)];
    if (!sampled) {
      ++stats[len <= c.k ? SGTOPK_ROUTE_SHORT : SGTOPK_ROUTE_EXACT];
      continue;
    }
    const reference::SampledDecision d = reference::decide_sampled_route(row, len, c.k, static_cast<uint64_t>(r), view);
    if (cluster && d.route == reference::SampledDecision::kBand) {
      ++stats[SGTOPK_ROUTE_EXACT];
      continue;
    }
    if (cluster && d.route == reference::SampledDecision::kPrimary && cluster_store_overflows(policy, c.k, row, len, d.primary_low)) {
      ++stats[SGTOPK_ROUTE_EXACT];
      continue;
    }
    switch (d.route) {
      case reference::SampledDecision::kShort: ++stats[SGTOPK_ROUTE_SHORT]; break;
      case reference::SampledDecision::kNoView: ++stats[SGTOPK_ROUTE_NO_VIEW]; break;
      case reference::SampledDecision::kPrimary: ++stats[SGTOPK_ROUTE_PRIMARY]; break;
      case reference::SampledDecision::kBand: ++stats[SGTOPK_ROUTE_BAND]; break;
      case reference::SampledDecision::kExact: ++stats[SGTOPK_ROUTE_EXACT]; break;
    }
    stats[SGTOPK_ROUTE_CANDIDATES] += static_cast<uint64_t>(d.admitted());
  }
  return stats;
}

std::string stats_text(const std::vector<uint64_t>& s) {
  return "short=" + std::to_string(s[SGTOPK_ROUTE_SHORT]) + " no_view=" + std::to_string(s[SGTOPK_ROUTE_NO_VIEW]) +
         " primary=" + std::to_string(s[SGTOPK_ROUTE_PRIMARY]) + " band=" + std::to_string(s[SGTOPK_ROUTE_BAND]) +
         " exact=" + std::to_string(s[SGTOPK_ROUTE_EXACT]) +
         " candidates=" + std::to_string(s[SGTOPK_ROUTE_CANDIDATES]);
}

// Every route the case names was taken by some row of the reference's decisions.
void expect_routes_exercised(const Case& c, const std::vector<uint64_t>& expected) {
  for (int route : c.expect_routes)
    EXPECT_GT(expected[static_cast<size_t>(route)], 0u)
        << c.name << ": inputs do not exercise route " << route << " (" << stats_text(expected) << ")";
}

void synchronize() { check_cuda(driver().cuCtxSynchronize(), "kernel execution"); }

void run_case(const Case& c) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, c.name);
  const int64_t pitch = c.pitch ? c.pitch : c.width;
  const int64_t out_pitch = c.out_pitch ? c.out_pitch : c.k;
  sgtopk_plan plan = compile_for_device(c);
  ASSERT_NE(plan, nullptr);
  if (!c.planned_family.empty()) {
    sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
    ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
    EXPECT_EQ(std::string(info.family), c.planned_family) << c.name << ": the planner chose another family on this GPU";
  }
  const Inputs in = make_inputs(c, pitch, rng);
  DeviceSet d(c, in, out_pitch);
  ASSERT_EQ(sgtopk_select(plan, &d.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  const int64_t live = c.live_rows < 0 ? c.rows : c.live_rows;
  EXPECT_EQ(check(c, in, d, pitch, out_pitch, live), "") << c.name;
  if (c.flags & SGTOPK_ROUTE_STATS) {
    sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
    ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
    const std::vector<uint64_t> expected = expected_route_stats(c, in, pitch, live, info.family);
    const std::vector<uint64_t> got = d.route_stats.download_as<uint64_t>(SGTOPK_ROUTE_STAT_SLOTS);
    EXPECT_EQ(stats_text(got), stats_text(expected)) << c.name << " (" << info.family << ")";
    expect_routes_exercised(c, expected);
    // Only the split finisher selects from a row histogram, and only certified rows.
    const uint64_t from_histogram = got[SGTOPK_SPLIT_FROM_HISTOGRAM];
    const uint64_t certified = got[SGTOPK_ROUTE_PRIMARY] + got[SGTOPK_ROUTE_BAND];
    EXPECT_LE(from_histogram, std::string(info.family) == "split" ? certified : 0u) << c.name;
    if (c.expect_split_forms >= 1) EXPECT_GT(from_histogram, 0u) << c.name << ": no row took the histogram form";
    if (c.expect_split_forms >= 2) EXPECT_LT(from_histogram, certified) << c.name << ": every row took the histogram form";
  }
  sgtopk_plan_destroy(plan);
}

class SelectGpu : public ::testing::TestWithParam<Case> {};
TEST_P(SelectGpu, MatchesReference) { run_case(GetParam()); }

// A case forced through the direct family under a policy overlay of its
// [select.direct] table (the keys as TOML lines), every row family.
Case direct_policy_case(std::string name, int k, int64_t rows, int64_t width, uint32_t flags,
                        const std::string& direct_keys) {
  Case c;
  c.name = std::move(name);
  c.k = k;
  c.rows = rows;
  c.width = width;
  c.flags = flags;
  c.family = "direct_exact";
  c.policy = "[select.direct]\n" + direct_keys;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // K sweep over every row family; rows long enough that K is a real boundary.
  for (int k : {1, 2, 7, 255, 256, 1024, 2048, 4096, 8192}) {
    Case c;
    c.name = "k" + std::to_string(k);
    c.k = k;
    c.rows = 2 * static_cast<int64_t>(all_row_families().size());
    c.width = std::max<int64_t>(3 * k + 5, 20000);
    out.push_back(c);
  }
  // Register-resident short rows and streamed long rows, odd widths.
  for (int64_t width : {1, 3, 1000, 5001, 16383, 16385, 70001}) {
    Case c;
    c.name = "width" + std::to_string(width);
    c.k = 256;
    c.rows = 44;
    c.width = width;
    out.push_back(c);
  }
  {  // Very wide rows, few of them (1.5M tokens).
    Case c;
    c.name = "width1p5m";
    c.k = 2048;
    c.rows = 5;
    c.width = (1 << 20) + (1 << 19);
    c.lengths = false;
    c.families = {RowFamily::kIndexerLike, RowFamily::kAllEqual, RowFamily::kBoundaryTies, RowFamily::kSharedHigh21Bits,
                  RowFamily::kNaNInTop};
    out.push_back(c);
  }
  {  // Values + sorted + window starts (unaligned) + pitch > width + out_pitch > K.
    Case c;
    c.name = "values_sorted_starts_pitch";
    c.k = 1024;
    c.rows = 44;
    c.width = 30001;
    c.pitch = 40003;
    c.out_pitch = 1031;
    c.flags = SGTOPK_VALUES | SGTOPK_SORTED | SGTOPK_STARTS;
    out.push_back(c);
  }
  {
    Case c;
    c.name = "values_sorted_k8192_short";
    c.k = 8192;
    c.rows = 22;
    c.width = 12000;
    c.flags = SGTOPK_VALUES | SGTOPK_SORTED;
    out.push_back(c);
  }
  // Where the histogram pass raises its floor (the default: as a chunk's
  // last work unit and the one halfway are taken): after one visit of each
  // chunk, with work units and with fixed slices; at the last unit's claim
  // only; at eight claims of each chunk. K large and small, rows of one to
  // many chunks.
  const std::pair<const char*, const char*> raise_policies[] = {
      {"direct_raise_after_visit", "raise_at_claim = false\n"},
      {"direct_fixed_slices", "work_units = false\n"},
      {"direct_raises_8", "raises_per_chunk = 8\n"},
      {"direct_raise_at_last_claim", "raises_per_chunk = 1\n"},
  };
  for (const auto& [name, keys] : raise_policies)
    for (int k : {2048, 7})
      out.push_back(direct_policy_case(std::string(name) + "_k" + std::to_string(k), k, 90, 300001,
                                       SGTOPK_VALUES | SGTOPK_STARTS | (k < 16 ? SGTOPK_SORTED : 0), keys));
  // Rows kept in registers with an odd count per thread (keys are computed
  // two at a time: the last one alone).
  out.push_back(direct_policy_case("register_rows_odd_items", 2048, 70, 7000, SGTOPK_VALUES | SGTOPK_STARTS,
                                   "items_per_thread = 7\n"));
  // More rows than SMs: the streamed rows' default CTAs (two of 512 threads
  // per SM; the cases above with fewer rows than SMs run one 1024-thread CTA
  // a row), K large and small.
  out.push_back(direct_policy_case("direct_two_workers_per_sm", 2048, 300, 40001, SGTOPK_VALUES | SGTOPK_STARTS, ""));
  out.push_back(direct_policy_case("direct_two_workers_per_sm_k7", 7, 300, 70001, SGTOPK_VALUES | SGTOPK_SORTED, ""));
  // Register rows in smaller CTAs than their default 1024 threads (two and
  // four of them per SM, 14 and 12 items a thread).
  out.push_back(direct_policy_case("register_rows_512_threads", 300, 70, 7000, SGTOPK_VALUES | SGTOPK_STARTS,
                                   "register_block_threads = 512\n"));
  out.push_back(direct_policy_case("register_rows_256_threads_k7", 7, 90, 3000, SGTOPK_VALUES | SGTOPK_SORTED,
                                   "register_block_threads = 256\n"));
  {  // Scalar loads only.
    Case c;
    c.name = "scalar_loads";
    c.k = 2048;
    c.rows = 22;
    c.width = 50001;
    c.flags = SGTOPK_STARTS;
    c.policy = "[select.direct]\nvector_bytes = 4\n";
    out.push_back(c);
  }
  // Frontiers that overflow shared and global storage: refinement re-reads the row.
  for (const char* body : {"short", "long"}) {
    Case c;
    c.name = std::string("frontier_overflow_") + body;
    c.k = 2048;
    c.rows = 44;
    c.width = std::string(body) == "short" ? 12000 : 90000;
    c.flags = SGTOPK_VALUES;
    c.policy = "[select.direct]\nfrontier_shared_capacity = 256\nfrontier_shared_per_k = 0\nfrontier_global_capacity = 0\n";
    c.family = "direct_exact";  // the planner gives rows this short to short_row
    out.push_back(c);
  }
  {  // Block of 256 threads, several workers per SM, no histogram aggregation.
    Case c;
    c.name = "small_blocks";
    c.k = 512;
    c.rows = 300;
    c.width = 33333;
    c.policy = "[select.direct]\nblock_threads = 256\nworkers_per_sm = 4\naggregate_histogram = false\n";
    out.push_back(c);
  }
  // The policy's opt-in kernel options (prefetching loads into registers and
  // L2, endpoint classification, aggregated histogram) over every row family
  // and both bodies.
  for (int64_t width : {9000, 200001}) {
    Case c;
    c.name = "opt_in_width" + std::to_string(width);
    c.k = 2048;
    c.rows = 66;
    c.width = width;
    c.flags = SGTOPK_VALUES | SGTOPK_STARTS;
    c.policy =
        "[select.direct]\nprefetch_next_chunk = true\nendpoint_classification = true\naggregate_histogram = true\n"
        "prefetch_l2_chunks = 2\n";
    c.family = "direct_exact";
    out.push_back(c);
  }
  {
    Case c;
    c.name = "opt_in_k1_sorted";
    c.k = 1;
    c.rows = 44;
    c.width = 100003;
    c.flags = SGTOPK_SORTED;
    c.policy =
        "[select.direct]\nprefetch_next_chunk = true\nendpoint_classification = true\nprefetch_l2_chunks = 2\n"
        "histogram_backward = true\n";  // the look-aheads (both loops) run backward too
    c.family = "direct_exact";
    out.push_back(c);
  }
  {  // live_rows < rows: the rest stays untouched.
    Case c;
    c.name = "live_rows";
    c.k = 300;
    c.rows = 64;
    c.live_rows = 37;
    c.width = 20000;
    out.push_back(c);
  }
  {  // Many rows, more than the worker pool: rows are strided over workers.
    Case c;
    c.name = "many_rows";
    c.k = 256;
    c.rows = 8192;
    c.width = 3000;
    c.families = {RowFamily::kUniform, RowFamily::kIndexerLike, RowFamily::kBoundaryTies, RowFamily::kReluPlateau};
    out.push_back(c);
  }
  {  // No lengths array: every row is `width`.
    Case c;
    c.name = "no_lengths";
    c.k = 100;
    c.rows = 22;
    c.width = 4097;
    c.lengths = false;
    out.push_back(c);
  }
  const uint32_t values_starts = SGTOPK_VALUES | SGTOPK_STARTS;
  // The histogram pass from the row's start (the default walks from its end;
  // unaligned starts: head, body, tail). Last, so that the sampled
  // derivation's route-statistics parity of the cases above stays as it was.
  out.push_back(direct_policy_case("histogram_forward", 2048, 70, 300001, values_starts, "histogram_backward = false\n"));
  // The classification pass reading the whole row again (the default reads
  // only the vectors the histogram pass marked: floor_marks.cuh).
  out.push_back(direct_policy_case("direct_without_floor_marks", 2048, 70, 300001, values_starts, "floor_marks = false\n"));
  // Plain floor marks (the default also keeps the highest bin of each marked
  // vector of the first chunks read, and reads only those reaching the
  // boundary bin).
  out.push_back(direct_policy_case("direct_without_marked_bins", 2048, 70, 200001, values_starts, "marked_bin_chunks = 0\n"));
  // Bins for 16 chunks, read forward (the row's first ones) and visited chunk
  // by chunk; a small K (a high boundary bin: most marked vectors are left out).
  out.push_back(direct_policy_case("direct_marked_bins_forward_chunkwise_k7", 7, 90, 300001,
                                   values_starts | SGTOPK_SORTED,
                                   "marked_bin_chunks = 16\nhistogram_backward = false\ngather_marked = false\n"));
  // Bins for every chunk of rows up to 131072, backward, gathered.
  out.push_back(direct_policy_case("direct_marked_bins_every_chunk", 1024, 90, 131071, values_starts, "marked_bin_chunks = 16\n"));
  // Gathered batches of other sizes than the default 4 (8: loads_in_flight).
  out.push_back(direct_policy_case("direct_gather_batch8", 2048, 70, 300001, values_starts, "gather_batch = 8\n"));
  out.push_back(direct_policy_case("direct_gather_batch3", 255, 70, 140003, values_starts, "gather_batch = 3\n"));
  // The marked vectors visited chunk by chunk (the default gathers them
  // across chunks: row_stream.cuh, for_each_gathered).
  out.push_back(direct_policy_case("direct_without_gathered_marks", 2048, 70, 300001, values_starts, "gather_marked = false\n"));
  // The classification pass by coarse keys (the default compares with the
  // boundary bin's FP32 endpoints); plateaus and ties at the boundary.
  out.push_back(direct_policy_case("coarse_key_classification", 300, 90, 120001, SGTOPK_VALUES | SGTOPK_SORTED,
                                   "endpoint_classification = false\n"));
  {  // Radix rounds to the end in both families (the sampled family's default
    // finishes groups of 64 or fewer by counting ranks); ties resolved by the
    // index rounds.
    Case c;
    c.name = "radix_to_the_end";
    c.k = 1000;
    c.rows = 90;
    c.width = 150001;
    c.flags = SGTOPK_VALUES | SGTOPK_SORTED;
    c.families = {RowFamily::kBoundaryTies, RowFamily::kAllEqual, RowFamily::kSharedHigh21Bits, RowFamily::kUniform,
                  RowFamily::kIndexerLike, RowFamily::kTwoValues};
    c.policy = "[select.direct]\nsmall_group = 0\n[select.sampled]\nsmall_group = 0\n";
    out.push_back(c);
  }
  {  // The direct family with the small-group finish (its default: radix rounds
    // to the end), on the same ties.
    Case c;
    c.name = "direct_small_group_finish";
    c.k = 1000;
    c.rows = 90;
    c.width = 150001;
    c.flags = SGTOPK_VALUES | SGTOPK_SORTED;
    c.family = "direct_exact";
    c.families = {RowFamily::kBoundaryTies, RowFamily::kAllEqual, RowFamily::kSharedHigh21Bits, RowFamily::kUniform,
                  RowFamily::kIndexerLike, RowFamily::kTwoValues};
    c.policy = "[select.direct]\nsmall_group = 64\n";
    out.push_back(c);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Contract, SelectGpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The sampled family: the whole contract suite forced through it (short rows,
// views too small, recovery: every route must still be exact), with its
// route counts checked against the CPU reference's (every other case: the
// rest run the production kernel, compiled without statistics); then inputs
// built to defeat a strided sample and policies that force each route.
// Rows built to defeat a strided sample.
const std::vector<RowFamily> kSampleDefeaters = {RowFamily::kPeriodic64,  RowFamily::kPeriodic128, RowFamily::kPackedRuns,
                                                 RowFamily::kBimodal,     RowFamily::kAscending,   RowFamily::kDescending,
                                                 RowFamily::kIndexerLike, RowFamily::kNaNInTop};

// The contract suite forced through `family` (names prefixed with it), every
// other case with route statistics.
std::vector<Case> contract_cases_through(const std::string& family) {
  std::vector<Case> out;
  int derived = 0;
  for (Case c : cases()) {
    c.name = family + "_" + c.name;
    c.family = family;
    if (derived++ % 2 == 0) c.flags |= SGTOPK_ROUTE_STATS;
    out.push_back(c);
  }
  return out;
}

std::vector<Case> sampled_cases() {
  std::vector<Case> out;
  for (Case c : contract_cases_through("sampled")) {
    // Rows of length K+1 hold too few samples to propose anything.
    if (c.k >= 1024 && c.lengths && (c.flags & SGTOPK_ROUTE_STATS)) c.expect_routes = {SGTOPK_ROUTE_NO_VIEW};
    // The direct family's worker shape has a sampled counterpart.
    if (c.name == "sampled_small_blocks") c.policy += "[select.sampled]\nblock_threads = 256\nworkers_per_sm = 4\n";
    out.push_back(c);
  }
  {  // Wide rows of sample-defeating structure, more rows than workers.
    Case c;
    c.name = "sampled_defeaters_wide";
    c.k = 2048;
    c.rows = 300;
    c.width = 262144;
    c.families = kSampleDefeaters;
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_EXACT, SGTOPK_ROUTE_SHORT};
    out.push_back(c);
  }
  {  // Narrower rows (below wide_row_threshold).
    Case c;
    c.name = "sampled_defeaters_narrow";
    c.k = 1024;
    c.rows = 400;
    c.width = 60001;
    c.families = kSampleDefeaters;
    c.flags = SGTOPK_ROUTE_STATS;
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_EXACT};
    out.push_back(c);
  }
  {  // A tight primary margin underfills often; the band recovers most rows.
    Case c;
    c.name = "sampled_band";
    c.k = 2048;
    c.rows = 300;
    c.width = 200000;
    c.lengths = false;
    c.families = {RowFamily::kUniform, RowFamily::kGaussian, RowFamily::kIndexerLike};
    c.flags = SGTOPK_ROUTE_STATS;
    c.policy = "[select.sampled]\nprimary_margin = 1.0\nsecondary_margin = 1.6\nprimary_confidence = 0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_BAND};
    out.push_back(c);
  }
  {  // No band (equal margins): underfilled rows go straight to exact recovery.
    Case c;
    c.name = "sampled_exact_recovery";
    c.k = 2048;
    c.rows = 300;
    c.width = 200000;
    c.lengths = false;
    c.families = {RowFamily::kUniform, RowFamily::kGaussian, RowFamily::kIndexerLike, RowFamily::kBoundaryTies};
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_SORTED;
    c.policy = "[select.sampled]\nprimary_margin = 1.0\nsecondary_margin = 1.0\nprimary_confidence = 0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_EXACT};
    out.push_back(c);
  }
  // Other views (the default: blocks of 16 at stride 32): the paper's strided
  // view (blocks of 1, stride 128 / 64), blocks of 8 and 32;
  // wide and narrow rows with unaligned starts,
  // the sample-defeating families, the band forced by a tight margin; the
  // route counts must still match the reference's, which reads the same view.
  for (int block : {1, 8, 32}) {
    Case c;
    c.name = block == 1 ? "sampled_paper_view" : "sampled_view_block" + std::to_string(block);
    c.k = 2048;
    c.rows = 300;
    c.width = block == 32 ? 100001 : 262144;
    c.families = kSampleDefeaters;
    c.families.push_back(RowFamily::kUniform);
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_STARTS | SGTOPK_VALUES;
    c.policy = "[select.sampled]\nview_block = " + std::to_string(block) + "\n";
    if (block == 1) c.policy += "stride_wide = 128\nstride_narrow = 64\n";
    if (block == 32) c.policy += "primary_margin = 1.0\nsecondary_margin = 1.6\nprimary_confidence = 0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    if (block == 32) c.expect_routes.push_back(SGTOPK_ROUTE_BAND);
    out.push_back(c);
  }
  {  // Frontiers past the shared and global stores: refinement re-reads the row.
    Case c;
    c.name = "sampled_frontier_overflow";
    c.k = 2048;
    c.rows = 200;
    c.width = 100000;
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
    c.policy = "[select.direct]\nfrontier_shared_capacity = 256\nfrontier_shared_per_k = 0\nfrontier_global_capacity = 1024\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
  }
  {  // The band pass appending past the shared and global stores (row re-read).
    Case c;
    c.name = "sampled_band_frontier_overflow";
    c.k = 2048;
    c.rows = 200;
    c.width = 200000;
    c.lengths = false;
    c.families = {RowFamily::kUniform, RowFamily::kGaussian, RowFamily::kIndexerLike};
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
    c.policy =
        "[select.sampled]\nprimary_margin = 1.0\nsecondary_margin = 1.6\nprimary_confidence = 0\n"
        "[select.direct]\nfrontier_shared_capacity = 256\nfrontier_shared_per_k = 0\nfrontier_global_capacity = 0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_BAND};
    out.push_back(c);
  }
  {  // K = 4096: the shared frontier grows to 2 x K = 8192 entries (frontier_shared_per_k),
     // which the candidates of iid rows nearly fill.
    Case c;
    c.name = "sampled_k4096_grown_frontier";
    c.family = "sampled";
    c.k = 4096;
    c.rows = 64;
    c.width = 300000;
    c.families = {RowFamily::kUniform, RowFamily::kGaussian, RowFamily::kIndexerLike, RowFamily::kBoundaryTies};
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
  }
  {  // K = 256 at the default confidence (q0 = 17, blocks of 4): the reference's
     // ranks are the kernel's, so the route counts agree row by row.
    Case c;
    c.name = "sampled_k256_confidence";
    c.family = "sampled";
    c.k = 256;
    c.rows = 300;
    c.width = 200000;
    c.families = {RowFamily::kIndexerLike, RowFamily::kUniform, RowFamily::kGaussian, RowFamily::kBoundaryTies};
    c.flags = SGTOPK_ROUTE_STATS;
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
  }
  {  // One worker per SM, small blocks, live_rows: the row counter path.
    Case c;
    c.name = "sampled_small_blocks_live_rows";
    c.k = 512;
    c.rows = 1000;
    c.live_rows = 777;
    c.width = 40000;
    c.flags = SGTOPK_ROUTE_STATS;
    c.policy = "[select.sampled]\nblock_threads = 256\nworkers_per_sm = 1\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
  }
  {  // Small K with the plan-time stride rule: a denser view (s = 25 for K = 256).
    Case c;
    c.name = "sampled_small_k_min_sample_rank";
    c.k = 256;
    c.rows = 300;
    c.width = 200000;
    c.families = {RowFamily::kIndexerLike, RowFamily::kUniform, RowFamily::kPeriodic64, RowFamily::kBoundaryTies};
    c.flags = SGTOPK_ROUTE_STATS;
    c.policy = "[select.sampled]\nmin_sample_rank = 16\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
  }
  // The fine proposal on every row (the default sharpens only rows whose
  // coarse bin is wide): thresholds inside the boundary bins. Its route
  // counts must match the reference's, which computes the same fine endpoints.
  {
    Case c;
    c.name = "sampled_fine_proposal";
    c.k = 2048;
    c.rows = 300;
    c.width = 262144;
    c.families = kSampleDefeaters;
    c.families.push_back(RowFamily::kUniform);
    c.families.push_back(RowFamily::kBoundaryTies);
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_STARTS | SGTOPK_SORTED;
    c.policy = "[select.sampled]\nfine_proposal_excess = 1.0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_EXACT};
    out.push_back(c);
  }
  {  // The paper's proposal by coarse bins only (the opt-out): wide uniform
     // rows, whose coarse bins the default would sharpen.
    Case c;
    c.name = "sampled_coarse_proposal";
    c.k = 2048;
    c.rows = 200;
    c.width = 524288;
    c.families = {RowFamily::kUniform, RowFamily::kIndexerLike, RowFamily::kBoundaryTies};
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
    c.policy = "[select.sampled]\nfine_proposal_excess = 0.0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
  }
  {  // ... with tight margins: the band's fine threshold recovers, or the exact route.
    Case c;
    c.name = "sampled_fine_band";
    c.k = 1024;
    c.rows = 300;
    c.width = 200000;
    c.lengths = false;
    c.families = {RowFamily::kUniform, RowFamily::kGaussian, RowFamily::kIndexerLike, RowFamily::kAllEqual};
    c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
    c.policy = "[select.sampled]\nfine_proposal_excess = 1.0\nprimary_margin = 1.0\nsecondary_margin = 1.3\nprimary_confidence = 0\n";
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_BAND};
    out.push_back(c);
  }
  // Forced, not left to the planner: a dispatch default (rows per SM, widths)
  // must not move a case that forces a sampled route to another family.
  for (Case& c : out) c.family = "sampled";
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sampled, SelectGpu, ::testing::ValuesIn(sampled_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A few long rows forced through `family` (named family_name): K = 2048,
// values and route statistics.
Case few_long_rows(const std::string& family, const std::string& name, int64_t rows, int64_t width,
                   const std::string& policy) {
  Case c;
  c.name = family + "_" + name;
  c.family = family;
  c.k = 2048;
  c.rows = rows;
  c.width = width;
  c.flags = SGTOPK_ROUTE_STATS | SGTOPK_VALUES;
  c.policy = policy;
  return c;
}

// Segments of at least 1024 scores: the suite's rows of a few thousand split
// over several CTAs.
const char* const kSplitSmallSegments = "[select.split]\nmin_segment_width = 1024\n";

// The split family: the whole contract suite forced through it, with
// segments small enough that its rows are split, route counts checked
// against the reference's under the split view policy; then few long rows
// of sample-defeating structure, and policies that force the band, the
// exact route, records and segments too small for their candidates, and
// each form of the finisher.
std::vector<Case> split_cases() {
  std::vector<Case> out;
  for (Case c : contract_cases_through("split")) {
    c.policy += kSplitSmallSegments;
    out.push_back(c);
  }
  const auto few_long = [&](const std::string& name, int64_t rows, int64_t width, const std::string& policy,
                            std::vector<int> routes) {
    Case c = few_long_rows("split", name, rows, width, policy);
    c.families = kSampleDefeaters;
    c.expect_routes = std::move(routes);
    out.push_back(c);
  };
  few_long("defeaters_1m", 4, 1 << 20, "", {SGTOPK_ROUTE_PRIMARY});
  out.back().expect_split_forms = 1;
  few_long("defeaters_wide", 16, 262144, "", {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_SHORT});
  out.back().expect_split_forms = 1;
  few_long("band", 16, 262144, "[select.sampled]\nfine_proposal_excess = 1.0\nprimary_margin = 1.0\nsecondary_margin = 1.3\nprimary_confidence = 0\n",
           {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_BAND});
  out.back().expect_split_forms = 1;
  few_long("exact", 16, 131072, "[select.sampled]\nprimary_margin = 1.0\nsecondary_margin = 1.0\nprimary_confidence = 0\n",
           {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_EXACT});
  // Two segments a row, each keeping up to 8192 candidates in shared memory.
  few_long("wide_segments", 16, 262144, "[select.split]\nsegment_capacity = 8192\nsplit_counts = [2]\n",
           {SGTOPK_ROUTE_PRIMARY});
  out.back().expect_split_forms = 1;
  few_long("record_overflow", 8, 262144, "[select.split]\ncandidate_capacity = 256\n", {SGTOPK_ROUTE_PRIMARY});
  few_long("segment_overflow", 8, 262144, "[select.direct]\nfrontier_shared_capacity = 256\nfrontier_shared_per_k = 0\n", {SGTOPK_ROUTE_PRIMARY});
  few_long("sorted_k8192", 2, 1 << 20, "", {SGTOPK_ROUTE_PRIMARY});
  out.back().k = 8192;
  out.back().flags |= SGTOPK_SORTED;
  // Both view strides in one launch: ragged rows on either side of the
  // threshold, the wide ones on a view of stride 256; every row family.
  few_long("two_strides", 24, 262144, "[select.split]\nwide_row_threshold = 150000\nstride_wide = 256\n",
           {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_SHORT});
  out.back().families = all_row_families();
  out.back().expect_split_forms = 2;
  // The finisher's stored-frontier refinement (its shared-memory form off),
  // and a shared-memory form too small for most rows' candidates (both forms
  // in one launch); every row family.
  few_long("frontier_finisher", 16, 262144, "[select.split]\nfinisher_items = 0\n", {SGTOPK_ROUTE_PRIMARY});
  out.back().families = all_row_families();
  few_long("finisher_items_2", 16, 262144, "[select.split]\nfinisher_items = 2\n", {SGTOPK_ROUTE_PRIMARY});
  out.back().families = all_row_families();
  out.back().flags |= SGTOPK_SORTED;
  // Segments asked of L2 after the view and ahead of the pass, with ragged
  // rows (segments that end inside a chunk and rows that start anywhere).
  few_long("l2_prefetch", 16, 1 << 20, "[select.split]\nprefetch_before_view_kb = 20\nprefetch_after_view_kb = 100\nprefetch_ahead_chunks = 2\n",
           {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_SHORT});
  out.back().families = all_row_families();
  out.back().expect_split_forms = 1;
  // The same on small shapes (the sanitizers' case): CTAs of 256, four
  // segments of several chunks a row.
  few_long("l2_prefetch_small", 6, 60000,
           "[select.split]\nsplit_counts = [4]\nmin_segment_width = 1024\nblock_threads = 256\n"
           "prefetch_before_view_kb = 4\nprefetch_after_view_kb = 8\nprefetch_ahead_chunks = 1\n",
           {SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_SHORT});
  out.back().families = all_row_families();
  return out;
}

INSTANTIATE_TEST_SUITE_P(Split, SelectGpu, ::testing::ValuesIn(split_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The cluster family: the whole contract suite forced through it (its rows
// of a few thousand cut into 8 segments, some empty; route counts checked
// against the reference's), then few long rows of every structure, clusters
// of 2 and 4, margins that send rows to the exact route, segment frontiers
// too small for the candidates (the exact route, its global slices, then its
// rows re-read), K = 8192 sorted, and many rows (clusters in waves).
std::vector<Case> cluster_cases() {
  std::vector<Case> out = contract_cases_through("cluster");
  const auto few_long = [&](const std::string& name, int64_t rows, int64_t width, const std::string& policy) -> Case& {
    Case c = few_long_rows("cluster", name, rows, width, policy);
    c.families = all_row_families();
    c.flags |= SGTOPK_STARTS;
    c.expect_routes = {SGTOPK_ROUTE_PRIMARY};
    out.push_back(c);
    return out.back();
  };
  few_long("1m", 4, 1 << 20, "");
  few_long("wide", 16, 262144, "");
  few_long("pairs", 16, 262144, "[select.cluster]\ncluster_size = 2\n");
  few_long("fours_512_threads", 16, 100000, "[select.cluster]\ncluster_size = 4\nblock_threads = 512\nloads_in_flight = 2\n");
  few_long("exact", 16, 131072, "[select.sampled]\nprimary_margin = 1.0\nsecondary_margin = 1.0\nprimary_confidence = 0\n").expect_routes = {
      SGTOPK_ROUTE_PRIMARY, SGTOPK_ROUTE_EXACT};
  // Candidates past a CTA's store: the exact route.
  few_long("segment_overflow", 8, 262144, "[select.direct]\nfrontier_shared_capacity = 256\nfrontier_shared_per_k = 0\nfrontier_global_capacity = 64\n")
      .expect_routes = {SGTOPK_ROUTE_EXACT};
  few_long("rows_reread", 8, 131072, "[select.direct]\nfrontier_shared_capacity = 256\nfrontier_shared_per_k = 0\nfrontier_global_capacity = 0\n")
      .expect_routes = {SGTOPK_ROUTE_EXACT};
  few_long("sorted_k8192", 2, 1 << 20, "").k = 8192;
  out.back().flags |= SGTOPK_SORTED;
  few_long("many_long_rows", 400, 65536, "").families = kSampleDefeaters;
  // Small enough for compute-sanitizer's racecheck: two CTAs of 128.
  few_long("tiny", 3, 20000, "[select.cluster]\ncluster_size = 2\nblock_threads = 128\n").k = 64;
  out.back().families = {RowFamily::kUniform, RowFamily::kBoundaryTies, RowFamily::kAllEqual};
  out.back().expect_routes.clear();
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cluster, SelectGpu, ::testing::ValuesIn(cluster_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The short-row family: the contract suite's rows up to 32768 wide (1024
// threads x 32 scores) forced through it, then its own shapes: half-row
// selections, CTAs of one warp, the widest rows it holds, heavy ties at the
// boundary key (resolved by row-order ranks), K = 8192 sorted, many rows.
std::vector<Case> short_row_cases() {
  std::vector<Case> out;
  for (Case c : contract_cases_through("short_row")) {
    if (c.width > 32768) continue;
    if (c.width > 16384) c.policy += "[select.short_row]\nmax_block_threads = 1024\n";  // 1024 x up to 32 scores
    out.push_back(c);
  }
  const auto add = [&](const std::string& name, int k, int64_t rows, int64_t width, uint32_t flags,
                       const std::string& policy) -> Case& {
    Case c;
    c.name = "short_row_" + name;
    c.family = "short_row";
    c.k = k;
    c.rows = rows;
    c.width = width;
    c.flags = flags;
    c.policy = policy;
    out.push_back(c);
    return out.back();
  };
  add("half_rows", 2048, 600, 4096, SGTOPK_VALUES | SGTOPK_STARTS | SGTOPK_ROUTE_STATS, "").expect_routes = {
      SGTOPK_ROUTE_SHORT, SGTOPK_ROUTE_EXACT};
  add("warp_ctas", 100, 300, 1000, SGTOPK_VALUES | SGTOPK_SORTED,
      "[select.short_row]\nmin_block_threads = 32\nitems_per_thread = 32\n");
  add("odd_items", 333, 200, 7000, SGTOPK_VALUES | SGTOPK_STARTS, "[select.short_row]\nitems_per_thread = 7\n");
  add("width32768", 2048, 64, 32768, SGTOPK_VALUES | SGTOPK_SORTED, "[select.short_row]\nmax_block_threads = 1024\n");
  add("width16384", 2048, 300, 16384, SGTOPK_VALUES | SGTOPK_STARTS, "");  // 512 x 32
  add("boundary_ties", 1000, 200, 5000, SGTOPK_VALUES | SGTOPK_SORTED, "").families = {
      RowFamily::kAllEqual, RowFamily::kBoundaryTies, RowFamily::kTwoValues, RowFamily::kSharedHigh21Bits,
      RowFamily::kReluPlateau};
  add("k8192_sorted", 8192, 40, 16384, SGTOPK_VALUES | SGTOPK_SORTED | SGTOPK_STARTS, "");
  add("many_half_rows", 2048, 20000, 4096, 0, "").families = {RowFamily::kUniform, RowFamily::kIndexerLike,
                                                          RowFamily::kBoundaryTies, RowFamily::kReluPlateau};
  // The scores kept in registers (the default keeps them only for launches
  // of at most a row per SM), at the occupancy that variant is for.
  const std::string registers = "[select.short_row]\nscores_in_registers = true\nthreads_per_sm = 1024\n";
  add("registers_width16384", 2048, 300, 16384, SGTOPK_VALUES | SGTOPK_STARTS | SGTOPK_SORTED, registers);
  add("registers_boundary_ties", 1000, 200, 5000, SGTOPK_VALUES | SGTOPK_STARTS, registers).families = {
      RowFamily::kAllEqual, RowFamily::kBoundaryTies, RowFamily::kTwoValues, RowFamily::kSharedHigh21Bits,
      RowFamily::kReluPlateau};
  add("registers_k7", 7, 200, 3000, SGTOPK_VALUES | SGTOPK_SORTED, registers);
  add("occupancy_1536", 1000, 200, 5000, SGTOPK_VALUES | SGTOPK_STARTS, "[select.short_row]\nthreads_per_sm = 1536\n");
  return out;
}

INSTANTIATE_TEST_SUITE_P(ShortRow, SelectGpu, ::testing::ValuesIn(short_row_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The planner's own choices: one shape in each family's region of the
// default policy (for a GPU of 132 SMs, the H200's and sm_90's compile-only
// count), every row family, the family checked on the plan the GPU got.
// Every family of the table must be among them (checked on the host below),
// so none is reachable by the planner without running on the GPU here.
std::vector<Case> planner_cases() {
  std::vector<Case> out;
  const auto add = [&](const std::string& family, int64_t rows, int64_t width, uint32_t flags) -> Case& {
    Case c;
    c.name = "planner_" + family;
    c.k = 2048;
    c.rows = rows;
    c.width = width;
    c.flags = flags;
    c.planned_family = family;
    out.push_back(c);
    return out.back();
  };
  add("short_row", 600, 4096, SGTOPK_VALUES | SGTOPK_STARTS);
  add("direct_exact", 300, 20000, SGTOPK_VALUES);
  add("sampled", 300, 100000, SGTOPK_VALUES | SGTOPK_STARTS | SGTOPK_ROUTE_STATS);
  add("split", 8, 262144, SGTOPK_VALUES | SGTOPK_ROUTE_STATS);
  // Off by default (select.cluster.max_rows = 0: slower than split on the
  // H200, docs/decisions/2026-12-02-cluster-family.md): its region under
  // the policy that opens it.
  add("cluster", 4, 262144, SGTOPK_VALUES | SGTOPK_ROUTE_STATS).policy = "[select.cluster]\nmax_rows = 16\n";
  return out;
}

INSTANTIATE_TEST_SUITE_P(Planner, SelectGpu, ::testing::ValuesIn(planner_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Host only (runs in CI too): the planner cases cover every family of the
// table, and the planner picks each case's family for a compile-only sm_90
// target (132 SMs) under the case's policy, so a dispatch change that moves
// a case out of its family's region fails before any GPU time is spent.
TEST(SelectGpuCases, PlannerCasesCoverEveryFamily) {
  std::vector<std::string> covered;
  for (const Case& c : planner_cases()) {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.k = c.k;
    p.rows = c.rows;
    p.width = c.width;
    p.flags = c.flags;
    const Policy policy = c.policy.empty() ? Policy::defaults() : parse_policy_string(c.policy);
    const Plan plan = make_plan(validate_problem(&p), policy, resolve_target(-1, "sm_90", "sm_90"), "");
    EXPECT_EQ(plan.family, c.planned_family) << c.name << " (" << plan.reason << ")";
    covered.push_back(c.planned_family);
  }
  std::vector<std::string> families = select_families();
  std::sort(families.begin(), families.end());
  std::sort(covered.begin(), covered.end());
  EXPECT_EQ(covered, families);
}

// Host only (runs in CI too): every case that names routes it must exercise
// does so on the CPU reference under its policy, so a default change (stride,
// view block, margins) that quietly stops a route-forcing case from forcing
// its route fails before any GPU time is spent. The GPU run checks it again
// on its own inputs.
TEST(SelectGpuCases, InputsExerciseTheirRoutes) {
  for (const auto& [family, family_cases] :
       {std::pair<std::string, std::vector<Case>>{"sampled", sampled_cases()}, {"split", split_cases()}, {"cluster", cluster_cases()}}) {
    for (const Case& c : family_cases) {
      if (c.expect_routes.empty()) continue;
      SGTOPK_SEEDED_RNG(rng, c.name);
      const int64_t pitch = c.pitch ? c.pitch : c.width;
      const Inputs in = make_inputs(c, pitch, rng);
      const int64_t live = c.live_rows < 0 ? c.rows : c.live_rows;
      expect_routes_exercised(c, expected_route_stats(c, in, pitch, live, family));
    }
  }
}

// Direct family with route statistics: every row longer than K is exact.
INSTANTIATE_TEST_SUITE_P(DirectRouteStats, SelectGpu, ::testing::Values([] {
                           Case c;
                           c.name = "direct_route_stats";
                           c.k = 300;
                           c.rows = 50;
                           c.width = 20000;
                           c.family = "direct_exact";
                           c.flags = SGTOPK_ROUTE_STATS;
                           c.expect_routes = {SGTOPK_ROUTE_SHORT, SGTOPK_ROUTE_EXACT};
                           return c;
                         }()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A graph built once replays correctly after the device-side lengths and
// live_rows change, and after its pointers are swapped to a second input set.
// Per family: the sampled family's row counter must be restored on the
// device for replays to see every row (more rows than workers here).
class SelectGpuGraph : public ::testing::TestWithParam<std::string> {};

TEST_P(SelectGpuGraph, ReplaysWithChangedLengthsLiveRowsAndPointers) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "graph");
  Case c;
  c.name = "graph";
  c.family = GetParam();
  c.k = 512;
  const bool split = c.family == "split" || c.family == "cluster";  // few rows, each over several CTAs
  c.rows = split ? 24 : 600;
  c.width = c.family == "short_row" ? 16000 : 40000;
  c.live_rows = c.rows;
  if (c.family == "split") c.policy = kSplitSmallSegments;
  c.flags = SGTOPK_VALUES;
  sgtopk_plan plan = compile_for_device(c);
  ASSERT_NE(plan, nullptr);
  Inputs in = make_inputs(c, c.width, rng);
  DeviceSet d(c, in, c.k);
  sgtopk_graph graph = nullptr;
  ASSERT_EQ(sgtopk_graph_create(plan, &d.args, &graph), SGTOPK_OK) << sgtopk_last_error();

  ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(c, in, d, c.width, c.k, c.rows), "") << "first replay";

  // New lengths and fewer live rows, written on the device only.
  for (auto& l : in.lengths) l = static_cast<int32_t>(rng() % static_cast<uint64_t>(c.width + 1));
  d.lengths.upload(in.lengths);
  const int32_t live = split ? 17 : 423;
  d.live.upload(&live, 4);
  d.poison();
  ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(check(c, in, d, c.width, c.k, live), "") << "replay with changed lengths and live_rows";

  // A second input set: update the graph's pointers.
  Case c2 = c;
  Inputs in2 = make_inputs(c2, c.width, rng);
  DeviceSet d2(c2, in2, c.k);
  ASSERT_EQ(sgtopk_graph_update(graph, &d2.args), SGTOPK_OK) << sgtopk_last_error();
  ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(check(c2, in2, d2, c.width, c.k, c.rows), "") << "replay after pointer update";

  // Replays are repeatable (device state restored), also after the plan
  // handle is gone (the graph keeps its kernel and workspace alive).
  ASSERT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
  d2.poison();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(check(c2, in2, d2, c.width, c.k, c.rows), "") << "repeated replays";
  sgtopk_graph_destroy(graph);
}

// Stream capture by the caller (as a framework would) also works.
TEST_P(SelectGpuGraph, CapturesInCallerStream) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "capture");
  Case c;
  c.name = "capture";
  c.family = GetParam();
  c.k = 64;
  c.rows = c.family == "split" ? 16 : 300;
  c.width = 5000;
  if (c.family == "split") c.policy = kSplitSmallSegments;
  sgtopk_plan plan = compile_for_device(c);
  ASSERT_NE(plan, nullptr);
  const Inputs in = make_inputs(c, c.width, rng);
  DeviceSet d(c, in, c.k);
  const DriverApi& cu = driver();
  CUstream stream;
  check_cuda(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check_cuda(cu.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  ASSERT_EQ(sgtopk_select(plan, &d.args, reinterpret_cast<sgtopk_stream>(stream)), SGTOPK_OK) << sgtopk_last_error();
  CUgraph graph;
  check_cuda(cu.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec;
  check_cuda(cu.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  for (int replay = 0; replay < 2; ++replay) {
    d.poison();
    check_cuda(cu.cuGraphLaunch(exec, stream), "cuGraphLaunch");
    check_cuda(cu.cuStreamSynchronize(stream), "replay");
    EXPECT_EQ(check(c, in, d, c.width, c.k, c.rows), "") << "replay " << replay;
  }
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  cu.cuStreamDestroy(stream);
  sgtopk_plan_destroy(plan);
}

INSTANTIATE_TEST_SUITE_P(Families, SelectGpuGraph,
                         ::testing::Values("direct_exact", "sampled", "split", "short_row", "cluster"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The fused index transform, per family, unsorted and sorted: the output is
// read back through the transform's inverse (offsets r * 7919 + 3; a page
// table whose row r maps page q to r * pages + (pages - 1 - q), at a pitch
// past the row's pages) and then checked like any other: the selected set,
// the tie rule, the values, the -1 padding, the order where asked.
class SelectGpuIndexTransform : public ::testing::TestWithParam<std::tuple<std::string, uint32_t, bool>> {};

TEST_P(SelectGpuIndexTransform, WritesTransformedIndices) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  const auto& [family, transform, sorted] = GetParam();
  SGTOPK_SEEDED_RNG(rng, "index_transform");
  Case c;
  c.name = "index_transform";
  c.family = family;
  c.k = 300;
  c.rows = 12;
  c.width = 20000;
  c.flags = transform | SGTOPK_VALUES | SGTOPK_STARTS | (sorted ? SGTOPK_SORTED : 0u);
  if (family == "split") c.policy = kSplitSmallSegments;
  const int page_size = 16;
  const int64_t pages = (c.width + page_size - 1) / page_size, table_pitch = pages + 5;
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.k = c.k;
  p.rows = c.rows;
  p.width = c.width;
  p.flags = c.flags;
  if (transform == SGTOPK_PAGE_TABLE) {
    p.page_size = page_size;
    p.page_table_pitch = table_pitch;
  }
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = 0;
  o.own_workspace = 1;
  o.policy_toml = c.policy.empty() ? nullptr : c.policy.c_str();
  o.family = family.c_str();
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  const Inputs in = make_inputs(c, c.width, rng);
  DeviceSet d(c, in, c.k);
  std::vector<int32_t> offsets(static_cast<size_t>(c.rows)), table(static_cast<size_t>(c.rows * table_pitch), -99);
  for (int64_t r = 0; r < c.rows; ++r) {
    offsets[static_cast<size_t>(r)] = static_cast<int32_t>(r * 7919 + 3);
    for (int64_t q = 0; q < pages; ++q)
      table[static_cast<size_t>(r * table_pitch + q)] = static_cast<int32_t>(r * pages + (pages - 1 - q));
  }
  DeviceBuffer d_offsets(offsets.size() * 4), d_table(table.size() * 4);
  d_offsets.upload(offsets);
  d_table.upload(table);
  if (transform == SGTOPK_INDEX_OFFSETS) d.args.index_offsets = d_offsets.ptr();
  if (transform == SGTOPK_PAGE_TABLE) d.args.page_table = d_table.ptr();
  ASSERT_EQ(sgtopk_select(plan, &d.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  std::vector<int32_t> got = d.indices.download_as<int32_t>(static_cast<size_t>(c.rows * c.k));
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t s = 0; s < c.k; ++s) {
      int32_t& i = got[static_cast<size_t>(r * c.k + s)];
      if (i < 0) continue;
      if (transform == SGTOPK_INDEX_OFFSETS) i -= offsets[static_cast<size_t>(r)];
      if (transform == SGTOPK_PAGE_TABLE)
        i = static_cast<int32_t>((pages - 1 - (i / page_size - r * pages)) * page_size + i % page_size);
    }
  }
  d.indices.upload(got);
  EXPECT_EQ(check(c, in, d, c.width, c.k, c.rows), "") << family;
  sgtopk_plan_destroy(plan);
}

INSTANTIATE_TEST_SUITE_P(
    Families, SelectGpuIndexTransform,
    ::testing::Combine(::testing::Values("direct_exact", "sampled", "split", "short_row", "cluster"),
                       ::testing::Values(SGTOPK_INDEX_OFFSETS, SGTOPK_PAGE_TABLE), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<std::string, uint32_t, bool>>& info) {
      return std::get<0>(info.param) + (std::get<1>(info.param) == SGTOPK_INDEX_OFFSETS ? "_offsets" : "_page_table") +
             (std::get<2>(info.param) ? "_sorted" : "");
    });

// Bad launch arguments are refused and change nothing on the device.
// Rows past 2^31 elements of the matrix: the row address arithmetic is 64-bit
// in every family (a pitch of 2^31 + 37 floats puts row 2 at byte 2^34 + 296).
// The bytes between the windows hold FLT_MAX, which any read outside a row's
// window would select.
TEST(SelectGpuLargePitch, RowsPastTwoToThe31Elements) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "large_pitch");
  const int k = 64;
  const int64_t rows = 3, width = 30000, pitch = (int64_t{1} << 31) + 37;
  DeviceBuffer scores(static_cast<size_t>(rows * pitch) * 4);
  scores.fill_u32(0x7f7fffffu);
  std::vector<std::vector<float>> host(static_cast<size_t>(rows));
  std::vector<int32_t> lengths = {static_cast<int32_t>(width), static_cast<int32_t>(width - 3), 1000};
  for (int64_t r = 0; r < rows; ++r) {
    host[static_cast<size_t>(r)] = make_row(all_row_families()[static_cast<size_t>(r)], lengths[static_cast<size_t>(r)], k, rng);
    check_cuda(driver().cuMemcpyHtoD(scores.ptr() + static_cast<CUdeviceptr>(r * pitch) * 4, host[static_cast<size_t>(r)].data(),
                                     host[static_cast<size_t>(r)].size() * 4),
               "cuMemcpyHtoD(row)");
  }
  DeviceBuffer len(lengths.size() * 4), indices(static_cast<size_t>(rows * k) * 4), values(static_cast<size_t>(rows * k) * 4);
  len.upload(lengths);
  for (const char* family : {"direct_exact", "sampled", "split", "short_row", "cluster"}) {
    SCOPED_TRACE(family);
    Case c;
    c.k = k;
    c.rows = rows;
    c.width = width;
    c.pitch = pitch;
    c.flags = SGTOPK_VALUES;
    c.family = family;
    sgtopk_plan plan = compile_for_device(c);
    ASSERT_NE(plan, nullptr);
    indices.fill_u32(kPoison);
    values.fill_u32(kPoison);
    sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
    args.scores = scores.ptr();
    args.lengths = len.ptr();
    args.indices = indices.ptr();
    args.values = values.ptr();
    ASSERT_EQ(sgtopk_select(plan, &args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    const std::vector<int32_t> idx = indices.download_as<int32_t>(static_cast<size_t>(rows * k));
    const std::vector<float> val = values.download_as<float>(static_cast<size_t>(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
      const std::string problem = reference::check_select_row(
          host[static_cast<size_t>(r)].data(), lengths[static_cast<size_t>(r)], k, idx.data() + r * k,
          val.data() + r * k, false);
      EXPECT_TRUE(problem.empty()) << "row " << r << ": " << problem;
    }
    EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
  }
}

TEST(SelectGpuErrors, BadArgumentsChangeNothing) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  Case c;
  c.name = "errors";
  c.k = 16;
  c.rows = 4;
  c.width = 100;
  c.flags = SGTOPK_VALUES;
  sgtopk_plan plan = compile_for_device(c);
  ASSERT_NE(plan, nullptr);
  SGTOPK_SEEDED_RNG(rng, "errors");
  const Inputs in = make_inputs(c, c.width, rng);
  DeviceSet d(c, in, c.k);
  sgtopk_select_args no_values = d.args;
  no_values.values = 0;
  EXPECT_EQ(sgtopk_select(plan, &no_values, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("SGTOPK_VALUES"), std::string::npos) << sgtopk_last_error();
  sgtopk_select_args stray_stats = d.args;
  stray_stats.route_stats = d.route_stats.ptr();
  EXPECT_EQ(sgtopk_select(plan, &stray_stats, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("SGTOPK_ROUTE_STATS"), std::string::npos) << sgtopk_last_error();
  sgtopk_select_args no_scores = d.args;
  no_scores.scores = 0;
  EXPECT_EQ(sgtopk_select(plan, &no_scores, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  synchronize();
  const std::vector<uint32_t> untouched = d.indices.download_as<uint32_t>(static_cast<size_t>(c.rows * c.k));
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint32_t v) { return v == kPoison; }));
  sgtopk_plan_destroy(plan);
}

// A stream of another CUDA context (another device's; here a second context
// on the same device, which one GPU can show) is refused, nothing written,
// for the launch and the graph alike.
TEST(SelectGpuErrors, AStreamOfAnotherContextIsRefused) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  Case c;
  c.name = "foreign_stream";
  c.k = 16;
  c.rows = 4;
  c.width = 100;
  sgtopk_plan plan = compile_for_device(c);
  ASSERT_NE(plan, nullptr);
  SGTOPK_SEEDED_RNG(rng, "foreign_stream");
  const Inputs in = make_inputs(c, c.width, rng);
  DeviceSet d(c, in, c.k);
  // cuCtxCreate_v2 is the driver's own symbol (cuda.h maps cuCtxCreate to
  // the newer _v4); the test looks both up itself, the library needs neither.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr);
  using CtxCreate = CUresult (*)(CUcontext*, unsigned, CUdevice);
  using CtxDestroy = CUresult (*)(CUcontext);
  const auto ctx_create = reinterpret_cast<CtxCreate>(dlsym(cuda, "cuCtxCreate_v2"));
  const auto ctx_destroy = reinterpret_cast<CtxDestroy>(dlsym(cuda, "cuCtxDestroy_v2"));
  ASSERT_TRUE(ctx_create && ctx_destroy);
  const DriverApi& cu = driver();
  CUdevice device = 0;
  check_cuda(cu.cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext previous = nullptr;
  check_cuda(cu.cuCtxGetCurrent(&previous), "cuCtxGetCurrent");
  CUcontext other = nullptr;
  check_cuda(ctx_create(&other, 0, device), "cuCtxCreate");  // made current
  CUstream foreign = nullptr;
  check_cuda(cu.cuStreamCreate(&foreign, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check_cuda(cu.cuCtxSetCurrent(previous), "cuCtxSetCurrent");
  EXPECT_EQ(sgtopk_select(plan, &d.args, reinterpret_cast<sgtopk_stream>(foreign)), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("another CUDA context"), std::string::npos) << sgtopk_last_error();
  sgtopk_graph graph = nullptr;
  ASSERT_EQ(sgtopk_graph_create(plan, &d.args, &graph), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_graph_launch(graph, reinterpret_cast<sgtopk_stream>(foreign)), SGTOPK_ERROR_INVALID_ARGUMENT);
  synchronize();
  const std::vector<uint32_t> untouched = d.indices.download_as<uint32_t>(static_cast<size_t>(c.rows * c.k));
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint32_t v) { return v == kPoison; }));
  // The plan's own context still launches it.
  EXPECT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  sgtopk_graph_destroy(graph);
  check_cuda(cu.cuCtxPushCurrent(other), "cuCtxPushCurrent");
  cu.cuStreamDestroy(foreign);
  CUcontext popped = nullptr;
  cu.cuCtxPopCurrent(&popped);
  ctx_destroy(other);
  check_cuda(cu.cuCtxSetCurrent(previous), "cuCtxSetCurrent");
  dlclose(cuda);
  sgtopk_plan_destroy(plan);
}

// Several GPUs from one process: one compile serves every device of the
// architecture, each device's plan selects on its own GPU from its own
// thread at the same time, and a plan launched on another device's stream is
// refused. Skips with fewer than two GPUs.
TEST(SelectGpuMultiDevice, TwoDevicesSelectAtOnceFromOneCompile) {
  SGTOPK_REQUIRE_GPU();
  const DriverApi& cu = driver();
  int count = 0;
  check_cuda(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count < 2) GTEST_SKIP() << "needs two GPUs; this machine has " << count;
  Case c;
  c.name = "two_devices";
  c.k = 2048;
  c.rows = 64;
  // A width no earlier run compiled, so that the first compile is this test's.
  c.width = 200000 + static_cast<int64_t>(std::random_device{}() % 50000);
  sgtopk_plan plans[2] = {nullptr, nullptr};
  sgtopk_plan_info info[2];
  for (int d = 0; d < 2; ++d) {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.k = c.k;
    p.rows = c.rows;
    p.width = c.width;
    sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
    o.device = d;
    o.own_workspace = 1;
    ASSERT_EQ(sgtopk_compile(&p, &o, &plans[d]), SGTOPK_OK) << sgtopk_last_error();
    info[d] = sgtopk_plan_info{};
    info[d].struct_size = sizeof(sgtopk_plan_info);
    ASSERT_EQ(sgtopk_plan_describe(plans[d], &info[d]), SGTOPK_OK);
  }
  EXPECT_EQ(info[0].from_cache, 0) << "the first device compiles";
  EXPECT_NE(info[1].from_cache, 0) << "the second device of the same architecture reuses that compile";
  EXPECT_STREQ(info[0].cache_key, info[1].cache_key);

  SGTOPK_SEEDED_RNG(rng, "two_devices");
  const Inputs in = make_inputs(c, c.width, rng);
  const size_t slots = static_cast<size_t>(c.rows * c.k);
  struct PerDevice {
    CUcontext context = nullptr;
    CUstream stream = nullptr;
    CUdeviceptr scores = 0, indices = 0;
    std::string failure;
  } dev[2];
  for (int d = 0; d < 2; ++d) {
    CUdevice device = 0;
    check_cuda(cu.cuDeviceGet(&device, d), "cuDeviceGet");
    check_cuda(cu.cuDevicePrimaryCtxRetain(&dev[d].context, device), "cuDevicePrimaryCtxRetain");
    ScopedContext scope(dev[d].context);
    check_cuda(cu.cuStreamCreate(&dev[d].stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check_cuda(cu.cuMemAlloc(&dev[d].scores, in.scores.size() * 4), "cuMemAlloc");
    check_cuda(cu.cuMemcpyHtoD(dev[d].scores, in.scores.data(), in.scores.size() * 4), "cuMemcpyHtoD");
    check_cuda(cu.cuMemAlloc(&dev[d].indices, slots * 4), "cuMemAlloc");
  }
  // Each thread: poison, select, check, many times, on its own device.
  const auto work = [&](int d) {
    PerDevice& w = dev[d];
    ScopedContext scope(w.context);
    std::vector<int32_t> indices(slots);
    for (int iteration = 0; iteration < 40 && w.failure.empty(); ++iteration) {
      cu.cuMemsetD32Async(w.indices, kPoison, slots, w.stream);
      sgtopk_select_args a = SGTOPK_SELECT_ARGS_INIT;
      a.scores = w.scores;
      a.indices = w.indices;
      if (sgtopk_select(plans[d], &a, reinterpret_cast<sgtopk_stream>(w.stream)) != SGTOPK_OK) {
        w.failure = std::string("select: ") + sgtopk_last_error();
        break;
      }
      if (cu.cuStreamSynchronize(w.stream) != CUDA_SUCCESS ||
          cu.cuMemcpyDtoH(indices.data(), w.indices, slots * 4) != CUDA_SUCCESS) {
        w.failure = "device " + std::to_string(d) + ": a CUDA call failed";
        break;
      }
      SelectMatrixCheck m;
      m.scores = in.scores.data();
      m.rows = c.rows;
      m.pitch = c.width;
      m.width = c.width;
      m.k = c.k;
      m.indices = indices.data();
      w.failure = check_select_matrix(m);
    }
  };
  std::thread second(work, 1);
  work(0);
  second.join();
  EXPECT_EQ(dev[0].failure, "");
  EXPECT_EQ(dev[1].failure, "");
  // Device 0's plan on device 1's stream: refused, nothing written.
  sgtopk_select_args a = SGTOPK_SELECT_ARGS_INIT;
  a.scores = dev[1].scores;
  a.indices = dev[1].indices;
  {
    ScopedContext scope(dev[1].context);
    cu.cuMemsetD32Async(dev[1].indices, kPoison, slots, dev[1].stream);
    cu.cuStreamSynchronize(dev[1].stream);
  }
  EXPECT_EQ(sgtopk_select(plans[0], &a, reinterpret_cast<sgtopk_stream>(dev[1].stream)), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("another CUDA context"), std::string::npos) << sgtopk_last_error();
  for (int d = 0; d < 2; ++d) {
    ScopedContext scope(dev[d].context);
    if (d == 1) {
      std::vector<uint32_t> untouched(slots);
      cu.cuMemcpyDtoH(untouched.data(), dev[1].indices, slots * 4);
      EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint32_t v) { return v == kPoison; }));
    }
    cu.cuMemFree(dev[d].scores);
    cu.cuMemFree(dev[d].indices);
    cu.cuStreamDestroy(dev[d].stream);
  }
  for (int d = 0; d < 2; ++d) {
    sgtopk_plan_destroy(plans[d]);
    CUdevice device = 0;
    cu.cuDeviceGet(&device, d);
    cu.cuDevicePrimaryCtxRelease(device);
  }
}

}  // namespace
}  // namespace sgtopk::testing

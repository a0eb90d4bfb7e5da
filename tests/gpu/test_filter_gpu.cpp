// GPU tests of the filter operator (sgtopk_filter, mask output) against the
// CPU reference (reference/filter.h), label `gpu`. Every case poisons the
// output first, then checks every live row's kept set exactly (either
// neighbour only where the reference's mass is within kFilterMassTolerance
// of p: check_filter_mask's acceptable counts), that the padding past the
// vocabulary and every row past live_rows are untouched, and that nothing is
// written when a call is refused.
#include <gtest/gtest.h>
#include <sgtopk/sgtopk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "reference/filter.h"
#include "runtime/driver.h"
#include "templates/sgtopk/abi.h"
#include "support/test_support.h"

namespace sgtopk::testing {
using namespace sgtopk::detail;
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::nanf("");

// How a case sets k, p and temperature: one scalar each, or per-row arrays.
enum class Mode { kTopK, kTopP, kBoth, kNeither, kMixed };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kTopK: return "topk";
    case Mode::kTopP: return "topp";
    case Mode::kBoth: return "both";
    case Mode::kNeither: return "neither";
    case Mode::kMixed: return "mixed";
  }
  return "?";
}

struct Case {
  int64_t rows = 8;
  int64_t vocab = 32000;
  int64_t pitch = 0;  // 0: vocab
  Mode mode = Mode::kMixed;
  std::string name() const {
    return std::string(mode_name(mode)) + "_b" + std::to_string(rows) + "_v" + std::to_string(vocab) +
           (pitch ? "_pitch" + std::to_string(pitch) : "");
  }
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }

// A row of logits: normal rows, and the filter's adversaries by `kind`.
std::vector<float> make_logits(int kind, int64_t vocab, std::mt19937_64& rng) {
  std::normal_distribution<float> logit(0.0f, 2.0f);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = logit(rng);
  auto at = [&] { return static_cast<size_t>(rng() % static_cast<uint64_t>(vocab)); };
  switch (kind % 12) {
    case 1:  // -inf fractions (grammar masks)
    case 2: {
      const double fraction = kind % 12 == 1 ? 0.5 : 0.99;
      for (float& x : row)
        if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < fraction) x = -kInf;
      break;
    }
    case 3: std::fill(row.begin(), row.end(), -kInf); break;  // all -inf
    case 4:  // NaN among the top tokens, a spike next to them
      for (int i = 0; i < 5; ++i) row[at()] = kNaN;
      row[at()] = 50.0f;
      break;
    case 5: {  // 1000 tied tokens on top (the top-p boundary inside the tie)
      for (float& x : row) x = -5.0f;
      for (int64_t i = 0; i < std::min<int64_t>(vocab, 1000); ++i) row[at()] = 3.0f;
      break;
    }
    case 6:  // near-equal logits (spread 1e-6)
      for (float& x : row) x = 1.0f + std::uniform_real_distribution<float>(0.0f, 1e-6f)(rng);
      break;
    case 7:  // fewer finite values than a typical k
      std::fill(row.begin(), row.end(), -kInf);
      for (int i = 0; i < 7; ++i) row[at()] = logit(rng);
      break;
    case 8: row[at()] = kInf; row[at()] = kInf; break;      // +inf shares the mass
    case 9: std::fill(row.begin(), row.end(), kNaN); break;  // all NaN
    case 10:  // quantized logits: many ties everywhere
      for (float& x : row) x = std::round(x * 4.0f) / 4.0f;
      break;
    default: break;  // 0, 11: plain normal logits
  }
  return row;
}

// The values each row sees. Scalar modes leave the arrays empty.
struct RowValues {
  std::vector<int32_t> k;
  std::vector<float> p, t;
  int32_t k_value = 0;
  float p_value = 1.0f, t_value = 1.0f;
  int32_t k_of(int64_t r) const { return k.empty() ? k_value : k[static_cast<size_t>(r)]; }
  float p_of(int64_t r) const { return p.empty() ? p_value : p[static_cast<size_t>(r)]; }
  float t_of(int64_t r) const { return t.empty() ? t_value : t[static_cast<size_t>(r)]; }
};

RowValues make_values(Mode mode, int64_t rows, int64_t vocab, std::mt19937_64& rng) {
  RowValues v;
  switch (mode) {
    case Mode::kTopK: v.k_value = 50; break;
    case Mode::kTopP: v.p_value = 0.9f; break;
    case Mode::kBoth: v.k_value = 50; v.p_value = 0.9f; break;
    case Mode::kNeither: break;
    case Mode::kMixed: {
      const int32_t vk = static_cast<int32_t>(vocab);
      const int32_t ks[] = {1, 2, 50, 1000, vk - 1, vk, vk + 3, 0, -4, 50};
      const float ps[] = {0.9f, 0.5f, 0.99f, 1e-7f, 0.0f, -1.0f, 1.0f, 1.5f, kNaN, 0.999999f};
      const float ts[] = {1.0f, 1.0f, 1.0f, 0.7f, 1.9f, 3.0f, 0.0f, -1.0f, kInf, kNaN};
      for (int64_t r = 0; r < rows; ++r) {
        // Row 0 keeps top-k and top-p on together; the rest mix every edge.
        v.k.push_back(r == 0 ? 50 : ks[rng() % 10]);
        v.p.push_back(r == 0 ? 0.9f : ps[rng() % 10]);
        v.t.push_back(r == 0 ? 1.0f : ts[rng() % 10]);
      }
      break;
    }
  }
  return v;
}

// A filter problem compiled for device 0 with the plan's own workspace (a
// filter_split plan's row records); null, with a test failure, when refused.
sgtopk_plan compile_filter_problem(const sgtopk_problem& p, const char* policy_toml) {
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = 0;
  o.policy_toml = policy_toml;
  o.own_workspace = 1;
  sgtopk_plan plan = nullptr;
  EXPECT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  return plan;
}

sgtopk_plan compile_filter(int64_t rows, int64_t vocab, int64_t pitch, sgtopk_dtype dtype = SGTOPK_F32,
                           const char* policy_toml = nullptr) {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.op = SGTOPK_OP_FILTER;
  p.dtype = dtype;
  p.rows = rows;
  p.width = vocab;
  p.pitch = pitch;
  p.flags = SGTOPK_FILTER_MASK;
  return compile_filter_problem(p, policy_toml);
}

// Host inputs and their device copies, the output poisoned.
struct FilterSet {
  int64_t rows, vocab, pitch;
  std::vector<float> logits;  // [rows][pitch], the padding garbage
  RowValues values;
  DeviceBuffer d_logits, d_out, d_k, d_p, d_t, d_live;
  sgtopk_filter_args args = SGTOPK_FILTER_ARGS_INIT;

  FilterSet(int64_t rows_, int64_t vocab_, int64_t pitch_, Mode mode, std::mt19937_64& rng, int kind_offset = 0)
      : rows(rows_), vocab(vocab_), pitch(pitch_ ? pitch_ : vocab_) {
    logits.assign(static_cast<size_t>(rows * pitch), 0.0f);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = (i % 3 == 0) ? 3.0e38f : kNaN;  // never read as logits
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> row = make_logits(static_cast<int>(r) + kind_offset, vocab, rng);
      std::copy(row.begin(), row.end(), logits.begin() + r * pitch);
    }
    values = make_values(mode, rows, vocab, rng);
    d_logits = DeviceBuffer(logits.size() * 4);
    d_logits.upload(logits);
    d_out = DeviceBuffer(logits.size() * 4);
    d_k = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_p = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_t = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_live = DeviceBuffer(4);
    const int32_t live = static_cast<int32_t>(rows);
    d_live.upload(&live, 4);
    upload_values();
    poison();
    args.logits = d_logits.ptr();
    args.out = d_out.ptr();
    args.top_k = values.k.empty() ? 0 : d_k.ptr();
    args.top_p = values.p.empty() ? 0 : d_p.ptr();
    args.temperature = values.t.empty() ? 0 : d_t.ptr();
    args.top_k_value = values.k_value;
    args.top_p_value = values.p_value;
    args.temperature_value = values.t_value;
  }
  // The per-row k, p and temperature as `values` holds them, to the device.
  void upload_values() {
    if (!values.k.empty()) d_k.upload(values.k);
    if (!values.p.empty()) d_p.upload(values.p);
    if (!values.t.empty()) d_t.upload(values.t);
  }
  // New per-row k, p and temperature, on the host and the device (not the args: a graph keeps reading them).
  void set_values(const RowValues& next) {
    values.k = next.k;
    values.p = next.p;
    values.t = next.t;
    upload_values();
  }
  void poison() { d_out.fill_u32(kPoison); }
  void set_live(int32_t live) {
    d_live.upload(&live, 4);
    args.live_rows = d_live.ptr();
  }
  std::vector<float> out() const { return d_out.download_as<float>(logits.size()); }
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }
bool is_poison(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits == kPoison;
}

// Every live row against the reference; the padding and the rows past `live`
// hold `untouched` (the poison, or the logits themselves when in place).
std::string check(const FilterSet& s, const std::vector<float>& out, int64_t live, bool in_place,
                  float mask = -kInf, int max_failures = 5) {
  std::string failures;
  int failed = 0;
  auto untouched = [&](int64_t r, int64_t i) {
    const float x = out[static_cast<size_t>(r * s.pitch + i)];
    return in_place ? same_bits(x, s.logits[static_cast<size_t>(r * s.pitch + i)]) : is_poison(x);
  };
  for (int64_t r = 0; r < s.rows && failed < max_failures; ++r) {
    std::string e;
    if (r >= live) {
      for (int64_t i = 0; i < s.pitch && e.empty(); ++i)
        if (!untouched(r, i)) e = "written past live_rows at " + std::to_string(i);
    } else {
      for (int64_t i = s.vocab; i < s.pitch && e.empty(); ++i)
        if (!untouched(r, i)) e = "written past the vocabulary at " + std::to_string(i);
      if (e.empty())
        e = reference::check_filter_mask(s.logits.data() + r * s.pitch, s.vocab, s.values.k_of(r), s.values.p_of(r),
                                         out.data() + r * s.pitch, mask, s.values.t_of(r));
    }
    if (!e.empty()) {
      ++failed;
      failures += "row " + std::to_string(r) + " (k " + std::to_string(s.values.k_of(r)) + ", p " +
                  std::to_string(s.values.p_of(r)) + ", T " + std::to_string(s.values.t_of(r)) + "): " + e + "\n";
    }
  }
  return failures;
}

void synchronize() { check_cuda(driver().cuCtxSynchronize(), "kernel execution"); }

// --------------------------------------------------------- the shape grid ----

class FilterGpu : public ::testing::TestWithParam<Case> {};

TEST_P(FilterGpu, MatchesReference) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  const Case& c = GetParam();
  SGTOPK_SEEDED_RNG(rng, c.name());
  sgtopk_plan plan = compile_filter(c.rows, c.vocab, c.pitch);
  ASSERT_NE(plan, nullptr);
  FilterSet s(c.rows, c.vocab, c.pitch, c.mode, rng);
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(s, s.out(), c.rows, false), "") << c.name();
  sgtopk_plan_destroy(plan);
}

std::vector<Case> grid_cases() {
  std::vector<Case> out;
  const Mode every_mode[] = {Mode::kTopK, Mode::kTopP, Mode::kBoth, Mode::kNeither, Mode::kMixed};
  for (int64_t rows : {1, 8, 130})
    for (int64_t vocab : {1000, 1024, 32000, 128256, 262208})
      for (Mode mode : every_mode) out.push_back({rows, vocab, 0, mode});
  // The batches of the benchmark grid: mixed rows hold every mode, row by row.
  for (int64_t rows : {32, 128, 512, 1024})
    for (int64_t vocab : {1024, 32000, 128256, 262208}) out.push_back({rows, vocab, 0, Mode::kMixed});
  out.push_back({1024, 128256, 0, Mode::kBoth});
  // Rows that are not contiguous, nor 16-byte aligned.
  for (Mode mode : {Mode::kBoth, Mode::kMixed}) {
    out.push_back({8, 32000, 32000 + 37, mode});
    out.push_back({130, 1000, 1000 + 3, mode});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, FilterGpu, ::testing::ValuesIn(grid_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name(); });

// ------------------------------------------------------- the edge values ----

// One row kind and one set of values for every row: k = 1, k >= vocab,
// k <= 0, p <= 0, p >= 1, temperatures that do and do not scale, the
// adversarial rows (ties at the top-p boundary, -inf, NaN).
TEST(FilterGpuEdges, EveryEdgeValueOnEveryRowKind) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "edges");
  const int64_t rows = 12, vocab = 5000;  // one row of each kind
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  struct Values {
    int32_t k;
    float p, t;
  };
  const Values edges[] = {{1, 1.0f, 1.0f},     {5000, 1.0f, 1.0f},  {6000, 0.5f, 1.0f}, {0, 0.5f, 1.0f},
                          {-3, 0.5f, 1.0f},    {0, 0.0f, 1.0f},     {0, -2.0f, 1.0f},   {50, 1.0f, 1.0f},
                          {50, 7.0f, 1.0f},    {0, 0.5f, 0.6f},     {50, 0.9f, 2.5f},   {0, 0.9f, 0.0f},
                          {0, 0.9f, -1.0f},    {0, 0.9f, kInf},     {0, 0.9f, kNaN},    {0, kNaN, 1.0f},
                          {1000, 0.5f, 1.0f},  {999, 0.999f, 1.0f}, {0, 1e-7f, 1.0f},   {0, 0.999999f, 1.0f}};
  for (const Values& v : edges) {
    SCOPED_TRACE("k " + std::to_string(v.k) + " p " + std::to_string(v.p) + " T " + std::to_string(v.t));
    FilterSet s(rows, vocab, 0, Mode::kNeither, rng);
    s.args.top_k_value = s.values.k_value = v.k;
    s.args.top_p_value = s.values.p_value = v.p;
    s.args.temperature_value = s.values.t_value = v.t;
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    EXPECT_EQ(check(s, s.out(), rows, false), "");
  }
  sgtopk_plan_destroy(plan);
}

// 1000 tied tokens on top: top-p's boundary falls inside the tie, and the
// kept copies are the lowest indices; the same on every run.
TEST(FilterGpuEdges, TiedTokensAtTheTopPBoundary) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "ties");
  const int64_t rows = 8, vocab = 128256;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kNeither, rng);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = make_logits(5, vocab, rng);
    std::copy(row.begin(), row.end(), s.logits.begin() + r * vocab);
  }
  s.d_logits.upload(s.logits);
  for (const float p : {0.5f, 0.123f, 0.9f, 0.999f}) {
    SCOPED_TRACE("p " + std::to_string(p));
    s.args.top_p_value = s.values.p_value = p;
    s.poison();
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    const std::vector<float> first = s.out();
    EXPECT_EQ(check(s, first, rows, false), "");
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK);
    synchronize();
    EXPECT_TRUE(std::memcmp(first.data(), s.out().data(), first.size() * 4) == 0) << "a second run differs";
  }
  sgtopk_plan_destroy(plan);
}

// A NaN or a run of NaN leaves its neighbours' verdicts alone: the row with
// NaN is checked whole, and the rows around it in the batch too.
TEST(FilterGpuEdges, NaNPatternsLeaveNeighboursUnaffected) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "nan");
  const int64_t rows = 16, vocab = 32000;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kBoth, rng);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s.logits.data() + r * vocab;
    const int64_t top = std::max_element(row, row + vocab) - row;  // a NaN beside the largest logit
    if (r % 4 == 1) {
      if (top > 0) row[top - 1] = kNaN;
      if (top + 1 < vocab) row[top + 1] = kNaN;
    } else if (r % 4 == 2) {
      for (int64_t i = 0; i < vocab; i += 2) row[i] = kNaN;  // every other token
    } else if (r % 4 == 3) {
      row[top] = kNaN;  // the would-be top token itself
    }
  }
  s.d_logits.upload(s.logits);
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(s, s.out(), rows, false), "");
  sgtopk_plan_destroy(plan);
}

// A mask value other than -inf is what is written.
TEST(FilterGpuEdges, TheGivenMaskValueIsWritten) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "mask");
  sgtopk_plan plan = compile_filter(8, 32000, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(8, 32000, 0, Mode::kMixed, rng);
  s.args.mask_value = -12345.0f;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(s, s.out(), 8, false, -12345.0f), "");
  sgtopk_plan_destroy(plan);
}

// ----------------------------------------- in place, live rows, repeats ----

TEST(FilterGpuLaunch, InPlace) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "in-place");
  const int64_t rows = 130, vocab = 32000, pitch = 32000 + 5;
  sgtopk_plan plan = compile_filter(rows, vocab, pitch);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, pitch, Mode::kMixed, rng);
  s.args.out = s.args.logits;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(s, s.d_logits.download_as<float>(s.logits.size()), rows, true), "");
  const std::vector<float> out = s.out();
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), is_poison)) << "the separate output was written";
  sgtopk_plan_destroy(plan);
}

TEST(FilterGpuLaunch, LiveRowsLeaveLaterRowsUntouched) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "live");
  const int64_t rows = 130, vocab = 1000;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
  for (const int32_t live : {77, 0, 1, 130, 1000, -5}) {
    SCOPED_TRACE("live_rows " + std::to_string(live));
    s.poison();
    s.set_live(live);
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    EXPECT_EQ(check(s, s.out(), std::clamp<int64_t>(live, 0, rows), false), "");
  }
  sgtopk_plan_destroy(plan);
}

TEST(FilterGpuLaunch, RepeatedRunsAreBitIdenticalAndBatchInvariant) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "repeat");
  const int64_t rows = 130, vocab = 128256;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  const std::vector<float> first = s.out();
  EXPECT_EQ(check(s, first, rows, false), "");
  for (int run = 0; run < 3; ++run) {
    s.poison();
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK);
    synchronize();
    EXPECT_TRUE(std::memcmp(first.data(), s.out().data(), first.size() * 4) == 0) << "run " << run << " differs";
  }
  // Row 77 alone, in a batch of one, gives the same bits.
  sgtopk_plan single = compile_filter(1, vocab, 0);
  ASSERT_NE(single, nullptr);
  const int64_t r = 77;
  DeviceBuffer logits(static_cast<size_t>(vocab) * 4), out(static_cast<size_t>(vocab) * 4);
  logits.upload(s.logits.data() + r * vocab, static_cast<size_t>(vocab) * 4);
  out.fill_u32(kPoison);
  sgtopk_filter_args a = SGTOPK_FILTER_ARGS_INIT;
  a.logits = logits.ptr();
  a.out = out.ptr();
  a.top_k_value = s.values.k_of(r);
  a.top_p_value = s.values.p_of(r);
  a.temperature_value = s.values.t_of(r);
  ASSERT_EQ(sgtopk_filter(single, &a, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_TRUE(std::memcmp(first.data() + r * vocab, out.download_as<float>(static_cast<size_t>(vocab)).data(),
                          static_cast<size_t>(vocab) * 4) == 0)
      << "row 77 alone differs from row 77 of the batch";
  sgtopk_plan_destroy(single);
  sgtopk_plan_destroy(plan);
}

// ---------------------------------------------------------------- graphs ----

// A graph built once replays correctly after the per-row values and live_rows
// change on the device, after its pointers and scalars are replaced, and after
// the plan handle is gone.
TEST(FilterGpuGraph, ReplaysWithChangedValuesLiveRowsAndPointers) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "graph");
  const int64_t rows = 130, vocab = 32000;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
  s.set_live(static_cast<int32_t>(rows));
  sgtopk_graph graph = nullptr;
  ASSERT_EQ(sgtopk_filter_graph_create(plan, &s.args, &graph), SGTOPK_OK) << sgtopk_last_error();
  ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(s, s.out(), rows, false), "") << "first replay";

  // New per-row values and fewer live rows, written on the device only.
  s.set_values(make_values(Mode::kMixed, rows, vocab, rng));
  s.poison();
  s.set_live(61);
  ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(check(s, s.out(), 61, false), "") << "replay with changed values and live_rows";

  // A second input set with scalar values: update the graph.
  FilterSet s2(rows, vocab, 0, Mode::kBoth, rng);
  ASSERT_EQ(sgtopk_filter_graph_update(graph, &s2.args), SGTOPK_OK) << sgtopk_last_error();
  ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(check(s2, s2.out(), rows, false), "") << "replay after update";
  // The select calls refuse a filter graph.
  sgtopk_select_args sa = SGTOPK_SELECT_ARGS_INIT;
  sa.scores = s2.d_logits.ptr();
  sa.indices = s2.d_out.ptr();
  EXPECT_EQ(sgtopk_graph_update(graph, &sa), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("sgtopk_filter_graph_update"), std::string::npos)
      << sgtopk_last_error();

  ASSERT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
  s2.poison();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(check(s2, s2.out(), rows, false), "") << "repeated replays after the plan is gone";
  EXPECT_EQ(sgtopk_graph_destroy(graph), SGTOPK_OK);
}

// Stream capture by the caller (as a framework would) also works.
TEST(FilterGpuGraph, CapturesInCallerStream) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "capture");
  const int64_t rows = 8, vocab = 128256;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
  const DriverApi& cu = driver();
  CUstream stream;
  check_cuda(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check_cuda(cu.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  ASSERT_EQ(sgtopk_filter(plan, &s.args, reinterpret_cast<sgtopk_stream>(stream)), SGTOPK_OK) << sgtopk_last_error();
  CUgraph graph;
  check_cuda(cu.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec;
  check_cuda(cu.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  for (int replay = 0; replay < 2; ++replay) {
    s.poison();
    check_cuda(cu.cuGraphLaunch(exec, stream), "cuGraphLaunch");
    check_cuda(cu.cuStreamSynchronize(stream), "replay");
    EXPECT_EQ(check(s, s.out(), rows, false), "") << "replay " << replay;
  }
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  cu.cuStreamDestroy(stream);
  sgtopk_plan_destroy(plan);
}

// ---------------------------------------------------------------- errors ----

TEST(FilterGpuErrors, BadArgumentsChangeNothing) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "errors");
  const int64_t rows = 4, vocab = 1000;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kBoth, rng);
  auto refused = [&](sgtopk_filter_args a, const std::string& needle) {
    EXPECT_EQ(sgtopk_filter(plan, &a, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT) << needle;
    EXPECT_NE(std::string(sgtopk_last_error()).find(needle), std::string::npos) << sgtopk_last_error();
  };
  sgtopk_filter_args a = s.args;
  a.logits = 0;
  refused(a, "args.logits is 0");
  a = s.args;
  a.out = 0;
  refused(a, "args.out is 0");
  a = s.args;
  a.top_k = s.d_k.ptr() + 2;
  refused(a, "args.top_k is not 4-byte aligned");
  a = s.args;
  a.out = s.args.logits + 4;
  refused(a, "overlaps");
  EXPECT_EQ(sgtopk_filter(plan, nullptr, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  // A filter plan through the select call, and a select plan through the filter call.
  sgtopk_select_args sa = SGTOPK_SELECT_ARGS_INIT;
  sa.scores = s.args.logits;
  sa.indices = s.args.out;
  EXPECT_EQ(sgtopk_select(plan, &sa, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("use sgtopk_filter"), std::string::npos) << sgtopk_last_error();
  sgtopk_problem sp = SGTOPK_PROBLEM_INIT;
  sp.k = 16;
  sp.rows = rows;
  sp.width = vocab;
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = 0;
  o.own_workspace = 1;
  sgtopk_plan select = nullptr;
  ASSERT_EQ(sgtopk_compile(&sp, &o, &select), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_filter(select, &s.args, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sgtopk_last_error()).find("use sgtopk_select"), std::string::npos) << sgtopk_last_error();
  sgtopk_graph graph = nullptr;
  EXPECT_EQ(sgtopk_filter_graph_create(select, &s.args, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(sgtopk_graph_create(plan, &sa, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(graph, nullptr);
  synchronize();
  const std::vector<float> out = s.out();
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), is_poison)) << "a refused call wrote the output";
  const std::vector<float> logits = s.d_logits.download_as<float>(s.logits.size());
  EXPECT_TRUE(std::memcmp(logits.data(), s.logits.data(), logits.size() * 4) == 0) << "a refused call wrote the logits";
  sgtopk_plan_destroy(select);
  sgtopk_plan_destroy(plan);
}

// ------------------------------------------------ bf16 and fp16 logits ----

// Rounds a float to bf16 / fp16 bits, to nearest even (NaN: a quiet NaN);
// the host's own arithmetic, independent of the kernel's.
uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) return 0x7fc0u;
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
uint16_t to_fp16(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
uint16_t narrow(sgtopk_dtype dtype, float x) { return dtype == SGTOPK_BF16 ? to_bf16(x) : to_fp16(x); }
std::vector<float> widen(sgtopk_dtype dtype, const uint16_t* x, int64_t n) {
  return dtype == SGTOPK_BF16 ? reference::widen_bf16(x, n) : reference::widen_fp16(x, n);
}
const char* dtype_name(sgtopk_dtype dtype) { return dtype == SGTOPK_BF16 ? "bf16" : "f16"; }

constexpr uint16_t kPoison16 = 0xBEEFu;

// 16-bit logits: the rows of make_logits rounded (rounding adds ties), each
// live row checked against the reference of its widened values. Widening is
// one to one, so kept tokens compare bit for bit and masked ones equal the
// mask rounded to the dtype.
struct Filter16Set {
  sgtopk_dtype dtype;
  int64_t rows, vocab, pitch;
  std::vector<uint16_t> logits;
  RowValues values;
  DeviceBuffer d_logits, d_out, d_k, d_p, d_t;
  sgtopk_filter_args args = SGTOPK_FILTER_ARGS_INIT;

  Filter16Set(sgtopk_dtype dtype_, int64_t rows_, int64_t vocab_, int64_t pitch_, Mode mode, std::mt19937_64& rng)
      : dtype(dtype_), rows(rows_), vocab(vocab_), pitch(pitch_ ? pitch_ : vocab_) {
    logits.assign(static_cast<size_t>(rows * pitch), narrow(dtype, kNaN));  // the padding: never read as logits
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> row = make_logits(static_cast<int>(r), vocab, rng);
      std::transform(row.begin(), row.end(), logits.begin() + r * pitch, [&](float x) { return narrow(dtype, x); });
    }
    values = make_values(mode, rows, vocab, rng);
    d_logits = DeviceBuffer(logits.size() * 2);
    d_logits.upload(logits);
    d_out = DeviceBuffer(logits.size() * 2);
    d_k = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_p = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_t = DeviceBuffer(static_cast<size_t>(rows) * 4);
    if (!values.k.empty()) d_k.upload(values.k);
    if (!values.p.empty()) d_p.upload(values.p);
    if (!values.t.empty()) d_t.upload(values.t);
    poison();
    args.logits = d_logits.ptr();
    args.out = d_out.ptr();
    args.top_k = values.k.empty() ? 0 : d_k.ptr();
    args.top_p = values.p.empty() ? 0 : d_p.ptr();
    args.temperature = values.t.empty() ? 0 : d_t.ptr();
    args.top_k_value = values.k_value;
    args.top_p_value = values.p_value;
    args.temperature_value = values.t_value;
  }
  void poison() { d_out.upload(std::vector<uint16_t>(logits.size(), kPoison16)); }
  std::vector<uint16_t> out() const { return d_out.download_as<uint16_t>(logits.size()); }

  std::string check(const std::vector<uint16_t>& out, float mask, int max_failures = 5) const {
    std::string failures;
    int failed = 0;
    const float wide_mask = widen(dtype, std::vector<uint16_t>{narrow(dtype, mask)}.data(), 1)[0];
    for (int64_t r = 0; r < rows && failed < max_failures; ++r) {
      std::string e;
      for (int64_t i = vocab; i < pitch && e.empty(); ++i)
        if (out[static_cast<size_t>(r * pitch + i)] != kPoison16) e = "written past the vocabulary at " + std::to_string(i);
      if (e.empty()) {
        const std::vector<float> in = widen(dtype, logits.data() + r * pitch, vocab);
        const std::vector<float> got = widen(dtype, out.data() + r * pitch, vocab);
        e = reference::check_filter_mask(in.data(), vocab, values.k_of(r), values.p_of(r), got.data(), wide_mask,
                                         values.t_of(r));
      }
      if (!e.empty()) {
        ++failed;
        failures += "row " + std::to_string(r) + " (k " + std::to_string(values.k_of(r)) + ", p " +
                    std::to_string(values.p_of(r)) + ", T " + std::to_string(values.t_of(r)) + "): " + e + "\n";
      }
    }
    return failures;
  }
};

struct Case16 {
  sgtopk_dtype dtype;
  int64_t rows, vocab, pitch;
  Mode mode;
  std::string name() const {
    return std::string(dtype_name(dtype)) + "_" + mode_name(mode) + "_b" + std::to_string(rows) + "_v" +
           std::to_string(vocab) + (pitch ? "_pitch" + std::to_string(pitch) : "");
  }
};
void PrintTo(const Case16& c, std::ostream* os) { *os << c.name(); }

class FilterGpu16 : public ::testing::TestWithParam<Case16> {};

// Every row kind of make_logits (ties, -inf, NaN, +inf, all -inf, all NaN)
// in each mode; a finite mask value is rounded to the dtype.
TEST_P(FilterGpu16, MatchesReferenceOfTheWidenedRows) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  const Case16& c = GetParam();
  SGTOPK_SEEDED_RNG(rng, c.name());
  sgtopk_plan plan = compile_filter(c.rows, c.vocab, c.pitch, c.dtype);
  ASSERT_NE(plan, nullptr);
  Filter16Set s(c.dtype, c.rows, c.vocab, c.pitch, c.mode, rng);
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(s.check(s.out(), -kInf), "") << c.name();
  // A finite mask value that neither type holds exactly.
  s.poison();
  s.args.mask_value = -1234.567f;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(s.check(s.out(), -1234.567f), "") << c.name() << " (mask -1234.567)";
  // In place: kept tokens keep their bits.
  s.args.out = s.args.logits;
  s.args.mask_value = -kInf;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  const std::vector<uint16_t> in_place = s.d_logits.download_as<uint16_t>(s.logits.size());
  s.d_logits.upload(s.logits);
  std::vector<uint16_t> padded = in_place;  // the padding is the logits' own here: unchanged
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t i = c.vocab; i < s.pitch; ++i) {
      const size_t at = static_cast<size_t>(r * s.pitch + i);
      ASSERT_EQ(in_place[at], s.logits[at]) << "in place: padding written, row " << r << " at " << i;
      padded[at] = kPoison16;
    }
  EXPECT_EQ(s.check(padded, -kInf), "") << c.name() << " (in place)";
  sgtopk_plan_destroy(plan);
}

std::vector<Case16> cases16() {
  std::vector<Case16> out;
  for (sgtopk_dtype dtype : {SGTOPK_BF16, SGTOPK_F16}) {
    for (int64_t vocab : {1000, 32000, 128256})
      for (Mode mode : {Mode::kTopK, Mode::kTopP, Mode::kBoth, Mode::kMixed}) out.push_back({dtype, 12, vocab, 0, mode});
    out.push_back({dtype, 130, 32000, 32000 + 3, Mode::kMixed});  // odd pitch: rows 2-byte aligned only
    // Past a row an SM: the many-rows CTA (filter.block_threads), whose bf16
    // passes take a vector's elements in selects (kBranchFreePasses).
    out.push_back({dtype, 512, 32000, 0, Mode::kMixed});
    out.push_back({dtype, 300, 12000, 12000 + 5, Mode::kTopP});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FilterGpu16, ::testing::ValuesIn(cases16()),
                         [](const ::testing::TestParamInfo<Case16>& info) { return info.param.name(); });

// Batch x vocab past 2^31 elements (bf16: 8.6 GB of device memory for the
// logits and the mask): 8200 rows of 262208, each a copy of one of 61
// distinct rows (a prime period, so a row read at a wrong offset reads other
// values). The rows that start past element 2^31, and the first ones, are
// checked against the reference; every row is checked to hold only its own
// logits or the mask value (no poison left, nothing from another row).
TEST(FilterGpuLaunch, RowsPastTwoToThe31Elements) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "past 2^31");
  const int64_t rows = 8200, vocab = 262208, period = 61;
  ASSERT_GT(rows * vocab, int64_t{1} << 31);
  const size_t bytes = static_cast<size_t>(rows * vocab) * 2;
  std::vector<uint16_t> distinct(static_cast<size_t>(period * vocab));
  for (int64_t d = 0; d < period; ++d) {
    const std::vector<float> row = make_logits(static_cast<int>(d), vocab, rng);
    for (int64_t i = 0; i < vocab; ++i) distinct[static_cast<size_t>(d * vocab + i)] = to_bf16(row[static_cast<size_t>(i)]);
  }
  DeviceBuffer logits(bytes), out(bytes), d_k(static_cast<size_t>(rows) * 4), d_p(static_cast<size_t>(rows) * 4);
  for (int64_t r = 0; r < rows; ++r)
    check_cuda(driver().cuMemcpyHtoD(logits.ptr() + static_cast<CUdeviceptr>(r * vocab * 2),
                                     distinct.data() + (r % period) * vocab, static_cast<size_t>(vocab) * 2),
               "cuMemcpyHtoD");
  out.fill_u32(kPoison16 | (uint32_t{kPoison16} << 16));
  const RowValues values = make_values(Mode::kMixed, rows, vocab, rng);
  ASSERT_FALSE(values.k.empty());
  ASSERT_FALSE(values.p.empty());
  d_k.upload(values.k);
  d_p.upload(values.p);
  sgtopk_plan plan = compile_filter(rows, vocab, 0, SGTOPK_BF16);
  ASSERT_NE(plan, nullptr);
  sgtopk_filter_args args = SGTOPK_FILTER_ARGS_INIT;
  args.logits = logits.ptr();
  args.out = out.ptr();
  args.top_k = d_k.ptr();
  args.top_p = d_p.ptr();
  ASSERT_EQ(sgtopk_filter(plan, &args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  const uint16_t mask = to_bf16(-kInf);
  const int64_t first_past = ((int64_t{1} << 31) + vocab - 1) / vocab;  // the first row starting past 2^31
  int failed = 0;
  std::vector<uint16_t> got(static_cast<size_t>(vocab));
  for (int64_t r = 0; r < rows && failed < 5; ++r) {
    check_cuda(driver().cuMemcpyDtoH(got.data(), out.ptr() + static_cast<CUdeviceptr>(r * vocab * 2),
                                     static_cast<size_t>(vocab) * 2),
               "cuMemcpyDtoH");
    const uint16_t* in = distinct.data() + (r % period) * vocab;
    std::string e;
    for (int64_t i = 0; i < vocab && e.empty(); ++i)
      if (got[static_cast<size_t>(i)] != in[i] && got[static_cast<size_t>(i)] != mask)
        e = "element " + std::to_string(i) + " is neither its logit nor the mask";
    if (e.empty() && (r < 4 || r >= first_past - 2)) {
      const std::vector<float> wide_in = widen(SGTOPK_BF16, in, vocab), wide_got = widen(SGTOPK_BF16, got.data(), vocab);
      e = reference::check_filter_mask(wide_in.data(), vocab, values.k_of(r), values.p_of(r), wide_got.data(), -kInf,
                                       1.0f);
    }
    if (!e.empty()) {
      ++failed;
      ADD_FAILURE() << "row " << r << " (k " << values.k_of(r) << ", p " << values.p_of(r) << "): " << e;
    }
  }
  sgtopk_plan_destroy(plan);
}

// ----------------------------------------------- top-p alone, the buffer ----

// Top-p alone at p on every row of `logits` (rows x the row stride: pitch,
// or vocab when 0; fp32 values, narrowed to a 16-bit dtype where the plan's
// is one), through `plan`, checked against the reference; with
// `output_off_alignment` (fp32) also into an output 4 bytes off the logits'
// 16-byte alignment.
template <typename Rng>
void expect_top_p_alone(sgtopk_plan plan, sgtopk_dtype dtype, int64_t rows, int64_t vocab, int64_t pitch,
                        const std::vector<float>& logits, float p, Rng& rng, bool output_off_alignment = false,
                        float temperature = 1.0f) {
  const int64_t stride = pitch != 0 ? pitch : vocab;
  if (dtype != SGTOPK_F32) {
    Filter16Set s(dtype, rows, vocab, pitch, Mode::kNeither, rng);
    for (size_t i = 0; i < logits.size(); ++i)
      if (static_cast<int64_t>(i) % stride < vocab) s.logits[i] = narrow(dtype, logits[i]);
    s.d_logits.upload(s.logits);
    s.args.top_p_value = s.values.p_value = p;
    s.args.temperature_value = s.values.t_value = temperature;
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    EXPECT_EQ(s.check(s.out(), -kInf), "");
    // In place: the mask pass reads what it overwrites, and the boundary's
    // copies it gathers are masked after it; kept tokens keep their bits.
    s.args.out = s.args.logits;
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    std::vector<uint16_t> in_place = s.d_logits.download_as<uint16_t>(s.logits.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = vocab; i < stride; ++i) {  // the padding: the logits' own, unchanged
        const size_t at = static_cast<size_t>(r * stride + i);
        ASSERT_EQ(in_place[at], s.logits[at]) << "in place: padding written, row " << r << " at " << i;
        in_place[at] = kPoison16;
      }
    EXPECT_EQ(s.check(in_place, -kInf), "") << "in place";
    return;
  }
  FilterSet s(rows, vocab, pitch, Mode::kNeither, rng);
  s.logits = logits;
  s.d_logits.upload(s.logits);
  s.args.top_p_value = s.values.p_value = p;
  s.args.temperature_value = s.values.t_value = temperature;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check(s, s.out(), rows, false), "");
  if (!output_off_alignment) return;
  DeviceBuffer shifted(s.logits.size() * 4 + 16);
  shifted.fill_u32(kPoison);
  s.args.out = shifted.ptr() + 4;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  std::vector<float> out = shifted.download_as<float>(s.logits.size() + 1);
  out.erase(out.begin());
  EXPECT_EQ(check(s, out, rows, false), "") << "output 4 bytes off";
}

// Top-k of hundreds to a few thousand with top-p over its survivors: past
// 64 survivors and up to the CTA's 64 keys a warp (2 x block threads) the
// survivors are sorted across the CTA and their masses scanned in order
// (FilterRowAgent::top_p_sorted); past that, the mass rounds. k on both
// sides of 64, 1024 and 2048, p from 1e-7 to 0.999999, over every row kind
// (ties at the boundary, quantized rows, -inf fractions, NaN, +inf), on the
// split (1 row), the few-rows CTA (100) and the many-rows one (300), fp32
// and bf16, temperatures 1, 0.7 and 1.9.
TEST(FilterGpuEdges, TopPOverHundredsOfTopKSurvivors) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "top_p_sorted");
  const int32_t ks[] = {63, 64, 65, 100, 257, 500, 999, 1000, 1023, 1024, 1025, 2000, 2047, 2048, 2049};
  const float ps[] = {1e-7f, 0.3f, 0.9f, 0.95f, 0.99f, 0.999999f};
  const float ts[] = {1.0f, 1.0f, 0.7f, 1.9f};
  for (const int64_t rows : {1, 100, 300}) {
    const int64_t vocab = rows == 1 ? 128256 : 32000;
    RowValues v;
    for (int64_t r = 0; r < rows; ++r) {
      v.k.push_back(ks[(r + rng()) % 15]);
      v.p.push_back(ps[rng() % 6]);
      v.t.push_back(ts[rng() % 4]);
    }
    for (sgtopk_dtype dtype : {SGTOPK_F32, SGTOPK_BF16}) {
      SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(vocab) + (dtype == SGTOPK_F32 ? " f32" : " bf16"));
      sgtopk_plan plan = compile_filter(rows, vocab, 0, dtype);
      ASSERT_NE(plan, nullptr);
      for (int round = 0; round < (rows == 1 ? 12 : 2); ++round) {  // one row: a row kind a round
        if (dtype == SGTOPK_F32) {
          FilterSet s(rows, vocab, 0, Mode::kMixed, rng, round);
          if (rows == 1) v = RowValues{{ks[(round * 7) % 15]}, {ps[round % 6]}, {ts[round % 4]}};
          s.set_values(v);
          ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
          synchronize();
          EXPECT_EQ(check(s, s.out(), rows, false), "");
        } else {
          Filter16Set s(dtype, rows, vocab, 0, Mode::kMixed, rng);
          if (rows == 1) v = RowValues{{ks[(round * 7) % 15]}, {ps[round % 6]}, {ts[round % 4]}};
          s.values.k = v.k;
          s.values.p = v.p;
          s.values.t = v.t;
          s.d_k.upload(v.k);
          s.d_p.upload(v.p);
          s.d_t.upload(v.t);
          ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
          synchronize();
          EXPECT_EQ(s.check(s.out(), -kInf), "");
        }
      }
      sgtopk_plan_destroy(plan);
    }
  }
}

// Top-k's boundary inside a tie group of 16-bit logits, only some copies
// kept (the first t by index): 2 to 300 copies of the boundary value (the
// split's finisher sorts up to 64 copies' indices in warp 0, more go
// through the digit rounds), 10 to 900 keys above them, with and without
// top-p, out of place and in place, on the split (4 rows) and filter_row
// (200 rows), bf16 and fp16.
TEST(FilterGpuEdges, TopKBoundaryInsideSixteenBitTies) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "sixteen_bit_copies");
  const int64_t vocab = 128256;
  const int above_counts[] = {10, 40, 63, 200, 900};
  const int copy_counts[] = {2, 7, 64, 65, 300};
  const float ps[] = {1.0f, 1.0f, 0.999999f, 0.9f};
  std::normal_distribution<float> low(-10.0f, 1.0f);
  std::uniform_real_distribution<float> high(4.0f, 8.0f);
  for (const int64_t rows : {4, 200}) {
    for (sgtopk_dtype dtype : {SGTOPK_BF16, SGTOPK_F16}) {
      sgtopk_plan plan = compile_filter(rows, vocab, 0, dtype);
      ASSERT_NE(plan, nullptr);
      for (const bool in_place : {false, true}) {
        SCOPED_TRACE(std::to_string(rows) + (dtype == SGTOPK_BF16 ? " rows bf16" : " rows fp16") +
                     (in_place ? " in place" : " out of place"));
        Filter16Set s(dtype, rows, vocab, 0, Mode::kMixed, rng);
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<float> row(static_cast<size_t>(vocab));
          for (float& x : row) x = low(rng.engine());
          std::vector<int64_t> at(static_cast<size_t>(vocab));
          std::iota(at.begin(), at.end(), int64_t{0});
          std::shuffle(at.begin(), at.end(), rng.engine());
          const int above = above_counts[rng() % 5], copies = copy_counts[(r + rng()) % 5];
          for (int i = 0; i < above; ++i) row[static_cast<size_t>(at[static_cast<size_t>(i)])] = high(rng.engine());
          for (int i = 0; i < copies; ++i) row[static_cast<size_t>(at[static_cast<size_t>(above + i)])] = 3.0f;
          std::transform(row.begin(), row.end(), s.logits.begin() + r * vocab, [&](float x) { return narrow(dtype, x); });
          s.values.k[static_cast<size_t>(r)] = above + 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(copies - 1));
          s.values.p[static_cast<size_t>(r)] = ps[rng() % 4];
          s.values.t[static_cast<size_t>(r)] = 1.0f;
        }
        s.d_logits.upload(s.logits);
        s.d_k.upload(s.values.k);
        s.d_p.upload(s.values.p);
        s.d_t.upload(s.values.t);
        if (in_place) s.args.out = s.args.logits;
        ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
        synchronize();
        EXPECT_EQ(s.check(in_place ? s.d_logits.download_as<uint16_t>(s.logits.size()) : s.out(), -kInf), "");
      }
      sgtopk_plan_destroy(plan);
    }
  }
}

// Top-p alone at 128256 where the mass sits in a few hundred tokens (as in a
// language model's logits): the keys at or above the first mass digit fit
// the candidate buffer, so the kernel gathers them (4 passes) and resolves
// the later rounds there. Checked on the host that the buffer path is the
// one taken: the kept tokens' first-digit bin and everything above it hold
// at most kFilterCandidates keys. In fp32 and bf16.
TEST(FilterGpuEdges, TopPAloneTakesTheCandidateBuffer) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "topp_buffer");
  const int64_t rows = 16, vocab = 128256;
  std::normal_distribution<float> low(0.0f, 1.0f), high(12.0f, 1.5f);
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  for (int64_t r = 0; r < rows; ++r) {
    float* row = logits.data() + r * vocab;
    for (int64_t i = 0; i < vocab; ++i) row[i] = low(rng.engine());
    for (int i = 0; i < 300; ++i) row[rng() % vocab] = high(rng.engine());
    if (r % 4 == 1)  // ties at the boundary
      for (int i = 0; i < 40; ++i) row[rng() % vocab] = 12.0f;
  }
  for (const float p : {0.5f, 0.9f, 0.99f}) {
    for (int64_t r = 0; r < rows; ++r) {  // the buffer path, by the kernel's own count
      const float* row = logits.data() + r * vocab;
      const std::vector<int32_t> kept = reference::filter_row(row, vocab, 0, p);
      const float lowest = row[kept.back()];
      ASSERT_GT(lowest, 0.0f);
      uint32_t bits;
      std::memcpy(&bits, &lowest, 4);
      const uint32_t digit = bits >> 21;  // a positive float's key is its bits with the sign bit set
      int64_t at_or_above = 0;
      for (int64_t i = 0; i < vocab; ++i) {
        uint32_t b;
        std::memcpy(&b, &row[i], 4);
        if (row[i] > 0.0f && (b >> 21) >= digit) ++at_or_above;
      }
      ASSERT_LE(at_or_above, sgtopk::kFilterCandidates) << "row " << r << " p " << p;
    }
  }
  for (sgtopk_dtype dtype : {SGTOPK_F32, SGTOPK_BF16}) {
    sgtopk_plan plan = compile_filter(rows, vocab, 0, dtype);
    ASSERT_NE(plan, nullptr);
    for (const float p : {0.5f, 0.9f, 0.99f}) {
      SCOPED_TRACE(std::string(dtype == SGTOPK_F32 ? "f32" : "bf16") + " p " + std::to_string(p));
      expect_top_p_alone(plan, dtype, rows, vocab, 0, logits, p, rng);
    }
    sgtopk_plan_destroy(plan);
  }
}

// Top-p alone from a count of each 16-bit pattern (filter.top_p_by_patterns_min_width;
// fp32: of the key's top half, a window), `rows` of `vocab` at an odd pitch:
// normal rows of spread 1, 3 and 6 (the benchmark's), `vocab` copies of one
// value (past 65535: a count wraps, the histogram route runs), scattered
// NaNs with a fifth of -inf, -0 beside +0 and a few values (ties the
// patterns must count as the keys do), rows of -inf but one NaN (no mass),
// and logits near the float maximum (fp16: infinities; scaled by 0.7 they
// overflow); against the reference at p 0, 0.3, 0.9 and 0.99, temperatures
// 1 and 0.7, with and without the patterns.
template <typename Rng>
void expect_top_p_alone_by_patterns(int64_t rows, int64_t vocab, Rng& rng) {
  const int64_t pitch = vocab + 5;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(static_cast<size_t>(rows * pitch), kNaN);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < vocab; ++i) {
      float& x = logits[static_cast<size_t>(r * pitch + i)];
      const float z = normal(rng.engine());
      switch (r % 8) {
        case 3: x = 1.5f; break;
        case 4: x = i % 97 == 0 ? kNaN : i % 5 == 0 ? -kInf : 3.0f * z; break;
        case 5: x = i % 4 == 0 ? -0.0f : i % 4 == 1 ? 0.0f : z > 0.0f ? 0.25f : -0.25f; break;
        case 6: x = i == vocab / 2 ? kNaN : -kInf; break;
        case 7: x = i % 11 == 0 ? 3.0e38f : i % 11 == 1 ? 2.9e38f : 1.0e37f * z; break;
        default: x = z * (r % 3 == 0 ? 1.0f : r % 3 == 1 ? 3.0f : 6.0f);
      }
    }
  for (const sgtopk_dtype dtype : {SGTOPK_F32, SGTOPK_BF16, SGTOPK_F16})
    for (const char* policy : {"filter.split.min_segments = 0\nfilter.top_p_by_patterns_min_width = 0\n",
                               "filter.split.min_segments = 0\nfilter.top_p_by_patterns_min_width = 1\n"}) {
      sgtopk_plan plan = compile_filter(rows, vocab, pitch, dtype, policy);
      ASSERT_NE(plan, nullptr);
      for (const float t : {1.0f, 0.7f})
        for (const float p : {0.0f, 0.3f, 0.9f, 0.99f}) {
          SCOPED_TRACE(std::string(policy) + (dtype == SGTOPK_F32 ? " f32" : dtype == SGTOPK_BF16 ? " bf16" : " f16") +
                       " p " + std::to_string(p) + " temperature " + std::to_string(t));
          expect_top_p_alone(plan, dtype, rows, vocab, pitch, logits, p, rng, false, t);
        }
      sgtopk_plan_destroy(plan);
    }
}

TEST(FilterGpuEdges, TopPAloneByPatterns) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "topp_patterns");
  expect_top_p_alone_by_patterns(16, 70001, rng);
}

// The same rows, short (no count wraps): for compute-sanitizer.
TEST(FilterGpuEdges, TopPAloneByPatternsShort) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "topp_patterns_short");
  expect_top_p_alone_by_patterns(8, 5003, rng);
}

// A plan of two kernels (filter.top_p_by_patterns_min_width): the top-p-alone
// rows in the second, every other row in the first, each launched where the
// scalars leave it rows. Every mode, per-row values mixing every edge
// (greedy temperatures make a row top-1), scalars that leave one kernel out
// (top-p alone everywhere: the second only; a greedy temperature: both), by
// direct launches and by a graph updated from one to the next, outputs
// poisoned before each; rows at an odd pitch, short enough for
// compute-sanitizer.
TEST(FilterGpuLaunch, TwoKernelsSplitTheRowsByMode) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "two_kernels");
  const int64_t rows = 37, vocab = 5003, pitch = vocab + 3;
  sgtopk_plan plan =
      compile_filter(rows, vocab, pitch, SGTOPK_F32, "filter.split.min_segments = 0\nfilter.top_p_by_patterns_min_width = 1\n");
  ASSERT_NE(plan, nullptr);
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK);
  ASSERT_STREQ(info.family, "filter_row");
  ASSERT_NE(std::string(info.parameters).find("second.kPatternBins=1"), std::string::npos) << info.parameters;
  std::vector<std::unique_ptr<FilterSet>> sets;
  std::vector<std::string> names;
  for (const Mode mode : {Mode::kMixed, Mode::kTopP, Mode::kBoth, Mode::kTopK, Mode::kNeither, Mode::kMixed}) {
    sets.push_back(std::make_unique<FilterSet>(rows, vocab, pitch, mode, rng, static_cast<int>(sets.size())));
    names.push_back(mode_name(mode));
  }
  for (const float t : {0.7f, 0.0f}) {  // top-p alone at 0.7 (the second kernel alone); greedy: top-1 (the first)
    sets.push_back(std::make_unique<FilterSet>(rows, vocab, pitch, Mode::kTopP, rng, static_cast<int>(sets.size())));
    sets.back()->args.temperature_value = sets.back()->values.t_value = t;
    names.push_back("topp_t" + std::to_string(t));
  }
  sgtopk_graph graph = nullptr;
  ASSERT_EQ(sgtopk_filter_graph_create(plan, &sets[0]->args, &graph), SGTOPK_OK) << sgtopk_last_error();
  for (size_t i = 0; i < sets.size(); ++i) {
    FilterSet& set = *sets[i];
    SCOPED_TRACE(names[i]);
    set.poison();
    ASSERT_EQ(sgtopk_filter(plan, &set.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    EXPECT_EQ(check(set, set.out(), rows, false), "") << "direct launch";
    ASSERT_EQ(sgtopk_filter_graph_update(graph, &set.args), SGTOPK_OK) << sgtopk_last_error();
    for (int replay = 0; replay < 2; ++replay) {
      set.poison();
      ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
      synchronize();
      EXPECT_EQ(check(set, set.out(), rows, false), "") << "graph replay " << replay;
    }
  }
  EXPECT_EQ(sgtopk_graph_destroy(graph), SGTOPK_OK);
  ASSERT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

// Top-p alone where the kept set is thousands to tens of thousands of
// tokens (normal logits of spread 1, 3 and 6: the benchmark's rows), past
// the sampled route's buffer: the exact route's histogram pass gathers the
// first digits around the sample's boundary, and the write stores 16-byte
// vectors where the output lines up with the logits (the plan's buffers)
// and single elements where it does not (an output 4 bytes off). filter_row
// at 1024 threads and filter_split's top-p window (512), f32 and bf16.
TEST(FilterGpuEdges, TopPAloneOverWideKeptSets) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "topp_wide");
  const int64_t rows = 9, vocab = 128256, pitch = vocab + 3;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(static_cast<size_t>(rows * pitch), kNaN);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < vocab; ++i) logits[static_cast<size_t>(r * pitch + i)] = normal(rng.engine()) * (r % 3 == 0 ? 1.0f : r % 3 == 1 ? 3.0f : 6.0f);
  for (const char* policy : {static_cast<const char*>(nullptr), "filter.split.min_segments = 0\n",
                             "filter.split.min_segments = 0\nfilter.prefetch_ahead_steps = 2\n"}) {
    for (sgtopk_dtype dtype : {SGTOPK_F32, SGTOPK_BF16}) {
      sgtopk_plan plan = compile_filter(rows, vocab, pitch, dtype, policy);
      ASSERT_NE(plan, nullptr);
      for (const float p : {0.5f, 0.9f, 0.99f}) {
        SCOPED_TRACE(std::string(policy ? policy : "default plan") + (dtype == SGTOPK_F32 ? " f32" : " bf16") +
                     " p " + std::to_string(p));
        expect_top_p_alone(plan, dtype, rows, vocab, pitch, logits, p, rng, true);
      }
      sgtopk_plan_destroy(plan);
    }
  }
}

}  // namespace
}  // namespace sgtopk::testing

namespace sgtopk::testing {
namespace {

// The sampled route on rows built against its samples (abi.h's
// filter_sample_points: top-k's runs of 8 fp32 logits, filter.sample_size in
// all; top-p alone's single logits, filter.top_p_sample_size): top-k's points above
// every other logit (tau too high: top-k falls back), its points at 0 with
// a few spikes and the rest just below 0 (top-p alone's mass lies below
// tau: it falls back; top-k resolves a tie group of the sample's size),
// all-equal rows and huge ties at the top (the buffer overflows), and
// ordinary rows (the route succeeds), under the default policy, a 32-value
// sample without margin, the exact route only (sample_size 0), and blocks
// of 1024 (the few-rows default) and 512 with 4 loads in flight, and candidate buffers of 4032 keys (CTAs of 256)
// and of 64 (most rows overflow it); every row exact, and every policy's output the same bits.
template <typename Rng>
void expect_sampled_route_rows(int64_t rows, int64_t vocab, const std::vector<const char*>& policies, Rng& rng) {
  const int64_t pitch = vocab + 3;  // odd pitch: every row misaligned differently
  const int top_k_sample = 2048, top_p_sample = 1024;  // the default policy's
  const sgtopk::FilterSamplePoints top_k_points = sgtopk::filter_sample_points(static_cast<int>(vocab), top_k_sample, 3);
  const sgtopk::FilterSamplePoints top_p_points = sgtopk::filter_sample_points(static_cast<int>(vocab), top_p_sample, 0);
  std::normal_distribution<float> logit(0.0f, 2.0f);
  std::vector<float> base(static_cast<size_t>(rows * pitch), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = base.data() + r * pitch;
    for (int64_t i = 0; i < vocab; ++i) row[i] = logit(rng.engine());
    switch (r % 6) {
      case 0:  // the sample holds the top
        for (int j = 0; j < top_k_sample; ++j)
          row[top_k_points.index(j)] = 10.0f + 1e-3f * static_cast<float>(j);
        break;
      case 1:  // the sample misses the mass
        for (int64_t i = 0; i < vocab; ++i) row[i] = -0.01f;
        for (int j = 0; j < top_p_sample; ++j)
          row[top_p_points.index(j)] = j % 100 == 0 ? 9.0f : 0.0f;
        break;
      case 2: std::fill(row, row + vocab, 1.5f); break;  // all equal
      case 3:                                              // a tie larger than the buffer at the top
        for (int i = 0; i < 3 * sgtopk::kFilterCandidates; ++i) row[rng() % vocab] = 7.0f;
        break;
      default: break;  // ordinary
    }
  }
  const int ks[] = {1, 7, 50, 1000, 0};
  const float ps[] = {0.9f, 1.0f, 0.5f, 0.99f, 0.9f};
  std::vector<float> first_out;
  for (const char* policy : policies) {
    SCOPED_TRACE(policy ? policy : "default policy");
    sgtopk_plan plan = compile_filter(rows, vocab, pitch, SGTOPK_F32, policy);
    ASSERT_NE(plan, nullptr);
    FilterSet s(rows, vocab, pitch, Mode::kMixed, rng);
    s.logits = base;
    s.d_logits.upload(s.logits);
    for (int64_t r = 0; r < rows; ++r) {  // every row kind meets every k / p
      s.values.k[static_cast<size_t>(r)] = ks[(r / 6) % 5];
      s.values.p[static_cast<size_t>(r)] = ps[(r / 6 + r) % 5];
      s.values.t[static_cast<size_t>(r)] = r % 7 == 3 ? 0.7f : 1.0f;
    }
    s.upload_values();
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    const std::vector<float> out = s.out();
    EXPECT_EQ(check(s, out, rows, false), "");
    if (first_out.empty()) first_out = out;
    else EXPECT_EQ(std::memcmp(out.data(), first_out.data(), out.size() * 4), 0) << "the route changed the output";
    sgtopk_plan_destroy(plan);
  }
}

TEST(FilterGpuEdges, SampledRouteAndItsFallbacksOnAdversarialRows) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "sampled_route");
  expect_sampled_route_rows(48, 128256,
                            {nullptr, "filter.sample_size = 32\nfilter.top_p_sample_size = 32\nfilter.sample_sigmas = 0\n",
                             "filter.sample_size = 0\nfilter.top_p_sample_size = 0\n", "filter.few_rows_per_sm = 0\nfilter.loads_in_flight = 4\n",
                             "filter.split.min_segments = 0\n",
                             "filter.split.min_segments = 0\nfilter.few_rows_per_sm = 0\nfilter.loads_in_flight = 4\n",
                             "filter.split.min_segments = 0\nfilter.prefetch_ahead_steps = 3\n",
                             "filter.split.prefetch_before_sample_kb = 8\nfilter.split.prefetch_ahead_steps = 1\n",
                             "filter.few_rows_per_sm = 0\nfilter.block_threads = 256\nfilter.candidate_buffer = 4032\n",
                             "filter.few_rows_per_sm = 0\nfilter.candidate_buffer = 64\n"},
                            rng);
}

// The same row kinds, short, under candidate buffers of 4032 keys (CTAs of
// 256, four an SM), 64 keys and the default: for compute-sanitizer.
TEST(FilterGpuEdges, CandidateBuffersShort) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "candidate_buffers_short");
  expect_sampled_route_rows(24, 9001,
                            {nullptr, "filter.few_rows_per_sm = 0\nfilter.block_threads = 256\nfilter.candidate_buffer = 4032\n",
                             "filter.few_rows_per_sm = 0\nfilter.candidate_buffer = 64\n"},
                            rng);
}

// ------------------------------------------------ the filter_split family ----

// A few rows on several CTAs each: the split family (several segment
// counts), against filter_row's bits and the reference, out of place and
// in place, replayed from a graph (the record's header restored: every
// replay the same), with the caller's workspace.
TEST(FilterGpuSplit, SegmentsGiveFilterRowsBits) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "filter_split");
  struct Shape {
    int64_t rows, vocab, pitch;
  };
  for (const Shape shape : {Shape{1, 128256, 0}, Shape{1, 262208, 0}, Shape{3, 32000, 32000 + 5}, Shape{64, 128256, 0},
                            Shape{16, 50000, 50000 + 3}}) {
    const int64_t rows = shape.rows, vocab = shape.vocab, pitch = shape.pitch ? shape.pitch : vocab;
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(vocab));
    FilterSet s(rows, vocab, shape.pitch, Mode::kMixed, rng);
    for (int64_t r = 0; r < rows; ++r)  // mostly top-k rows (the split's), each with its own k, p and T
      if (r % 5 != 4) s.values.k[static_cast<size_t>(r)] = 1 + static_cast<int>(rng() % 2000);
    s.d_k.upload(s.values.k);
    std::vector<float> want;
    struct Variant {
      const char* policy;
      const char* family;
    };
    for (const Variant v : {Variant{"filter.split.min_segments = 0\n", "filter_row"}, Variant{nullptr, "filter_split"},
                            Variant{"filter.split.min_segment_width = 1024\n", "filter_split"},
                            Variant{"filter.split.prefetch_before_sample_kb = 24\nfilter.split.prefetch_ahead_steps = 2\n",
                                    "filter_split"},
                            Variant{"filter.split.block_threads = 1024\n", nullptr}}) {  // one an SM: 64 rows on filter_row
      SCOPED_TRACE(v.policy ? v.policy : "default policy");
      sgtopk_plan plan = compile_filter(rows, vocab, shape.pitch, SGTOPK_F32, v.policy);
      ASSERT_NE(plan, nullptr);
      sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
      ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK);
      if (v.family) EXPECT_STREQ(info.family, v.family);
      s.poison();
      sgtopk_graph graph = nullptr;
      ASSERT_EQ(sgtopk_filter_graph_create(plan, &s.args, &graph), SGTOPK_OK) << sgtopk_last_error();
      for (int replay = 0; replay < 3; ++replay) {
        s.poison();
        ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
        synchronize();
        const std::vector<float> out = s.out();
        EXPECT_EQ(check(s, out, rows, false), "") << "replay " << replay;
        if (want.empty()) want = out;
        else EXPECT_EQ(std::memcmp(out.data(), want.data(), out.size() * 4), 0) << "replay " << replay << ": other bits";
      }
      EXPECT_EQ(sgtopk_graph_destroy(graph), SGTOPK_OK);
      // In place, on a copy of the logits.
      DeviceBuffer copy(s.logits.size() * 4);
      copy.upload(s.logits);
      sgtopk_filter_args in_place = s.args;
      in_place.logits = in_place.out = copy.ptr();
      ASSERT_EQ(sgtopk_filter(plan, &in_place, nullptr), SGTOPK_OK) << sgtopk_last_error();
      synchronize();
      const std::vector<float> got = copy.download_as<float>(s.logits.size());
      EXPECT_EQ(check(s, got, rows, true), "") << "in place";
      for (int64_t r = 0; r < rows; ++r)
        EXPECT_EQ(std::memcmp(got.data() + r * pitch, want.data() + r * pitch, static_cast<size_t>(vocab) * 4), 0)
            << "in place, row " << r << ": other bits";
      ASSERT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
    }
  }
}

// A split plan's second launch weighs top-p-alone rows only: scalars that
// rule them out (top-k on every row) leave it out, directly and in a graph,
// and an update to top-p alone turns it back on; each answer checked.
TEST(FilterGpuSplit, ScalarsLeaveOutTheSecondLaunch) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "second_launch");
  const int64_t rows = 4, vocab = 128256;
  sgtopk_plan plan = compile_filter(rows, vocab, 0);
  ASSERT_NE(plan, nullptr);
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK);
  ASSERT_STREQ(info.family, "filter_split");
  FilterSet top_k(rows, vocab, 0, Mode::kBoth, rng);  // k = 50, p = 0.9: one launch
  FilterSet top_p(rows, vocab, 0, Mode::kTopP, rng);  // p = 0.9 alone: two
  sgtopk_graph graph = nullptr;
  ASSERT_EQ(sgtopk_filter_graph_create(plan, &top_k.args, &graph), SGTOPK_OK) << sgtopk_last_error();
  for (int round = 0; round < 2; ++round) {
    for (FilterSet* set : {&top_k, &top_p, &top_k}) {
      SCOPED_TRACE(std::string(set == &top_p ? "top-p alone" : "top-k and top-p") + ", round " + std::to_string(round));
      ASSERT_EQ(sgtopk_filter_graph_update(graph, &set->args), SGTOPK_OK) << sgtopk_last_error();
      for (int replay = 0; replay < 2; ++replay) {
        set->poison();
        ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK);
        synchronize();
        EXPECT_EQ(check(*set, set->out(), rows, false), "") << "graph replay " << replay;
      }
      set->poison();
      ASSERT_EQ(sgtopk_filter(plan, &set->args, nullptr), SGTOPK_OK) << sgtopk_last_error();
      synchronize();
      EXPECT_EQ(check(*set, set->out(), rows, false), "") << "direct launch";
    }
  }
  EXPECT_EQ(sgtopk_graph_destroy(graph), SGTOPK_OK);
  ASSERT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

// A split plan without its own workspace: the caller's (zero-filled), else refused.
TEST(FilterGpuSplit, TheCallersWorkspace) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "filter_split_workspace");
  const int64_t rows = 4, vocab = 128256;
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.op = SGTOPK_OP_FILTER;
  p.rows = rows;
  p.width = vocab;
  p.flags = SGTOPK_FILTER_MASK;
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = 0;
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  size_t bytes = 0;
  ASSERT_EQ(sgtopk_workspace_size(plan, &bytes), SGTOPK_OK);
  EXPECT_EQ(bytes, static_cast<size_t>(rows) * sgtopk::filter_split_row_bytes());
  FilterSet s(rows, vocab, 0, Mode::kBoth, rng);
  EXPECT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::string(sgtopk_last_error()).find("args.workspace is 0") != std::string::npos) << sgtopk_last_error();
  synchronize();
  const std::vector<float> untouched = s.out();
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), is_poison)) << "a refused call wrote";
  DeviceBuffer workspace(bytes);
  workspace.fill_u32(0u);
  s.args.workspace = workspace.ptr();
  for (int i = 0; i < 2; ++i) {
    s.poison();
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    EXPECT_EQ(check(s, s.out(), rows, false), "") << "launch " << i;
  }
  const std::vector<uint32_t> words = workspace.download_as<uint32_t>(bytes / 4);
  for (int64_t r = 0; r < rows; ++r)
    for (int w = 0; w < 4; ++w)
      EXPECT_EQ(words[static_cast<size_t>(r * sgtopk::filter_split_row_bytes() / 4 + w)], 0u) << "row " << r << "'s header";
  sgtopk_plan_destroy(plan);
}

// ------------------------------------------ candidate and sample outputs ----

// A plan with the candidate output (capacity `capacity`, row stride
// `out_pitch`), the sampled token and the mask.
sgtopk_plan compile_outputs(int64_t rows, int64_t vocab, int capacity, int64_t out_pitch, uint32_t flags,
                            const char* policy_toml = nullptr) {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.op = SGTOPK_OP_FILTER;
  p.rows = rows;
  p.width = vocab;
  p.k = capacity;
  p.out_pitch = out_pitch;
  p.flags = flags;
  return compile_filter_problem(p, policy_toml);
}

// The candidate and sample outputs' buffers, poisoned, and their checks.
struct OutputSet {
  int64_t rows, capacity, out_pitch;
  DeviceBuffer d_indices, d_logits, d_probs, d_counts, d_tokens, d_seeds;
  std::vector<uint64_t> seeds;
  OutputSet(int64_t rows_, int64_t capacity_, int64_t out_pitch_, std::mt19937_64& rng)
      : rows(rows_), capacity(capacity_), out_pitch(out_pitch_) {
    const size_t n = static_cast<size_t>(rows * out_pitch) * 4;
    d_indices = DeviceBuffer(n);
    d_logits = DeviceBuffer(n);
    d_probs = DeviceBuffer(n);
    d_counts = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_tokens = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_seeds = DeviceBuffer(static_cast<size_t>(rows) * 8);
    for (int64_t r = 0; r < rows; ++r) seeds.push_back(rng());
    d_seeds.upload(seeds);
    poison();
  }
  void poison() {
    for (DeviceBuffer* b : {&d_indices, &d_logits, &d_probs, &d_counts, &d_tokens}) b->fill_u32(kPoison);
  }
  void attach(sgtopk_filter_args& a) const {
    a.candidate_indices = d_indices.ptr();
    a.candidate_logits = d_logits.ptr();
    a.candidate_probs = d_probs.ptr();
    a.candidate_counts = d_counts.ptr();
    a.sampled_tokens = d_tokens.ptr();
    a.seeds = d_seeds.ptr();
  }
  std::vector<int32_t> tokens() const { return d_tokens.download_as<int32_t>(static_cast<size_t>(rows)); }
};

// Every live row's candidates against the reference: a count the contract
// accepts, the first min(count, capacity) indices in order, their scaled
// logits (bits), their probabilities (1e-5 relative and two mass units: the
// device's expf may differ from the host's in the last place, and a mass
// rounds to whole units of 2^-40), poison past them; the sampled
// token a kept one of positive mass (the first kept token where the kept
// set has none). Returns the kept count of each row through `counts_out`.
std::string check_outputs(const FilterSet& s, const OutputSet& o, std::vector<int64_t>* counts_out = nullptr,
                          int max_failures = 5) {
  const auto indices = o.d_indices.download_as<int32_t>(static_cast<size_t>(o.rows * o.out_pitch));
  const auto logits = o.d_logits.download_as<float>(indices.size());
  const auto probs = o.d_probs.download_as<float>(indices.size());
  const auto counts = o.d_counts.download_as<int32_t>(static_cast<size_t>(o.rows));
  const auto tokens = o.tokens();
  std::string failures;
  int failed = 0;
  for (int64_t r = 0; r < s.rows && failed < max_failures; ++r) {
    const float* row = s.logits.data() + r * s.pitch;
    const float t = s.values.t_of(r);
    const auto ref = reference::filter_row_reference(row, s.vocab, s.values.k_of(r), s.values.p_of(r), t);
    const int64_t count = counts[static_cast<size_t>(r)];
    if (counts_out) counts_out->push_back(count);
    std::string e;
    if (std::find(ref.acceptable_counts.begin(), ref.acceptable_counts.end(), count) == ref.acceptable_counts.end())
      e = "count " + std::to_string(count) + ", expected " + std::to_string(ref.count);
    std::vector<int32_t> kept;
    if (e.empty()) kept.assign(ref.order.begin(), ref.order.begin() + count);
    const auto want = reference::filter_kept_outputs(row, s.vocab, t, kept, o.seeds[static_cast<size_t>(r)], 0);
    const int64_t m = std::min(count, o.capacity);
    for (int64_t i = 0; i < o.out_pitch && e.empty(); ++i) {
      const size_t at = static_cast<size_t>(r * o.out_pitch + i);
      const size_t j = static_cast<size_t>(i);
      if (i >= m) {
        if (static_cast<uint32_t>(indices[at]) != kPoison || !is_poison(logits[at]) || !is_poison(probs[at]))
          e = "slot " + std::to_string(i) + " past min(count, capacity) = " + std::to_string(m) + " written";
      } else if (indices[at] != kept[j]) {
        e = "slot " + std::to_string(i) + ": index " + std::to_string(indices[at]) + ", expected " + std::to_string(kept[j]);
      } else if (!same_bits(logits[at], want.logits[j])) {
        e = "slot " + std::to_string(i) + ": logit " + std::to_string(logits[at]) + ", expected " + std::to_string(want.logits[j]);
      } else if (!(std::fabs(static_cast<double>(probs[at]) - want.probabilities[j]) <=
                   1e-5 * want.probabilities[j] + 2.0 / std::max(1.0, static_cast<double>(want.total)))) {
        e = "slot " + std::to_string(i) + ": probability " + std::to_string(probs[at]) + ", expected " +
            std::to_string(want.probabilities[j]);
      }
    }
    if (e.empty()) {
      const int32_t token = tokens[static_cast<size_t>(r)];
      const auto it = std::find(kept.begin(), kept.end(), token);
      if (it == kept.end()) e = "sampled token " + std::to_string(token) + " is not kept";
      else if (want.total != 0 && want.mass[static_cast<size_t>(it - kept.begin())] == 0)
        e = "sampled token " + std::to_string(token) + " has no mass";
      else if (want.total == 0 && token != kept[0])
        e = "sampled token " + std::to_string(token) + " in a row without mass, expected the first kept " + std::to_string(kept[0]);
    }
    if (!e.empty()) {
      ++failed;
      failures += "row " + std::to_string(r) + " (k " + std::to_string(s.values.k_of(r)) + ", p " +
                  std::to_string(s.values.p_of(r)) + ", T " + std::to_string(t) + "): " + e + "\n";
    }
  }
  return failures;
}

// Every row kind (ties at the boundary, -inf, NaN, +inf, all equal) with
// every k / p / T edge, a capacity small enough that most rows truncate and
// a stride past it, under the sampled route and the exact one
// (filter.sample_size = 0), vocabularies inside and far past the candidate
// buffer (kept sets larger than it: the exact route's count boundary). The
// mask is written alongside and checked as before.
TEST(FilterGpuOutputs, CandidatesMatchTheReferenceOnBothRoutes) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "candidates");
  const uint32_t flags = SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE;
  for (const char* policy : {static_cast<const char*>(nullptr), "filter.sample_size = 0\n"})
    for (int64_t vocab : {1000, 128256})
      for (int capacity : {1, 64, 8192}) {
        SCOPED_TRACE(std::string(policy ? policy : "default policy") + " vocab " + std::to_string(vocab) + " capacity " +
                     std::to_string(capacity));
        const int64_t rows = 36, out_pitch = capacity + 5;
        sgtopk_plan plan = compile_outputs(rows, vocab, capacity, out_pitch, flags, policy);
        ASSERT_NE(plan, nullptr);
        FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
        OutputSet o(rows, capacity, out_pitch, rng);
        o.attach(s.args);
        ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
        synchronize();
        EXPECT_EQ(check(s, s.out(), rows, false), "");
        EXPECT_EQ(check_outputs(s, o), "");
        sgtopk_plan_destroy(plan);
      }
}

// The candidate and sample outputs from a graph: both families (a few rows
// split, many on one CTA each), replayed with new k, p, T and seeds written
// on the device only, every replay checked against the reference and the
// tokens against a direct launch's.
TEST(FilterGpuOutputs, GraphReplaysWithChangedValuesAndSeeds) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "outputs_graph");
  const uint32_t flags = SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE;
  for (const int64_t rows : {8, 200}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    const int64_t vocab = 128256, capacity = 64, out_pitch = 70;
    sgtopk_plan plan = compile_outputs(rows, vocab, capacity, out_pitch, flags);
    ASSERT_NE(plan, nullptr);
    sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
    ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK);
    EXPECT_STREQ(info.family, rows == 8 ? "filter_split" : "filter_row");
    FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
    OutputSet o(rows, capacity, out_pitch, rng);
    o.attach(s.args);
    sgtopk_graph graph = nullptr;
    ASSERT_EQ(sgtopk_filter_graph_create(plan, &s.args, &graph), SGTOPK_OK) << sgtopk_last_error();
    for (int replay = 0; replay < 2; ++replay) {
      if (replay == 1) {  // new values and seeds, on the device only
        s.set_values(make_values(Mode::kMixed, rows, vocab, rng));
        for (auto& seed : o.seeds) seed = rng();
        o.d_seeds.upload(o.seeds);
      }
      s.poison();
      o.poison();
      ASSERT_EQ(sgtopk_graph_launch(graph, nullptr), SGTOPK_OK) << sgtopk_last_error();
      synchronize();
      EXPECT_EQ(check(s, s.out(), rows, false), "") << "replay " << replay;
      EXPECT_EQ(check_outputs(s, o), "") << "replay " << replay;
      const std::vector<int32_t> from_graph = o.tokens();
      o.poison();
      ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
      synchronize();
      EXPECT_EQ(o.tokens(), from_graph) << "replay " << replay << ": a direct launch drew other tokens";
    }
    EXPECT_EQ(sgtopk_graph_destroy(graph), SGTOPK_OK);
    sgtopk_plan_destroy(plan);
  }
}

// Without the mask the logits are only read; the outputs are the same.
TEST(FilterGpuOutputs, WithoutTheMaskTheLogitsAreOnlyRead) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "candidates_no_mask");
  const int64_t rows = 24, vocab = 32000;
  sgtopk_plan plan = compile_outputs(rows, vocab, 100, 0, SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
  OutputSet o(rows, 100, 100, rng);
  o.attach(s.args);
  s.args.out = 0;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  EXPECT_EQ(check_outputs(s, o), "");
  const auto logits_after = s.d_logits.download_as<float>(s.logits.size());
  EXPECT_EQ(std::memcmp(logits_after.data(), s.logits.data(), s.logits.size() * 4), 0) << "the logits were written";
  const auto out = s.out();
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), is_poison)) << "out was written without SGTOPK_FILTER_MASK";
  sgtopk_plan_destroy(plan);
}

// The sampled token depends on the row's logits, values and seed only: the
// same on a second run, and the same when the row sits elsewhere in a batch
// of another size (per-row seeds). With one seed_value, row r draws from
// stream r: reproducible run to run as well.
TEST(FilterGpuOutputs, SampledTokensAreReproducibleAndBatchInvariant) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "sample_invariance");
  const int64_t rows = 24, vocab = 32000;
  sgtopk_plan plan = compile_outputs(rows, vocab, 0, 0, SGTOPK_FILTER_SAMPLE);
  ASSERT_NE(plan, nullptr);
  FilterSet s(rows, vocab, 0, Mode::kMixed, rng);
  OutputSet o(rows, 1, 1, rng);
  s.args.out = 0;
  s.args.sampled_tokens = o.d_tokens.ptr();
  s.args.seeds = o.d_seeds.ptr();
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  const std::vector<int32_t> first = o.tokens();
  o.poison();
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(o.tokens(), first) << "a second run drew other tokens";
  // The rows reversed, in a batch of 7 fewer (live_rows), seeds and values moved with them.
  const int64_t live = rows - 7;
  FilterSet moved(rows, vocab, 0, Mode::kMixed, rng);
  OutputSet mo(rows, 1, 1, rng);
  for (int64_t r = 0; r < live; ++r) {
    const int64_t from = rows - 1 - r;
    std::copy(s.logits.begin() + from * vocab, s.logits.begin() + (from + 1) * vocab, moved.logits.begin() + r * vocab);
    moved.values.k[static_cast<size_t>(r)] = s.values.k_of(from);
    moved.values.p[static_cast<size_t>(r)] = s.values.p_of(from);
    moved.values.t[static_cast<size_t>(r)] = s.values.t_of(from);
    mo.seeds[static_cast<size_t>(r)] = o.seeds[static_cast<size_t>(from)];
  }
  moved.d_logits.upload(moved.logits);
  moved.upload_values();
  mo.d_seeds.upload(mo.seeds);
  moved.set_live(static_cast<int32_t>(live));
  moved.args.out = 0;
  moved.args.sampled_tokens = mo.d_tokens.ptr();
  moved.args.seeds = mo.d_seeds.ptr();
  ASSERT_EQ(sgtopk_filter(plan, &moved.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
  synchronize();
  const std::vector<int32_t> again = mo.tokens();
  for (int64_t r = 0; r < live; ++r)
    EXPECT_EQ(again[static_cast<size_t>(r)], first[static_cast<size_t>(rows - 1 - r)]) << "row " << rows - 1 - r;
  for (int64_t r = live; r < rows; ++r) EXPECT_EQ(static_cast<uint32_t>(again[static_cast<size_t>(r)]), kPoison);
  // One seed for the batch: reproducible, and rows of equal logits draw from their own streams.
  s.args.seeds = 0;
  s.args.seed_value = 0x5eed;
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK);
  synchronize();
  const std::vector<int32_t> scalar = o.tokens();
  ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK);
  synchronize();
  EXPECT_EQ(o.tokens(), scalar);
  sgtopk_plan_destroy(plan);
}

// The sampler's distribution: 16384 rows of one logit row (4096 tokens) with k = 8, each
// with its own seed, and a chi-square goodness-of-fit test of the tokens
// drawn against the kept probabilities (7 degrees of freedom; 35.26 is the
// 1e-5 upper quantile, so a right sampler fails about once in 100000 runs).
// The same counts against the probabilities shifted by one token must fail
// it by far: the test can tell a wrong sampler. Under both routes.
TEST(FilterGpuOutputs, SampledTokensFollowTheKeptProbabilities) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  SGTOPK_SEEDED_RNG(rng, "sample_chi_square");
  const int64_t rows = 16384, vocab = 4096;
  const double kChiSquare7At1e5 = 35.26;
  std::vector<float> row(static_cast<size_t>(vocab));
  std::normal_distribution<float> logit(-4.0f, 1.0f);
  for (float& x : row) x = logit(rng.engine());
  const float top[8] = {2.0f, 1.7f, 1.5f, 1.2f, 1.0f, 0.6f, 0.3f, 0.0f};  // probabilities from about 0.23 to 0.04
  for (int j = 0; j < 8; ++j) row[static_cast<size_t>(100 + 500 * j)] = top[j];
  for (const char* policy : {static_cast<const char*>(nullptr), "filter.sample_size = 0\n"}) {
    SCOPED_TRACE(policy ? policy : "default policy");
    sgtopk_plan plan = compile_outputs(rows, vocab, 0, 0, SGTOPK_FILTER_SAMPLE, policy);
    ASSERT_NE(plan, nullptr);
    FilterSet s(1, vocab, 0, Mode::kNeither, rng);  // the values; the rows below
    s.rows = rows;
    s.logits.clear();
    for (int64_t r = 0; r < rows; ++r) s.logits.insert(s.logits.end(), row.begin(), row.end());
    s.d_logits = DeviceBuffer(s.logits.size() * 4);
    s.d_logits.upload(s.logits);
    OutputSet o(rows, 1, 1, rng);
    s.args.logits = s.d_logits.ptr();
    s.args.out = 0;
    s.args.top_k_value = 8;
    s.args.sampled_tokens = o.d_tokens.ptr();
    s.args.seeds = o.d_seeds.ptr();
    ASSERT_EQ(sgtopk_filter(plan, &s.args, nullptr), SGTOPK_OK) << sgtopk_last_error();
    synchronize();
    const auto ref = reference::filter_row_reference(row.data(), vocab, 8, 1.0f);
    ASSERT_EQ(ref.count, 8);
    const auto want = reference::filter_kept_outputs(row.data(), vocab, 1.0f, ref.kept(), 0, 0);
    std::vector<double> observed(8, 0.0);
    for (int32_t token : o.tokens()) {
      const auto it = std::find(ref.order.begin(), ref.order.begin() + 8, token);
      ASSERT_NE(it, ref.order.begin() + 8) << "token " << token << " is not kept";
      observed[static_cast<size_t>(it - ref.order.begin())] += 1.0;
    }
    auto chi_square = [&](int shift) {
      double x = 0.0;
      for (size_t j = 0; j < 8; ++j) {
        const double expected = static_cast<double>(rows) * static_cast<double>(want.probabilities[(j + static_cast<size_t>(shift)) % 8]);
        x += (observed[j] - expected) * (observed[j] - expected) / expected;
      }
      return x;
    };
    EXPECT_LT(chi_square(0), kChiSquare7At1e5) << "the tokens do not follow the kept probabilities";
    EXPECT_GT(chi_square(1), 10 * kChiSquare7At1e5) << "the test cannot tell a shifted distribution";
    sgtopk_plan_destroy(plan);
  }
}

}  // namespace
}  // namespace sgtopk::testing

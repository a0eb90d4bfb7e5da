// The CPU reference of the filter contract (reference/filter.h):
// hand-computed rows for every rule and special value, the ambiguity helper,
// the output checks, and random rows against an independent brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "reference/filter.h"
#include "reference/select.h"
#include "support/test_support.h"
#include "templates/sgtopk/util/philox.h"

namespace {

using namespace sgtopk::reference;
using Counts = std::vector<int64_t>;
using Indices = std::vector<int32_t>;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Brute force, written from the contract without the library: a stable sort
// of (logit, index) pairs, top-k truncation, long double softmax over the
// survivors and the shortest prefix of normalized mass >= p.
struct Brute {
  Indices order;                  // the top-k survivors in order
  std::vector<long double> prob;  // per survivor slot
  std::vector<long double> cum;   // cum[c]: normalized mass of the first c
  int64_t count = 0;
  bool mass_compared = false;     // the count came from comparing mass with p
};

Brute brute_force(const std::vector<float>& row, int k, float p) {
  Brute b;
  const int64_t vocab = static_cast<int64_t>(row.size());
  if (vocab == 0) return b;
  std::vector<std::pair<float, int32_t>> v;
  for (int64_t i = 0; i < vocab; ++i) v.emplace_back(row[static_cast<size_t>(i)], static_cast<int32_t>(i));
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& c) {
    const bool na = std::isnan(a.first), nc = std::isnan(c.first);
    if (na || nc) return !na && nc;  // numbers before NaN; NaNs keep index order
    return a.first > c.first;        // -0 == +0 numerically: stable keeps index order
  });
  if (k > 0 && k < vocab) v.resize(static_cast<size_t>(k));
  const size_t n = v.size();
  for (const auto& e : v) b.order.push_back(e.second);

  std::vector<long double> w(n, 0.0L);
  const float top = v[0].first;
  for (size_t s = 0; s < n; ++s) {
    const float x = v[s].first;
    if (top == kInf) w[s] = (x == kInf) ? 1.0L : 0.0L;
    else if (std::isfinite(x)) w[s] = std::exp(static_cast<long double>(x) - static_cast<long double>(top));
  }
  long double total = 0.0L;
  for (long double x : w) total += x;
  b.prob.assign(n, 0.0L);
  b.cum.assign(n + 1, 0.0L);
  for (size_t s = 0; s < n; ++s) {
    if (total > 0.0L) b.prob[s] = w[s] / total;
    b.cum[s + 1] = b.cum[s] + b.prob[s];
  }
  if (!(p < 1.0f)) {
    b.count = static_cast<int64_t>(n);
  } else if (p <= 0.0f || total == 0.0L) {
    b.count = 1;
  } else {
    b.mass_compared = true;
    b.count = static_cast<int64_t>(n);  // if rounding leaves the total short of p
    for (size_t c = 1; c <= n; ++c) {
      if (b.cum[c] >= static_cast<long double>(p)) {
        b.count = static_cast<int64_t>(c);
        break;
      }
    }
  }
  return b;
}

Indices first(const Indices& order, int64_t c) { return {order.begin(), order.begin() + c}; }

Indices kept(const std::vector<float>& row, int k, float p) {
  return filter_row(row.data(), static_cast<int64_t>(row.size()), k, p);
}

FilterRowReference ref(const std::vector<float>& row, int k, float p) {
  return filter_row_reference(row.data(), static_cast<int64_t>(row.size()), k, p);
}

// Expected softmax of the given logits (double), for hand-computed rows.
std::vector<double> softmax(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> e;
  double s = 0;
  for (double v : x) s += e.emplace_back(std::exp(v - m));
  for (double& v : e) v /= s;
  return e;
}

// ------------------------------------------------------------- by hand ----

// logits {1, 3, 2, 0}: order 1, 2, 0, 3 with probabilities
// e^3, e^2, e^1, e^0 over 31.19: 0.6439, 0.2369, 0.0871, 0.0321.
TEST(FilterReference, HandComputedExample) {
  const std::vector<float> row = {1, 3, 2, 0};
  const auto r = ref(row, 0, 0.8f);
  EXPECT_EQ(r.order, (Indices{1, 2, 0, 3}));
  EXPECT_EQ(r.count, 2);  // 0.6439 < 0.8 <= 0.8808
  EXPECT_EQ(r.kept(), (Indices{1, 2}));
  EXPECT_EQ(r.acceptable_counts, (Counts{2}));
  const auto want = softmax({3, 2, 1, 0});
  ASSERT_EQ(r.probabilities.size(), 4u);
  for (size_t s = 0; s < 4; ++s) EXPECT_NEAR(r.probabilities[s], want[s], 1e-7) << "slot " << s;
  EXPECT_NEAR(r.probabilities[0], 0.6439, 1e-4);
  EXPECT_EQ(r.kept_probabilities(), (std::vector<float>{r.probabilities[0], r.probabilities[1]}));
  EXPECT_EQ(kept(row, 0, 0.6f), (Indices{1}));     // 0.6439 >= 0.6
  EXPECT_EQ(kept(row, 0, 0.95f), (Indices{1, 2, 0}));  // 0.8808 < 0.95 <= 0.9679
}

// Over the whole row p = 0.9 needs three tokens (0.8808 < 0.9); over the
// top-3 survivors, e^3 + e^2 is 0.9100 of the mass, so two suffice.
TEST(FilterReference, SoftmaxIsOverTopKSurvivorsOnly) {
  const std::vector<float> row = {1, 3, 2, 0};
  EXPECT_EQ(kept(row, 0, 0.9f), (Indices{1, 2, 0}));
  const auto r = ref(row, 3, 0.9f);
  EXPECT_EQ(r.order, (Indices{1, 2, 0}));
  EXPECT_EQ(r.kept(), (Indices{1, 2}));
  const auto want = softmax({3, 2, 1});
  for (size_t s = 0; s < 3; ++s) EXPECT_NEAR(r.probabilities[s], want[s], 1e-7) << "slot " << s;
}

TEST(FilterReference, NeitherFilterKeepsTheWholeRowInOrder) {
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  const Indices all = {2, 5, 0, 3, 1, 4};
  EXPECT_EQ(kept(row, 0, 1.0f), all);
  const auto r = ref(row, 0, 1.0f);
  EXPECT_EQ(r.acceptable_counts, (Counts{6}));
  EXPECT_EQ(r.probabilities[4], 0.0f);  // -inf
  EXPECT_EQ(r.probabilities[5], 0.0f);  // NaN: no mass, never NaN
}

TEST(FilterReference, TopKOnly) {
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  EXPECT_EQ(kept(row, 1, 1.0f), (Indices{2}));
  EXPECT_EQ(kept(row, 2, 1.0f), (Indices{2, 5}));
  EXPECT_EQ(kept(row, 3, 1.0f), (Indices{2, 5, 0}));
  EXPECT_EQ(kept(row, 5, 1.0f), (Indices{2, 5, 0, 3, 1}));  // -inf kept, NaN not
}

TEST(FilterReference, TopKDisabledAtZeroNegativeAndVocab) {
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  const Indices all = {2, 5, 0, 3, 1, 4};
  for (int k : {0, -1, -1000, 6, 7, 1 << 30}) EXPECT_EQ(kept(row, k, 1.0f), all) << "k=" << k;
  EXPECT_FALSE(top_k_enabled(6, 6));
  EXPECT_TRUE(top_k_enabled(5, 6));
}

TEST(FilterReference, TopPOnly) {
  // Two equal tops hold e^2 / (2e^2 + 2e^0.5) = 0.4087 each.
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  EXPECT_EQ(kept(row, 0, 0.3f), (Indices{2}));
  EXPECT_EQ(kept(row, 0, 0.5f), (Indices{2, 5}));
  EXPECT_EQ(kept(row, 0, 0.9f), (Indices{2, 5, 0}));
  EXPECT_EQ(kept(row, 0, 0.99f), (Indices{2, 5, 0, 3}));  // never into -inf or NaN
}

TEST(FilterReference, TopKThenTopP) {
  // Survivors of k = 3 hold e^2, e^2, e^0.5 over 2e^2 + e^0.5: 0.4498, 0.4498, 0.1004.
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  EXPECT_EQ(kept(row, 3, 0.85f), (Indices{2, 5}));
  EXPECT_EQ(kept(row, 3, 0.95f), (Indices{2, 5, 0}));
  EXPECT_EQ(kept(row, 3, 0.4f), (Indices{2}));
  EXPECT_EQ(kept(row, 0, 0.95f), (Indices{2, 5, 0, 3}));  // the whole row needs one more
}

TEST(FilterReference, TopPDisabledAtOneAboveAndNaN) {
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  for (float p : {1.0f, 1.5f, kInf, kNaN, -kNaN}) {
    EXPECT_EQ(kept(row, 0, p), (Indices{2, 5, 0, 3, 1, 4})) << "p=" << p;
    EXPECT_EQ(kept(row, 3, p), (Indices{2, 5, 0})) << "p=" << p;
    EXPECT_EQ(ref(row, 3, p).acceptable_counts, (Counts{3})) << "p=" << p;
  }
  EXPECT_FALSE(top_p_enabled(kNaN));
  EXPECT_TRUE(top_p_enabled(std::nextafter(1.0f, 0.0f)));
}

TEST(FilterReference, TopPAtOrBelowZeroKeepsTheTopToken) {
  const std::vector<float> row = {0.5f, -kInf, 2, 0.5f, kNaN, 2};
  for (float p : {0.0f, -0.0f, -0.5f, -kInf}) {
    for (int k : {0, 3}) {
      EXPECT_EQ(kept(row, k, p), (Indices{2})) << "p=" << p << " k=" << k;
      EXPECT_EQ(ref(row, k, p).acceptable_counts, (Counts{1})) << "p=" << p;
    }
  }
  // The smallest positive p is a mass comparison, with the same answer.
  EXPECT_EQ(kept(row, 0, std::numeric_limits<float>::denorm_min()), (Indices{2}));
}

TEST(FilterReference, TiesAtTheTopKBoundaryKeepLowerIndices) {
  const std::vector<float> row = {1, 5, 3, 3, 3, 0, 3};
  EXPECT_EQ(kept(row, 2, 1.0f), (Indices{1, 2}));
  EXPECT_EQ(kept(row, 3, 1.0f), (Indices{1, 2, 3}));
  EXPECT_EQ(kept(row, 5, 1.0f), (Indices{1, 2, 3, 4, 6}));
}

TEST(FilterReference, TiesAtTheTopPBoundaryKeepLowerIndices) {
  // Each 2 holds e^2 / (3e^2 + e + 1) = 0.2855: p = 0.5 needs two of the three.
  const std::vector<float> row = {0, 2, 1, 2, 2};
  const auto r = ref(row, 0, 0.5f);
  EXPECT_EQ(r.kept(), (Indices{1, 3}));
  EXPECT_EQ(r.acceptable_counts, (Counts{2}));
  EXPECT_EQ(r.probabilities[0], r.probabilities[1]);
  EXPECT_EQ(r.probabilities[1], r.probabilities[2]);
  EXPECT_EQ(kept(row, 0, 0.8f), (Indices{1, 3, 4}));
  // Both boundaries inside one run of ties: top-k keeps two of three 2s, top-p one.
  EXPECT_EQ(kept(row, 2, 0.4f), (Indices{1}));
}

TEST(FilterReference, NegativeInfinityIsAnOrdinaryLowestValue) {
  const std::vector<float> row = {-kInf, 1, -kInf, 1, -kInf};
  const auto r = ref(row, 0, 0.9f);
  EXPECT_EQ(r.order, (Indices{1, 3, 0, 2, 4}));
  EXPECT_EQ(r.kept(), (Indices{1, 3}));
  EXPECT_EQ(r.probabilities, (std::vector<float>{0.5f, 0.5f, 0, 0, 0}));
  EXPECT_EQ(kept(row, 0, 0.99f), (Indices{1, 3}));  // the -inf tail never joins by mass
  EXPECT_EQ(kept(row, 3, 1.0f), (Indices{1, 3, 0}));  // top-k takes -inf by index
  EXPECT_EQ(kept(row, 3, 0.6f), (Indices{1, 3}));
  EXPECT_EQ(kept(row, 1, 0.6f), (Indices{1}));
  // A grammar mask over a larger row: only the allowed tokens carry mass.
  std::vector<float> masked(1000, -kInf);
  masked[700] = -3.0f;
  masked[12] = -3.5f;
  EXPECT_EQ(kept(masked, 0, 0.6f), (Indices{700}));
  EXPECT_EQ(kept(masked, 0, 0.99f), (Indices{700, 12}));
  EXPECT_EQ(kept(masked, 50, 0.99f), (Indices{700, 12}));
}

TEST(FilterReference, AllNegativeInfinityRowStaysAllNegativeInfinity) {
  const std::vector<float> row(5, -kInf);
  for (float p : {0.5f, 0.0f, 0.999f}) {
    for (int k : {0, 2}) {
      const auto r = ref(row, k, p);
      EXPECT_EQ(r.kept(), (Indices{0})) << "p=" << p << " k=" << k;  // the first of the order
      EXPECT_EQ(r.acceptable_counts, (Counts{1}));
      for (float q : r.probabilities) EXPECT_EQ(q, 0.0f);  // no mass, never NaN
      const auto m = masked_row(row.data(), 5, r.kept());
      for (float x : m) EXPECT_EQ(float_bits(x), float_bits(-kInf));
    }
  }
  EXPECT_EQ(kept(row, 2, 1.0f), (Indices{0, 1}));  // top-k alone still counts
  EXPECT_EQ(kept(row, 0, 1.0f), (Indices{0, 1, 2, 3, 4}));
}

TEST(FilterReference, NaNLogitsRankBelowNegativeInfinity) {
  float payload_nan;
  const uint32_t bits = 0xffc01234u;  // negative NaN with a payload
  std::memcpy(&payload_nan, &bits, sizeof bits);
  const std::vector<float> row = {kNaN, 1, -kInf, 2, payload_nan};
  const auto r = ref(row, 0, 1.0f);
  EXPECT_EQ(r.order, (Indices{3, 1, 2, 0, 4}));
  for (size_t s = 2; s < 5; ++s) EXPECT_EQ(r.probabilities[s], 0.0f) << "slot " << s;
  EXPECT_EQ(kept(row, 0, 0.5f), (Indices{3}));        // e^2 / (e^2 + e) = 0.7311
  EXPECT_EQ(kept(row, 0, 0.99f), (Indices{3, 1}));    // never a NaN by mass
  EXPECT_EQ(kept(row, 4, 1.0f), (Indices{3, 1, 2, 0}));  // top-k past the numbers takes NaN by index
  // Kept NaNs are left untouched by the mask, payload and sign included.
  const auto m = masked_row(row.data(), 5, kept(row, 0, 1.0f));
  EXPECT_EQ(float_bits(m[4]), bits);
  // No mass: the first of the order, which is -inf before any NaN.
  EXPECT_EQ(kept({kNaN, -kInf, kNaN}, 0, 0.5f), (Indices{1}));
  EXPECT_EQ(kept({kNaN, kNaN, kNaN}, 0, 0.5f), (Indices{0}));
  EXPECT_EQ(kept({kNaN, kNaN, kNaN}, 2, 0.5f), (Indices{0}));
  EXPECT_EQ(kept({kNaN, kNaN, kNaN}, 2, 1.0f), (Indices{0, 1}));
  for (float q : ref({kNaN, kNaN}, 0, 0.5f).probabilities) EXPECT_EQ(q, 0.0f);
}

TEST(FilterReference, SignedZerosAreEqual) {
  const std::vector<float> row = {-0.0f, 0.0f, -1.0f};
  EXPECT_EQ(kept(row, 1, 1.0f), (Indices{0}));
  EXPECT_EQ(kept({0.0f, -0.0f, -1.0f}, 1, 1.0f), (Indices{0}));
  const auto r = ref(row, 0, 0.3f);
  EXPECT_EQ(r.kept(), (Indices{0}));
  EXPECT_EQ(r.probabilities[0], r.probabilities[1]);
  // The mask keeps the sign of a kept zero.
  const auto m = masked_row(row.data(), 3, kept(row, 2, 1.0f));
  EXPECT_EQ(float_bits(m[0]), 0x80000000u);
  EXPECT_EQ(float_bits(m[1]), 0x00000000u);
  EXPECT_EQ(float_bits(m[2]), float_bits(-kInf));
}

TEST(FilterReference, PositiveInfinitySharesAllTheMass) {
  const std::vector<float> row = {1, kInf, 3, kInf};
  const auto r = ref(row, 0, 0.4f);
  EXPECT_EQ(r.order, (Indices{1, 3, 2, 0}));
  EXPECT_EQ(r.probabilities, (std::vector<float>{0.5f, 0.5f, 0, 0}));
  EXPECT_EQ(r.kept(), (Indices{1}));
  EXPECT_EQ(kept(row, 0, 0.9f), (Indices{1, 3}));
  EXPECT_EQ(kept(row, 0, 0.9999f), (Indices{1, 3}));
}

TEST(FilterReference, EmptyAndSingleTokenRows) {
  const auto empty = filter_row_reference(nullptr, 0, 5, 0.5f);
  EXPECT_TRUE(empty.order.empty());
  EXPECT_EQ(empty.count, 0);
  EXPECT_TRUE(empty.acceptable_counts.empty());
  for (float x : {-kInf, kNaN, 0.0f, kInf}) {
    for (int k : {0, 1, 2}) {
      for (float p : {0.0f, 0.5f, 1.0f, kNaN}) {
        EXPECT_EQ(kept({x}, k, p), (Indices{0})) << x << " k=" << k << " p=" << p;
      }
    }
  }
}

// ------------------------------------------------------- the ambiguity ----

TEST(FilterReference, AmbiguousBoundaryAcceptsEitherNeighbour) {
  const std::vector<float> flat = {0, 0, 0, 0};
  // Mass 0.5 reached exactly by two tokens: three is within the tolerance too.
  auto r = ref(flat, 0, 0.5f);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.acceptable_counts, (Counts{2, 3}));
  r = ref(flat, 0, 0.25f);
  EXPECT_EQ(r.acceptable_counts, (Counts{1, 2}));
  // Just above 0.5: the reference takes three, two is within the tolerance.
  r = ref(flat, 0, std::nextafter(0.5f, 1.0f));
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.acceptable_counts, (Counts{2, 3}));
  // Clearly between two masses: one answer.
  EXPECT_EQ(ref(flat, 0, 0.6f).acceptable_counts, (Counts{3}));
  EXPECT_EQ(ref({1, 3, 2, 0}, 0, 0.8f).acceptable_counts, (Counts{2}));
  // e^ln3 / (e^ln3 + 1) = 0.75 up to float rounding of ln 3.
  r = ref({std::log(3.0f), 0}, 0, 0.75f);
  EXPECT_EQ(r.acceptable_counts, (Counts{1, 2}));
  // Never below one token or past the survivors.
  EXPECT_EQ(ref(flat, 2, 0.5f).acceptable_counts, (Counts{1, 2}));
  EXPECT_EQ(ref({0, 0}, 0, 0.5f).acceptable_counts, (Counts{1, 2}));
  EXPECT_EQ(ref({0}, 0, 0.5f).acceptable_counts, (Counts{1}));
  // Outside top-p's mass comparison there is nothing to round.
  EXPECT_EQ(ref(flat, 0, 0.0f).acceptable_counts, (Counts{1}));
  EXPECT_EQ(ref(flat, 0, 1.0f).acceptable_counts, (Counts{4}));
}

// Boundary tokens lighter than 2e-6 of p: both neighbours are acceptable,
// and the first token too, its mass within 1e-6 of the target as well.
// Masses: 1, 3.06e-7, 1.86e-7, 1.13e-7 over 1 + 6.05e-7; the target 1 + 4.05e-7.
TEST(FilterReference, TinyBoundaryTokensGiveEveryCountWithinTheTolerance) {
  const std::vector<float> row = {0, -15, -15.5f, -16};
  const auto r = ref(row, 0, 0.9999998f);
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.acceptable_counts, (Counts{1, 2, 3, 4}));
  // Heavier tail tokens (6.1e-6, 3.7e-6, 2.3e-6): one answer again.
  EXPECT_EQ(ref({0, -12, -12.5f, -13}, 0, 0.999996f).acceptable_counts, (Counts{3}));
}

// Top-p ending in a tail of tokens each far lighter than the tolerance: a
// dominant token (mass 1) and 200 at e^-20 (2.06e-9 each, 4.1e-7 in all).
// p = 1 - 2e-7 ends about half way through the tail; every count whose
// boundary mass lies within 1e-6 relative of p's is acceptable, a band of
// consecutive counts, and the mask check accepts each of them in one pass,
// while a kept set that is not a prefix of the order still fails.
TEST(FilterReference, LightTailGivesABandOfAcceptableCounts) {
  std::vector<float> row(201, -20.0f);
  row[7] = 0.0f;
  const float p = 1.0f - 2e-7f;
  const auto r = ref(row, 0, p);
  const auto& ok = r.acceptable_counts;
  ASSERT_GT(ok.size(), 3u);
  EXPECT_EQ(ok.back(), 201);  // the tail is lighter than the slack above the target
  EXPECT_LE(ok.front(), r.count);
  for (size_t i = 1; i < ok.size(); ++i) EXPECT_EQ(ok[i], ok[i - 1] + 1);
  for (int64_t c : {ok.front(), r.count, ok.back()}) {
    const auto m = masked_row(row.data(), 201, first(r.order, c));
    EXPECT_EQ(check_filter_mask(row.data(), 201, 0, p, m.data()), "") << c;
  }
  if (ok.front() > 1) {
    const auto m = masked_row(row.data(), 201, first(r.order, ok.front() - 1));
    EXPECT_NE(check_filter_mask(row.data(), 201, 0, p, m.data()), "");
  }
  Indices holes = first(r.order, r.count);  // the band's prefix with a hole in it
  holes.erase(holes.begin() + 1);
  const auto m = masked_row(row.data(), 201, holes);
  EXPECT_NE(check_filter_mask(row.data(), 201, 0, p, m.data()), "");
}

// --------------------------------------------------------- the checks ----

TEST(FilterReference, ChecksAcceptEveryAcceptableCountAndNothingElse) {
  const std::vector<float> flat = {0, 0, 0, 0};
  const auto r = ref(flat, 0, 0.5f);  // acceptable 2 or 3
  const Indices o = r.order;
  for (int64_t c : {2, 3}) {
    EXPECT_EQ(check_filter_candidates(flat.data(), 4, 0, 0.5f, o.data(), c), "") << c;
    const auto m = masked_row(flat.data(), 4, first(o, c));
    EXPECT_EQ(check_filter_mask(flat.data(), 4, 0, 0.5f, m.data()), "") << c;
  }
  for (int64_t c : {1, 4}) {
    EXPECT_NE(check_filter_candidates(flat.data(), 4, 0, 0.5f, o.data(), c), "") << c;
    const auto m = masked_row(flat.data(), 4, first(o, c));
    EXPECT_NE(check_filter_mask(flat.data(), 4, 0, 0.5f, m.data()), "") << c;
  }
  // Wrong order, wrong tie, out of range.
  const Indices swapped = {1, 0};
  EXPECT_NE(check_filter_candidates(flat.data(), 4, 0, 0.5f, swapped.data(), 2), "");
  const Indices wrong_tie = {0, 2};
  EXPECT_NE(check_filter_candidates(flat.data(), 4, 0, 0.5f, wrong_tie.data(), 2), "");
  const Indices out = {0, 9};
  EXPECT_NE(check_filter_candidates(flat.data(), 4, 0, 0.5f, out.data(), 2), "");
}

TEST(FilterReference, MaskUsesTheGivenValueAndLeavesKeptEntriesUntouched) {
  const std::vector<float> row = {0.25f, -0.0f, 7, -kInf, 3};
  const auto k2 = kept(row, 2, 1.0f);  // {2, 4}
  const auto m = masked_row(row.data(), 5, k2, -1e9f);
  EXPECT_EQ(m, (std::vector<float>{-1e9f, -1e9f, 7, -1e9f, 3}));
  EXPECT_EQ(check_filter_mask(row.data(), 5, 2, 1.0f, m.data(), -1e9f), "");
  EXPECT_NE(check_filter_mask(row.data(), 5, 2, 1.0f, m.data()), "");  // wrong mask value
  auto touched = masked_row(row.data(), 5, k2);
  touched[4] = std::nextafter(3.0f, 4.0f);
  EXPECT_NE(check_filter_mask(row.data(), 5, 2, 1.0f, touched.data()), "");
  // A kept -inf and a masked one look alike: both are acceptable.
  const auto keep_all = masked_row(row.data(), 5, kept(row, 0, 1.0f));
  EXPECT_EQ(check_filter_mask(row.data(), 5, 4, 1.0f, keep_all.data()), "");
}

// ------------------------------------------------------ against brute ----

// Compares the reference with the brute force on one row; returns false
// (after a failure) so that callers can stop early.
bool matches_brute_force(const std::vector<float>& row, int k, float p) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  const Brute b = brute_force(row, k, p);
  const FilterRowReference r = filter_row_reference(row.data(), vocab, k, p);
  bool ok = true;
  auto fail = [&](const std::string& what) {
    ADD_FAILURE() << what << " (vocab " << vocab << ", k " << k << ", p " << p << ")";
    ok = false;
  };
  if (r.order != b.order) fail("order differs");
  if (!ok) return false;
  if (r.probabilities.size() != b.prob.size()) fail("probability count differs");
  for (size_t s = 0; ok && s < b.prob.size(); ++s) {
    const long double want = b.prob[s], got = r.probabilities[s];
    if (std::isnan(r.probabilities[s]) || std::fabs(got - want) > 1e-6L * want + 1e-37L) {
      fail("probability of slot " + std::to_string(s) + ": " + std::to_string(static_cast<double>(got)) + " vs " +
           std::to_string(static_cast<double>(want)));
    }
  }
  const auto& acc = r.acceptable_counts;
  if (std::find(acc.begin(), acc.end(), b.count) == acc.end()) {
    fail("brute-force count " + std::to_string(b.count) + " not acceptable");
  }
  if (std::find(acc.begin(), acc.end(), r.count) == acc.end()) fail("count not in its own acceptable set");
  // Where the brute force sees no near-tie with p, there is exactly one answer.
  const long double tol = 2e-6L * static_cast<long double>(p);
  const bool clear = !b.mass_compared ||
                     (std::fabs(b.cum[static_cast<size_t>(b.count)] - p) > tol &&
                      std::fabs(b.cum[static_cast<size_t>(b.count) - 1] - p) > tol);
  if (clear && (r.count != b.count || acc.size() != 1)) {
    fail("count " + std::to_string(r.count) + " (" + std::to_string(acc.size()) + " acceptable), brute force " +
         std::to_string(b.count));
  }
  if (!ok) return false;
  const Indices want = first(b.order, b.count);
  if (check_filter_candidates(row.data(), vocab, k, p, want.data(), b.count) != "") {
    fail("candidates check rejects brute force");
  }
  const auto m = masked_row(row.data(), vocab, want);
  if (check_filter_mask(row.data(), vocab, k, p, m.data()) != "") fail("mask check rejects brute force");
  std::vector<bool> in_want(static_cast<size_t>(vocab), false);
  for (int32_t i : want) in_want[static_cast<size_t>(i)] = true;
  for (int64_t i = 0; ok && i < vocab; ++i) {  // the mask, written out independently
    const bool in = in_want[static_cast<size_t>(i)];
    const float expected = in ? row[static_cast<size_t>(i)] : -kInf;
    if (float_bits(m[static_cast<size_t>(i)]) != float_bits(expected)) fail("mask entry " + std::to_string(i));
  }
  return ok;
}

TEST(FilterReference, RandomRowsMatchBruteForce) {
  SGTOPK_SEEDED_RNG(rng, "filter-random");
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto chance = [&](double q) { return unit(rng.engine()) < q; };
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng.engine()); };
  int ambiguous = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const int64_t vocab = chance(0.7) ? pick(1, 64) : pick(65, 5000);
    // Logits: normal at a random scale, sometimes quantized to a few values
    // (duplicates), with -inf, NaN, signed zeros and +inf sprinkled.
    const double scale = std::pow(10.0, unit(rng.engine()) * 4.0 - 2.0);  // 0.01 .. 100
    const int shape = static_cast<int>(pick(0, 2));
    const double ninf = chance(0.5) ? 0.0 : unit(rng.engine());
    const double nnan = chance(0.8) ? 0.0 : 0.05;
    const double npinf = chance(0.95) ? 0.0 : 0.01;
    std::normal_distribution<double> normal(0.0, scale);
    std::vector<float> row(static_cast<size_t>(vocab));
    for (float& x : row) {
      double v = normal(rng.engine());
      if (shape == 1) v = std::round(v * 2.0) / 2.0;
      if (shape == 2) v = static_cast<double>(pick(-2, 2));
      x = static_cast<float>(v);
      if (x == 0.0f && chance(0.5)) x = -0.0f;
      if (chance(ninf)) x = -kInf;
      if (chance(nnan)) x = kNaN;
      if (chance(npinf)) x = kInf;
    }
    int k;
    switch (pick(0, 5)) {
      case 0: k = static_cast<int>(pick(-2, 0)); break;
      case 1: k = static_cast<int>(vocab + pick(0, 2)); break;
      case 2: k = static_cast<int>(pick(1, std::min<int64_t>(vocab, 50))); break;
      default: k = static_cast<int>(pick(1, vocab)); break;
    }
    float p;
    switch (pick(0, 7)) {
      case 0: p = std::vector<float>{kNaN, -0.5f, 0.0f, 1.0f, 1.5f}[static_cast<size_t>(pick(0, 4))]; break;
      case 1: p = static_cast<float>(1.0 - std::pow(10.0, -1.0 - 6.0 * unit(rng.engine()))); break;  // near 1
      case 2: {  // exactly a prefix mass of the survivors: on the boundary
        const Brute b = brute_force(row, k, 1.0f);
        p = static_cast<float>(b.cum[static_cast<size_t>(pick(1, static_cast<int64_t>(b.order.size())))]);
        break;
      }
      default: p = static_cast<float>(unit(rng.engine())); break;
    }
    ambiguous += ref(row, k, p).acceptable_counts.size() > 1;
    ASSERT_TRUE(matches_brute_force(row, k, p)) << "iteration " << iter;
  }
  // The boundary rows did exercise the ambiguity rule.
  EXPECT_GT(ambiguous, 20);
}

// Real vocabulary sizes; the top-k survivors come from select_row's radix path.
TEST(FilterReference, LargeVocabularyMatchesBruteForce) {
  SGTOPK_SEEDED_RNG(rng, "filter-large");
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(151936);
  for (float& x : row) x = std::round(normal(rng.engine()) * 8.0f) / 8.0f;  // many duplicates
  for (size_t i = 0; i < row.size(); i += 17) row[i] = -kInf;
  const std::vector<std::pair<int, float>> cases = {{50, 0.9f}, {0, 0.95f}, {1000, 1.0f}, {0, 0.5f}, {20000, 0.99f}};
  for (auto [k, p] : cases) {
    ASSERT_TRUE(matches_brute_force(row, k, p)) << "k=" << k << " p=" << p;
  }
}

}  // namespace

// ---------------------------------------------------------- temperature ----

namespace {

// Two neighbouring floats a > b whose quotients by t round to the same float
// (from a near 2, whose spacing is half that of quotients near 1).
std::pair<float, float> pair_tied_by(float t) {
  float a = 1.95f;
  for (int i = 0; i < 1000; ++i, a = std::nextafter(a, 2.0f)) {
    const float b = std::nextafter(a, 0.0f);
    if (a / t == b / t) return {a, b};
  }
  return {0.0f, 0.0f};
}

}  // namespace

TEST(FilterReference, TemperatureDividesBeforeTheOrderAndMakesTies) {
  const float t = 1.9f;
  const auto [a, b] = pair_tied_by(t);
  ASSERT_GT(a, b) << "no pair of floats ties under division by " << t;
  const std::vector<float> row = {b, a, -1.0f};
  EXPECT_EQ(filter_row(row.data(), 3, 1, 1.0f), (Indices{1}));        // unscaled: a first
  EXPECT_EQ(filter_row(row.data(), 3, 1, 1.0f, t), (Indices{0}));  // scaled: a tie, the lower index
  // The mask keeps the caller's unscaled logits.
  const std::vector<float> masked = masked_row(row.data(), 3, {0});
  EXPECT_EQ(check_filter_mask(row.data(), 3, 1, 1.0f, masked.data(), -kInf, t), "");
  EXPECT_NE(check_filter_mask(row.data(), 3, 1, 1.0f, masked.data()), "");
  const Indices kept = {0};
  EXPECT_EQ(check_filter_candidates(row.data(), 3, 1, 1.0f, kept.data(), 1, t), "");
}

TEST(FilterReference, TemperatureIsTheReferenceOfTheScaledRow) {
  SGTOPK_SEEDED_RNG(rng, "temperature");
  std::normal_distribution<float> logit(0.0f, 3.0f);
  for (float t : {0.3f, 0.7f, 1.0f, 1.5f, 4.0f}) {
    std::vector<float> row(5000);
    for (float& x : row) x = logit(rng.engine());
    const std::vector<float> scaled = scaled_row(row.data(), 5000, t);
    for (int i = 0; i < 5000; ++i) ASSERT_EQ(scaled[static_cast<size_t>(i)], row[static_cast<size_t>(i)] / t);
    for (const auto& [k, p] : {std::pair<int, float>{50, 0.9f}, {0, 0.5f}, {300, 1.0f}}) {
      const FilterRowReference got = filter_row_reference(row.data(), 5000, k, p, t);
      const FilterRowReference want = filter_row_reference(scaled.data(), 5000, k, p);
      EXPECT_EQ(got.kept(), want.kept()) << "T " << t << " k " << k << " p " << p;
      EXPECT_EQ(got.acceptable_counts, want.acceptable_counts);
    }
  }
  // A hotter row keeps more tokens for the same p, a colder one fewer.
  std::vector<float> row(2000);
  for (float& x : row) x = logit(rng.engine());
  EXPECT_LT(filter_row(row.data(), 2000, 0, 0.9f, 0.5f).size(), filter_row(row.data(), 2000, 0, 0.9f).size());
  EXPECT_GT(filter_row(row.data(), 2000, 0, 0.9f, 2.0f).size(), filter_row(row.data(), 2000, 0, 0.9f).size());
}

TEST(FilterReference, TemperatureThatDoesNotScaleIsGreedy) {
  const std::vector<float> row = {0.5f, 2.0f, 2.0f, -kInf, kNaN};
  for (float t : {0.0f, -0.0f, -1.0f, kNaN, kInf}) {
    EXPECT_EQ(filter_row(row.data(), 5, 0, 1.0f, t), (Indices{1})) << "T " << t;
    EXPECT_EQ(filter_row(row.data(), 5, 4, 0.99f, t), (Indices{1})) << "T " << t;
  }
  const std::vector<float> all_inf(4, -kInf);
  EXPECT_EQ(filter_row(all_inf.data(), 4, 0, 1.0f, 0.0f), (Indices{0}));
}

// ------------------------------------------------------- narrow dtypes ----

TEST(FilterReference, Fp16WidensExactlyForEveryPattern) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    _Float16 h;
    const uint16_t b16 = static_cast<uint16_t>(bits);
    std::memcpy(&h, &b16, 2);
    const float want = static_cast<float>(h), got = fp16_to_float(b16);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << bits;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << bits;
    } else {
      ASSERT_EQ(float_bits(got), float_bits(want)) << std::hex << bits;
    }
  }
}

TEST(FilterReference, Bf16WidensByItsHighBitsAndNarrowRowsFilterAsTheirWideCopies) {
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc000), -2.0f);
  EXPECT_EQ(bf16_to_float(0xff80), -kInf);
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7fc0)));
  EXPECT_EQ(float_bits(bf16_to_float(0x8000)), 0x80000000u);
  // bf16 rows tie far more often: ties keep the lower indices.
  const std::vector<uint16_t> bits = {0x3f80, 0x4000, 0x4000, 0x3f80, 0xff80, 0x4000};
  const std::vector<float> row = widen_bf16(bits.data(), 6);
  EXPECT_EQ(filter_row(row.data(), 6, 4, 1.0f), (Indices{1, 2, 5, 0}));
  const std::vector<uint16_t> halves = {0x3c00, 0x4000, 0x4000, 0xfc00};  // 1, 2, 2, -inf in fp16
  const std::vector<float> wide = widen_fp16(halves.data(), 4);
  EXPECT_EQ(wide, (std::vector<float>{1.0f, 2.0f, 2.0f, -kInf}));
  EXPECT_EQ(filter_row(wide.data(), 4, 2, 1.0f), (Indices{1, 2}));
}

// ---------------------------------------------- candidate and sample outputs ----

// Philox-4x32-10 against Random123's known-answer vectors, and the draw's
// 64 x 64-bit high word.
TEST(FilterSampler, PhiloxKnownAnswersAndTheDraw) {
  namespace px = sgtopk::philox;
  const px::U32x4 zero = px::philox4x32_10(px::U32x4{{0u, 0u, 0u, 0u}}, 0u);
  EXPECT_EQ(std::vector<uint32_t>(zero.v, zero.v + 4), (std::vector<uint32_t>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  const px::U32x4 pi = px::philox4x32_10(px::U32x4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                                         (uint64_t{0x299f31d0u} << 32) | 0xa4093822u);
  EXPECT_EQ(std::vector<uint32_t>(pi.v, pi.v + 4), (std::vector<uint32_t>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
  static_assert(px::mul_high64(~0ull, ~0ull) == ~0ull - 1u, "(2^64 - 1)^2 >> 64");
  static_assert(px::mul_high64(1ull << 63, 6u) == 3u, "u = 1/2 of 6");
  EXPECT_EQ(px::sample_draw(7u, 0u, 0u), 0u);
  for (uint64_t seed = 0; seed < 1000; ++seed) EXPECT_LT(px::sample_draw(seed, 3u, 10u), 10u);
}

// The kept outputs: the scaled logits, masses and probabilities in order, a
// token drawn with those probabilities (chi-square over 20000 seeds), the
// first kept token where the kept set has no mass, +inf sharing it.
TEST(FilterSampler, KeptOutputsAndTheSampledToken) {
  const std::vector<float> row = {0.5f, 2.0f, -kInf, 1.0f, 2.0f, 0.0f};
  const FilterRowReference r = filter_row_reference(row.data(), 6, 4, 1.0f, 0.5f);
  EXPECT_EQ(r.kept(), (Indices{1, 4, 3, 0}));
  const FilterKeptOutputs o = filter_kept_outputs(row.data(), 6, 0.5f, r.kept(), 1u, 0u);
  EXPECT_EQ(o.logits, (std::vector<float>{4.0f, 4.0f, 2.0f, 1.0f}));
  EXPECT_EQ(o.mass[0], uint64_t{1} << 40);
  EXPECT_EQ(o.mass[0], o.mass[1]);
  double sum = 0.0;
  for (float p : o.probabilities) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(o.probabilities[2], std::exp(-2.0) / (2.0 + std::exp(-2.0) + std::exp(-3.0)), 1e-6);
  std::vector<double> seen(4, 0.0);
  const uint64_t draws = 20000;
  for (uint64_t seed = 0; seed < draws; ++seed) {
    const int32_t token = filter_kept_outputs(row.data(), 6, 0.5f, r.kept(), seed, 0u).sampled;
    const auto it = std::find(r.order.begin(), r.order.begin() + 4, token);
    ASSERT_NE(it, r.order.begin() + 4) << token;
    seen[static_cast<size_t>(it - r.order.begin())] += 1.0;
  }
  double chi = 0.0;
  for (size_t j = 0; j < 4; ++j) {
    const double want = static_cast<double>(draws) * static_cast<double>(o.probabilities[j]);
    chi += (seen[j] - want) * (seen[j] - want) / want;
  }
  EXPECT_LT(chi, 25.9) << "chi-square, 3 degrees of freedom (1e-5 upper quantile 25.9)";
  // The stream: one seed, different rows draw differently.
  int differ = 0;
  for (uint64_t stream = 1; stream < 50; ++stream)
    differ += filter_kept_outputs(row.data(), 6, 0.5f, r.kept(), 9u, stream).sampled != filter_kept_outputs(row.data(), 6, 0.5f, r.kept(), 9u, 0u).sampled;
  EXPECT_GT(differ, 0);
  // No mass: the first kept token, probabilities 0.
  const std::vector<float> dead = {-kInf, -kInf, -kInf};
  const FilterKeptOutputs d = filter_kept_outputs(dead.data(), 3, 1.0f, {0}, 5u, 0u);
  EXPECT_EQ(d.total, 0u);
  EXPECT_EQ(d.sampled, 0);
  EXPECT_EQ(d.probabilities, (std::vector<float>{0.0f}));
  // +inf: the +inf tokens share the mass, everything else has none.
  const std::vector<float> inf_row = {kInf, 3.0f, kInf};
  const FilterKeptOutputs f = filter_kept_outputs(inf_row.data(), 3, 1.0f, {0, 2, 1}, 5u, 0u);
  EXPECT_EQ(f.probabilities, (std::vector<float>{0.5f, 0.5f, 0.0f}));
  EXPECT_NE(f.sampled, 1);
}


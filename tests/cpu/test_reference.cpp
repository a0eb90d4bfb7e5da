// The CPU reference of the select contract: keys, coarse bins and endpoints,
// select_row against brute force, and check_select_row's power to catch
// wrong answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "reference/select.h"
#include "support/test_support.h"

namespace {

using namespace sgtopk::reference;
using sgtopk::testing::RowFamily;

constexpr float kInf = std::numeric_limits<float>::infinity();



// Brute force: every index, full stable sort by (value desc in contract order, index asc).
std::vector<int32_t> brute_force(const std::vector<float>& row, int k) {
  std::vector<int32_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto rank = [&](int32_t i) -> int {  // 0: NaN, 1: number
    return std::isnan(row[static_cast<size_t>(i)]) ? 0 : 1;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    if (rank(a) != rank(b)) return rank(a) > rank(b);
    if (rank(a) == 0) return false;
    return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)];  // -0 == +0 numerically
  });
  if (k < 0) k = 0;
  idx.resize(std::min(idx.size(), static_cast<size_t>(k)));
  return idx;
}

std::vector<float> values_of(const std::vector<float>& row, const std::vector<int32_t>& idx, int k) {
  std::vector<float> v(static_cast<size_t>(k), -kInf);
  for (size_t s = 0; s < idx.size(); ++s) v[s] = row[static_cast<size_t>(idx[s])];
  return v;
}

std::vector<int32_t> padded(std::vector<int32_t> idx, int k) {
  idx.resize(static_cast<size_t>(k), -1);
  return idx;
}

// ------------------------------------------------------------------ keys ----

TEST(ReferenceKey, OrderedKeyOrdersSpecialValues) {
  const float ascending[] = {-kInf,
                             -std::numeric_limits<float>::max(),
                             -65520.0f,
                             -65504.0f,
                             -1.0f,
                             -std::numeric_limits<float>::min(),
                             -float_from_bits(0x007fffffu),
                             -float_from_bits(1u),
                             0.0f,
                             float_from_bits(1u),
                             float_from_bits(0x007fffffu),
                             std::numeric_limits<float>::min(),
                             0x1.0p-24f,
                             1.0f,
                             std::nextafter(1.0f, 2.0f),
                             65504.0f,
                             std::numeric_limits<float>::max(),
                             kInf};
  for (size_t i = 0; i + 1 < sizeof ascending / sizeof ascending[0]; ++i) {
    EXPECT_LT(ordered_key(ascending[i]), ordered_key(ascending[i + 1])) << ascending[i] << " vs " << ascending[i + 1];
  }
  EXPECT_EQ(ordered_key(-0.0f), ordered_key(0.0f));
  EXPECT_EQ(ordered_key(0.0f), 0x80000000u);
  EXPECT_EQ(ordered_key(-kInf), 0x007fffffu);
  EXPECT_EQ(ordered_key(kInf), 0xff800000u);
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0xff800001u, 0xffffffffu, 0x7fa5a5a5u}) {
    EXPECT_EQ(ordered_key(float_from_bits(nan)), 0u) << std::hex << nan;
  }
  EXPECT_GT(ordered_key(-kInf), 0u);  // no number shares NaN's key
}

TEST(ReferenceKey, OrderedKeyMatchesNumericComparisonOnRandomPairs) {
  SGTOPK_SEEDED_RNG(rng, "pairs");
  for (int i = 0; i < 200000; ++i) {
    float a = float_from_bits(static_cast<uint32_t>(rng()));
    float b = (i % 4 == 0) ? std::nextafter(a, kInf) : float_from_bits(static_cast<uint32_t>(rng()));
    if (std::isnan(a) || std::isnan(b)) continue;
    ASSERT_EQ(a < b, ordered_key(a) < ordered_key(b)) << a << " " << b;
    ASSERT_EQ(a == b, ordered_key(a) == ordered_key(b)) << a << " " << b;
  }
}

TEST(ReferenceKey, FloatFromOrderedKeyInvertsOrderedKey) {
  SGTOPK_SEEDED_RNG(rng, "inverse");
  for (int i = 0; i < 100000; ++i) {
    float x = float_from_bits(static_cast<uint32_t>(rng()));
    if (std::isnan(x) || x == 0.0f) continue;
    ASSERT_EQ(float_bits(float_from_ordered_key(ordered_key(x))), float_bits(x));
  }
  EXPECT_EQ(float_bits(float_from_ordered_key(0x80000000u)), 0u);
  EXPECT_EQ(float_bits(float_from_ordered_key(0x7fffffffu)), 0x80000000u);
  EXPECT_EQ(float_from_ordered_key(0x007fffffu), -kInf);
  EXPECT_EQ(float_from_ordered_key(0xff800000u), kInf);
}

TEST(ReferenceKey, HalfRoundingEdges) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00u);
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1.0p-11f), 0x3c00u);       // tie, to even (down)
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1.8p-10f), 0x3c02u);       // tie, to even (up)
  EXPECT_EQ(float_to_half_bits(std::nextafter(1.0f + 0x1.0p-11f, 2.0f)), 0x3c01u);
  EXPECT_EQ(float_to_half_bits(2047.0f / 1024.0f + 0x1.0p-11f), 0x4000u);  // carry into the exponent
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bffu);
  EXPECT_EQ(float_to_half_bits(float_from_bits(0x477fefffu)), 0x7bffu);   // 65519.996
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00u);                // tie rounds to even = inf
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xfc00u);
  EXPECT_EQ(float_to_half_bits(3.0e38f), 0x7c00u);
  EXPECT_EQ(float_to_half_bits(kInf), 0x7c00u);
  EXPECT_EQ(float_to_half_bits(-kInf), 0xfc00u);
  EXPECT_EQ(float_to_half_bits(0x1.0p-14f), 0x0400u);              // smallest normal
  EXPECT_EQ(float_to_half_bits(0x1.ffcp-15f), 0x0400u);            // subnormal rounding up into the normals
  EXPECT_EQ(float_to_half_bits(0x1.0p-24f), 0x0001u);
  EXPECT_EQ(float_to_half_bits(0x1.0p-25f), 0x0000u);              // tie, to even (zero)
  EXPECT_EQ(float_to_half_bits(std::nextafter(0x1.0p-25f, 1.0f)), 0x0001u);
  EXPECT_EQ(float_to_half_bits(0x1.8p-24f), 0x0002u);              // 1.5 ulp: tie, to even (2)
  EXPECT_EQ(float_to_half_bits(0x1.8p-23f), 0x0003u);              // exactly 3 ulp
  EXPECT_EQ(float_to_half_bits(-0x1.0p-26f), 0x8000u);
  EXPECT_EQ(float_to_half_bits(float_from_bits(1u)), 0x0000u);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000u);
  const uint16_t nan_half = float_to_half_bits(float_from_bits(0x7f800001u));
  EXPECT_GT(nan_half & 0x7fffu, 0x7c00u);
  EXPECT_EQ(ordered_key16(nan_half), 0u);
  // Every non-NaN half survives a round trip through float.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7fffu) > 0x7c00u) continue;
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

#if defined(__FLT16_MAX__) && defined(__GNUC__)
TEST(ReferenceKey, HalfRoundingMatchesCompilerFloat16) {
  // Cross-check against the compiler's own conversion where it exists (the library does not depend on it).
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4099) {
    const float x = float_from_bits(static_cast<uint32_t>(b));
    if (std::isnan(x)) continue;
    __extension__ _Float16 h = static_cast<_Float16>(x);
    uint16_t hb;
    std::memcpy(&hb, &h, sizeof hb);
    ASSERT_EQ(float_to_half_bits(x), hb) << std::hex << b;
  }
}
#endif

TEST(ReferenceKey, CoarseKeySpecialValues) {
  EXPECT_EQ(coarse_key(float_from_bits(0x7fc00000u)), 0u);
  EXPECT_EQ(coarse_key(float_from_bits(0xffffffffu)), 0u);
  EXPECT_EQ(coarse_key(-kInf), kCoarseKeyMinNumber);
  EXPECT_EQ(coarse_key(-65520.0f), kCoarseKeyMinNumber);
  EXPECT_EQ(coarse_key(kInf), kCoarseKeyMaxNumber);
  EXPECT_EQ(coarse_key(65520.0f), kCoarseKeyMaxNumber);
  EXPECT_EQ(coarse_key(1.0e38f), kCoarseKeyMaxNumber);
  EXPECT_LT(coarse_key(65504.0f), kCoarseKeyMaxNumber);
  EXPECT_EQ(coarse_key(float_from_bits(0x477fefffu)), coarse_key(65504.0f));
  EXPECT_EQ(coarse_key(0.0f), 1024u);
  EXPECT_EQ(coarse_key(-0.0f), 1024u);
  EXPECT_EQ(coarse_key(-0x1.0p-25f), 1024u);  // rounds to -0, which is +0
  EXPECT_EQ(coarse_key(-0x1.0p-24f), 1023u);
  EXPECT_EQ(coarse_key(float_from_bits(0x80000001u)), 1024u);
}

TEST(ReferenceKey, CoarseKeyMonotoneDenseSweep) {
  // Every 4096th float in contract order (both signs), at two phases.
  for (uint32_t phase : {0u, 2047u}) {
    uint32_t prev = coarse_key(-kInf);
    for (uint64_t key = 0x007fffffull + phase; key <= 0xff800000ull; key += 4096) {
      const float x = float_from_ordered_key(static_cast<uint32_t>(key));
      const uint32_t c = coarse_key(x);
      ASSERT_GE(c, prev) << "x=" << x << " key=" << std::hex << key;
      ASSERT_GE(c, kCoarseKeyMinNumber);
      ASSERT_LE(c, kCoarseKeyMaxNumber);
      prev = c;
    }
  }
}

TEST(ReferenceKey, CoarseKeyMonotoneAtEveryFp16RoundingBoundary) {
  // For each pair of adjacent FP16 numbers, walk the 129 floats around their midpoint: below rounds to the lower,
  // above to the upper, the midpoint itself to the even one, and the coarse key never decreases.
  auto half_of_key16 = [](uint32_t k16) -> uint16_t {
    return static_cast<uint16_t>((k16 & 0x8000u) ? (k16 & 0x7fffu) : (~k16 & 0xffffu));
  };
  int checked = 0;
  for (uint32_t k16 = 0x03ffu; k16 < 0xfc00u; ++k16) {  // -inf .. the half below +inf
    if (k16 == 0x7fffu) continue;                         // -0: same as +0
    const uint32_t next16 = k16 + 1 == 0x7fffu ? 0x8000u : k16 + 1;
    const uint16_t lo = half_of_key16(k16), hi = half_of_key16(next16);
    double lo_v = half_bits_to_float(lo), hi_v = half_bits_to_float(hi);
    if (std::isinf(lo_v)) lo_v = -65536.0;  // the virtual neighbours of +-65504
    if (std::isinf(hi_v)) hi_v = 65536.0;
    const float mid = static_cast<float>((lo_v + hi_v) / 2.0);
    ASSERT_EQ(static_cast<double>(mid), (lo_v + hi_v) / 2.0);
    const uint16_t even = (lo & 1u) ? hi : lo;
    const uint32_t mid_key = ordered_key(mid);
    uint32_t prev = 0;
    for (int d = -64; d <= 64; ++d) {
      const float x = float_from_ordered_key(mid_key + static_cast<uint32_t>(d));
      const uint16_t h = float_to_half_bits(x);
      const uint16_t expect = d < 0 ? lo : d > 0 ? hi : even;
      ASSERT_EQ(ordered_key16(h), ordered_key16(expect)) << "x=" << x << " between halves " << std::hex << lo << " "
                                                         << hi;
      const uint32_t c = coarse_key(x);
      ASSERT_EQ(c, ordered_key16(expect) >> 5);
      ASSERT_GE(c, prev);
      prev = c;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 0xfc00 - 0x03ff - 1);
  EXPECT_EQ(coarse_key(65504.0f), coarse_key(std::nextafter(65520.0f, 0.0f)));
  EXPECT_LT(coarse_key(std::nextafter(65520.0f, 0.0f)), coarse_key(65520.0f));
}

TEST(ReferenceKey, CoarseBinLowerEndpointAtEveryBinEdge) {
  std::vector<float> endpoint(kCoarseBins);
  for (uint32_t bin = 0; bin < kCoarseBins; ++bin) {
    const float e = coarse_bin_lower_endpoint(bin);
    endpoint[bin] = e;
    if (bin <= kCoarseKeyMinNumber) {
      ASSERT_EQ(e, -kInf) << bin;
      ASSERT_GE(coarse_key(e), bin);
      continue;
    }
    if (bin > kCoarseKeyMaxNumber) {
      ASSERT_TRUE(std::isnan(e)) << bin;
      continue;
    }
    ASSERT_FALSE(std::isnan(e)) << bin;
    ASSERT_NE(e, 0.0f) << bin;
    ASSERT_GE(coarse_key(e), bin) << "bin " << bin << " endpoint " << e;
    ASSERT_LT(coarse_key(std::nextafter(e, -kInf)), bin) << "bin " << bin << " endpoint " << e;
    ASSERT_GT(e, endpoint[bin - 1]) << bin;
  }
  // x >= endpoint(b) <=> coarse_key(x) >= b, on a sweep of floats and their neighbours.
  for (uint64_t key = 0x007fffffull; key <= 0xff800000ull; key += 65521) {
    for (int d = 0; d < 3; ++d) {
      const float x = float_from_ordered_key(static_cast<uint32_t>(std::min<uint64_t>(key + d, 0xff800000ull)));
      const uint32_t c = coarse_key(x);
      ASSERT_GE(x, endpoint[c]);
      if (c + 1 <= kCoarseKeyMaxNumber) {
        ASSERT_LT(x, endpoint[c + 1]) << x;
      }
    }
  }
  // The FP16 rounding boundary: values that round *up* into a bin belong to it.
  const uint32_t one = coarse_key(1.0f);
  EXPECT_LT(coarse_bin_lower_endpoint(one), 1.0f);
  EXPECT_EQ(coarse_key(coarse_bin_lower_endpoint(one)), one);
  EXPECT_EQ(coarse_bin_lower_endpoint(kCoarseKeyMaxNumber), 65520.0f);
  EXPECT_EQ(coarse_bin_lower_endpoint(1024), -0x1.0p-25f);  // -2^-25 rounds (tie, to even) to -0
}

// ---------------------------------------------------------- select_row ----

TEST(ReferenceSelect, TiesGoToTheLowestIndex) {
  const std::vector<float> row = {1.0f, 3.0f, 3.0f, 2.0f, 3.0f};
  EXPECT_EQ(select_row(row.data(), 5, 2), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(select_row(row.data(), 5, 4), (std::vector<int32_t>{1, 2, 4, 3}));
  const std::vector<float> zeros = {-0.0f, 0.0f, -0.0f, 0.0f, -1.0f};
  EXPECT_EQ(select_row(zeros.data(), 5, 2), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(select_row(zeros.data(), 5, 5), (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

TEST(ReferenceSelect, NaNOnlyWhenNeeded) {
  const std::vector<float> row = {float_from_bits(0x7fffffffu), 1.0f, float_from_bits(0xffc00000u), -kInf};
  EXPECT_EQ(select_row(row.data(), 4, 2), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(select_row(row.data(), 4, 3), (std::vector<int32_t>{1, 3, 0}));
  EXPECT_EQ(select_row(row.data(), 4, 4), (std::vector<int32_t>{1, 3, 0, 2}));
  const std::vector<float> infs = {kInf, -kInf, kInf, 0.0f};
  EXPECT_EQ(select_row(infs.data(), 4, 3), (std::vector<int32_t>{0, 2, 3}));
}

TEST(ReferenceSelect, ShortRowsAndDegenerateK) {
  const std::vector<float> row = {5.0f, float_from_bits(0x7fc00000u), 7.0f};
  EXPECT_EQ(select_row(row.data(), 3, 5), (std::vector<int32_t>{2, 0, 1}));
  EXPECT_TRUE(select_row(row.data(), 0, 5).empty());
  EXPECT_TRUE(select_row(row.data(), 3, 0).empty());
  EXPECT_EQ(select_row(row.data(), 2, 1), (std::vector<int32_t>{0}));  // len cuts the row
}

TEST(ReferenceSelect, LargeRowsUseTheRadixPathCorrectly) {
  SGTOPK_SEEDED_RNG(rng, "large");
  std::vector<float> equal(200000, 0.25f);
  std::vector<int32_t> first(2048);
  std::iota(first.begin(), first.end(), 0);
  EXPECT_EQ(select_row(equal.data(), 200000, 2048), first);
  for (RowFamily f : {RowFamily::kUniform, RowFamily::kBoundaryTies, RowFamily::kNaNInTop, RowFamily::kReluPlateau,
                      RowFamily::kSharedHigh21Bits, RowFamily::kInfinities}) {
    SCOPED_TRACE(sgtopk::testing::family_name(f));
    for (int k : {1, 2048, 8192}) {
      auto row = sgtopk::testing::make_row(f, 300000, k, rng);
      EXPECT_EQ(select_row(row.data(), 300000, k), brute_force(row, k)) << "k=" << k;
    }
  }
}

TEST(ReferenceSelect, MatchesBruteForceOnEveryFamily) {
  SGTOPK_SEEDED_RNG(rng, "families");
  for (RowFamily f : sgtopk::testing::all_row_families()) {
    SCOPED_TRACE(sgtopk::testing::family_name(f));
    for (int64_t len : {0, 1, 5, 63, 64, 100, 777, 5000, 70000}) {
      for (int k : {1, 7, 64, 300, 2048}) {
        if (len == 70000 && k < 300) continue;
        const auto row = sgtopk::testing::make_row(f, len, k, rng);
        ASSERT_EQ(static_cast<int64_t>(row.size()), len);
        const auto got = select_row(row.data(), len, k);
        const auto want = brute_force(row, k);
        ASSERT_EQ(got, want) << "len=" << len << " k=" << k;
        const auto idx = padded(got, k);
        const auto val = values_of(row, got, k);
        ASSERT_EQ(check_select_row(row.data(), len, k, idx.data(), val.data(), true), "")
            << "len=" << len << " k=" << k;
      }
    }
  }
}

TEST(ReferenceFamilies, ShapesAreAsAdvertised) {
  SGTOPK_SEEDED_RNG(rng, "shapes");
  const int k = 2048;
  const int64_t len = 100000;
  for (RowFamily f : sgtopk::testing::all_row_families()) {
    SCOPED_TRACE(sgtopk::testing::family_name(f));
    auto row = sgtopk::testing::make_row(f, len, k, rng);
    ASSERT_EQ(static_cast<int64_t>(row.size()), len);
    const auto top = select_row(row.data(), len, k);
    const float kth = row[static_cast<size_t>(top.back())];
    const auto count = [&](auto pred) { return std::count_if(row.begin(), row.end(), pred); };
    switch (f) {
      case RowFamily::kBoundaryTies: {
        EXPECT_GE(count([&](float x) { return x == kth; }), 300);
        EXPECT_GE(count([&](float x) { return x > kth; }), 1);  // the boundary cuts the tie group
        break;
      }
      case RowFamily::kSharedHigh21Bits: {
        EXPECT_GE(count([&](float x) { return coarse_key(x) == coarse_key(kth); }), k);
        break;
      }
      case RowFamily::kAllNaN: EXPECT_EQ(count([](float x) { return std::isnan(x); }), len); break;
      case RowFamily::kNaNInTop: EXPECT_GE(count([](float x) { return std::isnan(x); }), len - 3 * k / 2); break;
      case RowFamily::kReluPlateau: EXPECT_EQ(kth, 0.0f); break;
      case RowFamily::kSignedZeros:
        EXPECT_GT(count([](float x) { return x == 0.0f && std::signbit(x); }), len / 4);
        EXPECT_GT(count([](float x) { return x == 0.0f && !std::signbit(x); }), len / 4);
        break;
      case RowFamily::kFp16Overflow: EXPECT_GT(count([](float x) { return std::fabs(x) > 65504.0f; }), len / 10); break;
      case RowFamily::kTinySubnormal:
        EXPECT_EQ(count([](float x) { return std::fabs(x) > 0x1.0p-24f; }), 0);
        EXPECT_GT(count([](float x) { return std::fpclassify(x) == FP_SUBNORMAL; }), len / 10);
        break;
      case RowFamily::kInfinities: EXPECT_GE(count([](float x) { return x == -kInf; }), len / 4); break;
      case RowFamily::kAscending: EXPECT_TRUE(std::is_sorted(row.begin(), row.end())); break;
      case RowFamily::kPeriodic64:
      case RowFamily::kPeriodic128: {
        // The best entries all sit at one phase; there are about len / period of them.
        const int32_t period = f == RowFamily::kPeriodic64 ? 64 : 128;
        const int32_t phase = top[0] % period;
        const int64_t hits = (len - phase + period - 1) / period;
        for (int64_t s = 0; s < std::min<int64_t>(hits, k); ++s) {
          ASSERT_EQ(top[static_cast<size_t>(s)] % period, phase) << "slot " << s;
        }
        break;
      }
      default: break;
    }
  }
  // Same seed, same row.
  std::mt19937_64 a(42), b(42);
  EXPECT_EQ(sgtopk::testing::make_row(RowFamily::kIndexerLike, 1000, 64, a),
            sgtopk::testing::make_row(RowFamily::kIndexerLike, 1000, 64, b));
}

// The indexer-like rows are the ones they always were (the generator skips
// work where a draw is 0 for sure, never changing a bit or a draw): the
// FNV-1a hash of a row's bits and the next draw, from the plain Box-Muller
// formula it replaced.
TEST(RowFamilies, IndexerLikeRowsKeepTheirBitsAndDraws) {
  std::mt19937_64 rng(42);
  const std::vector<float> row = sgtopk::testing::make_row(RowFamily::kIndexerLike, 40000, 2048, rng);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (float x : row) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    for (int i = 0; i < 4; ++i) {
      hash ^= (bits >> (8 * i)) & 0xffu;
      hash *= 0x100000001b3ull;
    }
  }
  EXPECT_EQ(hash, 0xcf48f84df67ebc67ull);
  EXPECT_EQ(rng(), 0x001a40b74779cbe8ull);
}

// ----------------------------------------------------- check_select_row ----

class ReferenceCheck : public ::testing::Test {
 protected:
  // 20 elements, k = 6: three values above 2.0, then the tie group of 2.0 at indices 3, 7, 11, 15, 19.
  void SetUp() override {
    row_.assign(20, 0.0f);
    for (int i = 0; i < 20; ++i) row_[static_cast<size_t>(i)] = static_cast<float>(i % 4) * 0.1f - 1.0f;
    row_[0] = 5.0f;
    row_[1] = 4.0f;
    row_[2] = 3.0f;
    for (int i : {3, 7, 11, 15, 19}) row_[static_cast<size_t>(i)] = 2.0f;
    idx_ = select_row(row_.data(), 20, k_);
    vals_ = values_of(row_, idx_, k_);
  }
  std::string check(bool sorted = true) {
    return check_select_row(row_.data(), 20, k_, idx_.data(), vals_.data(), sorted);
  }
  int k_ = 6;
  std::vector<float> row_;
  std::vector<int32_t> idx_;
  std::vector<float> vals_;
};

TEST_F(ReferenceCheck, AcceptsTheCorrectAnswer) {
  EXPECT_EQ(idx_, (std::vector<int32_t>{0, 1, 2, 3, 7, 11}));
  EXPECT_EQ(check(), "");
  EXPECT_EQ(check_select_row(row_.data(), 20, k_, idx_.data(), nullptr, true), "");
}

TEST_F(ReferenceCheck, AcceptsAnyOrderWhenUnsorted) {
  SGTOPK_SEEDED_RNG(rng, "orders");
  for (int t = 0; t < 50; ++t) {
    std::vector<size_t> perm(static_cast<size_t>(k_));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng.engine());
    std::vector<int32_t> idx(static_cast<size_t>(k_));
    std::vector<float> val(static_cast<size_t>(k_));
    for (size_t s = 0; s < perm.size(); ++s) {
      idx[s] = idx_[perm[s]];
      val[s] = vals_[perm[s]];
    }
    EXPECT_EQ(check_select_row(row_.data(), 20, k_, idx.data(), val.data(), false), "");
  }
}

TEST_F(ReferenceCheck, CatchesADuplicateIndex) {
  idx_[4] = idx_[1];
  vals_[4] = vals_[1];
  const std::string msg = check(false);
  EXPECT_NE(msg.find("slot 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("twice"), std::string::npos) << msg;
}

TEST_F(ReferenceCheck, CatchesAnIndexOutOfRange) {
  idx_[2] = 20;
  EXPECT_NE(check(false).find("out of range"), std::string::npos) << check(false);
  idx_[2] = -1;
  EXPECT_NE(check(false).find("slot 2: index -1 out of range"), std::string::npos) << check(false);
}

TEST_F(ReferenceCheck, CatchesTheWrongMemberOfTheBoundaryTie) {
  idx_[5] = 15;  // 2.0 as well, but index 11 is lower
  const std::string msg = check(false);
  EXPECT_NE(msg.find("slot 5: index 15"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ties the boundary value but index 11"), std::string::npos) << msg;
}

TEST_F(ReferenceCheck, CatchesAMemberBelowTheBoundary) {
  idx_[5] = 6;
  vals_[5] = row_[6];
  const std::string msg = check(false);
  EXPECT_NE(msg.find("slot 5: index 6 not in the expected set"), std::string::npos) << msg;
  EXPECT_NE(msg.find("boundary value 2"), std::string::npos) << msg;
}

TEST_F(ReferenceCheck, CatchesMissingPadding) {
  const std::vector<float> row = {1.0f, 2.0f, 3.0f};
  std::vector<int32_t> idx = {2, 1, 0, -1, -1};
  std::vector<float> val = {3.0f, 2.0f, 1.0f, -kInf, -kInf};
  EXPECT_EQ(check_select_row(row.data(), 3, 5, idx.data(), val.data(), true), "");
  idx[4] = 0;
  EXPECT_NE(check_select_row(row.data(), 3, 5, idx.data(), val.data(), true).find("slot 4: expected -1 padding"),
            std::string::npos);
  idx = {2, 1, -1, 0, -1};  // a valid index pushed into the padding
  EXPECT_NE(check_select_row(row.data(), 3, 5, idx.data(), nullptr, false).find("slot 2: index -1 out of range"),
            std::string::npos);
  idx = {2, 1, 0, -1, -1};
  val[3] = float_from_bits(0x7fc00000u);
  EXPECT_NE(check_select_row(row.data(), 3, 5, idx.data(), val.data(), true).find("padding value must be -inf"),
            std::string::npos);
  // A row of length 0 is all -1.
  std::vector<int32_t> none = {-1, -1};
  EXPECT_EQ(check_select_row(row.data(), 0, 2, none.data(), nullptr, true), "");
  none[0] = 0;
  EXPECT_NE(check_select_row(row.data(), 0, 2, none.data(), nullptr, true), "");
}

TEST_F(ReferenceCheck, CatchesWrongValueBits) {
  vals_[3] = std::nextafter(vals_[3], 0.0f);
  EXPECT_NE(check().find("slot 3: value"), std::string::npos) << check();
  // -0 vs +0 and NaN payloads must match bitwise too.
  const std::vector<float> row = {-0.0f, float_from_bits(0x7fa5a5a5u)};
  std::vector<int32_t> idx = {0, 1};
  std::vector<float> val = {0.0f, float_from_bits(0x7fa5a5a5u)};
  EXPECT_NE(check_select_row(row.data(), 2, 2, idx.data(), val.data(), true).find("slot 0: value"), std::string::npos);
  val = {-0.0f, float_from_bits(0x7fc00000u)};
  EXPECT_NE(check_select_row(row.data(), 2, 2, idx.data(), val.data(), true).find("slot 1: value"), std::string::npos);
  val = {-0.0f, float_from_bits(0x7fa5a5a5u)};
  EXPECT_EQ(check_select_row(row.data(), 2, 2, idx.data(), val.data(), true), "");
}

TEST_F(ReferenceCheck, CatchesWrongSortedOrder) {
  std::swap(idx_[0], idx_[1]);
  std::swap(vals_[0], vals_[1]);
  EXPECT_NE(check(true).find("slot 1: sorted order broken"), std::string::npos) << check(true);
  EXPECT_EQ(check(false), "");
  std::swap(idx_[0], idx_[1]);
  std::swap(vals_[0], vals_[1]);
  std::swap(idx_[3], idx_[4]);  // equal values 2.0: index asc
  std::swap(vals_[3], vals_[4]);
  EXPECT_NE(check(true).find("sorted order broken"), std::string::npos) << check(true);
  EXPECT_EQ(check(false), "");
  // -0 and +0 are equal values: ordered by index.
  const std::vector<float> zeros = {0.0f, -0.0f, 1.0f};
  std::vector<int32_t> good = {2, 0, 1}, bad = {2, 1, 0};
  EXPECT_EQ(check_select_row(zeros.data(), 3, 3, good.data(), nullptr, true), "");
  EXPECT_NE(check_select_row(zeros.data(), 3, 3, bad.data(), nullptr, true), "");
}

TEST_F(ReferenceCheck, CatchesNaNSelectedOverANumber) {
  const std::vector<float> row = {float_from_bits(0x7fffffffu), -kInf, 1.0f};
  std::vector<int32_t> idx = {2, 0};
  const std::string msg = check_select_row(row.data(), 3, 2, idx.data(), nullptr, false);
  EXPECT_NE(msg.find("slot 1: index 0 not in the expected set"), std::string::npos) << msg;
  idx = {2, 1};
  EXPECT_EQ(check_select_row(row.data(), 3, 2, idx.data(), nullptr, false), "");
}

// ------------------------------------------------- check_select_matrix ----

TEST(ReferenceMatrixCheck, ChecksLiveRowsAndPoisonElsewhere) {
  using sgtopk::testing::kPoison;
  SGTOPK_SEEDED_RNG(rng, "matrix");
  const int64_t rows = 4, pitch = 300, out_pitch = 40;
  const int k = 32;
  std::vector<float> scores(static_cast<size_t>(rows * pitch));
  for (float& x : scores) x = static_cast<float>(rng() % 1000) / 100.0f;
  const std::vector<int32_t> lengths = {250, 10, 0, 100};
  const std::vector<int32_t> starts = {0, 37, 5, 200};
  const int64_t live = 3;
  std::vector<uint32_t> ibits(static_cast<size_t>(rows * out_pitch), kPoison), vbits = ibits;
  std::vector<int32_t> indices(ibits.size());
  std::vector<float> values(ibits.size());
  std::memcpy(indices.data(), ibits.data(), ibits.size() * 4);
  std::memcpy(values.data(), vbits.data(), vbits.size() * 4);
  for (int64_t r = 0; r < live; ++r) {
    const float* row = scores.data() + r * pitch + starts[static_cast<size_t>(r)];
    auto sel = select_row(row, lengths[static_cast<size_t>(r)], k);
    for (int s = 0; s < k; ++s) {
      const size_t at = static_cast<size_t>(r * out_pitch + s);
      indices[at] = s < static_cast<int>(sel.size()) ? sel[static_cast<size_t>(s)] : -1;
      values[at] = s < static_cast<int>(sel.size()) ? row[sel[static_cast<size_t>(s)]] : -kInf;
    }
  }
  sgtopk::testing::SelectMatrixCheck c;
  c.scores = scores.data();
  c.rows = rows;
  c.pitch = pitch;
  c.lengths = lengths.data();
  c.starts = starts.data();
  c.k = k;
  c.live_rows = live;
  c.indices = indices.data();
  c.values = values.data();
  c.out_pitch = out_pitch;
  c.sorted = true;
  EXPECT_EQ(sgtopk::testing::check_select_matrix(c), "");
  EXPECT_EQ(sgtopk::testing::check_select_matrix(scores.data(), rows, pitch, lengths.data(), starts.data(), k, live,
                                                 indices.data(), values.data(), out_pitch, kPoison, true),
            "");

  auto touched = indices;
  touched[static_cast<size_t>(3 * out_pitch + 7)] = 0;  // a row past live_rows
  c.indices = touched.data();
  std::string msg = sgtopk::testing::check_select_matrix(c);
  EXPECT_NE(msg.find("row 3: slot 7 was written"), std::string::npos) << msg;

  touched = indices;
  touched[static_cast<size_t>(0 * out_pitch + k)] = 0;  // past k inside the output pitch
  c.indices = touched.data();
  msg = sgtopk::testing::check_select_matrix(c);
  EXPECT_NE(msg.find("row 0: slot 32 was written"), std::string::npos) << msg;

  touched = indices;
  std::swap(touched[static_cast<size_t>(1 * out_pitch + 0)], touched[static_cast<size_t>(1 * out_pitch + 1)]);
  c.indices = touched.data();
  msg = sgtopk::testing::check_select_matrix(c);
  EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
  c.sorted = false;
  c.values = nullptr;
  EXPECT_EQ(sgtopk::testing::check_select_matrix(c), "");
}

}  // namespace

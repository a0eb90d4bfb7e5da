// The row families (see row_families.h). Every generator draws only from the
// given std::mt19937_64 through portable arithmetic (no std::*_distribution),
// so a seed gives the same row on every standard library.
#include "reference/row_families.h"

#include "reference/select.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

namespace sgtopk::rows {

namespace {


constexpr float kInf = std::numeric_limits<float>::infinity();

// NaN bit patterns: quiet/signalling, both signs, payloads, and patterns whose
// raw bits compare high (0x7fffffff) or low (0xff800001) as integers.
constexpr uint32_t kNaNPatterns[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu,
                                     0xff800001u, 0xffffffffu, 0x7fa5a5a5u, 0xffc0ffeeu};

float random_nan(std::mt19937_64& rng) {
  return reference::float_from_bits(kNaNPatterns[rng() % (sizeof kNaNPatterns / sizeof kNaNPatterns[0])]);
}

float uniform(std::mt19937_64& rng, float lo, float hi) {
  // 24 random bits -> [0, 1): identical on every standard library.
  const float u = static_cast<float>(rng() >> 40) * 0x1.0p-24f;
  return lo + (hi - lo) * u;
}

double gaussian(std::mt19937_64& rng, double mean, double sd) {
  // Box-Muller on 53-bit uniforms (portable, unlike std::normal_distribution).
  const double u1 = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// max(0, gaussian(rng, mu, 1.0)): the same two draws and bit for bit the same
// value, without the log, sqrt and cos where the result is 0 for sure (mu < 0
// and cos(2 pi u2) < 0, or the radius sqrt(-2 ln u1) < -mu, i.e. u1 >
// zero_above = exp(-mu^2 / 2) with a margin). Most of an indexer-like row sits
// at mu near -1, where this skips about four in five; `sgtopk simulate`
// spends most of its time generating such rows.
double relu_gaussian(std::mt19937_64& rng, double mu, double zero_above) {
  const double u1 = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  if (mu < -1e-6 && ((u2 > 0.2501 && u2 < 0.7499) || u1 > zero_above)) return 0.0;
  return std::max(0.0, mu + 1.0 * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

int64_t uniform_int(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive; lo <= hi
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

bool coin(std::mt19937_64& rng, double p) { return static_cast<double>(rng() >> 11) * 0x1.0p-53 < p; }

void shuffle(std::vector<float>& row, std::mt19937_64& rng) {
  for (size_t i = row.size(); i > 1; --i) std::swap(row[i - 1], row[static_cast<size_t>(rng() % i)]);
}

// Puts `count` copies of a generated value at distinct random positions.
template <class Gen>
void scatter(std::vector<float>& row, int64_t count, std::mt19937_64& rng, Gen gen) {
  const int64_t len = static_cast<int64_t>(row.size());
  count = std::min(count, len);
  std::vector<int64_t> pos(static_cast<size_t>(len));
  std::iota(pos.begin(), pos.end(), 0);
  for (int64_t i = 0; i < count; ++i) {  // partial Fisher-Yates
    std::swap(pos[static_cast<size_t>(i)], pos[static_cast<size_t>(uniform_int(rng, i, len - 1))]);
    row[static_cast<size_t>(pos[static_cast<size_t>(i)])] = gen();
  }
}

}  // namespace

// --------------------------------------------------------- row families ----

const char* family_name(RowFamily family) {
  switch (family) {
    case RowFamily::kUniform: return "uniform";
    case RowFamily::kGaussian: return "gaussian";
    case RowFamily::kAllEqual: return "all_equal";
    case RowFamily::kTwoValues: return "two_values";
    case RowFamily::kThreeValues: return "three_values";
    case RowFamily::kBoundaryTies: return "boundary_ties";
    case RowFamily::kSharedHigh21Bits: return "shared_high_21_bits";
    case RowFamily::kFp16Overflow: return "fp16_overflow";
    case RowFamily::kTinySubnormal: return "tiny_subnormal";
    case RowFamily::kSignedZeros: return "signed_zeros";
    case RowFamily::kNaNScattered: return "nan_scattered";
    case RowFamily::kNaNInTop: return "nan_in_top";
    case RowFamily::kAllNaN: return "all_nan";
    case RowFamily::kInfinities: return "infinities";
    case RowFamily::kAscending: return "ascending";
    case RowFamily::kDescending: return "descending";
    case RowFamily::kReluPlateau: return "relu_plateau";
    case RowFamily::kPeriodic64: return "periodic_64";
    case RowFamily::kPeriodic128: return "periodic_128";
    case RowFamily::kPackedRuns: return "packed_runs";
    case RowFamily::kBimodal: return "bimodal";
    case RowFamily::kIndexerLike: return "indexer_like";
  }
  return "unknown";
}

std::vector<RowFamily> all_row_families() {
  return {RowFamily::kUniform,       RowFamily::kGaussian,     RowFamily::kAllEqual,     RowFamily::kTwoValues,
          RowFamily::kThreeValues,   RowFamily::kBoundaryTies, RowFamily::kSharedHigh21Bits,
          RowFamily::kFp16Overflow,  RowFamily::kTinySubnormal, RowFamily::kSignedZeros, RowFamily::kNaNScattered,
          RowFamily::kNaNInTop,      RowFamily::kAllNaN,       RowFamily::kInfinities,   RowFamily::kAscending,
          RowFamily::kDescending,    RowFamily::kReluPlateau,  RowFamily::kPeriodic64,   RowFamily::kPeriodic128,
          RowFamily::kPackedRuns,    RowFamily::kBimodal,      RowFamily::kIndexerLike};
}

std::string family_param_name(RowFamily family) {
  std::string s = family_name(family);
  for (char& c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) c = '_';
  }
  return s;
}

std::vector<float> make_row(RowFamily family, int64_t len, int k, std::mt19937_64& rng) {
  len = std::max<int64_t>(len, 0);
  k = std::max(k, 1);
  std::vector<float> row(static_cast<size_t>(len));
  auto fill = [&](auto gen) {
    for (float& x : row) x = gen();
  };
  switch (family) {
    case RowFamily::kUniform:
      fill([&] { return uniform(rng, -1.0f, 1.0f); });
      break;
    case RowFamily::kGaussian:
      fill([&] { return static_cast<float>(gaussian(rng, 0.0, 1.0)); });
      break;
    case RowFamily::kAllEqual: {
      const float values[] = {0.75f, -1.5f, 0.0f, 3.0e38f};
      const float v = values[rng() % 4];
      fill([&] { return v; });
      break;
    }
    case RowFamily::kTwoValues: {
      const double p = 0.02 + 0.96 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
      fill([&] { return coin(rng, p) ? 2.0f : 1.0f; });
      break;
    }
    case RowFamily::kThreeValues: {
      const double p_hi = 0.01 + 0.3 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
      const double p_mid = 0.2 + 0.5 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
      fill([&] {
        if (coin(rng, p_hi)) return 3.0f;
        return coin(rng, p_mid) ? 0.5f : -1.0f;
      });
      break;
    }
    case RowFamily::kBoundaryTies: {
      // `ties` copies of v with `above` values strictly above it, above < k <= above + ties, so the K-th
      // largest is v and the boundary cuts the tie group: the lower-index rule decides which copies win.
      const float v = 0.5f;
      const int64_t ties = std::min<int64_t>(len, std::max<int64_t>(300, k / 4));
      int64_t above = k - 1 - uniform_int(rng, 0, std::max<int64_t>(0, std::min<int64_t>(ties, k) - 1));
      if (above + ties > len) above = std::max<int64_t>(0, len - ties);
      int64_t i = 0;
      for (; i < above; ++i) row[static_cast<size_t>(i)] = uniform(rng, 1.0f, 2.0f);
      for (; i < above + ties; ++i) row[static_cast<size_t>(i)] = v;
      for (; i < len; ++i) row[static_cast<size_t>(i)] = uniform(rng, -1.0f, 0.49f);
      shuffle(row, rng);
      break;
    }
    case RowFamily::kSharedHigh21Bits: {
      // Bits 12 and 11 of the bases are 0, so FP16 rounding truncates: every cluster member has the same
      // coarse key, and only the low 11 bits (incl. exact duplicates) order them.
      const uint32_t bases[] = {0x3f400000u /* 0.75 */, 0xbf400000u /* -0.75 */, 0x42c80000u /* 100 */};
      const uint32_t base = bases[rng() % 3];
      const float below = base == 0xbf400000u ? -2.0f : 0.5f;
      fill([&] {
        if (coin(rng, 0.1)) return uniform(rng, below - 1.0f, below);
        return reference::float_from_bits(base | static_cast<uint32_t>(rng() & 0x7ffu));
      });
      break;
    }
    case RowFamily::kFp16Overflow: {
      const float edges[] = {65504.0f,  reference::float_from_bits(0x477fe001u), reference::float_from_bits(0x477fefffu) /* 65519.996 */,
                             65520.0f,  reference::float_from_bits(0x477ff001u), 65536.0f,
                             1.0e5f,    3.4e38f,               std::numeric_limits<float>::max()};
      fill([&]() -> float {
        if (coin(rng, 0.3)) {
          float m = coin(rng, 0.5) ? edges[rng() % (sizeof edges / sizeof edges[0])]
                                   : static_cast<float>(std::pow(10.0, 4.9 + 33.0 * static_cast<double>(rng() >> 11) *
                                                                                0x1.0p-53));
          return coin(rng, 0.25) ? -m : m;
        }
        return static_cast<float>(gaussian(rng, 0.0, 1000.0));
      });
      break;
    }
    case RowFamily::kTinySubnormal: {
      const float edges[] = {0x1.0p-24f,           0x1.0p-25f,           reference::float_from_bits(0x32ffffffu), reference::float_from_bits(0x33000001u),
                             0x1.8p-25f /* 3*2^-26 */, 0x1.0p-149f,      reference::float_from_bits(0x007fffffu), 0x1.0p-126f,
                             0.0f};
      fill([&]() -> float {
        float m;
        const uint64_t pick = rng() % 3;
        if (pick == 0) m = edges[rng() % (sizeof edges / sizeof edges[0])];
        else if (pick == 1) m = reference::float_from_bits(static_cast<uint32_t>(rng() % 0x7fffffu) + 1u);  // FP32 subnormal
        else m = static_cast<float>(std::ldexp(1.0 + static_cast<double>(rng() >> 11) * 0x1.0p-53,
                                              -static_cast<int>(25 + rng() % 100)));
        return coin(rng, 0.5) ? -m : m;
      });
      break;
    }
    case RowFamily::kSignedZeros:
      fill([&] {
        const uint64_t r = rng() % 100;
        if (r == 0) return uniform(rng, 0.001f, 1.0f);
        if (r == 1) return uniform(rng, -1.0f, -0.001f);
        return (r & 1) ? -0.0f : 0.0f;
      });
      break;
    case RowFamily::kNaNScattered:
      fill([&] { return coin(rng, 0.05) ? random_nan(rng) : uniform(rng, -1.0f, 1.0f); });
      break;
    case RowFamily::kNaNInTop: {
      // Between k/2 and 3k/2 numbers, the rest NaN: about half the time NaN must fill the top-K.
      const int64_t numbers = std::min<int64_t>(len, uniform_int(rng, k / 2, k + k / 2));
      fill([&] { return random_nan(rng); });
      scatter(row, numbers, rng, [&] { return uniform(rng, -1.0f, 1.0f); });
      break;
    }
    case RowFamily::kAllNaN:
      fill([&] { return random_nan(rng); });
      break;
    case RowFamily::kInfinities: {
      const double p_pos = 0.2 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
      fill([&]() -> float {
        if (coin(rng, p_pos)) return kInf;
        if (coin(rng, 0.2)) return -kInf;
        return static_cast<float>(gaussian(rng, 0.0, 1.0));
      });
      const int64_t block = len / 4;
      const int64_t at = block > 0 ? uniform_int(rng, 0, len - block) : 0;
      for (int64_t i = at; i < at + block; ++i) row[static_cast<size_t>(i)] = -kInf;
      break;
    }
    case RowFamily::kAscending:
    case RowFamily::kDescending:
      fill([&] { return uniform(rng, -1.0f, 1.0f); });
      if (family == RowFamily::kAscending) std::sort(row.begin(), row.end());
      else std::sort(row.begin(), row.end(), std::greater<float>());
      break;
    case RowFamily::kReluPlateau: {
      // Fewer than K positives: the K-th value is 0 and the boundary tie group is the plateau.
      const int64_t positives = std::min<int64_t>(len, uniform_int(rng, k / 4, std::max(k / 4, k - 1 - k / 4)));
      fill([] { return 0.0f; });
      scatter(row, positives, rng, [&] { return static_cast<float>(std::fabs(gaussian(rng, 0.0, 1.0))) + 1e-3f; });
      break;
    }
    case RowFamily::kPeriodic64:
    case RowFamily::kPeriodic128: {
      const int64_t period = family == RowFamily::kPeriodic64 ? 64 : 128;
      const int64_t phase = uniform_int(rng, 0, period - 1);
      for (int64_t i = 0; i < len; ++i) {
        row[static_cast<size_t>(i)] = (i % period == phase) ? uniform(rng, 1.0f, 2.0f) : uniform(rng, -1.0f, 0.9f);
      }
      break;
    }
    case RowFamily::kPackedRuns: {
      fill([&] { return uniform(rng, -1.0f, 0.0f); });
      const int64_t runs = uniform_int(rng, 1, 4);
      const int64_t total = std::min<int64_t>(len, k + uniform_int(rng, 0, k / 8));
      int64_t placed = 0;
      for (int64_t r = 0; r < runs && placed < total; ++r) {
        const int64_t run = r + 1 == runs ? total - placed : uniform_int(rng, 1, std::max<int64_t>(1, total - placed));
        const int64_t at = uniform_int(rng, 0, len - run);
        for (int64_t i = at; i < at + run; ++i) row[static_cast<size_t>(i)] = uniform(rng, 1.0f, 2.0f);
        placed += run;
      }
      break;
    }
    case RowFamily::kBimodal: {
      const double upper = 0.001 + 0.2 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
      fill([&] { return static_cast<float>(coin(rng, upper) ? gaussian(rng, 4.0, 0.5) : gaussian(rng, -4.0, 0.5)); });
      break;
    }
    case RowFamily::kIndexerLike: {
      // Sum over heads of w_h * ReLU(q_h . k_i): a strong attention sink at the start, a recency window at
      // the end, mostly-inactive (exactly 0) middle with sparse positive activations.
      constexpr int kHeads = 4;
      double w[kHeads];
      for (double& x : w) x = 0.5 + static_cast<double>(rng() >> 11) * 0x1.0p-53;
      const double recency = 0.02 * static_cast<double>(len) + 32.0;
      for (int64_t i = 0; i < len; ++i) {
        // exp(-i / 16) is exactly 0 from i = 12000 on.
        const double sink = i < 12000 ? 3.0 * std::exp(-static_cast<double>(i) / 16.0) : 0.0;
        const double mu = sink + 2.0 * std::exp(-static_cast<double>(len - 1 - i) / recency) - 1.0;
        const double zero_above = mu < -1e-6 ? std::exp(-0.5 * mu * mu) * (1.0 + 1e-9) : 2.0;
        double s = 0.0;
        for (double wh : w) s += wh * relu_gaussian(rng, mu, zero_above);
        row[static_cast<size_t>(i)] = static_cast<float>(s);
      }
      break;
    }
  }
  return row;
}

std::optional<RowFamily> family_from_name(std::string_view name) {
  for (RowFamily f : all_row_families()) {
    if (name == family_name(f)) return f;
  }
  return std::nullopt;
}

}  // namespace sgtopk::rows

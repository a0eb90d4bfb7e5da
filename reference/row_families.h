// Adversarial row families: seeded, deterministic generators of score rows
// that stress the select contract (CONTRACT.md section 1) and the sampled
// route (ALGORITHM.md): boundary ties, NaN, FP16 edges, signed zeros, and
// periodic or packed structure that defeats strided sampling. Shared by the
// CPU and GPU tests and by `sgtopk simulate`.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sgtopk::rows {

enum class RowFamily {
  kUniform,           // uniform in [-1, 1)
  kGaussian,          // N(0, 1)
  kAllEqual,          // one value everywhere (the whole row is the boundary tie group)
  kTwoValues,         // two distinct values, random mix
  kThreeValues,       // three distinct values, random mix
  kBoundaryTies,      // the K-th largest value occurs hundreds of times, straddling the boundary
  kSharedHigh21Bits,  // values differing only in the low 11 bits: one coarse bin holds them all
  kFp16Overflow,      // |x| >= 65504 (FP16 overflow, incl. 65504/65519.99/65520 edges) mixed with normal values
  kTinySubnormal,     // |x| <= 2^-24 incl. FP32 subnormals, 2^-25 ties, both signs
  kSignedZeros,       // +0 and -0 mixed, a few positives and negatives
  kNaNScattered,      // ~5% NaN among uniform values
  kNaNInTop,          // many NaN patterns (negative, payload, 0x7fffffff): NaN often needed to fill K
  kAllNaN,            // every entry NaN (various patterns)
  kInfinities,        // +inf/-inf mixed with finite values, plus a -inf block (masked region)
  kAscending,         // sorted ascending (top at the end)
  kDescending,        // sorted descending (top at the start)
  kReluPlateau,       // most exactly 0.0, fewer than K positives: the K-th value is 0
  kPeriodic64,        // top values at a fixed phase of period 64 (hides from a view with one phase per row)
  kPeriodic128,       // same with period 128
  kPackedRuns,        // the top-K packed into a few short contiguous runs
  kBimodal,           // two well-separated modes, a minority in the upper one
  kIndexerLike,       // ReLU-weighted sums with an attention-sink start and a recency end
};

// Stable lower-case names ("uniform", "indexer_like", ...), used on the
// command line and in test names.
const char* family_name(RowFamily family);
// The family named `name` (exactly as family_name spells it), or nullopt.
std::optional<RowFamily> family_from_name(std::string_view name);
// Every family, in declaration order.
std::vector<RowFamily> all_row_families();

// A row of `len` scores of the family; `k` shapes the families whose
// difficulty depends on it (boundary ties, NaN count, plateau). Any len >= 0
// and k >= 1 are fine. Deterministic: the same rng state gives the same row.
std::vector<float> make_row(RowFamily family, int64_t len, int k, std::mt19937_64& rng);

// For readable parameterized test names: family_name with only [A-Za-z0-9_].
std::string family_param_name(RowFamily family);

}  // namespace sgtopk::rows

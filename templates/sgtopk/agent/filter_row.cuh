// Filter (docs/filter-design.md): one CTA per row, every decision by digit
// histograms over the row's ordered keys or over candidates gathered from
// it, the mask written last. The kept set of every mode has one
// shape: every key above a boundary key B, and the first t copies of B in
// index order.
//
//   keys    ordered_key(x / T) (T applied as IEEE float division rounds it,
//           computed as x * (1 / T in double), see divide(); a temperature
//           that does not scale means greedy: top-1)
//   top-k   B_k, t_k: the k-th key of the order, three digit rounds of counts
//   top-p   over the survivors, mass m(x) = expf(x - M) (M the largest
//           survivor) in integers at 2^-40: the total Z, then three digit
//           rounds of mass for the key where the mass from the top reaches
//           ceil(p * Z); t = the copies needed, all of one mass
//   mask    kept: key > B, or key == B among the first t by index
//
// The sampled route first (propose, gather, decide, write_kept below): a
// strided sample of the row proposes a key threshold tau; one pass (16-byte
// loads) finds the largest key and gathers every key at or above tau with
// its index into FilterRowShared's candidates; when they hold the kept set's
// boundary (at least k of them for top-k; for top-p alone, after one more
// pass for the row's total mass Z, mass at least p's target), every round
// runs over them, and the write stores mask_value everywhere, then the kept
// values read before it: 1 read and a write with top-k, 2 reads and a write
// for top-p alone. Otherwise (tau too high, or too low for the buffer), or
// when the sample predicts that, the exact route below runs: exactness
// never depends on the sample, only speed does.
//
// The exact route's passes over the row (each a read). With top-k, the
// first one finds the largest key and counts the first digit round (its
// group is the whole row); the keys at or above the digit it finds hold
// every top-k survivor, and when they fit FilterRowShared's candidate
// buffer a second pass gathers them and every later round, the survivors'
// mass and top-p run over the buffer: 3 passes in all with the mask's
// (read + write). Otherwise the later rounds read the row: 4 passes for
// top-k alone, 8 with top-p. Top-p alone: the largest key; then one pass
// histograms count and mass by first digit (Z is the mass's sum, the first
// mass round its search); the keys of its digit, when they fit the
// buffer, are gathered by a third and the later rounds run over them: 4
// passes with the mask's, else 5 (rounds 1 and 2 over the row). A key gives back the scaled value it came from (but
// for -0 and NaN, whose images carry the same mass), so a round or sum over
// the buffer counts what it would over the row, in the same integers.
//
// Rows of at most 2^23 tokens: a row's mass, each token at most 2^40 units,
// stays below 2^64. The including source defines `Config`: kThreads,
// kDtype (abi.h's kFilterF32, kFilterBf16, kFilterF16: the element type of
// the logits and of the output, pitch in elements), kSampleSize and
// kTopPSampleSize (top-k's sample and top-p alone's; 0: the exact route
// only), kSampleSigmas (policy filter.sample_*), kLoadsInFlight
// (filter.loads_in_flight: the 16-byte loads a thread issues before it
// visits them in the sampled route's passes), kPrefetchAheadSteps (the
// steps of those passes asked of L2 ahead; 0: none) and kOutputs (abi.h's
// kFilterOut*: without the candidate and sample outputs their code is not
// compiled in; which outputs a launch writes, its pointers say). The
// launch's arguments are abi.h's FilterParams; rows at or past *live_rows are
// untouched; a CTA takes rows blockIdx.x, + gridDim.x, ... (any grid).
// Dynamic shared memory: abi.h's FilterRowShared.
#pragma once
#include "sgtopk/abi.h"
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/block/block_top_keys.cuh"
#include "sgtopk/block/warp_append.cuh"
#include "sgtopk/util/keys.cuh"
#include "sgtopk/util/philox.h"

// Called by every thread with the route a row took (FilterRowAgent's
// kRoute*): a test harness may count them; nothing on the device.
#ifndef SGTOPK_FILTER_ROUTE
#define SGTOPK_FILTER_ROUTE(route)
#endif

namespace sgtopk {

// The logits' element types. bf16 and fp16 are read as raw 16-bit patterns
// and widened to float exactly (every bf16 / fp16 value, infinity and NaN is
// a float): bf16 by a shift, fp16 by the conversion instruction
// (hw::f16_to_float; the host emulator converts through _Float16); a finite
// mask value is narrowed to them by round to nearest even (an out-of-range
// one to the infinity of its sign, NaN to a quiet NaN).
template <int kDtype>
struct FilterLogit;
template <>
struct FilterLogit<kFilterF32> {
  typedef float Elem;
  static SGTOPK_DEVICE float widen(float x) { return x; }
  static SGTOPK_DEVICE float narrow(float x) { return x; }
};
template <>
struct FilterLogit<kFilterBf16> {
  typedef unsigned short Elem;
  static SGTOPK_DEVICE float widen(Elem h) { return __uint_as_float(static_cast<u32>(h) << 16); }
  static SGTOPK_DEVICE Elem narrow(float x) {
    const u32 bits = __float_as_uint(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<Elem>((bits >> 16) | 0x40u);  // NaN: quiet
    return static_cast<Elem>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);  // a carry past the largest gives infinity
  }
};
template <>
struct FilterLogit<kFilterF16> {
  typedef unsigned short Elem;
  static SGTOPK_DEVICE float widen(Elem h) { return hw::f16_to_float(h); }  // exact; a NaN's payload never matters
  static SGTOPK_DEVICE Elem narrow(float x) {
    const u32 bits = __float_as_uint(x), sign = (bits >> 16) & 0x8000u, a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<Elem>(sign | 0x7e00u);  // NaN: quiet
    if (a >= 0x477ff000u) return static_cast<Elem>(sign | 0x7c00u);  // 65520 and up round to infinity
    if (a >= 0x38800000u)                                           // normal: 2^-14 and up
      return static_cast<Elem>(sign | ((a + 0xfffu + ((a >> 13) & 1u) - (112u << 23)) >> 13));
    if (a <= 0x33000000u) return static_cast<Elem>(sign);  // 2^-25 and below: zero (the tie to even)
    const u32 e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;  // subnormal: m * 2^(e - 150) / 2^-24
    u32 r = m >> shift;
    const u32 rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (r & 1u))) ++r;  // may carry into the smallest normal, encoded alike
    return static_cast<Elem>(sign | r);
  }
};

template <typename Config>
struct FilterRowAgent {
  static constexpr int kThreads = Config::kThreads;
  typedef FilterLogit<Config::kDtype> Logit;
  typedef typename Logit::Elem Elem;
  static constexpr int kDigitBits = kFilterDigitBits;
  static constexpr int kDigits = 1 << kDigitBits;
  static constexpr u64 kMassOne = u64{1} << 40;
  // Top-p alone by a count of each 16-bit pattern
  // (Config::kPatternBins, where declared; top_p_by_patterns).
  template <typename C>
  static constexpr bool pattern_bins_on(decltype(C::kPatternBins)*) {
    return C::kPatternBins != 0;
  }
  template <typename C>
  static constexpr bool pattern_bins_on(...) {
    return false;
  }
  static constexpr bool kPatternBins = pattern_bins_on<Config>(nullptr);
  // The rows this kernel takes (Config::kRows, where declared; abi.h's kFilterRows*).
  template <typename C>
  static constexpr int rows_taken(decltype(C::kRows)*) {
    return C::kRows;
  }
  template <typename C>
  static constexpr int rows_taken(...) {
    return kFilterRowsAll;
  }
  static constexpr int kRows = rows_taken<Config>(nullptr);
  // The candidate buffer's keys (Config::kCandidates, where declared; abi.h's FilterRowShared).
  template <typename C>
  static constexpr int candidates_held(decltype(C::kCandidates)*) {
    return C::kCandidates;
  }
  template <typename C>
  static constexpr int candidates_held(...) {
    return kFilterCandidates;
  }
  static constexpr int kCandidates = candidates_held<Config>(nullptr);
  static_assert(kCandidates >= 64 && kCandidates <= kFilterCandidates, "filter.candidate_buffer: 64..8192");
  static constexpr unsigned kSharedBytes = filter_row_shared_bytes(kCandidates) + (kPatternBins ? kFilterPatternBinBytes : 0u);
  static constexpr int kSampleSize = Config::kSampleSize;          // top-k's sample
  static constexpr int kTopPSampleSize = Config::kTopPSampleSize;  // top-p alone's
  static constexpr int kSampleSigmas = Config::kSampleSigmas;
  // The candidate or sample output compiled in (abi.h's kFilterOut*).
  static constexpr bool kMoreOutputs = (Config::kOutputs & (kFilterOutCandidates | kFilterOutSample)) != 0;
  static_assert(!kMoreOutputs || (kCandidates & (kCandidates - 1)) == 0,
                "the candidate output's sort (sort_candidates) pads the buffer to a power of two");
  static constexpr int kLoadsInFlight = Config::kLoadsInFlight;  // 16-byte loads a thread has in flight in stream_row
  // The exact route's passes (for_each_key): one load in flight where the
  // outputs' code leaves no registers for more (ptxas would spill).
  static constexpr int kExactLoads = kMoreOutputs ? 1 : kLoadsInFlight;
  // largest_key's pass over the unscaled keys, and row_mass's scaling
  // taken out of its loop (by_scaling), where they leave ptxas registers
  // enough: with the outputs' code, and the former in fp16, the kernels
  // spilled at 64 a thread.
  static constexpr bool kUnscaledLargest = !kMoreOutputs && Config::kDtype != kFilterF16;
  static constexpr bool kRowMassByScaling = !kMoreOutputs;
  // The streamed passes' elements in selects, no branch an element, so that
  // ptxas interleaves a vector's dependent chains (a branch an element left
  // them stalled one at a time): where registers allow, the mask kernels of
  // up to 512 threads; the others spilled at 64 a thread.
  static constexpr bool kBranchFreePasses = !kMoreOutputs && kThreads <= 512;
  // Keys warp 0 sorts in registers, two a lane, where digit rounds would
  // take 2048-bin histograms (top_p_few, few_keys_boundary).
  static constexpr int kFewSurvivors = 64;
  // Top-k with top-p over the 64 largest keys (BlockTopKeys,
  // top_k_with_top_p) in the split's kernels only: the one-CTA kernel, at
  // 64 registers a thread, spilled with it.
  template <typename C>
  static constexpr bool splits_rows(decltype(C::kSegments)*) {
    return true;
  }
  template <typename C>
  static constexpr bool splits_rows(...) {
    return false;
  }
  static constexpr bool kWarpSelect = splits_rows<Config>(nullptr);
  static constexpr int kPerVector = 16 / static_cast<int>(sizeof(Elem));  // elements of one 16-byte load
  static constexpr u32 kNotKept = 0xffffffffu;  // a candidate_index that is no row index (rows < 2^23)
  static_assert(kThreads % 32 == 0, "the passes use whole warps");
  static_assert(kLoadsInFlight >= 1 && kLoadsInFlight <= 8, "filter.loads_in_flight: 1..8");
  // A row's route: the sampled one decided it; the sampled one failed and
  // the exact one ran; the sample predicted a failure and the exact one ran.
  enum Route { kRouteSampled, kRouteFallback, kRouteExact };

  typedef FilterRowShared<kCandidates> Shared;
  static_assert(kDigitBits == 11, "boundary() resolves 32-bit keys in rounds of 11, 11 and 10 bits");

  // Where a digit round found the rank: the digit, and the count or mass of
  // the keys above it within the round's group.
  struct Found {
    u32 digit;
    u64 above;
  };

  // x / T rounded to float exactly as IEEE float division rounds it, for
  // inverse = 1 / T rounded to double (T > 0 finite), with no division: the
  // product in double is within 2^-52 (relative) of x / T, while x / T lies
  // at least 2^-49 from every rounding boundary of float. A midpoint m =
  // M 2^c (M odd, of 25 bits) is no x / T, since x = m T would give x an
  // odd factor of 25 bits or more; so x - m T, a multiple of 2^c ulp(T), is
  // at least 2^c ulp(T) > m T 2^-49 (subnormal quotients: coarser
  // boundaries). Both round alike; the doubles neither overflow nor
  // underflow; NaN stays NaN. The float division's slow path, inlined into
  // every pass, cost registers: a CTA of 1024 spilled.
  static SGTOPK_DEVICE float divide(float x, double inverse) {
    return static_cast<float>(static_cast<double>(x) * inverse);
  }

  // Whether a row's temperature scales, known at compile time inside a
  // pass (by_scaling).
  template <bool kScales>
  struct ScalingIs {
    static constexpr bool value = kScales;
  };

  struct Row {
    static constexpr bool kStreamed = true;  // for_each_key reads it in 16-byte loads
    const Elem* logits;
    int len;
    double inverse;  // 1 / T in double (correctly rounded): divide()'s factor
    bool scales;
    // Widened exactly, then scaled in float as fp32 logits are.
    SGTOPK_DEVICE float scale(Elem e) const {
      const float x = Logit::widen(e);
      return scales ? divide(x, inverse) : x;
    }
    template <bool kScales>
    SGTOPK_DEVICE float scale(Elem e, ScalingIs<kScales>) const {
      const float x = Logit::widen(e);
      if constexpr (kScales) return divide(x, inverse);
      else return x;
    }
    SGTOPK_DEVICE float scaled(int i) const { return scale(logits[i]); }
    SGTOPK_DEVICE u32 key(int i) const { return ordered_key(scaled(i)); }
    SGTOPK_DEVICE u32 index(int i) const { return static_cast<u32>(i); }
  };

  // The gathered candidates, read as a Row is: the value of a key is the
  // scaled value it came from (+0 for -0, a NaN for a NaN: the same mass);
  // `rows` (where set) their row indices.
  struct Candidates {
    static constexpr bool kStreamed = false;
    const u32* keys;
    int len;
    const u32* rows;
    SGTOPK_DEVICE float scaled(int i) const { return float_from_ordered_key(keys[i]); }
    SGTOPK_DEVICE u32 key(int i) const { return keys[i]; }
    SGTOPK_DEVICE u32 index(int i) const { return rows[i]; }
  };

  // The copies of b in `src` (the row, or candidates with their indices), as
  // keys that order them by index (the lowest first) above every other
  // element (0): a count round over them finds the j-th copy's index.
  template <typename Source>
  struct CopiesOf {
    static constexpr bool kStreamed = false;
    Source src;  // a copy (a few words): no address taken, no local memory
    u32 b;
    int len;
    SGTOPK_DEVICE float scaled(int) const { return 0.0f; }  // counted, never weighed
    SGTOPK_DEVICE u32 key(int i) const { return src.key(i) == b ? ~src.index(i) : 0u; }
  };

  // Mass of a scaled value relative to the largest survivor `top` (its key
  // and value), in units of 2^-40: expf(x - top) for numbers; with top = +inf
  // each +inf shares one unit and all else is 0; -inf and NaN are 0.
  // kSelects: the same units in selects, no branch (x - top is -inf or NaN
  // for x = -inf, NaN, or top = +inf, whose units are 0; x <= top, so x is
  // +inf only where top is).
  template <bool kSelects = false>
  static SGTOPK_DEVICE u64 mass_of(float x, float top) {
    if constexpr (kSelects) {
      const float v = expf(x - top) * 1099511627776.0f;  // m 2^40: exact
      return hw::round_half_up_u64(x == __int_as_float(0x7f800000) && top == x ? 1099511627776.0f : v);
    } else {
      if (top == __int_as_float(0x7f800000)) return x == top ? kMassOne : 0u;
      if (!(x - x == 0.0f)) return 0u;  // -inf, NaN
      return mass_units(expf(x - top));
    }
  }
  // floor(m 2^40 + 0.5) for 0 <= m < 2^23, the product in double's value
  // (equal for every such float, checked over all of them) without its
  // conversions to and from double, at a quarter of the float rate.
  static SGTOPK_DEVICE u64 mass_units(float m) {
    const float v = m * 1099511627776.0f;                 // m 2^40: exact
    if (v >= 8388608.0f) return static_cast<u64>(v);       // 2^23 and up: an integer
    return hw::round_half_up(v);
  }

  // Adds mass m (< 2^64 over the bin's sum) to bin d with 32-bit shared
  // atomics: a 64-bit one is a compare-and-swap loop, slow where many keys
  // share a digit. The low word wraps; each wrap adds one to the high word.
  // finish_mass() makes the sums.
  static SGTOPK_DEVICE void add_mass(Shared& s, u32 d, u64 m) {
    const u32 low = static_cast<u32>(m);
    u32 high = static_cast<u32>(m >> 32);
    if (low != 0u) {
      const u32 before = atomicAdd(&s.mass_words[0][d], low);
      if (before + low < before) ++high;
    }
    if (high != 0u) atomicAdd(&s.mass_words[1][d], high);
  }
  // The mass bins as scan_digits reads them. finish_mass() ends a pass of
  // add_mass (its barrier included): where a thread owns at most two bins
  // (1024 threads) it joins each bin's words into s.mass in place, one load
  // a bin in the scan; with more, the scan reads the two words (joining
  // would hold them all in registers across a barrier). Either way no spill
  // at 64 registers a thread.
  static constexpr bool kJoinMass = kDigits / kThreads <= 2;
  struct MassBins {
    const Shared* s;
    SGTOPK_DEVICE u64 operator[](int d) const {
      if constexpr (kJoinMass) return s->mass[d];
      else return (static_cast<u64>(s->mass_words[1][d]) << 32) | s->mass_words[0][d];
    }
  };
  static SGTOPK_DEVICE MassBins finish_mass(Shared& s) {
    __syncthreads();
    if constexpr (kJoinMass) {
      constexpr int kPer = kDigits / kThreads;
      u64 sum[kPer];
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int d = static_cast<int>(threadIdx.x) + j * kThreads;
        sum[j] = (static_cast<u64>(s.mass_words[1][d]) << 32) | s.mass_words[0][d];
      }
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kPer; ++j) s.mass[static_cast<int>(threadIdx.x) + j * kThreads] = sum[j];
      __syncthreads();
    }
    return MassBins{&s};
  }

  // The digit, from the top, where the running sum of `bins` reaches
  // `target` (>= 1), and the sum above it; digit 0 when the bins hold less.
  // Thread t owns kPer consecutive digits from the top: a block prefix sum
  // in thread order is the sum above its digits, and the one thread whose
  // run holds the target reads it again. Every thread gets the answer.
  template <typename Bins>
  static SGTOPK_DEVICE Found scan_digits(const Bins& bins, u64 target, u64* scratch) {
    u64 total;
    return scan_bins<kDigits>(bins, [&](u64) { return target; }, scratch, &total);
  }
  // scan_digits over kBins bins, the target a function of their total
  // (target_of(total); 0: no search, the answer undefined), the total in
  // *total for every thread.
  template <int kBins, typename Bins, typename TargetOf>
  static SGTOPK_DEVICE Found scan_bins(const Bins& bins, TargetOf&& target_of, u64* scratch, u64* total) {
    constexpr int kPer = kBins / kThreads;
    static_assert(kBins % kThreads == 0, "the bins split evenly over the threads");
    const int first = kBins - (static_cast<int>(threadIdx.x) + 1) * kPer;  // the lowest bin owned
    constexpr int kUnroll = kPer <= 16 ? kPer : 8;  // a digit scan's few bins whole, 64 patterns by eights
    u64 owned = 0;
#pragma unroll kUnroll
    for (int j = 0; j < kPer; ++j) owned += bins[first + j];
    u64 above = block_exclusive_sum<kThreads, u64>(owned, scratch, total);
    const u64 target = target_of(*total);
    if (target != 0u && above < target && (target <= above + owned || first == 0)) {  // one thread
      u32 d = static_cast<u32>(first + kPer - 1);
      for (;; --d) {
        if (above + bins[d] >= target || d == static_cast<u32>(first)) break;
        above += bins[d];
      }
      scratch[33] = d;
      scratch[34] = above;
    }
    __syncthreads();
    return Found{static_cast<u32>(scratch[33]), scratch[34]};
  }

  // The boundary key of the `target`-th unit from the top, counting keys
  // (mass == false) or their mass (relative to `top`), over the keys of
  // `row` (the row, or the candidates when they hold every key counted) that
  // survive top-k: above bk, or bk itself counted `tk` times (tk ==
  // 0xffffffff: no top-k). Rounds before `round` are resolved already:
  // `prefix` holds their digits, `above` the units above the group. Returns
  // B and sets *above_out to the units strictly above it.
  template <bool kFewMass = false, typename Source>
  static SGTOPK_DEVICE u32 boundary(Shared& s, const Source& row, u64 target, bool mass, float top, u32 bk, u32 tk,
                                    int round, u32 prefix, u64 above, u64* above_out) {
    // The few-keys finish: over candidates, not with the outputs' code; for
    // mass rounds (which then count keys by digit too) only where kFewMass
    // (the sample's: with it at every call, ptxas spilled).
    constexpr bool kFewKeys = !Source::kStreamed && !kMoreOutputs;
    constexpr bool kFewMassKeys = kFewKeys && kFewMass;
    for (; round < 3; ++round) {
      const int shift = round == 0 ? 21 : round == 1 ? 10 : 0;
      const int bits = round == 2 ? 10 : 11;
      const u32 group_mask = round == 0 ? 0u : ~((1u << (shift + bits)) - 1u);  // the digits resolved so far
      for (int i = threadIdx.x; i < kDigits; i += kThreads) {
        s.count[i] = 0u;
        s.mass_words[0][i] = s.mass_words[1][i] = 0u;
      }
      __syncthreads();
      for_each_key(row, [&](float x, u32 key, int) {
        if ((key & group_mask) != prefix) return;
        if (tk != 0xffffffffu && key <= bk) return;  // bk's copies: added once below
        const u32 d = (key >> shift) & ((1u << bits) - 1u);
        if (mass) add_mass(s, d, mass_of(x, top));
        if (!mass || kFewMassKeys) atomicAdd(&s.count[d], 1u);
      });
      if (threadIdx.x == 0 && tk != 0xffffffffu && tk > 0u && (bk & group_mask) == prefix) {
        const u32 d = (bk >> shift) & ((1u << bits) - 1u);
        if (mass) add_mass(s, d, static_cast<u64>(tk) * mass_of(float_from_ordered_key(bk), top));
        if (!mass || kFewMassKeys) atomicAdd(&s.count[d], tk);
      }
      Found f;
      if (mass) {
        f = scan_digits(finish_mass(s), target - above, s.scratch);
      } else {
        __syncthreads();
        f = scan_digits(s.count, target - above, s.scratch);
      }
      above += f.above;
      prefix |= f.digit << shift;
      u32 in_digit = 0xffffffffu;  // the group's keys left for the next round, where the few-keys finish may take them
      if constexpr (kFewKeys) {
        if ((!mass || kFewMassKeys) && round < 2) in_digit = s.count[f.digit];
      }
      __syncthreads();  // scratch and bins are rewritten next
      if (in_digit <= static_cast<u32>(kFewSurvivors))
        return few_keys_boundary(s, row, target, mass, top, above, prefix, ~((1u << shift) - 1u), bk, tk, above_out);
    }
    *above_out = above;
    return prefix;
  }

  // The keys of `c` in a group (key & mask == prefix) that a count takes
  // (above bk where tk is not 0xffffffff), up to kFewSurvivors of them, into
  // s.count (free between digit rounds), their number (past the capacity
  // too) after them. Returns s.count.
  template <typename Source>
  static SGTOPK_DEVICE const u32* gather_few_keys(Shared& s, const Source& c, u32 prefix, u32 mask, u32 bk, u32 tk) {
    u32* keys = s.count;
    if (threadIdx.x == 0) keys[kFewSurvivors] = 0u;
    __syncthreads();
    for (int base = 0; base < c.len; base += kThreads) {  // whole warps: warp_append
      const int i = base + static_cast<int>(threadIdx.x);
      const u32 key = i < c.len ? c.key(i) : 0u;
      const bool take = i < c.len && (key & mask) == prefix && (tk == 0xffffffffu || key > bk);
      const u32 slot = warp_append(take, &keys[kFewSurvivors]);
      if (take && slot < static_cast<u32>(kFewSurvivors)) keys[slot] = key;
    }
    __syncthreads();
    return keys;
  }

  // The inclusive prefix of `pair` over the warp's lanes (lane order is key
  // order: two keys a lane, sorted descending). Called by every lane of a warp.
  static SGTOPK_DEVICE u64 warp_running_mass(u64 pair) {
    const int lane = static_cast<int>(threadIdx.x & 31u);
    u64 running = pair;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const u64 o = __shfl_up_sync(0xffffffffu, running, static_cast<unsigned>(d));
      if (lane >= d) running += o;
    }
    return running;
  }

  // Over a warp's keys sorted descending two a lane (v, their masses m0 and
  // m1, `running` warp_running_mass(m0 + m1)): the key at which the running
  // mass first reaches `goal` (which the warp's total reaches), and in
  // *mass_above the mass of the keys above it; every lane the same.
  static SGTOPK_DEVICE u32 warp_mass_boundary(const u32 (&v)[2], u64 m0, u64 m1, u64 running, u64 goal,
                                              u64& mass_above) {
    const int lane = static_cast<int>(threadIdx.x & 31u);
    const u64 before = running - m0 - m1;
    const bool at0 = before < goal && before + m0 >= goal;
    const bool at1 = before + m0 < goal && running >= goal;
    const int first = __ffs(__ballot_sync(0xffffffffu, at0 || at1)) - 1;
    const u32 key = __shfl_sync(0xffffffffu, at0 ? v[0] : v[1], first);
    u64 above = (v[0] > key ? m0 : 0u) + (v[1] > key ? m1 : 0u);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) above += __shfl_sync(0xffffffffu, above, lane ^ d);
    mass_above = above;
    return key;
  }

  // The end of boundary()'s rounds over candidates where a round leaves at
  // most kFewSurvivors keys in the group (`mask` the digits resolved,
  // `prefix` their values, `above` the units above the group): warp 0 sorts
  // them (bk as tk copies) and takes the key where the units from the top
  // reach the target (counting: the one of rank target - above; mass: a
  // running sum in key order, equal keys carrying equal masses), where two
  // more rounds would take 2048-bin histograms. The same key and units
  // above it as the rounds.
  template <typename Source>
  static SGTOPK_DEVICE u32 few_keys_boundary(Shared& s, const Source& c, u64 target, bool mass, float top, u64 above,
                                             u32 prefix, u32 mask, u32 bk, u32 tk, u64* above_out) {
    const u32* keys = gather_few_keys(s, c, prefix, mask, bk, tk);
    if (threadIdx.x < 32) {
      const int lane = static_cast<int>(threadIdx.x);
      const u32 n = keys[kFewSurvivors];
      const u32 copies = tk != 0xffffffffu && (bk & mask) == prefix ? tk : 0u;
      u32 v[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // element 2 lane + h: a key of the group, a copy of bk, or 0 (none)
        const u32 e = static_cast<u32>(2 * lane + h);
        v[h] = e < n ? keys[e] : e < n + copies ? bk : 0u;
      }
      WarpKeys64::sort_descending(v);
      u32 bp;
      u64 units_above;
      if (!mass) {
        bp = WarpKeys64::element(v, static_cast<u32>(target - above) - 1u);  // the boundary's, in descending order
        units_above = WarpKeys64::count_above(v, bp);
      } else {  // the elements past the group are key 0, NaN's: no mass
        const u64 m0 = mass_of(float_from_ordered_key(v[0]), top), m1 = mass_of(float_from_ordered_key(v[1]), top);
        bp = warp_mass_boundary(v, m0, m1, warp_running_mass(m0 + m1), target - above, units_above);
      }
      if (lane == 0) {
        s.scratch[33] = bp;
        s.scratch[34] = above + units_above;
      }
    }
    __syncthreads();
    const u32 b = static_cast<u32>(s.scratch[33]);
    *above_out = s.scratch[34];
    __syncthreads();  // scratch and count are rewritten next
    return b;
  }

  // Writes the row: kept where key > b, or key == b at a row index below
  // `end` (kEveryCopy: every copy of b; 0: none), else mask_value: the
  // kept set as a prefix of the order. One pass of 16-byte loads and no
  // barrier, 16-byte stores where the output row lines up with the logits
  // (scalar stores made the pass twice its read). Each element is read and
  // then written by one thread, so `out` may be the logits.
  // With kGatherCopies (end kEveryCopy) the pass also appends b's copies'
  // row indices to the candidate buffer (for write_copies_prefix).
  static constexpr u32 kEveryCopy = 0xffffffffu;
  template <bool kGatherCopies = false>
  static SGTOPK_DEVICE void write_order_prefix(Shared& s, const Row& row, Elem* out, u32 b, u32 end, Elem mask_value) {
    const bool vectors = ((reinterpret_cast<u64>(out) - reinterpret_cast<u64>(row.logits)) & 15u) == 0u;
    const u32 mask_bits = bits_of(mask_value);
    by_scaling(row, [&](auto scaling) {
      auto each = [&](const u32(&words)[4], int first, u32 valid) {
        u32 take = 0u;  // b's copies, where gathered
        auto kept = [&](Elem x, int u) {
          const u32 key = pass_key(row.scale(x, scaling));
          if constexpr (kGatherCopies) take |= static_cast<u32>(key == b) << u;
          return key > b || (key == b && static_cast<u32>(first + u) < end);
        };
        if (vectors && valid == (1u << kPerVector) - 1u) {  // a whole vector of the body
          u32 o[4] = {words[0], words[1], words[2], words[3]};
#pragma unroll
          for (int u = 0; u < kPerVector; ++u)
            if (!kept(element(words, u), u)) set_element(o, u, mask_bits);
          store_vector(out + first, o);
        } else {
#pragma unroll
          for (int u = 0; u < kPerVector; ++u)
            if ((valid >> u) & 1u) {
              const Elem x = element(words, u);  // kept: its bits untouched
              out[first + u] = kept(x, u) ? x : mask_value;
            }
        }
        if constexpr (kGatherCopies) append_taken(s, words, take, static_cast<u32>(first));
      };
      stream_row<kExactLoads>(row.logits, row.len, each);
    });
  }

  // Gathered row indices as keys that order them (the lowest first): a
  // count round over them finds the j-th lowest.
  struct IndexOrder {
    static constexpr bool kStreamed = false;
    const u32* rows;
    int len;
    SGTOPK_DEVICE float scaled(int) const { return 0.0f; }  // counted, never weighed
    SGTOPK_DEVICE u32 key(int i) const { return ~rows[i]; }
  };

  // write_order_prefix's `end` for (b, t): one past the row index of the
  // t-th copy of b by index (kEveryCopy where t reaches the copies). One
  // pass of 16-byte loads gathers the copies' indices into the candidate
  // buffer (one shared atomic a warp, none where no lane holds a copy), a
  // count round over them finds the t-th: 16-bit logits tie often, and
  // write_mask's ranks, a barrier every kThreads elements, made its pass
  // latency-bound. kTooManyCopies where the buffer does not hold them.
  static constexpr u32 kTooManyCopies = 0xfffffffeu;  // no end: rows hold < 2^23 tokens
  static SGTOPK_DEVICE u32 copies_end(Shared& s, const Row& row, u32 b, u32 t) {
    if (t == 0u) return 0u;
    __syncthreads();  // earlier readers of the candidate buffer are done
    if (threadIdx.x == 0) s.candidates = 0u;
    __syncthreads();
    by_scaling(row, [&](auto scaling) {
      auto visit = [&](const u32(&words)[4], int first, u32 valid) {
        u32 take = 0u;
        for_each_element(words, valid, [&](int u, Elem e, bool in) {
          take |= static_cast<u32>(in && pass_key(row.scale(e, scaling)) == b) << u;
        });
        append_taken(s, words, take, static_cast<u32>(first));
      };
      stream_row<kExactLoads>(row.logits, row.len, visit);
    });
    __syncthreads();
    const u32 n = s.candidates;
    if (t >= n) return kEveryCopy;
    if (n > static_cast<u32>(kCandidates)) return kTooManyCopies;
    u64 above = 0;
    return ~boundary(s, IndexOrder{s.candidate_index, static_cast<int>(n)}, t, false, 0.0f, 0u, 0xffffffffu, 0, 0u,
                     0u, &above) + 1u;
  }

  // write_order_prefix for (b, t) where the row holds `copies` copies of b
  // and 0 < t < copies <= kCandidates: one pass keeps every copy and
  // gathers their indices, then the copies past the t-th by index are
  // masked, a store each. copies_end's pass saved: 16-bit logits tie often.
  // Compiled into the top-p-alone kernel over 16-bit logits only: there
  // the copies pass was a fifth of the time, and the 64-register kernels
  // with top-k (where a tie at the boundary is rare) spilled with it.
  static constexpr bool kCopiesInWrite = kRows == kFilterRowsTopPAlone && Config::kDtype != kFilterF32 && !kMoreOutputs;
  static SGTOPK_DEVICE void write_copies_prefix(Shared& s, const Row& row, Elem* out, u32 b, u32 t, Elem mask_value) {
    __syncthreads();  // earlier readers of the candidate buffer are done
    if (threadIdx.x == 0) s.candidates = 0u;
    __syncthreads();
    write_order_prefix<true>(s, row, out, b, kEveryCopy, mask_value);
    __syncthreads();  // every copy is appended, and every store of the pass is seen by the block
    const u32 n = min_of(s.candidates, static_cast<u32>(kCandidates));  // == copies
    u64 above = 0;
    const u32 end = ~boundary(s, IndexOrder{s.candidate_index, static_cast<int>(n)}, t, false, 0.0f, 0u, 0xffffffffu, 0,
                              0u, 0u, &above) + 1u;
    for (u32 i = threadIdx.x; i < n; i += kThreads) {
      const u32 at = s.candidate_index[i];
      if (at >= end) out[at] = mask_value;
    }
  }

  // Writes the row: kept where key > b, or key == b among the first t by
  // index; else mask_value. Ranks of b's copies are counted only in a chunk
  // where the t-th copy falls (elsewhere they are all kept or all not).
  static SGTOPK_DEVICE void write_mask(Shared& s, const Row& row, Elem* out, u32 b, u32 t, Elem mask_value) {
    u32 seen = 0;  // copies of b before this chunk
    for (int base = 0; base < row.len; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const u32 key = i < row.len ? row.key(i) : 0u;
      const bool copy = i < row.len && key == b;
      // A barrier too: the previous chunk's scan has been read.
      const u32 copies = static_cast<u32>(__syncthreads_count(copy));
      bool copy_kept = seen + copies <= t;
      if (copies != 0u && seen < t && seen + copies > t) {  // block-uniform
        u32 total;
        const u32 rank = seen + block_exclusive_sum<kThreads>(copy ? 1u : 0u, reinterpret_cast<u32*>(s.scratch), &total);
        copy_kept = rank < t;
      }
      if (i < row.len) {
        const bool kept = key > b || (copy && copy_kept);
        const Elem x = row.logits[i];  // kept: its bits untouched
        out[i] = kept ? x : mask_value;
      }
      seen += copies;
    }
  }

  // The survivors' total mass over `row` (which holds every survivor): keys
  // above b, and t copies of b (t == 0xffffffff: every key survives).
  template <typename Source>
  static SGTOPK_DEVICE u64 survivors_mass(Shared& s, const Source& row, float top, u32 b, u32 t) {
    u64 local = 0;
    for_each_key(row, [&](float x, u32 key, int) {
      if (t == 0xffffffffu || key > b) local += mass_of(x, top);
    });
    if (threadIdx.x == 0) s.total = 0u;
    __syncthreads();
    // The warps' sums: with the outputs' code (no top-p alone there), the
    // reduction's registers would spill 8 bytes, and each thread adds its own.
    if constexpr (kMoreOutputs) atomicAdd(reinterpret_cast<unsigned long long*>(&s.total), static_cast<unsigned long long>(local));
    else add_block_sum(&s.total, local);
    __syncthreads();
    u64 total = s.total;
    if (t != 0xffffffffu) total += static_cast<u64>(t) * mass_of(float_from_ordered_key(b), top);
    __syncthreads();
    return total;
  }

  // Top-p over the survivors of top-k (b, t; t == 0xffffffff: none), the
  // keys of `row` holding every one of them: sets b and t to the kept set's.
  template <typename Source>
  static SGTOPK_DEVICE void top_p_boundary(Shared& s, const Source& row, float top_p, u32 max_key, u32& b, u32& t) {
    const float top = float_from_ordered_key(max_key);
    const u64 total = survivors_mass(s, row, top, b, t);
    if (top_p <= 0.0f || total == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return;
    }
    const u64 target = mass_target(top_p, total);
    u64 mass_above = 0;
    const u32 bp = boundary(s, row, target, true, top, b, t, 0, 0u, 0u, &mass_above);
    const u64 each = mass_of(float_from_ordered_key(bp), top);
    const u64 need = (target - mass_above + each - 1u) / each;
    t = (bp == b && t != 0xffffffffu) ? min_of(t, static_cast<u32>(need)) : static_cast<u32>(need);
    b = bp;
  }

  // Top-p over top-k's survivors sorted descending in a warp's registers
  // (two a lane, 0 past them: no mass), which end in t copies of b: sets b
  // and t to the kept set's. Called by every lane of the warp.
  static SGTOPK_DEVICE void warp_top_p(const u32 (&v)[2], float top_p, u32 max_key, u32& b, u32& t) {
    const float top = float_from_ordered_key(max_key);
    const u64 m0 = mass_of(float_from_ordered_key(v[0]), top), m1 = mass_of(float_from_ordered_key(v[1]), top);
    const u64 running = warp_running_mass(m0 + m1);
    const u64 total = __shfl_sync(0xffffffffu, running, 31);
    if (top_p <= 0.0f || total == 0u) {  // no mass, or p <= 0: the first token of the order only
      b = max_key;
      t = 1u;
      return;
    }
    const u64 target = mass_target(top_p, total);
    u64 mass_above = 0;
    const u32 bp = warp_mass_boundary(v, m0, m1, running, target, mass_above);
    const u64 each = mass_of(float_from_ordered_key(bp), top);
    const u32 need = static_cast<u32>((target - mass_above + each - 1u) / each);
    t = bp == b ? min_of(t, need) : need;
    b = bp;
  }

  // Top-p over at most kFewSurvivors top-k survivors (the keys of `c` above
  // b, and t copies of b) where top_k_with_top_p does not run: warp 0
  // sorts their keys (a bitonic sort in registers, two a lane) and scans their masses
  // in that order (warp_top_p), where the digit rounds would take 2048-bin
  // histograms. The same b and t as top_p_boundary().
  static SGTOPK_DEVICE void top_p_few(Shared& s, const Candidates& c, float top_p, u32 max_key, u32& b, u32& t) {
    const u32* keys = gather_few_keys(s, c, 0u, 0u, b, 0u);  // the keys above b
    u32 nb = b, nt = t;
    if (threadIdx.x < 32) {
      const int lane = static_cast<int>(threadIdx.x);
      const u32 above = keys[kFewSurvivors];
      u32 v[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // element 2 lane + h: a key above b, a copy of b, or 0 (no mass)
        const u32 e = static_cast<u32>(2 * lane + h);
        v[h] = e < above ? keys[e] : e < above + t ? b : 0u;
      }
      WarpKeys64::sort_descending(v);
      warp_top_p(v, top_p, max_key, nb, nt);
    }
    from_thread_zero(s, nb, nt, b, t);
  }

  // Thread 0's nb and nt into every thread's b and t.
  static SGTOPK_DEVICE void from_thread_zero(Shared& s, u32 nb, u32 nt, u32& b, u32& t) {
    if (threadIdx.x == 0) {
      s.scratch[33] = nb;
      s.scratch[34] = nt;
    }
    __syncthreads();
    b = static_cast<u32>(s.scratch[33]);
    t = static_cast<u32>(s.scratch[34]);
    __syncthreads();  // scratch and count are rewritten next
  }

  // Top-k with k <= kFewSurvivors over candidates, then top-p over its
  // survivors: the 64 largest keys of `c` sorted in warp 0's registers
  // (BlockTopKeys: a warp sort of each piece of 64, a merge tree over the
  // warps). The k-th is b, the first k are the survivors (the keys above b
  // and t copies of b), and top-p scans their masses in that order, with no
  // gather and no second sort (top_p_few). The same integers as boundary()
  // and top_p_boundary() (equal keys carry equal masses, so the key where
  // the running mass reaches the target, and the copies it needs, are the
  // same): the same b and t.
  static SGTOPK_DEVICE void top_k_with_top_p(Shared& s, const Candidates& c, int k, float top_p, u32 max_key, u32& b,
                                             u32& t) {
    static_assert(BlockTopKeys<kThreads>::kListKeys <= kDigits, "the merge tree's lists fit s.count");
    u32 v[2];
    BlockTopKeys<kThreads>::largest(c.len, [&](int i) { return c.key(i); }, s.count, v);
    u32 nb = 0u, nt = 0u;
    if (threadIdx.x < 32) {
      const int lane = static_cast<int>(threadIdx.x);
      nb = WarpKeys64::element(v, static_cast<u32>(k - 1));
      nt = static_cast<u32>(k) - WarpKeys64::count_above(v, nb);
#pragma unroll
      for (int h = 0; h < 2; ++h)  // the survivors, then 0 (no mass)
        if (2 * lane + h >= k) v[h] = 0u;
      warp_top_p(v, top_p, max_key, nb, nt);
    }
    from_thread_zero(s, nb, nt, b, t);
  }

  // Top-p over top-k's survivors where they are too many for warp 0 and
  // few enough for the CTA's pieces (kFewSurvivors < k <= kSortedSurvivors,
  // b and t top-k's boundary over `c`): the keys above b gathered, t copies
  // of b after them, sorted descending across the CTA (BlockSortKeys), their
  // masses scanned in that order. Where three mass rounds over the
  // candidates would each take a 2048-bin histogram. The same b and t as
  // top_p_boundary() (equal keys carry equal masses).
  typedef BlockSortKeys<kThreads> SortKeys;
  static constexpr int kSortedSurvivors = SortKeys::kMaxKeys;
  static_assert(SortKeys::kBufferKeys <= 2 * kDigits && kSortedSurvivors <= kDigits,
                "the sort's halves fit the mass bins, the gathered keys the count bins");
  static SGTOPK_DEVICE void top_p_sorted(Shared& s, const Candidates& c, int k, float top_p, u32 max_key, u32& b, u32& t) {
    u32* keys = s.count;  // the keys above b, in any order
    if (threadIdx.x == 0) {
      s.candidates = 0u;
      s.total = 0u;
    }
    __syncthreads();
    for (int base = 0; base < c.len; base += kThreads) {  // whole warps: warp_append
      const int i = base + static_cast<int>(threadIdx.x);
      const u32 key = i < c.len ? c.key(i) : 0u;
      const bool take = i < c.len && key > b;
      const u32 slot = warp_append(take, &s.candidates);
      if (take) keys[slot] = key;
    }
    __syncthreads();
    const int above = k - static_cast<int>(t);  // keys above b: top-k's count
    int size = WarpKeys64::kKeys;
    while (size < k) size <<= 1;
    const int first = static_cast<int>(threadIdx.x >> 5) * WarpKeys64::kKeys + 2 * static_cast<int>(threadIdx.x & 31u);
    u32 v[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) v[h] = first + h < above ? keys[first + h] : first + h < k ? b : 0u;
    SortKeys::sort(v, size, s.mass_words[0]);
    const float top = float_from_ordered_key(max_key);
    u64 m[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) m[h] = first + h < k ? mass_of(float_from_ordered_key(v[h]), top) : 0u;
    // The running mass in element order: each warp's, then the warps' before it.
    const u64 running = warp_running_mass(m[0] + m[1]);
    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31u);
    if (lane == 31) s.scratch[warp] = running;
    __syncthreads();
    const u64 warps = warp_running_mass(lane < kThreads / 32 ? s.scratch[lane] : 0u);
    const u64 total = __shfl_sync(0xffffffffu, warps, 31);
    const u64 before = (warp == 0 ? 0u : __shfl_sync(0xffffffffu, warps, warp - 1)) + running - m[0] - m[1];
    __syncthreads();  // every warp has read the warps' sums
    if (top_p <= 0.0f || total == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return;
    }
    const u64 target = mass_target(top_p, total);
    // The one element where the running mass first reaches the target.
    if (before < target && before + m[0] >= target) s.scratch[33] = v[0];
    if (before + m[0] < target && before + m[0] + m[1] >= target) s.scratch[33] = v[1];
    __syncthreads();
    const u32 bp = static_cast<u32>(s.scratch[33]);
    add_block_sum(&s.total, (v[0] > bp ? m[0] : 0u) + (v[1] > bp ? m[1] : 0u));
    __syncthreads();
    const u64 mass_above = s.total;
    __syncthreads();  // scratch, total and the bins are rewritten next
    const u64 each = mass_of(float_from_ordered_key(bp), top);
    const u32 need = static_cast<u32>((target - mass_above + each - 1u) / each);
    t = bp == b ? min_of(t, need) : need;
    b = bp;
  }

  // The mass top-p must reach: ceil(p * Z) in double, at least one unit.
  static SGTOPK_DEVICE u64 mass_target(float top_p, u64 total) {
    const double want = static_cast<double>(top_p) * static_cast<double>(total);
    u64 target = static_cast<u64>(want);
    if (static_cast<double>(target) < want) ++target;
    if (target == 0u) target = 1u;
    return target;
  }

  // The exact route's gather: every key of the row whose first digit lies
  // in [low, high] (`count` of them, counted by the first digit round and at
  // most kCandidates) into the candidate buffer, s.candidates at 0;
  // one shared atomic a warp.
  static SGTOPK_DEVICE Candidates gather_digits(Shared& s, const Row& row, u32 low, u32 high, u64 count) {
    for_each_key(row, [&](float, u32 key, int) {
      const bool take = (key >> 21) >= low && (key >> 21) <= high;
      const u32 slot = warp_append(take, &s.candidates);
      if (take) s.candidate_key[slot] = key;
    });
    __syncthreads();
    return Candidates{s.candidate_key, static_cast<int>(count)};
  }

  // Top-p alone (every key survives), after the pass that found max_key.
  // With a window (first digits low..high the sample chose, packed by
  // pack_window; 0: none), one pass sums every key's mass in registers (Z,
  // and the mass above the window) and gathers the window's keys into the
  // candidate buffer's keys and indices, read as one window of
  // keys (not in the kernels with the candidate or sample output, whose
  // registers leave none for it): where the target lies in the window, the
  // mass rounds run over its keys (window_boundary). Otherwise one pass
  // histograms every key's count and mass by its first digit (Z is the
  // mass histogram's sum), the first mass round; the keys of the digit it
  // finds are every key a later round counts (those above are its `above`):
  // where they fit the buffer one more pass gathers them, else rounds 1 and
  // 2 read the row. The same integers as top_p_boundary(row, ...) at every
  // step, hence the same b and t.
  static constexpr int kWindowKeys = 2 * kCandidates;
  static SGTOPK_DEVICE u32* window_keys(Shared& s) { return s.candidate_key; }  // and candidate_index after it
  struct WindowDigits {
    u32 low, high;  // empty (low > high): no window
  };
  static SGTOPK_DEVICE u32 pack_window(u32 low, u32 high) { return 0x80000000u | (low << kDigitBits) | high; }
  static SGTOPK_DEVICE WindowDigits window_digits(u32 window) {
    if (window == 0u || kMoreOutputs) return WindowDigits{1u, 0u};
    return WindowDigits{(window >> kDigitBits) & (kDigits - 1u), window & (kDigits - 1u)};
  }
  // The masses a window pass sums: Z, and that of the keys above the window.
  struct WindowSums {
    u64 z, above;
  };

  // The kept set's b and t from a window pass's sums where they decide it:
  // `window` holds the window digits' keys, `windowed` of them (counted
  // past kWindowKeys). Their mass is summed here (not in the pass, whose
  // registers leave none for a third sum); where the target lies in it, the
  // mass rounds run over the window's keys from the first digit round, the
  // mass above the window known. False where the boundary lies outside the
  // window or its keys overflowed: the histogram pass decides.
  static SGTOPK_DEVICE bool window_boundary(Shared& s, const u32* window, u32 windowed, const WindowSums& sums,
                                            u32 max_key, float top_p, u32& b, u32& t, u32* copies) {
    if (top_p <= 0.0f || sums.z == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return true;
    }
    const u64 target = mass_target(top_p, sums.z);
    if (windowed > static_cast<u32>(kWindowKeys) || sums.above >= target) return false;
    const float top = float_from_ordered_key(max_key);
    const Candidates c{window, static_cast<int>(windowed)};
    if (sums.above + survivors_mass(s, c, top, 0u, 0xffffffffu) < target) return false;
    u64 mass_above = 0;
    const u32 bp = boundary(s, c, target, true, top, 0u, 0xffffffffu, 0, 0u, sums.above, &mass_above);
    *copies = count_copies(c, bp);  // bp's digit is in the window: all its copies
    const u64 each = mass_of(float_from_ordered_key(bp), top);
    b = bp;
    t = static_cast<u32>((target - mass_above + each - 1u) / each);
    return true;
  }

  // The window pass (no histogram, no shared atomic but the window's
  // appends), then window_boundary. One load in flight where its elements
  // interleave (kBranchFreePasses): with two, the fp32 kernel spilled.
  // `digits` are first digits (the key's top 11 bits, kWindowShift 21) or
  // fp32's patterns (its top 16, 16).
  static constexpr int kWindowLoads = kBranchFreePasses ? 1 : kExactLoads;
  template <int kWindowShift = 21>
  static SGTOPK_DEVICE bool top_p_window(Shared& s, const Row& row, float top_p, u32 max_key, u32& b, u32& t,
                                         u32* copies, const WindowDigits& digits) {
    const float top = float_from_ordered_key(max_key);
    u32* window = window_keys(s);
    if (threadIdx.x < 2) s.scratch[threadIdx.x] = 0u;
    if (threadIdx.x == 0) s.candidates = 0u;
    __syncthreads();
    u64 z = 0, above = 0;
    // A 16-byte step's window keys are appended together: one shared atomic
    // a warp, where an append an element cost a tenth of the pass.
    by_scaling(row, [&](auto scaling) {
      auto visit = [&](const u32(&words)[4], int, u32 valid) {
        u32 take = 0u;
        for_each_element(words, valid, [&](int u, Elem e, bool in) {
          const float x = row.scale(e, scaling);
          const u32 d = pass_key(x) >> kWindowShift;
          const u64 m = mass_of<kBranchFreePasses>(x, top);
          z += m;
          above += d > digits.high ? m : 0u;
          take |= static_cast<u32>(in && d - digits.low <= digits.high - digits.low) << u;
        });
        if (__ballot_sync(0xffffffffu, take != 0u) == 0u) return;
        u32 slot = warp_reserve(static_cast<u32>(__popc(take)), &s.candidates);
#pragma unroll
        for (int u = 0; u < kPerVector; ++u)
          if ((take >> u) & 1u) {
            if (slot < static_cast<u32>(kWindowKeys)) window[slot] = ordered_key(row.scale(element(words, u), scaling));
            ++slot;
          }
      };
      stream_row<kWindowLoads>(row.logits, row.len, visit);
    });
    add_block_sum(&s.scratch[0], z);
    add_block_sum(&s.scratch[1], above);
    __syncthreads();
    const WindowSums sums{s.scratch[0], s.scratch[1]};
    const u32 windowed = s.candidates;
    __syncthreads();  // every thread has read the sums and the window's count
    return window_boundary(s, window, windowed, sums, max_key, top_p, b, t, copies);
  }

  template <typename Source>
  static SGTOPK_DEVICE void top_p_alone(Shared& s, const Source& row, float top_p, u32 max_key, u32& b, u32& t,
                                        u32* copies, u32 window) {
    if constexpr (!kMoreOutputs) {
      const WindowDigits digits = window_digits(window);
      if (digits.low <= digits.high) {
        if (top_p_window(s, row, top_p, max_key, b, t, copies, digits)) return;
        __syncthreads();  // the window pass's shared state is read
      }
    }
    const float top = float_from_ordered_key(max_key);
    for (int i = threadIdx.x; i < kDigits; i += kThreads) {
      s.count[i] = 0u;
      s.mass_words[0][i] = s.mass_words[1][i] = 0u;
    }
    if (threadIdx.x == 0) s.total = 0u;
    __syncthreads();
    u64 local = 0;
    for_each_key(row, [&](float x, u32 key, int) {
      const u32 d = key >> 21;
      const u64 m = mass_of(x, top);
      local += m;
      atomicAdd(&s.count[d], 1u);
      add_mass(s, d, m);
    });
    add_block_sum(&s.total, local);
    const MassBins bins = finish_mass(s);  // its barriers order the total too
    const u64 total = s.total;
    __syncthreads();  // every thread has read the total
    if (top_p <= 0.0f || total == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return;
    }
    const u64 target = mass_target(top_p, total);
    const Found first = scan_digits(bins, target, s.scratch);
    const u64 candidates = s.count[first.digit];  // the later rounds count within its digit only
    __syncthreads();  // count is cleared by the next round
    u64 mass_above = 0;
    u32 bp;
    if (candidates <= static_cast<u64>(kCandidates)) {
      if (threadIdx.x == 0) s.candidates = 0u;
      __syncthreads();
      const Candidates c = gather_digits(s, row, first.digit, first.digit, candidates);
      bp = boundary(s, c, target, true, top, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &mass_above);
      *copies = count_copies(c, bp);  // bp's digit is the buffer's: all its copies
    } else {
      bp = boundary(s, row, target, true, top, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &mass_above);
    }
    const u64 each = mass_of(float_from_ordered_key(bp), top);
    b = bp;
    t = static_cast<u32>((target - mass_above + each - 1u) / each);
  }

  // ---- top-p alone over 16-bit logits by patterns (kPatternBins). Every
  // element of one 16-bit pattern has the same scaled value, key and
  // integer mass, so one pass counting the row's patterns (a 16-bit count
  // each, two to a word, in 128 KB after FilterRowShared) holds what top-p
  // needs: the largest key, Z, the boundary pattern and the copies it
  // keeps, with no second read and no window to miss. A logit's pattern
  // is its bits with the sign flipped (positive) or all flipped
  // (negative): value order, NaNs past the infinities (no mass), -0 just
  // below +0 (one key: the boundary takes both). False where a count
  // wrapped, or where more than two patterns share the boundary's key
  // (temperatures whose quotients are subnormal): today's route then runs.
  static constexpr int kPatterns = 1 << 16;
  static SGTOPK_DEVICE u32* pattern_bins(Shared& s) {
    return reinterpret_cast<u32*>(reinterpret_cast<unsigned char*>(&s) + filter_row_shared_bytes(kCandidates));
  }
  static SGTOPK_DEVICE u32 pattern_count(const u32* bins, u32 d) { return (bins[d >> 1] >> (16u * (d & 1u))) & 0xffffu; }
  // The patterns of a word's two 16-bit logits, in its two halves.
  static SGTOPK_DEVICE u32 patterns_of(u32 word) {
    const u32 negative = (word >> 15) & 0x00010001u;
    return word ^ (negative * 0x7fffu | 0x80008000u);
  }
  // +inf's pattern: those above it are NaNs.
  static constexpr u32 kHighestNumberPattern = Config::kDtype == kFilterBf16 ? 0xff80u : 0xfc00u;
  // The widened logit of pattern d.
  static SGTOPK_DEVICE float pattern_value(u32 d) {
    return Logit::widen(static_cast<Elem>(d & 0x8000u ? d & 0x7fffu : ~d & 0xffffu));
  }
  static SGTOPK_DEVICE float pattern_scaled(const Row& row, u32 d) {
    const float x = pattern_value(d);
    return row.scales ? divide(x, row.inverse) : x;
  }
  // The integer mass of every element of pattern d, relative to `top`.
  struct PatternMass {
    const u32* bins;
    const Row& row;
    float top;
    SGTOPK_DEVICE u64 operator[](int d) const {
      const u32 n = pattern_count(bins, static_cast<u32>(d));
      return n == 0u ? 0u : n * mass_of(pattern_scaled(row, static_cast<u32>(d)), top);
    }
  };
  // scan_bins over the patterns' bins: a thread's 64 bins in order left
  // the few warps holding the populated patterns (then one thread) with
  // nearly all of the masses to compute while the rest waited. Here each
  // warp sums chunks of 64 bins spread over the range (a lane two bins of
  // each) into s.mass, scan_bins runs over the chunks from the top, and
  // one warp finds the bin where the target falls in its chunk.
  static constexpr int kChunkBins = 64;
  static SGTOPK_DEVICE u64 warp_sum_wide(u64 v) {  // v's warp sum below 2^63: three 21-bit parts, each summed in 32 bits
    const u64 low = warp_sum(static_cast<u32>(v & 0x1fffffu)), middle = warp_sum(static_cast<u32>((v >> 21) & 0x1fffffu)),
              high = warp_sum(static_cast<u32>(v >> 42));
    return low + (middle << 21) + (high << 42);
  }
  template <typename Bins, typename TargetOf>
  static SGTOPK_DEVICE Found scan_patterns(Shared& s, const Bins& bins, TargetOf&& target_of, u64* total) {
    constexpr int kChunks = kPatterns / kChunkBins, kWarps = kThreads / 32, kPer = kChunks / kThreads;
    static_assert(kChunks <= (1 << kFilterDigitBits) && kChunks % kThreads == 0, "the chunks' sums fit s.mass, evenly");
    const int lane = static_cast<int>(threadIdx.x & 31u), warp = static_cast<int>(threadIdx.x >> 5);
#pragma unroll 4
    for (int c = warp; c < kChunks; c += kWarps) {
      const int d = c * kChunkBins + 2 * lane;
      // Most chunks hold no pattern (a row's values span few exponents):
      // one vote skips their masses and sums.
      u64 sum = 0u;
      if (__ballot_sync(0xffffffffu, bins.bins[d >> 1] != 0u) != 0u) sum = warp_sum_wide(bins[d] + bins[d + 1]);
      if (lane == 0) s.mass[c] = sum;
    }
    __syncthreads();
    u64 target = 0u;
    const Found chunk = scan_bins<kChunks>(s.mass, [&](u64 sum) { return target = target_of(sum); }, s.scratch, total);
    if (target == 0u) return Found{0u, 0u};  // no search (every thread's target)
    __syncthreads();  // every thread has read scan_bins' answer before warp 0 writes its own there
    if (warp == 0) {  // lane 0 the chunk's top pair
      const int d = static_cast<int>(chunk.digit) * kChunkBins + 2 * (31 - lane);
      const u64 chunk_above = chunk.above, upper = bins[d + 1], pair = upper + bins[d];
      u64 before = pair;
#pragma unroll
      for (int k = 1; k < 32; k <<= 1) {
        const u64 up = __shfl_up_sync(0xffffffffu, before, k);
        if (lane >= k) before += up;
      }
      const u64 from = chunk_above + before - pair;
      if (from < target && (target <= from + pair || lane == 31)) {
        const bool in_upper = from + upper >= target;
        s.scratch[33] = static_cast<u64>(in_upper ? d + 1 : d);
        s.scratch[34] = in_upper ? from : from + upper;
      }
    }
    __syncthreads();
    return Found{static_cast<u32>(s.scratch[33]), s.scratch[34]};
  }
  // The count pass's pieces: the bins, s.max_key and the counts' sum cleared; one count.
  static SGTOPK_DEVICE u32* clear_patterns(Shared& s) {
    u32* bins = pattern_bins(s);
    for (int i = threadIdx.x; i < kPatterns / 2; i += kThreads) bins[i] = 0u;
    if (threadIdx.x == 0) {
      s.max_key = 0u;
      s.candidates = 0u;  // the counts' sum
    }
    __syncthreads();
    return bins;
  }
  static SGTOPK_DEVICE void count_pattern(u32* bins, u32 d) { atomicAdd(&bins[d >> 1], d & 1u ? 0x10000u : 1u); }
  // After the count pass (and its barrier): whether every count held. A
  // count wraps only past 65535 elements, so a shorter row skips the check;
  // a longer one sums the counts into s.candidates (a wrap loses 65535 or
  // 65536 of it, so it equals the elements counted only where none
  // wrapped). Each lane starts a word further on: in order, a warp's lanes
  // would hit one bank. Every thread gets the answer.
  static SGTOPK_DEVICE bool counts_held(Shared& s, const u32* bins, const Row& row) {
    if (row.len <= 0xffff) return true;
    constexpr int kWords = kPatterns / 2 / kThreads;
    static_assert(kWords > 0 && (kWords & (kWords - 1)) == 0, "the rotation below masks by kWords - 1");
    const int first = static_cast<int>(threadIdx.x) * kWords;
    u32 sum = 0u;
#pragma unroll 8
    for (int j = 0; j < kWords; ++j) {
      const u32 word = bins[first + ((j + static_cast<int>(threadIdx.x)) & (kWords - 1))];
      sum += (word & 0xffffu) + (word >> 16);
    }
    sum = warp_sum(sum);
    if ((threadIdx.x & 31u) == 0u) atomicAdd(&s.candidates, sum);
    __syncthreads();
    return s.candidates == static_cast<u32>(row.len);
  }
  // The count pass's end: `largest` becomes the block's (through
  // s.max_key), and whether every count held comes back; every thread gets
  // both, and the barrier at the end lets the caller reuse s.
  static SGTOPK_DEVICE bool end_pattern_count(Shared& s, const u32* bins, const Row& row, u32& largest) {
    largest = warp_max(largest);
    if ((threadIdx.x & 31u) == 0u) atomicMax(&s.max_key, largest);
    __syncthreads();
    const bool held = counts_held(s, bins, row);
    largest = s.max_key;
    __syncthreads();  // every thread has read s.max_key and the check
    return held;
  }
  static SGTOPK_DEVICE bool top_p_by_patterns(Shared& s, const Row& row, float top_p, u32& max_key, u32& b, u32& t,
                                              u32* copies) {
    static_assert(kPatterns % kThreads == 0, "the patterns split evenly over the threads");
    if constexpr (Config::kDtype == kFilterF32) return top_p_by_key_patterns(s, row, top_p, max_key, b, t, copies);
    u32* bins = clear_patterns(s);
    // The largest pattern that is a number (NaNs' lie above +inf's); 0, a
    // NaN's, where there is none.
    u32 largest = 0u;
    auto count = [&](u32 d) {
      count_pattern(bins, d);
      largest = max_of(largest, d <= kHighestNumberPattern ? d : 0u);
    };
    auto visit = [&](const u32(&words)[4], int, u32 valid) {
      if (valid == (1u << kPerVector) - 1u) {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const u32 d = patterns_of(words[w]);
          count(d & 0xffffu);
          count(d >> 16);
        }
      } else {
#pragma unroll
        for (int u = 0; u < kPerVector; ++u)
          if ((valid >> u) & 1u) count(patterns_of(static_cast<u32>(element(words, u))) & 0xffffu);
      }
    };
    stream_row<kExactLoads>(row.logits, row.len, visit);
    const bool held = end_pattern_count(s, bins, row, largest);
    max_key = ordered_key(pattern_scaled(row, largest));  // no number: a NaN's pattern, key 0
    if (!held) return false;
    const float top = float_from_ordered_key(max_key);
    // Z is the patterns' total mass; the pattern where the mass from the top reaches p's target.
    u64 total, target = 0;
    const Found found = scan_patterns(
        s, PatternMass{bins, row, top},
        [&](u64 z) { return top_p <= 0.0f || z == 0u ? u64{0} : (target = mass_target(top_p, z)); }, &total);
    if (target == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return true;
    }
    const u32 d = found.digit;
    const u32 key = ordered_key(pattern_scaled(row, d));
    // The patterns of b's key, [low, high]: d and its neighbours of the
    // same key (-0 beside +0, a temperature's subnormal quotients), two at
    // most; the scan counted an upper one's mass above d.
    auto shares_key = [&](u32 e) { return e < static_cast<u32>(kPatterns) && ordered_key(pattern_scaled(row, e)) == key; };
    const u32 high = shares_key(d + 1u) ? d + 1u : d, low = d > 0u && shares_key(d - 1u) ? d - 1u : d;
    const bool more = high - low > 1u || shares_key(high + 1u) || (low > 0u && shares_key(low - 1u));
    const u64 each = mass_of(float_from_ordered_key(key), top);
    const u64 mass_above = found.above - (high != d ? pattern_count(bins, high) * each : 0u);
    const u32 copies_of_b = pattern_count(bins, low) + (high != low ? pattern_count(bins, high) : 0u);
    __syncthreads();  // every thread has read the answer and the bins
    if (more) return false;
    *copies = copies_of_b;
    b = key;
    t = static_cast<u32>((target - mass_above + each - 1u) / each);
    return true;
  }

  // fp32: a pattern is a scaled key's top 16 bits, and its elements'
  // masses differ, so the counts only name a window of patterns around the
  // boundary (a pattern's mass estimated at its middle key: speed only); the
  // window pass decides with exact masses, and where the boundary lies
  // outside the window (or a count wrapped), the histogram route. Three
  // reads with the mask's, no sample.
  static constexpr int kWindowPatternsEachSide = 4;
  struct EstimatedPatternMass {
    const u32* bins;
    u32 max_key;
    SGTOPK_DEVICE u64 operator[](int d) const {
      const u32 n = pattern_count(bins, static_cast<u32>(d));
      if (n == 0u) return 0u;
      const u32 middle = min_of((static_cast<u32>(d) << 16) | 0x8000u, max_key);  // NaN's pattern: NaN, no mass
      return n * mass_of(float_from_ordered_key(middle), float_from_ordered_key(max_key));
    }
  };
  static SGTOPK_DEVICE bool top_p_by_key_patterns(Shared& s, const Row& row, float top_p, u32& max_key, u32& b,
                                                  u32& t, u32* copies) {
    u32* bins = clear_patterns(s);
    u32 local_max = 0u;
    for_each_key(row, [&](float, u32 key, int) {
      local_max = max_of(local_max, key);
      count_pattern(bins, key >> 16);
    });
    bool windowed = end_pattern_count(s, bins, row, local_max);  // else the histogram route
    max_key = local_max;
    if (windowed) {
      u64 total, target = 0;
      const Found found = scan_patterns(
          s, EstimatedPatternMass{bins, max_key},
          [&](u64 z) { return top_p <= 0.0f || z == 0u ? u64{0} : (target = mass_target(top_p, z)); }, &total);
      if (top_p <= 0.0f) {  // the first token of the order only
        b = max_key;
        t = 1u;
        return true;
      }
      WindowDigits window{found.digit, found.digit};
      windowed = target != 0u;  // else no estimated mass (every key NaN or -inf), and no answer
      if (windowed) {
        u32 n = pattern_count(bins, found.digit);
#pragma unroll 1
        for (int i = 0; i < kWindowPatternsEachSide; ++i) {
          if (window.high + 1u < static_cast<u32>(kPatterns) && n + pattern_count(bins, window.high + 1u) <= kWindowKeys)
            n += pattern_count(bins, ++window.high);
          if (window.low > 0u && n + pattern_count(bins, window.low - 1u) <= kWindowKeys)
            n += pattern_count(bins, --window.low);
        }
        windowed = n <= static_cast<u32>(kWindowKeys);
      }
      __syncthreads();  // every thread has read the scan's answer and the bins
      if (windowed && top_p_window<16>(s, row, top_p, max_key, b, t, copies, window)) return true;
      __syncthreads();  // the window pass's shared state is read
    }
    top_p_alone(s, row, top_p, max_key, b, t, copies, 0u);
    return true;
  }

  // The window for top-p alone from the sample (`n` keys of a row of `len`)
  // and its boundary key `at`: at's first digit, then its upper and its
  // lower neighbour while the row's keys in the window, predicted from the
  // sample's with kWindowSigmas of margin, fit kWindowKeys. One standard
  // deviation, not the gather's kSampleSigmas: a window a digit narrower
  // misses the boundary more often, and a miss costs a pass as an overflow does.
  static constexpr float kWindowSigmas = 1.0f;
  template <typename Sample>
  static SGTOPK_DEVICE u32 choose_window(const Sample& sample, u32 at, int len) {
    const u32 centre = at >> 21;
    const u32 up = min_of(centre + 1u, static_cast<u32>(kDigits - 1)), down = centre == 0u ? 0u : centre - 1u;
    u32 in_centre = 0, in_up = 0, in_down = 0;
    for (int base = 0; base < sample.len; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const u32 d = i < sample.len ? sample.key(i) >> 21 : 0xffffffffu;
      in_centre += static_cast<u32>(__syncthreads_count(d == centre));
      in_up += static_cast<u32>(__syncthreads_count(d == up && up != centre));
      in_down += static_cast<u32>(__syncthreads_count(d == down && down != centre));
    }
    auto fits = [&](u32 count) {
      const float keys = (count + kWindowSigmas * sqrtf(count + 1.0f) + 1.0f) * len / sample.len;
      return keys <= kWindowKeys;
    };
    u32 low = centre, high = centre, count = in_centre;
    if (up != centre && fits(count + in_up)) {
      high = up;
      count += in_up;
    }
    if (down != centre && fits(count + in_down)) low = down;
    return pack_window(low, high);
  }

  // ---- top-p alone's window from a histogram (the split's; filter_row
  // keeps the sample's, choose_window: at 1024 rows the histogram pass cost
  // more than the sample's misses): a sample of 1024 misses the row's
  // largest logits, whose mass dominates a peaked row, so its top-p
  // boundary lay digits below the row's at vocab 262208. One pass counts every key by its first digit and sums an approximate
  // mass a digit, relative to the digit's own largest value (no reference
  // is needed before the row's largest key is known); weighed against the
  // top digit's, these masses name the digit where the mass reaches p, and
  // the exact counts which neighbours fit the window. Speed only: the
  // window pass checks the window with exact masses.
  static SGTOPK_DEVICE float digit_top(u32 d) { return float_from_ordered_key((d << 21) | 0x1fffffu); }
  static SGTOPK_DEVICE float approx_mass(float x, u32 d) {
    const float e = x - digit_top(d);
    return e <= 0.0f ? hw::approx_exp(e) : 0.0f;  // not for infinities and NaN (e is NaN): the exact masses see to them
  }
  // Clears the histogram and the largest key, after a barrier.
  static SGTOPK_DEVICE void clear_histogram(Shared& s) {
    __syncthreads();  // earlier readers of the bins are done
    for (int i = threadIdx.x; i < kDigits; i += kThreads) {
      s.count[i] = 0u;
      s.approx_mass[i] = 0.0f;
    }
    if (threadIdx.x == 0) s.max_key = 0u;
    __syncthreads();
  }
  // One pass over `row` (the row, or a segment of it): its largest key
  // into s.max_key, each first digit's count into s.count and approximate
  // mass into s.approx_mass (cleared before by clear_histogram).
  template <typename Source>
  static SGTOPK_DEVICE void histogram_pass(Shared& s, const Source& row) {
    u32 local_max = 0u;
    for_each_key(row, [&](float x, u32 key, int) {
      const u32 d = key >> 21;
      local_max = max_of(local_max, key);
      atomicAdd(&s.count[d], 1u);
      atomicAdd(&s.approx_mass[d], approx_mass(x, d));
    });
    atomicMax(&s.max_key, local_max);
    __syncthreads();
  }
  // The approximate masses as scan_digits reads them: relative to the
  // largest key's digit, in units of 2^-32 (a bin holds at most its count,
  // < 2^23, of the top digit's largest value).
  struct ApproxBins {
    const Shared* s;
    float top;
    SGTOPK_DEVICE u64 operator[](int d) const {
      const float w = s->approx_mass[d] * hw::approx_exp(digit_top(static_cast<u32>(d)) - top);
      return w > 0.0f ? static_cast<u64>(w * 4294967296.0f) : 0u;  // not NaN
    }
  };
  // The window (pack_window) from histogram_pass's bins and the row's
  // largest key: the digit where the approximate mass from the top reaches
  // p, with its upper or lower neighbour where p's mass falls within
  // 2^-kEdgeMarginShift of the total from that edge (the approximate sums err far
  // less), while the window's keys fit kWindowKeys; 0 where that digit's
  // alone do not. A neighbour taken always tripled the finisher's keys at
  // vocab 128256 (its rounds were most of batch 1's time).
  static constexpr u32 kEdgeMarginShift = 8;  // 2^-8 of the total
  static SGTOPK_DEVICE u32 window_from_histogram(Shared& s, float top_p, u32 max_key) {
    const ApproxBins bins{&s, digit_top(max_key >> 21)};
    u64 owned = 0, total = 0;
    for (int d = threadIdx.x; d < kDigits; d += kThreads) owned += bins[d];
    block_exclusive_sum<kThreads, u64>(owned, s.scratch, &total);
    __syncthreads();  // every thread has read the total: scan_digits reuses the scratch
    u32 centre = max_key >> 21;
    bool near_top = true, near_bottom = true;  // without mass: both neighbours where they fit
    if (total != 0u) {
      const u64 target = mass_target(top_p, total), margin = total >> kEdgeMarginShift;
      const Found f = scan_digits(bins, target, s.scratch);
      centre = f.digit;
      const u64 reach = f.above + bins[static_cast<int>(centre)];  // the mass down to the centre's bottom
      near_top = target - f.above <= margin;
      near_bottom = reach < target || reach - target <= margin;
    }
    const u32 up = near_top && centre + 1u < static_cast<u32>(kDigits) ? s.count[centre + 1u] : kNotKept;
    const u32 down = near_bottom && centre > 0u ? s.count[centre - 1u] : kNotKept;
    u32 count = s.count[centre];
    __syncthreads();  // every thread has read the counts: the caller's next pass may clear them
    constexpr u32 kFits = static_cast<u32>(kWindowKeys);
    if (count > kFits) return 0u;
    u32 low = centre, high = centre;
    if (up <= kFits - count) {
      high = centre + 1u;
      count += up;
    }
    if (down <= kFits - count) low = centre - 1u;
    return pack_window(low, high);
  }

  // ---- the sampled route: a strided sample proposes a key threshold tau;
  // one pass gathers every key at or above it (with its index) and the
  // row's largest key; the decisions run over the gathered keys when they
  // hold the kept set's boundary, and the write needs no read of the row.
  // Otherwise (tau too high or too low) the exact route runs: the result
  // never depends on the sample.

  static SGTOPK_DEVICE u32 bits_of(Elem x) {
    if constexpr (Config::kDtype == kFilterF32) return __float_as_uint(x);
    else return static_cast<u32>(x);
  }
  static SGTOPK_DEVICE Elem from_bits(u32 bits) {
    if constexpr (Config::kDtype == kFilterF32) return __uint_as_float(bits);
    else return static_cast<Elem>(bits);
  }

  // Where a row is 16-byte aligned: `head` elements first, then `vectors`
  // 16-byte vectors, then the tail up to len.
  struct Body {
    int head, vectors, end;  // end: the first element past the vectors
  };
  static SGTOPK_DEVICE Body body_of(const void* row, int len) {
    const int misaligned = static_cast<int>((reinterpret_cast<u64>(row) & 15u) / sizeof(Elem));
    const int head = min_of(len, (kPerVector - misaligned) % kPerVector);
    const int vectors = (len - head) / kPerVector;
    return Body{head, vectors, head + vectors * kPerVector};
  }

  // Element u of a 16-byte vector's words, u known at run time: selects,
  // so that the words stay in registers.
  static SGTOPK_DEVICE Elem element(const u32 (&words)[4], int u) {
    const int w = u * static_cast<int>(sizeof(Elem)) / 4;
    const u32 word = w == 0 ? words[0] : w == 1 ? words[1] : w == 2 ? words[2] : words[3];
    return from_bits(sizeof(Elem) == 4 ? word : (word >> (16 * (u & 1))) & 0xffffu);  // little-endian halves
  }
  // f(u, e, in) for element u of a streamed pass's 16-byte step (bit u of
  // `valid` set: `in`, e its value). With kBranchFreePasses, in groups of
  // four without a branch, e a NaN (no mass, key 0) where not `in`: ptxas
  // then interleaves four elements' dependent chains (a branch an element
  // left them stalled one at a time; eight at once held more registers than
  // 64 a thread). Else a branch an element, `in` always true.
  template <typename F>
  static SGTOPK_DEVICE void for_each_element(const u32 (&words)[4], u32 valid, F&& f) {
    if constexpr (kBranchFreePasses) {
#pragma unroll
      for (int g = 0; g < kPerVector; g += 4) {
        if (((valid >> g) & 0xfu) == 0u) continue;
#pragma unroll
        for (int u = g; u < g + 4; ++u) {
          const bool in = ((valid >> u) & 1u) != 0u;
          f(u, in ? element(words, u) : from_bits(0xffffffffu), in);
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < kPerVector; ++u)
        if ((valid >> u) & 1u) f(u, element(words, u), true);
    }
  }
  // ordered_key in the form for_each_element's passes take.
  static SGTOPK_DEVICE u32 pass_key(float x) {
    if constexpr (kBranchFreePasses) return ordered_key_by_selects(x);
    else return ordered_key(x);
  }
  // Sets element u of a 16-byte vector's words to `bits` (u a constant
  // once unrolled).
  static SGTOPK_DEVICE void set_element(u32 (&words)[4], int u, u32 bits) {
    const int w = u * static_cast<int>(sizeof(Elem)) / 4;
    if constexpr (sizeof(Elem) == 4) {
      words[w] = bits;
    } else {
      const int shift = 16 * (u & 1);
      words[w] = (words[w] & ~(0xffffu << shift)) | ((bits & 0xffffu) << shift);
    }
  }
  // The four words as one 16-byte store at `at` (16-byte aligned).
  static SGTOPK_DEVICE void store_vector(Elem* at, const u32 (&words)[4]) {
    uint4 v;
    v.x = words[0];
    v.y = words[1];
    v.z = words[2];
    v.w = words[3];
    *reinterpret_cast<uint4*>(at) = v;
  }

  // Visits every element of the row in steps all threads take together (a
  // visitor may use warp collectives): the head and the tail one element a
  // thread, then the body in 16-byte loads, kPerVector elements a thread.
  // visit(words, first, valid): element(words, u) is element first + u where
  // bit u of valid is set. Thread 0 asks L2 for the step kAhead ahead of
  // the one it loads (at the first, every step up to it; 0: none).
  template <int kLoads = kLoadsInFlight, int kAhead = Config::kPrefetchAheadSteps, typename Visit>
  static SGTOPK_DEVICE void stream_row(const Elem* row, int len, Visit& visit) {
    const Body body = body_of(row, len);
    const int scalars = body.head + (len - body.end);
    for (int base = 0; base < scalars; base += kThreads) {
      const int n = base + static_cast<int>(threadIdx.x);
      const int i = n < body.head ? n : body.end + (n - body.head);
      const bool valid = n < scalars;
      const u32 words[4] = {valid ? bits_of(row[i]) : 0u, 0u, 0u, 0u};
      visit(words, i, valid ? 1u : 0u);
    }
    // kLoadsInFlight loads a thread issued before the first is visited (a
    // step covers kLoadsInFlight * kThreads vectors; the last may be partial).
    const uint4* vectors = reinterpret_cast<const uint4*>(row + body.head);
    for (int base = 0; base < body.vectors; base += kLoads * kThreads) {
      if constexpr (kAhead > 0) {
        constexpr int kStep = kLoads * kThreads;
        const int from = base + (base == 0 ? 1 : kAhead) * kStep;
        const int to = static_cast<int>(min_of(static_cast<long long>(body.vectors), base + (kAhead + 1ll) * kStep));
        if (threadIdx.x == 0 && from < to) prefetch_l2_range<1>(vectors + from, vectors + to);
      }
      uint4 v[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
        v[u].x = v[u].y = v[u].z = v[u].w = 0u;
        if (j < body.vectors) v[u] = __ldg(vectors + j);
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
        const u32 words[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
        visit(words, body.head + j * kPerVector, j < body.vectors ? (1u << kPerVector) - 1u : 0u);
      }
    }
  }

  // pass(ScalingIs<true>{}) where the row's temperature scales, else
  // pass(ScalingIs<false>{}): a pass over the row scales with
  // row.scale(e, scaling). With the choice inside the loop, ptxas divided
  // every element and selected (conversions to and from double, at a
  // quarter of the float rate, on every pass at T = 1).
  template <typename Pass>
  static SGTOPK_DEVICE void by_scaling(const Row& row, Pass&& pass) {
    if (row.scales) pass(ScalingIs<true>{});
    else pass(ScalingIs<false>{});
  }

  // visit(scaled value, key, index) for each element of `src`, each thread
  // its share: a Row through stream_row's 16-byte loads (a pass of one load
  // a thread at a time leaves one CTA a row latency-bound), candidates one
  // a thread. Every thread makes the same number of steps (warp collectives
  // inside `visit` see the converged warp, less the lanes past the end).
  template <typename Source, typename Visit>
  static SGTOPK_DEVICE void for_each_key(const Source& src, Visit&& visit) {
    if constexpr (Source::kStreamed) {
      auto each = [&](const u32(&words)[4], int first, u32 valid) {
#pragma unroll
        for (int u = 0; u < kPerVector; ++u)
          if ((valid >> u) & 1u) {
            const float x = src.scale(element(words, u));
            visit(x, ordered_key(x), first + u);
          }
      };
      stream_row<kExactLoads>(src.logits, src.len, each);
    } else {
      for (int i = threadIdx.x; i < src.len; i += kThreads) visit(src.scaled(i), src.key(i), i);
    }
  }

  // Writes `value` to every element of the row, in 16-byte stores.
  static SGTOPK_DEVICE void fill_row(Elem* out, int len, Elem value) {
    const Body body = body_of(out, len);
    for (int i = threadIdx.x; i < body.head; i += kThreads) out[i] = value;
    for (int i = body.end + static_cast<int>(threadIdx.x); i < len; i += kThreads) out[i] = value;
    const u32 bits = bits_of(value), word = sizeof(Elem) == 4 ? bits : bits | (bits << 16);
    uint4 v;
    v.x = v.y = v.z = v.w = word;
    uint4* vectors = reinterpret_cast<uint4*>(out + body.head);
    if constexpr (kBranchFreePasses) {  // unrolled there, ptxas held a register copy of v a store and spilled
#pragma unroll 1
      for (int j = threadIdx.x; j < body.vectors; j += kThreads) vectors[j] = v;
    } else {
      for (int j = threadIdx.x; j < body.vectors; j += kThreads) vectors[j] = v;
    }
  }

  // The sample: top-k's in runs of one 32-byte sector (2^kSampleRunShift
  // elements), top-p alone's one at a time, at a fixed stride from element 0
  // (abi.h, filter_sample_points). Top-p alone keeps
  // single elements and its own size: its window, chosen with one standard
  // deviation of margin, missed more often with runs or a larger sample
  // (docs/decisions/2026-12-05-filter-sample-rank-by-warp-pops.md).
  static constexpr int kSampleRunShift = sizeof(Elem) == 4 ? 3 : 4;
  static SGTOPK_DEVICE FilterSamplePoints sample_points(int len, bool top_k) {
    const int count = min_of(min_of(top_k ? kSampleSize : kTopPSampleSize, kCandidates), len);
    return filter_sample_points(len, count, top_k ? kSampleRunShift : 0);
  }
  static constexpr int kLargerSample = kSampleSize > kTopPSampleSize ? kSampleSize : kTopPSampleSize;
  static constexpr int kSamplePerThread = kLargerSample < kThreads ? 1 : (kLargerSample + kThreads - 1) / kThreads;

  // The keys of `c` at or above `key`, counted by the whole block.
  template <typename Source>
  static SGTOPK_DEVICE u32 count_at_or_above(const Source& c, u32 key) {
    u32 n = 0;
    for (int base = 0; base < c.len; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      n += static_cast<u32>(__syncthreads_count(i < c.len && c.key(i) >= key));
    }
    return n;
  }

  // The keys of `c` equal to `key`, counted by the whole block.
  template <typename Source>
  static SGTOPK_DEVICE u32 count_copies(const Source& c, u32 key) {
    u32 n = 0;
    for (int base = 0; base < c.len; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      n += static_cast<u32>(__syncthreads_count(i < c.len && c.key(i) == key));
    }
    return n;
  }

  // The sample's threshold at a rank of at most 32 (top-k for k up to a
  // few thousand): pops of warp maxima (BlockRankedKey), no digit round.
  typedef BlockRankedKey<kThreads, kSamplePerThread> SampleRank;
  // Not with the other outputs (at 64 registers a thread that spilled), nor
  // past 8 sample keys a thread (a lane sorts its keys in registers).
  static constexpr bool kRankedSample = !kMoreOutputs && kSamplePerThread <= 8;
  static_assert(SampleRank::kListKeys + 1 <= kDigits, "the sample's rank lists fit s.count");

  // The threshold tau the gather admits keys from; false where the sample
  // predicts the candidates would not fit the buffer (the exact route then
  // runs at once), or where kSampleSize is 0 (the exact route only). For
  // top-k the sample rank of k is about k * n / len; for top-p alone, the
  // sample keys whose mass (the sample's own softmax) reaches p. Either
  // count goes up by kSampleSigmas standard deviations (and one), so that
  // the row holds fewer keys above tau than the route needs only rarely; tau
  // is the sample key of that rank. Speed only: the gather checks what the
  // decisions need. For top-p alone, *window (where given) is the window
  // around the sample's own boundary key (choose_window), even where this
  // returns false: top_p_alone() sums and gathers by it.
  static SGTOPK_DEVICE bool propose(Shared& s, const Row& row, int k, bool top_k_on, float top_p, u32* tau,
                                    u32* window = nullptr) {
    if ((top_k_on ? kSampleSize : kTopPSampleSize) == 0) return false;
    if (row.len <= kCandidates) {  // every key fits: no sample
      *tau = 0u;
      return true;
    }
    if (top_k_on && k > kCandidates) return false;
    const int n = sample_points(row.len, top_k_on).count;
    if (threadIdx.x == 0) s.max_key = 0u;
    __syncthreads();
    u32 local_max = 0u;
    // Loads a thread has in flight; one in the outputs' kernels and at 1024
    // threads (64 registers), which spilled with more.
    constexpr int kBatch = kMoreOutputs || kThreads >= 1024 ? 1 : kSamplePerThread < 8 ? kSamplePerThread : 8;
    for (int base = static_cast<int>(threadIdx.x); base < n; base += kBatch * kThreads) {
      u32 keys[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {  // every load in flight before the first store
        const int i = base + j * kThreads;
        keys[j] = i < n ? row.key(sample_points(row.len, top_k_on).index(i)) : 0u;  // recomputed: fewer registers live
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int i = base + j * kThreads;
        if (i < n) s.candidate_key[i] = keys[j];
        local_max = max_of(local_max, keys[j]);
      }
    }
    atomicMax(&s.max_key, local_max);
    __syncthreads();
    const Candidates sample{s.candidate_key, n};
    double expected;  // sample keys at or above the boundary the route needs
    if (top_k_on) {
      expected = static_cast<double>(k) * n / row.len;
    } else {
      const float top = float_from_ordered_key(s.max_key);
      const u64 total = survivors_mass(s, sample, top, 0u, 0xffffffffu);
      expected = 1.0;
      if (top_p > 0.0f && total != 0u) {
        u64 mass_above = 0;
        const u32 at =
            boundary<true>(s, sample, mass_target(top_p, total), true, top, 0u, 0xffffffffu, 0, 0u, 0u, &mass_above);
        expected = count_at_or_above(sample, at);
        if (window) *window = choose_window(sample, at, row.len);
      }
    }
    const double rank = ceil(expected + kSampleSigmas * sqrt(expected + 1.0)) + 1.0;
    // The row's keys at or above the sample's rank-th: about rank * len / n, the spread sqrt(rank) * len / n.
    const double predicted = (rank + kSampleSigmas * sqrt(rank)) * row.len / n;
    if (rank > n || predicted > kCandidates) return false;
    if constexpr (kRankedSample) {
      if (rank <= static_cast<double>(SampleRank::kMaxRank)) {  // a few pops of warp maxima, no digit round
        *tau = SampleRank::at_rank(s.candidate_key, n, static_cast<int>(rank), s.count, s.count + SampleRank::kListKeys);
        return true;
      }
    }
    u64 above = 0;
    *tau = boundary(s, sample, static_cast<u64>(rank), false, 0.0f, 0u, 0xffffffffu, 0, 0u, 0u, &above);
    return true;
  }

  // The scaled key of an unscaled one (a logit's ordered_key).
  static SGTOPK_DEVICE u32 scaled_key(const Row& row, u32 key) {
    return row.scales ? ordered_key(divide(float_from_ordered_key(key), row.inverse)) : key;
  }

  // The lowest unscaled key whose scaled key is at least `tau`, 0xffffffff
  // when none: dividing by a temperature T > 0 (rounded correctly) is
  // monotone, so the gather compares the logits' own keys and divides only
  // the few it takes. A search over the keys (32 scalings a row).
  static SGTOPK_DEVICE u32 unscaled_threshold(const Row& row, u32 tau) {
    u32 low = 0u, high = ordered_key(__int_as_float(0x7f800000));  // +inf's key, the largest a logit has
    if (!row.scales) return tau;
    if (scaled_key(row, high) < tau) return 0xffffffffu;
    while (low < high) {  // the answer lies in [low, high]
      const u32 mid = low + (high - low) / 2u;
      if (scaled_key(row, mid) >= tau) high = mid;
      else low = mid + 1u;
    }
    return low;
  }

  // Appends the elements of a 16-byte step whose bit is set in `take` (their
  // unscaled keys, and row indices from `first`) to the candidate buffer,
  // counted past its capacity: one shared atomic a warp, none in the steps
  // where no lane takes one. Called by every lane of the warp.
  static SGTOPK_DEVICE void append_taken(Shared& s, const u32 (&words)[4], u32 take, u32 first) {
    if (__ballot_sync(0xffffffffu, take != 0u) == 0u) return;  // most steps: no warp appends
    u32 slot = warp_reserve(static_cast<u32>(__popc(take)), &s.candidates);
#pragma unroll
    for (int u = 0; u < kPerVector; ++u)
      if ((take >> u) & 1u) {
        if (slot < static_cast<u32>(kCandidates)) {
          s.candidate_key[slot] = ordered_key(Logit::widen(element(words, u)));
          s.candidate_index[slot] = first + static_cast<u32>(u);
        }
        ++slot;
      }
  }

  // One pass: the row's largest key into s.max_key, and every key at or
  // above tau with its index into the candidates (warp-aggregated appends),
  // counted past the buffer's capacity. Returns the count. The pass keys the
  // logits unscaled (no division per element); the candidates and the
  // largest key are scaled after it.
  static SGTOPK_DEVICE u32 gather(Shared& s, const Row& row, u32 tau) {
    const u32 threshold = unscaled_threshold(row, tau);
    if (threadIdx.x == 0) {
      s.max_key = 0u;
      s.candidates = 0u;
    }
    __syncthreads();
    u32 local_max = 0u;
    auto visit = [&](const u32(&words)[4], int first, u32 valid) {
      u32 take = 0u;
      for_each_element(words, valid, [&](int u, Elem e, bool in) {
        const u32 key = pass_key(Logit::widen(e));
        local_max = max_of(local_max, key);
        take |= static_cast<u32>(in && key >= threshold) << u;
      });
      append_taken(s, words, take, static_cast<u32>(first));
    };
    stream_row(row.logits, row.len, visit);
    local_max = warp_max(local_max);
    if ((threadIdx.x & 31) == 0) atomicMax(&s.max_key, local_max);
    __syncthreads();
    const u32 count = s.candidates;
    if (row.scales) {
      const int stored = static_cast<int>(min_of(count, static_cast<u32>(kCandidates)));
      for (int i = threadIdx.x; i < stored; i += kThreads) s.candidate_key[i] = scaled_key(row, s.candidate_key[i]);
      __syncthreads();  // every thread has read the unscaled largest key
      if (threadIdx.x == 0) s.max_key = scaled_key(row, s.max_key);
    }
    __syncthreads();
    return count;
  }

  // One pass: the row's total mass relative to `top` (the same integers as
  // top_p_alone's sum).
  static SGTOPK_DEVICE u64 row_mass(Shared& s, const Row& row, float top) {
    if (threadIdx.x == 0) s.total = 0u;
    __syncthreads();
    u64 local = 0;
    auto pass = [&](auto scaling) {
      auto visit = [&](const u32(&words)[4], int, u32 valid) {
        for_each_element(words, valid, [&](int, Elem e, bool) { local += mass_of<kBranchFreePasses>(row.scale(e, scaling), top); });
      };
      stream_row(row.logits, row.len, visit);
    };
    if constexpr (kRowMassByScaling) by_scaling(row, pass);
    else {  // the choice inside the loop
      auto visit = [&](const u32(&words)[4], int, u32 valid) {
#pragma unroll
        for (int u = 0; u < kPerVector; ++u)
          if ((valid >> u) & 1u) local += mass_of(row.scale(element(words, u)), top);
      };
      stream_row(row.logits, row.len, visit);
    }
    add_block_sum(&s.total, local);
    __syncthreads();
    const u64 total = s.total;
    __syncthreads();
    return total;
  }

  // The kept set's b and t from the `count` gathered candidates (keys at or
  // above tau); false when they do not hold its boundary (fewer than k for
  // top-k; for top-p alone, less mass than p's target). The same integers as
  // the exact route: every key a decision counts is a candidate.
  static SGTOPK_DEVICE bool decide(Shared& s, const Row& row, int k, bool top_k_on, float top_p, bool top_p_on, u32 count,
                                   u32& b, u32& t) {
    if (count == 0u || count > static_cast<u32>(kCandidates)) return false;
    const u32 max_key = s.max_key;
    const Candidates c{s.candidate_key, static_cast<int>(count)};
    if (top_k_on) {
      if (count < static_cast<u32>(k)) return false;
      // Top-k and top-p over the 64 largest keys in one go (top_k_with_top_p);
      // top-k alone keeps the digit rounds, faster there over ~2,200
      // candidates (docs/decisions/2026-12-05-filter-warp-selection.md).
      if constexpr (kWarpSelect && !kMoreOutputs) {  // not with the other outputs: at 64 registers a thread that spilled
        if (top_p_on && k <= kFewSurvivors) {
          top_k_with_top_p(s, c, k, top_p, max_key, b, t);
          return true;
        }
      }
      u64 above = 0;
      b = boundary(s, c, static_cast<u64>(k), false, 0.0f, 0u, 0xffffffffu, 0, 0u, 0u, &above);
      t = static_cast<u32>(static_cast<u64>(k) - above);
      if (!top_p_on) return true;
      if constexpr (!kMoreOutputs) {  // not with the other outputs: at 64 registers a thread both spilled
        if (k <= kFewSurvivors) {
          top_p_few(s, c, top_p, max_key, b, t);
          return true;
        }
        if (k <= kSortedSurvivors) {
          top_p_sorted(s, c, k, top_p, max_key, b, t);
          return true;
        }
      }
      top_p_boundary(s, c, top_p, max_key, b, t);
      return true;
    }
    if (count == static_cast<u32>(row.len)) {  // every key: top-p over them as over the row
      top_p_boundary(s, c, top_p, max_key, b, t);
      return true;
    }
    const float top = float_from_ordered_key(max_key);
    const u64 total = row_mass(s, row, top);
    if (top_p <= 0.0f || total == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return true;
    }
    const u64 target = mass_target(top_p, total);
    if (survivors_mass(s, c, top, 0u, 0xffffffffu) < target) return false;  // the boundary lies below tau
    u64 mass_above = 0;
    b = boundary(s, c, target, true, top, 0u, 0xffffffffu, 0, 0u, 0u, &mass_above);
    const u64 each = mass_of(float_from_ordered_key(b), top);
    t = static_cast<u32>((target - mass_above + each - 1u) / each);
    return true;
  }

  // The highest row index of a kept copy of b among the n candidates, which
  // hold all its copies (0xffffffff: every copy is kept; with t == 0 none
  // is): a count round over the copies where only some are kept.
  template <bool kFewCopies = true>
  static SGTOPK_DEVICE u32 last_kept_copy(Shared& s, u32 b, u32 t, int n) {
    u32 copies = 0;
    for (int base = 0; base < n; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      copies += static_cast<u32>(__syncthreads_count(i < n && s.candidate_key[i] == b));
    }
    if (t >= copies) return 0xffffffffu;
    if (t == 0u) return 0u;
    const Candidates c{s.candidate_key, n, s.candidate_index};
    if constexpr (kFewCopies && kWarpSelect && !kMoreOutputs && sizeof(Elem) == 2) {
      // At most kFewSurvivors copies (16-bit logits tie at the boundary on
      // most rows; fp32 rarely, and its kernels measured 2 % slower with
      // this code): warp 0 sorts their indices, with no digit round first
      // (all share the first digit of ~index: that round only counted them).
      if (copies <= static_cast<u32>(kFewSurvivors)) {
        u64 above = 0;
        return ~few_keys_boundary(s, CopiesOf<Candidates>{c, b, c.len}, t, false, 0.0f, 0u, 0u, 0u, 0u, 0u, &above);
      }
    }
    return nth_copy_index(s, c, b, t);
  }

  // Writes the row from the `count` candidates, which hold the kept set:
  // the kept values' bits are read first (in place, before they are
  // overwritten), then mask_value goes to every element, then the kept
  // values back (one CTA's global writes, ordered by its barriers). Copies
  // of b are kept up to the t-th by index, found by a count round over them.
  static SGTOPK_DEVICE void write_kept(Shared& s, const Row& row, Elem* out, u32 b, u32 t, u32 count, Elem mask_value) {
    const int n = static_cast<int>(count);
    const u32 last = last_kept_copy(s, b, t, n);
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const u32 key = s.candidate_key[i], index = s.candidate_index[i];
      const bool kept = key > b || (key == b && t != 0u && index <= last);
      if (kept) s.candidate_key[i] = bits_of(row.logits[index]);  // kept: its bits untouched
      else s.candidate_index[i] = kNotKept;
    }
    __syncthreads();
    fill_row(out, row.len, mask_value);
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const u32 index = s.candidate_index[i];
      if (index != kNotKept) out[index] = from_bits(s.candidate_key[i]);
    }
  }

  // ---- the candidate and sample outputs (FilterParams' candidate_* and
  // sampled_tokens). The kept set (b, t) is a prefix of the row's order, so
  // its first m tokens in order are the row's first m: they are gathered
  // as (key, index) pairs into the candidate buffer (from the row, or kept
  // where the sampled route gathered them) and sorted there by key
  // descending, index ascending. The sampled token and the probabilities
  // use the integer masses of the decisions (mass_of relative to the largest
  // key), so that the token is a mass-rank search like top-p's: boundary()
  // finds its key, a count round over the copies its index.

  // The index of the j-th copy (1-based, by index) of key b in `src`.
  template <typename Source>
  static SGTOPK_DEVICE u32 nth_copy_index(Shared& s, const Source& src, u32 b, u64 j) {
    u64 above = 0;
    return ~boundary(s, CopiesOf<Source>{src, b, src.len}, j, false, 0.0f, 0u, 0xffffffffu, 0, 0u, 0u, &above);
  }

  // The kept count of (b, t) over `src`, which holds every kept key (t ==
  // 0xffffffff: every key of src).
  template <typename Source>
  static SGTOPK_DEVICE u32 kept_count(Shared& s, const Source& src, u32 b, u32 t) {
    if (t == 0xffffffffu) return static_cast<u32>(src.len);
    __syncthreads();  // earlier readers of s.total are done
    if (threadIdx.x == 0) s.total = 0u;
    __syncthreads();
    u32 local = 0;
    for (int i = threadIdx.x; i < src.len; i += kThreads) local += src.key(i) > b ? 1u : 0u;
    add_block_sum(&s.total, local);
    __syncthreads();
    const u32 n = static_cast<u32>(s.total);
    __syncthreads();
    return n + t;
  }

  // The row's largest key (one pass), over the unscaled keys and scaled
  // once (dividing by T > 0 is monotone, as gather() uses): no division
  // an element.
  static SGTOPK_DEVICE u32 largest_key(Shared& s, const Row& row) {
    __syncthreads();  // earlier readers of s.max_key are done
    if (threadIdx.x == 0) s.max_key = 0u;
    __syncthreads();
    u32 local_max = 0u;
    if constexpr (kUnscaledLargest) {
      auto visit = [&](const u32(&words)[4], int, u32 valid) {
        for_each_element(words, valid, [&](int, Elem e, bool) { local_max = max_of(local_max, pass_key(Logit::widen(e))); });
      };
      stream_row<kExactLoads>(row.logits, row.len, visit);
    } else {
      for_each_key(row, [&](float, u32 key, int) { local_max = max_of(local_max, key); });
    }
    atomicMax(&s.max_key, local_max);
    __syncthreads();
    const u32 max_key = kUnscaledLargest ? scaled_key(row, s.max_key) : s.max_key;
    __syncthreads();
    return max_key;
  }

  // One pass: the tokens of (b, t) (key > b, or key == b among the first t
  // by index, as write_mask keeps them; at most kCandidates) into the
  // candidate buffer as (key, index), in no particular order. Returns their count.
  static SGTOPK_DEVICE u32 gather_kept(Shared& s, const Row& row, u32 b, u32 t) {
    __syncthreads();  // earlier readers of the buffer and s.candidates are done
    if (threadIdx.x == 0) s.candidates = 0u;
    __syncthreads();
    u32 seen = 0;  // copies of b before this chunk
    for (int base = 0; base < row.len; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const u32 key = i < row.len ? row.key(i) : 0u;
      const bool copy = i < row.len && key == b;
      const u32 copies = static_cast<u32>(__syncthreads_count(copy));
      bool copy_kept = t == 0xffffffffu || seen + copies <= t;
      if (t != 0xffffffffu && copies != 0u && seen < t && seen + copies > t) {  // block-uniform
        u32 total;
        const u32 rank = seen + block_exclusive_sum<kThreads>(copy ? 1u : 0u, reinterpret_cast<u32*>(s.scratch), &total);
        copy_kept = rank < t;
      }
      if (i < row.len && (key > b || (copy && copy_kept))) {
        const u32 slot = atomicAdd(&s.candidates, 1u);
        s.candidate_key[slot] = key;
        s.candidate_index[slot] = static_cast<u32>(i);
      }
      seen += copies;
    }
    __syncthreads();
    const u32 n = s.candidates;
    __syncthreads();
    return n;
  }

  // Sorts the first n candidates by (key descending, index ascending): a
  // bitonic sort over the next power of two, padded with (0, 0xffffffff),
  // which sorts below every candidate (a NaN's key is 0, but its index is
  // below 2^23). The n pairs stay in [0, n), so write_kept can follow.
  static SGTOPK_DEVICE u64 order_key(const Shared& s, u32 i) {
    return (static_cast<u64>(s.candidate_key[i]) << 32) | static_cast<u64>(~s.candidate_index[i]);
  }
  static SGTOPK_DEVICE void sort_candidates(Shared& s, u32 n) {
    u32 size = 1u;
    while (size < n) size <<= 1;
    for (u32 i = n + threadIdx.x; i < size; i += kThreads) {
      s.candidate_key[i] = 0u;
      s.candidate_index[i] = 0xffffffffu;
    }
    __syncthreads();
    for (u32 k = 2u; k <= size; k <<= 1)
      for (u32 j = k >> 1; j > 0u; j >>= 1) {
        for (u32 i = threadIdx.x; i < size / 2u; i += kThreads) {
          const u32 lo = ((i & ~(j - 1u)) << 1) | (i & (j - 1u)), hi = lo + j;
          const u64 a = order_key(s, lo), c = order_key(s, hi);
          if ((lo & k) == 0u ? a < c : a > c) {  // descending runs where bit k of lo is clear
            const u32 key = s.candidate_key[lo], index = s.candidate_index[lo];
            s.candidate_key[lo] = s.candidate_key[hi];
            s.candidate_index[lo] = s.candidate_index[hi];
            s.candidate_key[hi] = key;
            s.candidate_index[hi] = index;
          }
        }
        __syncthreads();
      }
  }

  // Writes row r's candidates: the first m sorted ones (m <= the capacity),
  // their scaled logits and probabilities mass / z (in double, rounded to
  // float; 0 where z is 0), and the kept count.
  static SGTOPK_DEVICE void write_candidates(const Shared& s, const FilterParams& p, int r, const Row& row, u32 m,
                                             u32 count, float top, u64 z) {
    const long long at = static_cast<long long>(r) * p.candidate_pitch;
    for (u32 i = threadIdx.x; i < m; i += kThreads) {
      const u32 index = s.candidate_index[i];
      const float x = row.scaled(static_cast<int>(index));
      p.candidate_indices[at + i] = static_cast<int>(index);
      if (p.candidate_logits) p.candidate_logits[at + i] = x;
      if (p.candidate_probs)
        p.candidate_probs[at + i] =
            z == 0u ? 0.0f : static_cast<float>(static_cast<double>(mass_of(x, top)) / static_cast<double>(z));
    }
    if (threadIdx.x == 0) p.candidate_counts[r] = static_cast<int>(count);
  }

  // The sampled token of row r over `src` (holding every kept key of (b, t)),
  // z the kept mass: the first kept token in order whose cumulative mass
  // exceeds the draw floor(u * z), i.e. reaches draw + 1: boundary() over
  // the kept masses finds its key, the mass above it how many of its copies
  // come first. Without mass (z == 0): the first kept token.
  template <typename Source>
  static SGTOPK_DEVICE u32 sampled_token(Shared& s, const FilterParams& p, int r, const Source& src, u32 max_key, float top,
                                         u32 b, u32 t, u64 z) {
    u32 key = max_key;
    u64 j = 1u;
    if (z != 0u) {
      const bool per_row = p.seeds != nullptr;
      const u64 seed = per_row ? p.seeds[r] : p.seed_value;
      const u64 target = philox::sample_draw(seed, per_row ? 0u : static_cast<u64>(r), z) + 1u;
      u64 mass_above = 0;
      key = boundary(s, src, target, true, top, b, t, 0, 0u, 0u, &mass_above);
      const u64 each = mass_of(float_from_ordered_key(key), top);  // > 0: the target is reached at this key
      j = (target - mass_above + each - 1u) / each;
    }
    return nth_copy_index(s, src, key, j);
  }

  // The candidate and sample outputs from the `n` buffered candidates, a
  // prefix of the row's order holding the kept set (b, t).
  static SGTOPK_DEVICE void outputs_from_buffer(Shared& s, const FilterParams& p, int r, const Row& row, u32 max_key,
                                                u32 b, u32 t, u32 n) {
    const Candidates c{s.candidate_key, static_cast<int>(n), s.candidate_index};
    const float top = float_from_ordered_key(max_key);
    const u64 z = survivors_mass(s, c, top, b, t);
    if (p.sampled_tokens) {
      const u32 token = sampled_token(s, p, r, c, max_key, top, b, t, z);
      if (threadIdx.x == 0) p.sampled_tokens[r] = static_cast<int>(token);
    }
    if (p.candidate_indices) {
      const u32 count = kept_count(s, c, b, t);
      sort_candidates(s, n);
      write_candidates(s, p, r, row, min_of(count, static_cast<u32>(p.candidate_capacity)), count, top, z);
    }
    __syncthreads();
  }

  // The candidate and sample outputs where the buffer does not hold the
  // kept set (the exact route, or a row no filter narrows: t == 0xffffffff).
  // A kept set that fits is gathered in one pass and served as above;
  // otherwise the sample and the kept mass run over the row, and the first
  // `capacity` of the order (a count boundary, fewer than the kept) are gathered.
  static SGTOPK_DEVICE void outputs_from_row(Shared& s, const FilterParams& p, int r, const Row& row, u32 max_key, u32 b,
                                             u32 t) {
    const u32 count = kept_count(s, row, b, t);
    if (count <= static_cast<u32>(kCandidates)) {
      const u32 n = gather_kept(s, row, b, t);
      outputs_from_buffer(s, p, r, row, max_key, b, t, n);
      return;
    }
    const float top = float_from_ordered_key(max_key);
    const u64 z = survivors_mass(s, row, top, b, t);
    if (p.sampled_tokens) {
      const u32 token = sampled_token(s, p, r, row, max_key, top, b, t, z);
      if (threadIdx.x == 0) p.sampled_tokens[r] = static_cast<int>(token);
    }
    if (p.candidate_indices) {
      const u32 m = static_cast<u32>(p.candidate_capacity);  // < count
      u64 above = 0;
      const u32 bm = boundary(s, row, static_cast<u64>(m), false, 0.0f, b, t, 0, 0u, 0u, &above);
      const u32 n = gather_kept(s, row, bm, static_cast<u32>(static_cast<u64>(m) - above));
      sort_candidates(s, n);
      write_candidates(s, p, r, row, m, count, top, z);
    }
    __syncthreads();
  }

  static SGTOPK_DEVICE Elem* output_row(const FilterParams& p, int r) {
    return static_cast<Elem*>(p.out) + static_cast<long long>(r) * p.pitch;
  }

  // Row r's filter: its logits and their scaling, k and p after the
  // temperature's rule (a temperature that does not scale is greedy: top-1).
  struct RowTask {
    Row row;
    int k;
    float top_p;
    bool top_k_on, top_p_on;
  };
  static SGTOPK_DEVICE RowTask row_task(const FilterParams& p, int r) {
    const float temperature = p.temperature ? p.temperature[r] : p.temperature_value;
    const bool greedy = !(temperature > 0.0f && temperature < __int_as_float(0x7f800000));
    RowTask task{Row{static_cast<const Elem*>(p.logits) + static_cast<long long>(r) * p.pitch, p.width,
                     1.0 / static_cast<double>(temperature), !greedy && temperature != 1.0f},
                 0, 1.0f, false, false};
    task.k = greedy ? 1 : (p.top_k ? p.top_k[r] : p.top_k_value);
    task.top_p = greedy ? 1.0f : (p.top_p ? p.top_p[r] : p.top_p_value);
    task.top_k_on = task.k > 0 && task.k < task.row.len;
    task.top_p_on = task.top_p < 1.0f;  // false for NaN
    return task;
  }

  // The candidate or sample output asked for (block-uniform).
  static SGTOPK_DEVICE bool more_outputs(const FilterParams& p) {
    return kMoreOutputs && (p.candidate_indices != nullptr || p.sampled_tokens != nullptr);
  }

  static SGTOPK_DEVICE void run(const FilterParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    Shared& s = *reinterpret_cast<Shared*>(shared_bytes);
    const int live = static_cast<int>(live_row_count(p, static_cast<long long>(p.rows)));
    for (int r = blockIdx.x; r < live; r += gridDim.x) {
      if constexpr (kRows != kFilterRowsAll) {
        const RowTask task = row_task(p, r);
        if ((!task.top_k_on && task.top_p_on) != (kRows == kFilterRowsTopPAlone)) continue;  // the other kernel's row
      }
      filter_row(s, p, r, true);
    }
  }

  // Filters row r with the whole CTA: the sampled route first where
  // `try_sampled`, else (or where it misses) the exact route. The row's
  // task, output pointer and mask value are computed here, where used:
  // registers are short in a CTA of 1024.
  static SGTOPK_DEVICE void filter_row(Shared& s, const FilterParams& p, int r, bool try_sampled) {
    const RowTask task = row_task(p, r);
    const Row& row = task.row;
    const int k = task.k;
    const float top_p = task.top_p;
    const bool top_k_on = task.top_k_on, top_p_on = task.top_p_on;
    const bool mask = p.out != nullptr;
    const bool more = more_outputs(p);
    if (!top_k_on && !top_p_on) {  // every token is kept
      if (mask) {
        Elem* out = output_row(p, r);
        for (int i = threadIdx.x; i < row.len; i += kThreads) out[i] = row.logits[i];
      }
      if (more) outputs_from_row(s, p, r, row, largest_key(s, row), 0u, 0xffffffffu);
      return;
    }
    u32 b = 0u, t = 0xffffffffu;  // no boundary yet: every key survives
    u32 tau = 0u, window = 0u;
    // No window with the candidate or sample output (registers: see top_p_alone).
    // Top-p alone by patterns reads the row twice at most: no sample.
    const bool by_patterns = kPatternBins && !top_k_on;
    if (try_sampled && !by_patterns && propose(s, row, k, top_k_on, top_p, &tau, kMoreOutputs ? nullptr : &window)) {
      const u32 count = gather(s, row, tau);
      if (decide(s, row, k, top_k_on, top_p, top_p_on, count, b, t)) {
        SGTOPK_FILTER_ROUTE(kRouteSampled);
        // The candidates hold the kept set: the outputs first, while an
        // in-place mask has not yet overwritten the logits.
        if (more) outputs_from_buffer(s, p, r, row, s.max_key, b, t, count);
        if (mask) write_kept(s, row, output_row(p, r), b, t, count, Logit::narrow(p.mask_value));
        __syncthreads();
        return;
      }
      SGTOPK_FILTER_ROUTE(kRouteFallback);
      b = 0u;
      t = 0xffffffffu;
      __syncthreads();  // the attempt's reads of shared state are done
    } else {
      SGTOPK_FILTER_ROUTE(try_sampled ? kRouteExact : kRouteFallback);  // not tried: the split's finisher fell back
    }
    // The exact route.
    u32 max_key;
    u32 copies = 0xffffffffu;  // b's copies in the row where a buffer counted them
    if (top_k_on) {
      // One pass: the largest key, and the first digit round (all keys).
      for (int i = threadIdx.x; i < kDigits; i += kThreads) s.count[i] = 0u;
      if (threadIdx.x == 0) {
        s.max_key = 0u;
        s.candidates = 0u;
      }
      __syncthreads();
      u32 local_max = 0u;
      for_each_key(row, [&](float, u32 key, int) {
        local_max = max_of(local_max, key);
        atomicAdd(&s.count[key >> 21], 1u);
      });
      atomicMax(&s.max_key, local_max);
      __syncthreads();
      const Found first = scan_digits(s.count, static_cast<u64>(k), s.scratch);
      max_key = s.max_key;
      // The keys at or above the digit: every top-k survivor, hence every
      // key a later round, the survivors' mass or top-p counts.
      const u64 candidates = first.above + s.count[first.digit];
      __syncthreads();  // count is cleared by the next round
      u64 above = 0;
      if (candidates <= static_cast<u64>(kCandidates)) {
        const Candidates c = gather_digits(s, row, first.digit, kDigits - 1u, candidates);
        b = boundary(s, c, static_cast<u64>(k), false, 0.0f, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &above);
        t = static_cast<u32>(static_cast<u64>(k) - above);
        if (top_p_on) top_p_boundary(s, c, top_p, max_key, b, t);
        copies = count_copies(c, b);  // b is at or above the buffer's digit: all its copies
      } else {
        b = boundary(s, row, static_cast<u64>(k), false, 0.0f, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &above);
        t = static_cast<u32>(static_cast<u64>(k) - above);
        if (top_p_on) top_p_boundary(s, row, top_p, max_key, b, t);
      }
    } else {  // top-p alone
      bool decided = false;
      if (by_patterns) decided = top_p_by_patterns(s, row, top_p, max_key, b, t, &copies);
      if (!decided) {
        max_key = largest_key(s, row);  // the first of the order
        top_p_alone(s, row, top_p, max_key, b, t, &copies, window);
      }
    }
    if (more) outputs_from_row(s, p, r, row, max_key, b, t);  // before an in-place mask
    if (mask) {
      // The kept set as a prefix of the order: no ranks, no barrier (not
      // compiled in with the other outputs, whose registers leave none).
      // Where a buffer counted b's copies and they fit it, the write pass can gather them.
      const bool counted = copies != 0xffffffffu;
      bool written = false;
      if constexpr (kCopiesInWrite) {
        if (counted && t > 0u && t < copies && copies <= static_cast<u32>(kCandidates)) {
          write_copies_prefix(s, row, output_row(p, r), b, t, Logit::narrow(p.mask_value));
          written = true;
        }
      }
      if (!written) {
        u32 end = kTooManyCopies;
        if constexpr (!kMoreOutputs) end = counted && t >= copies ? kEveryCopy : copies_end(s, row, b, t);
        if (end != kTooManyCopies) write_order_prefix(s, row, output_row(p, r), b, end, Logit::narrow(p.mask_value));
        else write_mask(s, row, output_row(p, r), b, t, Logit::narrow(p.mask_value));
      }
    }
    __syncthreads();
  }
};

}  // namespace sgtopk

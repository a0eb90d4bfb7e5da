// Filter, first version (exactness before speed; docs/filter-design.md): one
// CTA per row, every decision by digit histograms over the row's ordered
// keys, the mask written in one last pass. The kept set of every mode has one
// shape: every key above a boundary key B, and the first t copies of B in
// index order.
//
//   keys    ordered_key(x / T) (T applied by IEEE division; a temperature
//           that does not scale means greedy: top-1)
//   top-k   B_k, t_k: the k-th key of the order, three digit rounds of counts
//   top-p   over the survivors, mass m(x) = expf(x - M) (M the largest
//           survivor) in integers at 2^-40: the total Z, then three digit
//           rounds of mass for the key where the mass from the top reaches
//           ceil(p * Z); t = the copies needed, all of one mass
//   mask    kept: key > B, or key == B among the first t by index
//
// Passes over the row (each a read from global memory). With top-k, the
// first one finds the largest key and counts the first digit round (its
// group is the whole row); the keys at or above the digit it finds hold
// every top-k survivor, and when they fit FilterRowShared's candidate
// buffer a second pass gathers them and every later round, the survivors'
// mass and top-p run over the buffer: 3 passes in all with the mask's
// (read + write). Otherwise the later rounds read the row: 4 passes for
// top-k alone, 8 with top-p. Top-p alone: the largest key; then one pass
// histograms count and mass by first digit (Z is the mass's sum, the first
// mass round its search); the keys at or above its digit, when they fit the
// buffer, are gathered by a third and the later rounds run over them: 4
// passes with the mask's, else 5 (rounds 1 and 2 over the row). A key gives back the scaled value it came from (but
// for -0 and NaN, whose images carry the same mass), so a round or sum over
// the buffer counts what it would over the row, in the same integers.
//
// Rows of at most 2^23 tokens: a row's mass, each token at most 2^40 units,
// stays below 2^64. The including source defines `Config`: kThreads, and
// kDtype (abi.h's kFilterF32, kFilterBf16, kFilterF16: the element type of
// the logits and of the output, pitch in elements). The
// launch's arguments are abi.h's FilterParams; rows at or past *live_rows are
// untouched; a CTA takes rows blockIdx.x, + gridDim.x, ... (any grid).
// Dynamic shared memory: abi.h's FilterRowShared.
#pragma once
#include "sgtopk/abi.h"
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/util/keys.cuh"

namespace sgtopk {

// The logits' element types. bf16 and fp16 are read as raw 16-bit patterns
// and widened to float exactly by bit manipulation (every bf16 / fp16 value,
// infinity and NaN is a float; the same code on the device and the host
// emulator); a finite mask value is narrowed to them by round to nearest
// even (an out-of-range one to the infinity of its sign, NaN to a quiet NaN).
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
  static SGTOPK_DEVICE float widen(Elem h) {
    const u32 sign = static_cast<u32>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mant << 13));  // infinity, NaN
    if (exp == 0u) {  // zero, subnormal: mant * 2^-24, exact in float
      const float m = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return __uint_as_float(sign | __float_as_uint(m));
    }
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
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
  static constexpr unsigned kSharedBytes = filter_row_shared_bytes();

  typedef FilterRowShared Shared;
  static_assert(kDigitBits == 11, "boundary() resolves 32-bit keys in rounds of 11, 11 and 10 bits");

  // Where a digit round found the rank: the digit, and the count or mass of
  // the keys above it within the round's group.
  struct Found {
    u32 digit;
    u64 above;
  };

  struct Row {
    const Elem* logits;
    int len;
    float temperature;
    bool scales;
    // Widened exactly, then scaled in float as fp32 logits are.
    SGTOPK_DEVICE float scaled(int i) const {
      const float x = Logit::widen(logits[i]);
      return scales ? x / temperature : x;
    }
    SGTOPK_DEVICE u32 key(int i) const { return ordered_key(scaled(i)); }
  };

  // The gathered candidates, read as a Row is: the value of a key is the
  // scaled value it came from (+0 for -0, a NaN for a NaN: the same mass).
  struct Candidates {
    const u32* keys;
    int len;
    SGTOPK_DEVICE float scaled(int i) const { return float_from_ordered_key(keys[i]); }
    SGTOPK_DEVICE u32 key(int i) const { return keys[i]; }
  };

  // Mass of a scaled value relative to the largest survivor `top` (its key
  // and value), in units of 2^-40: expf(x - top) for numbers; with top = +inf
  // each +inf shares one unit and all else is 0; -inf and NaN are 0.
  static SGTOPK_DEVICE u64 mass_of(float x, float top) {
    if (top == __int_as_float(0x7f800000)) return x == top ? kMassOne : 0u;
    if (!(x - x == 0.0f)) return 0u;  // -inf, NaN
    const float m = expf(x - top);
    return static_cast<u64>(static_cast<double>(m) * static_cast<double>(kMassOne) + 0.5);
  }

  // The digit, from the top, where the running sum of `bins` reaches
  // `target` (>= 1), and the sum above it; digit 0 when the bins hold less.
  // Thread t owns kPer consecutive digits from the top: a block prefix sum
  // in thread order is the sum above its digits, and the one thread whose
  // run holds the target reads it again. Every thread gets the answer.
  template <typename T>
  static SGTOPK_DEVICE Found scan_digits(const T* bins, u64 target, u64* scratch) {
    constexpr int kPer = kDigits / kThreads;
    static_assert(kDigits % kThreads == 0, "the digits split evenly over the threads");
    const int first = kDigits - (static_cast<int>(threadIdx.x) + 1) * kPer;  // the lowest digit owned
    u64 owned = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) owned += bins[first + j];
    u64 total;
    u64 above = block_exclusive_sum<kThreads, u64>(owned, scratch, &total);
    if (above < target && (target <= above + owned || first == 0)) {  // one thread
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
  template <typename Source>
  static SGTOPK_DEVICE u32 boundary(Shared& s, const Source& row, u64 target, bool mass, float top, u32 bk, u32 tk,
                                    int round, u32 prefix, u64 above, u64* above_out) {
    for (; round < 3; ++round) {
      const int shift = round == 0 ? 21 : round == 1 ? 10 : 0;
      const int bits = round == 2 ? 10 : 11;
      const u32 group_mask = round == 0 ? 0u : ~((1u << (shift + bits)) - 1u);  // the digits resolved so far
      for (int i = threadIdx.x; i < kDigits; i += kThreads) {
        s.count[i] = 0u;
        s.mass[i] = 0u;
      }
      __syncthreads();
      for (int i = threadIdx.x; i < row.len; i += kThreads) {
        const u32 key = row.key(i);
        if ((key & group_mask) != prefix) continue;
        if (tk != 0xffffffffu && key <= bk) continue;  // bk's copies: added once below
        const u32 d = (key >> shift) & ((1u << bits) - 1u);
        if (mass) atomicAdd(&s.mass[d], static_cast<unsigned long long>(mass_of(row.scaled(i), top)));
        else atomicAdd(&s.count[d], 1u);
      }
      if (threadIdx.x == 0 && tk != 0xffffffffu && tk > 0u && (bk & group_mask) == prefix) {
        const u32 d = (bk >> shift) & ((1u << bits) - 1u);
        if (mass) atomicAdd(&s.mass[d], static_cast<unsigned long long>(static_cast<u64>(tk) * mass_of(float_from_ordered_key(bk), top)));
        else atomicAdd(&s.count[d], tk);
      }
      __syncthreads();
      const Found f = mass ? scan_digits(s.mass, target - above, s.scratch) : scan_digits(s.count, target - above, s.scratch);
      above += f.above;
      prefix |= f.digit << shift;
      __syncthreads();  // scratch and bins are rewritten next round
    }
    *above_out = above;
    return prefix;
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
    for (int i = threadIdx.x; i < row.len; i += kThreads) {
      const u32 key = row.key(i);
      if (t == 0xffffffffu || key > b) local += mass_of(row.scaled(i), top);
    }
    if (threadIdx.x == 0) s.total = 0u;
    __syncthreads();
    atomicAdd(reinterpret_cast<unsigned long long*>(&s.total), static_cast<unsigned long long>(local));
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

  // The mass top-p must reach: ceil(p * Z) in double, at least one unit.
  static SGTOPK_DEVICE u64 mass_target(float top_p, u64 total) {
    const double want = static_cast<double>(top_p) * static_cast<double>(total);
    u64 target = static_cast<u64>(want);
    if (static_cast<double>(target) < want) ++target;
    if (target == 0u) target = 1u;
    return target;
  }

  // Top-p alone (every key survives), after the pass that found max_key: one
  // pass histograms every key's count and mass by its first digit (Z is the
  // mass histogram's sum), which is also the first mass round; the keys at or
  // above the digit it finds hold every key a later round counts, and when
  // they fit the candidate buffer one pass gathers them and the later rounds
  // run over it. Otherwise rounds 1 and 2 read the row. The same integers as
  // top_p_boundary(row, ...) at every step, hence the same b and t.
  template <typename Source>
  static SGTOPK_DEVICE void top_p_alone(Shared& s, const Source& row, float top_p, u32 max_key, u32& b, u32& t) {
    const float top = float_from_ordered_key(max_key);
    for (int i = threadIdx.x; i < kDigits; i += kThreads) {
      s.count[i] = 0u;
      s.mass[i] = 0u;
    }
    if (threadIdx.x == 0) {
      s.total = 0u;
      s.candidates = 0u;
    }
    __syncthreads();
    u64 local = 0;
    for (int i = threadIdx.x; i < row.len; i += kThreads) {
      const float x = row.scaled(i);
      const u32 d = ordered_key(x) >> 21;
      const u64 m = mass_of(x, top);
      local += m;
      atomicAdd(&s.count[d], 1u);
      if (m != 0u) atomicAdd(&s.mass[d], static_cast<unsigned long long>(m));
    }
    atomicAdd(reinterpret_cast<unsigned long long*>(&s.total), static_cast<unsigned long long>(local));
    __syncthreads();
    const u64 total = s.total;
    __syncthreads();  // s.total counts the candidates next
    if (top_p <= 0.0f || total == 0u) {  // the first token of the order only
      b = max_key;
      t = 1u;
      return;
    }
    const u64 target = mass_target(top_p, total);
    if (threadIdx.x == 0) s.total = 0u;
    const Found first = scan_digits(s.mass, target, s.scratch);  // its barriers order the reset
    u64 at_or_above = 0;
    for (int i = threadIdx.x; i < kDigits; i += kThreads)
      if (static_cast<u32>(i) >= first.digit) at_or_above += s.count[i];
    atomicAdd(reinterpret_cast<unsigned long long*>(&s.total), static_cast<unsigned long long>(at_or_above));
    __syncthreads();
    const u64 candidates = s.total;
    __syncthreads();  // count is cleared by the next round
    u64 mass_above = 0;
    u32 bp;
    if (candidates <= static_cast<u64>(kFilterCandidates)) {
      for (int i = threadIdx.x; i < row.len; i += kThreads) {
        const u32 key = row.key(i);
        if ((key >> 21) >= first.digit) s.candidate_key[atomicAdd(&s.candidates, 1u)] = key;
      }
      __syncthreads();
      const Candidates c{s.candidate_key, static_cast<int>(candidates)};
      bp = boundary(s, c, target, true, top, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &mass_above);
    } else {
      bp = boundary(s, row, target, true, top, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &mass_above);
    }
    const u64 each = mass_of(float_from_ordered_key(bp), top);
    b = bp;
    t = static_cast<u32>((target - mass_above + each - 1u) / each);
  }

  static SGTOPK_DEVICE void run(const FilterParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    Shared& s = *reinterpret_cast<Shared*>(shared_bytes);
    const long long live = live_row_count(p, static_cast<long long>(p.rows));
    const Elem mask_value = Logit::narrow(p.mask_value);
    for (long long r = blockIdx.x; r < live; r += gridDim.x) {
      const float temperature = p.temperature ? p.temperature[r] : p.temperature_value;
      const bool greedy = !(temperature > 0.0f && temperature < __int_as_float(0x7f800000));
      Row row{static_cast<const Elem*>(p.logits) + r * p.pitch, p.width, temperature, !greedy && temperature != 1.0f};
      Elem* out = static_cast<Elem*>(p.out) + r * p.pitch;
      int k = greedy ? 1 : (p.top_k ? p.top_k[r] : p.top_k_value);
      float top_p = greedy ? 1.0f : (p.top_p ? p.top_p[r] : p.top_p_value);
      const bool top_k_on = k > 0 && k < row.len;
      const bool top_p_on = top_p < 1.0f;  // false for NaN
      if (!top_k_on && !top_p_on) {
        for (int i = threadIdx.x; i < row.len; i += kThreads) out[i] = row.logits[i];
        continue;
      }
      u32 b = 0u, t = 0xffffffffu;  // no boundary yet: every key survives
      if (top_k_on) {
        // One pass: the largest key, and the first digit round (all keys).
        for (int i = threadIdx.x; i < kDigits; i += kThreads) s.count[i] = 0u;
        if (threadIdx.x == 0) {
          s.max_key = 0u;
          s.candidates = 0u;
        }
        __syncthreads();
        u32 local_max = 0u;
        for (int i = threadIdx.x; i < row.len; i += kThreads) {
          const u32 key = row.key(i);
          local_max = max_of(local_max, key);
          atomicAdd(&s.count[key >> 21], 1u);
        }
        atomicMax(&s.max_key, local_max);
        __syncthreads();
        const Found first = scan_digits(s.count, static_cast<u64>(k), s.scratch);
        const u32 max_key = s.max_key;
        // The keys at or above the digit: every top-k survivor, hence every
        // key a later round, the survivors' mass or top-p counts.
        const u64 candidates = first.above + s.count[first.digit];
        __syncthreads();  // count is cleared by the next round
        u64 above = 0;
        if (candidates <= static_cast<u64>(kFilterCandidates)) {
          for (int i = threadIdx.x; i < row.len; i += kThreads) {
            const u32 key = row.key(i);
            if ((key >> 21) >= first.digit) s.candidate_key[atomicAdd(&s.candidates, 1u)] = key;
          }
          __syncthreads();
          const Candidates c{s.candidate_key, static_cast<int>(candidates)};
          b = boundary(s, c, static_cast<u64>(k), false, 0.0f, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &above);
          t = static_cast<u32>(static_cast<u64>(k) - above);
          if (top_p_on) top_p_boundary(s, c, top_p, max_key, b, t);
        } else {
          b = boundary(s, row, static_cast<u64>(k), false, 0.0f, 0u, 0xffffffffu, 1, first.digit << 21, first.above, &above);
          t = static_cast<u32>(static_cast<u64>(k) - above);
          if (top_p_on) top_p_boundary(s, row, top_p, max_key, b, t);
        }
      } else {  // top-p alone
        // The largest key (the first of the order).
        if (threadIdx.x == 0) s.max_key = 0u;
        __syncthreads();
        u32 local_max = 0u;
        for (int i = threadIdx.x; i < row.len; i += kThreads) local_max = max_of(local_max, row.key(i));
        atomicMax(&s.max_key, local_max);
        __syncthreads();
        const u32 max_key = s.max_key;
        __syncthreads();
        top_p_alone(s, row, top_p, max_key, b, t);
      }
      write_mask(s, row, out, b, t, mask_value);
      __syncthreads();
    }
  }
};

}  // namespace sgtopk

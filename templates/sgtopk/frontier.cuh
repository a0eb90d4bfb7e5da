// The frontier and its exact refinement (ALGORITHM.md, phase 3).
//
// A round takes the current candidates, the histogram of their current digit
// and the rank still to fill (`remaining`). It finds the digit d holding that
// rank, commits every candidate with a larger digit, drops the smaller ones,
// and carries the d-group forward while histogramming its next digit. When
// the d-group exactly fills the rank it is committed whole and selection ends.
//
// Digits: round 0 is the 11-bit coarse key (the boundary pass); rounds 1..3
// take 11, 11, 10 bits of the FP32 ordered key; the remaining rounds take the
// bits of the inverted index, so ties resolve to the lowest indices through
// the same machinery, and a group can never be larger than its rank at the end.
//
// Candidates live in a logical array: the first kSharedCapacity slots in
// shared memory, the next kGlobalCapacity in the CTA's own workspace slice.
// When a group does not fit, it is not stored and the next round re-derives it
// from the row (registers or global memory) by matching the resolved prefix.
#pragma once
#include "sgtopk/block_scan.cuh"
#include "sgtopk/keys.cuh"
#include "sgtopk/row_stream.cuh"
#include "sgtopk/warp_append.cuh"

namespace sgtopk {

template <int kIndexBits>
struct DigitSchedule {
  static constexpr int kIndexRounds = (kIndexBits + 10) / 11;
  static constexpr int kRounds = 1 + 3 + kIndexRounds;  // coarse + key + index

  // Rank-key digits of round r >= 1: (key >> shift) & ((1 << bits) - 1).
  SGTOPK_DEVICE static int shift(int r) {
    if (r == 0) return 64;  // the coarse round resolves no rank-key bits
    if (r == 1) return 53;
    if (r == 2) return 42;
    if (r == 3) return 32;
    const int j = r - 4;  // index rounds from the top index bit down
    return max_of(0, kIndexBits - 11 * (j + 1));
  }
  SGTOPK_DEVICE static int bits(int r) {
    if (r == 1 || r == 2) return 11;
    if (r == 3) return 10;
    const int j = r - 4;
    return min_of(11, kIndexBits - 11 * j);
  }
  SGTOPK_DEVICE static u32 digit(u64 rank_key, int r) {
    return static_cast<u32>(rank_key >> shift(r)) & ((1u << bits(r)) - 1u);
  }
};

// Shared state of one row's selection. Lives at the start of dynamic shared memory.
struct SelectionState {
  u32 histogram[kCoarseBins];
  u32 scratch[36];
  u32 committed;        // output slots filled
  u32 frontier_count;   // candidates of the current group (may exceed capacity)
  u32 next_count;       // candidates carried into the next round
  u32 remaining;        // rank still to fill from the current group
  u32 coarse_boundary;  // round-0 boundary bin
  u32 done;
  u32 floor_bin;        // coarse bins below it cannot hold the K-th value (histogram pass)
  u32 floor_low_key;    // ordered_key of a proven floor bin's lowest number (-inf's until one is known)
  float boundary_low;   // lowest number in the boundary bin (endpoint classification)
  float boundary_high;  // lowest number above the boundary bin, NaN when none
  float proposal_primary_low;    // sampled proposal: endpoint(tau0)
  float proposal_secondary_low;  // sampled proposal: endpoint(tau1) <= endpoint(tau0)
  float admit_low;      // sampled routes: the candidates are exactly the x >= admit_low
  u32 admit_by_threshold;  // 1: round-1 membership is x >= admit_low; 0: the coarse boundary bin
  u64 prefix;           // rank_key >> shift(last resolved round)
};

// A row's selection starts empty: the histogram cleared, nothing committed,
// the whole rank K to fill. `admit_by_threshold` says how the first frontier
// is formed (1: the sampled routes' x >= admit_low; 0: the coarse boundary bin).
// Starts with a barrier: whatever read the state before is over.
template <int kThreads>
SGTOPK_DEVICE void begin_selection(SelectionState& state, u32 k, u32 admit_by_threshold) {
  __syncthreads();
  clear_words<kThreads>(state.histogram, kCoarseBins);
  if (threadIdx.x == 0) {
    state.committed = 0u;
    state.frontier_count = 0u;
    state.next_count = 0u;
    state.remaining = k;
    state.done = 0u;
    state.prefix = 0ull;
    state.floor_bin = 0u;
    state.floor_low_key = ordered_key(__int_as_float(0xff800000));
    state.admit_by_threshold = admit_by_threshold;
  }
  __syncthreads();
}

template <int kSharedCapacity, int kGlobalCapacity>
struct FrontierStore {
  static constexpr u32 kCapacity = static_cast<u32>(kSharedCapacity) + static_cast<u32>(kGlobalCapacity);
  float* shared_value;
  u32* shared_index;
  float* global_value;
  u32* global_index;

  SGTOPK_DEVICE void store(u32 slot, float value, u32 index) const {
    if (slot < static_cast<u32>(kSharedCapacity)) {
      shared_value[slot] = value;
      shared_index[slot] = index;
    } else if (slot < kCapacity) {
      global_value[slot - kSharedCapacity] = value;
      global_index[slot - kSharedCapacity] = index;
    }
  }
  SGTOPK_DEVICE void load(u32 slot, float* value, u32* index) const {
    if (slot < static_cast<u32>(kSharedCapacity)) {
      *value = shared_value[slot];
      *index = shared_index[slot];
    } else {
      *value = global_value[slot - kSharedCapacity];
      *index = global_index[slot - kSharedCapacity];
    }
  }
};

// The row-level refinement loop, shared by every select family. `Output`
// commits one (index, value); `Row` re-derives candidates when the frontier
// did not fit (see row_stream.cuh for the two row kinds).
template <int kThreads, int kIndexBits, bool kEndpointClassify, typename Store, typename Row, typename Output>
struct Refinement {
  typedef DigitSchedule<kIndexBits> Schedule;

  SelectionState& state;
  const Store& store;
  const Row& row;
  const Output& out;

  // Is (value, index) still a candidate before round r (r >= 1)?
  SGTOPK_DEVICE bool in_group(float value, u32 index, int r) const {
    const bool admitted =
        state.admit_by_threshold ? value >= state.admit_low : coarse_key(value) == state.coarse_boundary;
    if (!admitted) return false;
    if (r == 1) return true;
    return (rank_key(value, index) >> Schedule::shift(r - 1)) == state.prefix;
  }

  // Classify one candidate of round r against digit d; carry into round r+1.
  SGTOPK_DEVICE void classify(float value, u32 index, u32 digit, u32 d, bool take_group, int r) {
    if (digit < d) return;  // dropped
    const bool commit = digit > d || (digit == d && take_group);
    const bool carry = digit == d && !take_group;
    const u32 slot = warp_append(commit, &state.committed);
    if (commit) out.commit(slot, index, value);
    this->carry(carry, value, index, r);
  }

  // Carries (value, index) into round r+1 when `take`.
  SGTOPK_DEVICE void carry(bool take, float value, u32 index, int r) {
    const u32 next = warp_append(take, &state.next_count);
    if (take) keep(next, value, index, r);
  }

  // Stores a carried candidate in frontier slot `slot` and counts it in the
  // histogram of its round r+1 digit.
  SGTOPK_DEVICE void keep(u32 slot, float value, u32 index, int r) {
    store.store(slot, value, index);
    if (r + 1 < Schedule::kRounds) atomicAdd(&state.histogram[Schedule::digit(rank_key(value, index), r + 1)], 1u);
  }

  // The chunk forms of carry and classify, for the full-row passes
  // (row_stream.cuh's for_each_chunk: every lane of the warp takes part).
  // Each thread first marks its own scores; the warp then reserves all its
  // slots at once, instead of a vote and a divergent branch per score, which
  // made the passes instruction-bound.

  // The sampled certification: stores every valid score of the chunk that
  // `admit` accepts as a round-1 candidate. The round-1 histogram of the
  // stored ones is built once the pass is over (count_admitted_digits), so
  // the loop every lane runs stays short; only candidates past the store's
  // capacity (not stored, so not countable later without another read of
  // the row) are counted here.
  template <typename Chunk, typename Admit>
  SGTOPK_DEVICE void admit_chunk(const Chunk& chunk, Admit&& admit) {
    static_assert(Chunk::kCount <= 32, "one mask bit per score");
    u32 taken = 0u;
#pragma unroll
    for (int n = 0; n < Chunk::kCount; ++n)
      if (chunk.is_valid(n) && admit(chunk.score(n))) taken |= 1u << n;
    u32 slot = warp_reserve(static_cast<u32>(__popc(taken)), &state.next_count);
    // Only the marked scores, one per iteration: a warp runs as many
    // iterations as its busiest lane has candidates (a few), not kCount.
    for (; taken != 0u; taken &= taken - 1u) {
      const int n = __ffs(taken) - 1;
      admit_at(slot++, chunk.score_at(n), chunk.index(n));
    }
  }

  // The same for one score (heads and tails, where lanes diverge).
  SGTOPK_DEVICE void admit(bool take, float value, u32 index) {
    const u32 slot = warp_append(take, &state.next_count);
    if (take) admit_at(slot, value, index);
  }

  SGTOPK_DEVICE void admit_at(u32 slot, float value, u32 index) {
    if (slot < Store::kCapacity) store.store(slot, value, index);
    else count_first_digit(value, index);
  }

  SGTOPK_DEVICE void count_first_digit(float value, u32 index) {
    atomicAdd(&state.histogram[Schedule::digit(rank_key(value, index), 1)], 1u);
  }

  // After certification: adds the stored candidates' round-1 digits to the
  // histogram (the ones past the capacity were counted as they came, by
  // whichever pass admitted them; an exact route clears it all again).
  // Ends with a barrier.
  SGTOPK_DEVICE void count_admitted_digits() {
    const u32 stored = min_of(state.frontier_count, Store::kCapacity);
    for (u32 slot = threadIdx.x; slot < stored; slot += kThreads) {
      float value;
      u32 index;
      store.load(slot, &value, &index);
      count_first_digit(value, index);
    }
    __syncthreads();
  }

  // Round 0 over a chunk against boundary digit d (see classify).
  template <typename Chunk, typename DigitOf>
  SGTOPK_DEVICE void classify_chunk(const Chunk& chunk, DigitOf&& digit_of, u32 d, bool take_group) {
    static_assert(Chunk::kCount <= 32, "one mask bit per score");
    u32 commits = 0u, carries = 0u;
#pragma unroll
    for (int n = 0; n < Chunk::kCount; ++n) {
      if (!chunk.is_valid(n)) continue;
      const u32 digit = digit_of(chunk.score(n));
      if (digit > d || (digit == d && take_group)) commits |= 1u << n;
      else if (digit == d) carries |= 1u << n;
    }
    // One warp scan for both counts (commits in the high half-word: a warp
    // holds at most 32 x 32 scores of a chunk).
    u32 total;
    const u32 before = warp_exclusive_sum((static_cast<u32>(__popc(commits)) << 16) | static_cast<u32>(__popc(carries)), &total);
    if (total == 0u) return;
    const int lane = threadIdx.x & 31;
    u32 base = 0u;
    if (lane == 0 && (total >> 16) != 0u) base = atomicAdd(&state.committed, total >> 16);
    if (lane == 1 && (total & 0xffffu) != 0u) base = atomicAdd(&state.next_count, total & 0xffffu);
    u32 commit_slot = __shfl_sync(0xffffffffu, base, 0) + (before >> 16);
    u32 carry_slot = __shfl_sync(0xffffffffu, base, 1) + (before & 0xffffu);
    // Only the marked scores (see admit_chunk).
    for (; commits != 0u; commits &= commits - 1u) {
      const int n = __ffs(commits) - 1;
      out.commit(commit_slot++, chunk.index(n), chunk.score_at(n));
    }
    for (; carries != 0u; carries &= carries - 1u) {
      const int n = __ffs(carries) - 1;
      keep(carry_slot++, chunk.score_at(n), chunk.index(n), 0);
    }
  }

  // Round 0 over the whole row, digits from digit_of(value).
  template <typename DigitOf>
  SGTOPK_DEVICE void classify_row(DigitOf&& digit_of, u32 d, bool take_group) {
    row.for_each_chunk([&](const auto& chunk) { classify_chunk(chunk, digit_of, d, take_group); },
                       [&](int i, float value) { classify(value, static_cast<u32>(i), digit_of(value), d, take_group, 0); });
  }

  // Resolve the histogram of round r: boundary digit, how many to commit.
  // Returns the boundary digit; sets take_group when the whole group fits.
  SGTOPK_DEVICE u32 resolve(bool* take_group) {
    const RankBin found = find_rank_bin<kThreads, kCoarseBins>(state.histogram, state.remaining, state.scratch);
    const u32 group = state.histogram[found.bin];
    *take_group = found.above + group == state.remaining;
    __syncthreads();
    clear_words<kThreads>(state.histogram, kCoarseBins);
    if (threadIdx.x == 0) {
      state.remaining -= found.above;
      state.next_count = 0u;
    }
    __syncthreads();
    return found.bin;
  }

  // After round r classified: the carried group becomes the frontier.
  SGTOPK_DEVICE void advance(bool take_group, u32 d, int r) {
    __syncthreads();
    if (threadIdx.x == 0) {
      if (take_group) state.done = 1u;
      state.frontier_count = state.next_count;
      if (r == 0) {
        state.coarse_boundary = d;
      } else {
        // The first index round skips the constant high bits of the inverted
        // index (all ones below the width): fold them into the prefix too.
        const int gap = Schedule::shift(r - 1) - Schedule::shift(r);
        const u64 constant_ones = ((1ull << gap) - 1ull) & ~((1ull << Schedule::bits(r)) - 1ull);
        state.prefix = (state.prefix << gap) | constant_ones | d;
      }
    }
    __syncthreads();
  }

  // Round 0 over the whole row: the coarse histogram is in state.histogram.
  // Commits everything above the boundary bin, carries the bin as the frontier.
  SGTOPK_DEVICE void boundary_pass() {
    bool take_group;
    const u32 d = resolve(&take_group);
    if constexpr (kEndpointClassify) {
      // Two FP32 comparisons per score instead of recomputing its coarse key
      // (ALGORITHM.md, "Endpoint"). A pseudo-digit keeps classify() unchanged:
      // d + 1 above the bin, d inside it, d - 1 below (bin 0 has no below).
      coarse_bin_lower_endpoints(d, d + 1u, state.boundary_low, state.boundary_high);
      __syncthreads();
      const float low = state.boundary_low, high = state.boundary_high;
      classify_row([&](float value) { return value >= high ? d + 1u : (value >= low || d == 0u) ? d : d - 1u; }, d,
                   take_group);
    } else {
      classify_row([](float value) { return coarse_key(value); }, d, take_group);
    }
    advance(take_group, d, 0);
  }

  // Rounds 1.. until the rank is filled. Round 0 (or the sampled family's
  // certification) has run: the frontier holds the boundary group and the
  // histogram its digit of round 1.
  SGTOPK_DEVICE void refine() {
    for (int r = 1; r < Schedule::kRounds && !state.done; ++r) {
      bool take_group;
      const u32 d = resolve(&take_group);
      const u32 count = state.frontier_count;
      if (count <= Store::kCapacity) {
        // Stored frontier: read kBatch block-wide chunks into registers,
        // then compact the carried group in place (slots written never
        // exceed slots already read). kBatch slots per thread cover the
        // usual frontier (a few K) with one barrier per round instead of one
        // per kThreads slots.
        constexpr int kBatch = 8;
        for (u32 base = 0; base < count; base += kThreads * kBatch) {
          float value[kBatch];
          u32 index[kBatch];
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            const u32 slot = base + static_cast<u32>(b * kThreads) + threadIdx.x;
            value[b] = 0.0f;
            index[b] = 0u;
            if (slot < count) store.load(slot, &value[b], &index[b]);
          }
          __syncthreads();
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            const u32 slot = base + static_cast<u32>(b * kThreads) + threadIdx.x;
            if (slot < count) classify(value[b], index[b], Schedule::digit(rank_key(value[b], index[b]), r), d, take_group, r);
          }
        }
      } else {
        row.for_each([&](int i, float value) {
          const u32 index = static_cast<u32>(i);
          if (in_group(value, index, r)) classify(value, index, Schedule::digit(rank_key(value, index), r), d, take_group, r);
        });
      }
      advance(take_group, d, r);
    }
  }
};

}  // namespace sgtopk

// The frontier and its exact refinement (ALGORITHM.md, phase 3).
//
// A round takes the current candidates, the histogram of their current digit
// and the rank still to fill (`remaining`). It finds the digit d holding that
// rank, commits every candidate with a larger digit, drops the smaller ones,
// and carries the d-group forward while histogramming its next digit. When
// the d-group exactly fills the rank it is committed whole and selection ends.
//
// Digits: round 0 is the 11-bit coarse key (the boundary pass). Every
// candidate of round 1 shares the top `known` bits of its FP32 ordered key
// (one coarse bin, or the sampled frontier's range [admit_low, highest]), so
// rounds 1.. take only the key's remaining bits, 11 at a time from the top
// (without that, round 1 would look at bits the whole frontier shares: one
// bin, every candidate carried, every histogram atomic on one address); the
// remaining rounds take the bits of the inverted index, so ties resolve to
// the lowest indices through the same machinery, and a group can never be
// larger than its rank at the end.
//
// Candidates live in a logical array: the first kSharedCapacity slots in
// shared memory, the next kGlobalCapacity in the CTA's own workspace slice.
// When a group does not fit, it is not stored and the next round re-derives it
// from the row (registers or global memory) by matching the resolved prefix.
#pragma once
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/block/warp_append.cuh"
#include "sgtopk/row/rows.cuh"
#include "sgtopk/selection/digits.cuh"
#include "sgtopk/selection/frontier_store.cuh"
#include "sgtopk/selection/state.cuh"
#include "sgtopk/selection/verdicts.cuh"
#include "sgtopk/util/keys.cuh"

namespace sgtopk {

// The CTAs that select one row together: one (BlockSpan), or a cluster's,
// each over its own segment (agent/cluster.cuh's ClusterAgent::Span). Each
// round's histogram is combined over the span before it is resolved (and the
// highest candidate's key before the digits start below it), and the output
// slots are counted once for the span, so every CTA takes the same digits.
// Both combines are called after a barrier and end with one.
struct BlockSpan {
  static constexpr int kCtas = 1;
  static SGTOPK_DEVICE void combine(SelectionState&) {}
  static SGTOPK_DEVICE void combine_max(u32*) {}
  static SGTOPK_DEVICE u32* committed(SelectionState& state) { return &state.committed; }
};

// The row-level refinement loop, shared by every select family. `Output`
// commits one (index, value); `Row` re-derives candidates when the frontier
// did not fit (see row/rows.cuh for the two row kinds).
template <int kThreads, int kIndexBits, bool kEndpointClassification, int kSmallGroup, typename Store, typename Row,
          typename Output, typename Span = BlockSpan>
struct Refinement {
  typedef DigitSchedule<kIndexBits> Schedule;
  static_assert(kSmallGroup >= 0 && kSmallGroup <= kThreads && static_cast<u32>(kSmallGroup) <= Store::kCapacity,
                "a small group is one candidate per thread, all stored");

  SelectionState& state;
  const Store& store;
  const Row& row;
  const Output& out;

  // The digit schedule of this row's rounds (set before round 1 is counted).
  SGTOPK_DEVICE Schedule schedule() const { return Schedule(state.known_key_bits); }

  // Every round-1 candidate's ordered key lies in [low_key, high_key], so all
  // share the keys' common high bits: no round needs to resolve them, and
  // they start the prefix. Run by one thread before round 1's digits are
  // counted; the caller's barrier publishes it.
  SGTOPK_DEVICE void set_common_prefix(u32 low_key, u32 high_key) {
    const u32 known = static_cast<u32>(__clz(low_key ^ high_key));  // 32 when equal
    state.known_key_bits = known;
    state.prefix = known == 0u ? 0ull : static_cast<u64>(low_key >> (32u - known));
  }

  // Is (value, index) still a candidate before round r (r >= 1)? The loops
  // over candidates pass the row's schedule `s` in, so it is not rebuilt
  // from shared memory per candidate.
  SGTOPK_DEVICE bool in_group(const Schedule& s, float value, u32 index, int r) const {
    const bool admitted =
        state.admit_by_threshold ? value >= state.admit_low : coarse_key(value) == state.coarse_boundary;
    if (!admitted) return false;
    if (r == 1) return true;
    return (rank_key(value, index) >> s.shift(r - 1)) == state.prefix;
  }

  // Classify one candidate of round r against digit d; carry into round r+1.
  SGTOPK_DEVICE void classify(const Schedule& s, float value, u32 index, u32 digit, u32 d, bool take_group, int r) {
    if (digit < d) return;  // dropped
    settle(s, Verdict::of_digit(digit, d, take_group), value, index, r);
  }

  // Commits or carries one score as its verdict says.
  SGTOPK_DEVICE void settle(const Schedule& s, Verdict verdict, float value, u32 index, int r) {
    const u32 slot = warp_append(verdict.commit, Span::committed(state));
    if (verdict.commit) out.commit(slot, index, value);
    carry(s, verdict.carry, value, index, r);
  }

  // Carries (value, index) into round r+1 when `take`.
  SGTOPK_DEVICE void carry(const Schedule& s, bool take, float value, u32 index, int r) {
    const u32 next = warp_append(take, &state.next_count);
    if (take) keep(s, next, value, index, r);
  }

  // Stores a carried candidate in frontier slot `slot` and counts it in the
  // histogram of its round r+1 digit.
  SGTOPK_DEVICE void keep(const Schedule& s, u32 slot, float value, u32 index, int r) {
    store.store(slot, value, index);
    if (r + 1 < s.rounds()) atomicAdd(&state.histogram[s.digit(rank_key(value, index), r + 1)], 1u);
  }

  // The chunk forms of carry and classify, for the full-row passes
  // (row/traversal.cuh's for_each_chunk: every lane of the warp takes part).
  // Each thread first marks its own scores; the warp then reserves all its
  // slots at once, instead of a vote and a divergent branch per score, which
  // made the passes instruction-bound
  // (docs/decisions/2026-11-30-full-row-passes-by-block-chunks.md).

  // The sampled certification: stores every valid score of the chunk that
  // `admit` accepts as a round-1 candidate. The round-1 histogram of the
  // stored ones is built once the pass is over (count_admitted_digits), so
  // the loop every lane runs stays short
  // (docs/decisions/2026-11-30-sampled-certify-then-histogram.md); only
  // candidates past the store's capacity (not stored, so not countable later
  // without another read of the row) are counted here.
  template <typename Chunk, typename Admit>
  SGTOPK_DEVICE void admit_chunk(const Chunk& chunk, Admit&& admit) {
    static_assert(Chunk::kCount <= 32, "one mask bit per score");
    // A validity test per score, not classify_chunk's live mask
    // (docs/decisions/2026-11-30-lean-masks-direct-only.md).
    u32 taken = 0u;
#pragma unroll
    for (int n = 0; n < Chunk::kCount; ++n)
      if (chunk.is_valid(n) && admit(chunk.score(n))) taken |= 1u << n;
    u32 slot = warp_reserve(static_cast<u32>(__popc(taken)), &state.next_count);
    // Only the marked scores, one per iteration: a warp runs as many
    // iterations as its busiest lane has candidates (a few), not kCount.
    for (; taken != 0u; taken &= taken - 1u) {
      const int n = __ffs(taken) - 1;
      admit_at(slot++, chunk.score_again(n), chunk.index(n));
    }
  }

  // The same for one score (heads and tails, where lanes diverge).
  SGTOPK_DEVICE void admit(bool take, float value, u32 index) {
    const u32 slot = warp_append(take, &state.next_count);
    if (take) admit_at(slot, value, index);
  }

  SGTOPK_DEVICE void admit_at(u32 slot, float value, u32 index) {
    if (slot < Store::kCapacity) store.store(slot, value, index);
    else count_first_digit(schedule(), value, index);
  }

  SGTOPK_DEVICE void count_first_digit(const Schedule& s, float value, u32 index) {
    atomicAdd(&state.histogram[s.digit(rank_key(value, index), 1)], 1u);
  }

  // After certification: adds the stored candidates' round-1 digits to the
  // histogram (the ones past the capacity were counted as they came, by
  // whichever pass admitted them, with the full-key schedule; an exact route
  // clears it all again). When every candidate is stored, the digits start
  // below the common prefix of admit_low and the highest candidate.
  // The caller has published frontier_count and admit_low. Ends with a barrier.
  SGTOPK_DEVICE void count_admitted_digits() {
    const u32 count = state.frontier_count;
    if (count <= Store::kCapacity) {  // block-uniform (and span-uniform: a cluster certifies only when all fit)
      u32 high = 0u;
      for (u32 slot = threadIdx.x; slot < count; slot += kThreads) {
        float value;
        u32 index;
        store.load(slot, &value, &index);
        high = max_of(high, ordered_key(value));
      }
      high = warp_max(high);
      if ((threadIdx.x & 31) == 0 && high != 0u) atomicMax(&state.frontier_high_key, high);
      __syncthreads();
      Span::combine_max(&state.frontier_high_key);
      if (threadIdx.x == 0) set_common_prefix(ordered_key(state.admit_low), state.frontier_high_key);
      __syncthreads();
    }
    const u32 stored = min_of(count, Store::kCapacity);
    const Schedule s = schedule();
    for (u32 slot = threadIdx.x; slot < stored; slot += kThreads) {
      float value;
      u32 index;
      store.load(slot, &value, &index);
      count_first_digit(s, value, index);
    }
    __syncthreads();
  }

  // Round 0 over a chunk: verdict_of(value) says what becomes of each score.
  // With kSparseVectors > 0, a warp whose lanes each hold at most that many
  // valid vectors (a marked pass, row/floor_marks.cuh: most of a long row's
  // chunks) takes verdicts on those vectors only, one at a time, instead of
  // on every slot of the chunk.
  template <int kSparseVectors, typename Chunk, typename VerdictOf>
  SGTOPK_DEVICE void classify_chunk(const Schedule& s, const Chunk& chunk, VerdictOf&& verdict_of) {
    static_assert(Chunk::kCount <= 32, "one mask bit per score");
    u32 commits = 0u, carries = 0u;
    if constexpr (kSparseVectors > 0 && Chunk::kVectors > kSparseVectors) {
      if (__ballot_sync(0xffffffffu, __popc(chunk.valid) > kSparseVectors) != 0u) {
        verdict_masks(chunk, verdict_of, commits, carries);
      } else {
        for (u32 vectors = chunk.valid; vectors != 0u; vectors &= vectors - 1u) {
          const int u = __ffs(vectors) - 1;
          u32 vector_commits = 0u, vector_carries = 0u;
          verdict_masks(OneVector{chunk.vector_at(u)}, verdict_of, vector_commits, vector_carries);
          commits |= (vector_commits & 0xfu) << (4 * u);
          carries |= (vector_carries & 0xfu) << (4 * u);
        }
      }
    } else {
      verdict_masks(chunk, verdict_of, commits, carries);
    }
    const u32 live = chunk.live_mask();
    commits &= live;
    carries &= live;
    // Most of an indexer row's chunks give a warp nothing (away from the
    // top-K's clusters): one vote then instead of the scan. (Not in
    // warp_reserve: the sampled certification admits a few scores in nearly
    // every warp's chunk, so there the vote only costs:
    // docs/decisions/2026-11-30-lean-masks-direct-only.md.)
    if (__ballot_sync(0xffffffffu, (commits | carries) != 0u) == 0u) return;
    // One warp scan for both counts (commits in the high half-word: a warp
    // holds at most 32 x 32 scores of a chunk).
    u32 total;
    const u32 before = warp_exclusive_sum((static_cast<u32>(__popc(commits)) << 16) | static_cast<u32>(__popc(carries)), &total);
    if (total == 0u) return;
    const int lane = threadIdx.x & 31;
    u32 base = 0u;
    if (lane == 0 && (total >> 16) != 0u) base = atomicAdd(Span::committed(state), total >> 16);
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
      keep(s, carry_slot++, chunk.score_at(n), chunk.index(n), 0);
    }
  }

  // Round 0 over the row's vectors that `want` names (the caller's barrier
  // published the schedule).
  template <typename Want, typename VerdictOf>
  SGTOPK_DEVICE void classify_row(const Want& want, VerdictOf&& verdict_of) {
    const Schedule s = schedule();
    row.for_each_wanted_chunk(want, [&](const auto& chunk) { classify_chunk<Want::kSparseVectors>(s, chunk, verdict_of); },
                              [&](int i, float value) {
                                const Verdict verdict = verdict_of(value);
                                if (verdict.commit || verdict.carry) settle(s, verdict, value, static_cast<u32>(i), 0);
                              });
  }

  // Resolve the histogram of round r: boundary digit, how many to commit.
  // Returns the boundary digit; sets take_group when the whole group fits.
  // `at_boundary(bin)` runs on thread 0 before the barrier that publishes
  // what it writes. The caller's barrier completed this CTA's histogram; the
  // span's are combined first.
  template <typename AtBoundary>
  SGTOPK_DEVICE u32 resolve(bool* take_group, AtBoundary&& at_boundary) {
    Span::combine(state);
    const u32 rank = state.remaining;
    const RankBin found = find_rank_bin<kThreads, kCoarseBins>(state.histogram, rank, state.scratch);
    *take_group = found.above + found.count == rank;
    // Every thread read the histogram and `remaining` before find_rank_bin's
    // barriers, so both may change without another.
    clear_words<kThreads>(state.histogram, kCoarseBins);
    if (threadIdx.x == 0) {
      state.remaining = rank - found.above;
      state.next_count = 0u;
      at_boundary(found.bin);
    }
    __syncthreads();
    return found.bin;
  }
  SGTOPK_DEVICE u32 resolve(bool* take_group) {
    return resolve(take_group, [](u32) {});
  }

  // After round r classified: the carried group becomes the frontier. Only
  // round 0 ends with a barrier (its callers read what thread 0 wrote);
  // refinement rounds read it after the next resolve's barriers, and refine()
  // keeps `done` in a register and ends with a barrier of its own.
  SGTOPK_DEVICE void advance(bool take_group, u32 d, int r) {
    __syncthreads();
    if (threadIdx.x == 0) {
      if (take_group) state.done = 1u;
      state.frontier_count = state.next_count;
      if (r == 0) {
        state.coarse_boundary = d;  // the prefix is the bin's common key bits (boundary_pass)
      } else {
        // The first index round skips the constant high bits of the inverted
        // index (all ones below the width): fold them into the prefix too.
        const Schedule s = schedule();
        const int gap = s.shift(r - 1) - s.shift(r);
        const u64 constant_ones = ((1ull << gap) - 1ull) & ~((1ull << s.bits(r)) - 1ull);
        state.prefix = (state.prefix << gap) | constant_ones | d;
      }
    }
    if (r == 0) __syncthreads();
  }

  // Round 0 over the whole row: the coarse histogram is in state.histogram.
  // Commits everything above the boundary bin, carries the bin as the frontier.
  // `want` may leave out vectors holding no score at or above the bin's
  // lowest number (row/floor_marks.cuh; prune_below tells it the bin).
  template <typename Want>
  SGTOPK_DEVICE void boundary_pass(const Want& want) {
    // The bin's endpoints (closed form, so every thread computes its own)
    // bound its scores' ordered keys: [key(low), key(high) - 1], or up to
    // +inf's key when no number lies above the bin; thread 0 publishes
    // their common prefix with resolve's barrier. NaN's bin 0 keeps the
    // full-key schedule.
    const auto endpoints = [](u32 bin, float& low, float& high) {
      low = coarse_bin_lower_endpoint_direct(bin);
      high = coarse_bin_lower_endpoint_direct(bin + 1u);
    };
    bool take_group;
    const u32 d = resolve(&take_group, [&](u32 bin) {
      if (bin == 0u) return;
      float low, high;
      endpoints(bin, low, high);
      set_common_prefix(ordered_key(low), high == high ? ordered_key(high) - 1u : ordered_key(__int_as_float(0x7f800000)));
    });
    want.prune_below(d);  // this thread's own marks (floor_marks.cuh)
    if constexpr (kEndpointClassification) {
      // Two FP32 comparisons per score instead of its coarse key and a digit
      // comparison (ALGORITHM.md, "Endpoint"): commit at or above commit_low,
      // carry the rest of the bin. No number lies below bin 0 (NaN's), and
      // high is NaN when no number lies above the bin, so nothing compares
      // above it.
      float low, high;
      endpoints(d, low, high);
      const bool bin_zero = d == 0u;
      const float commit_low = take_group ? low : high;
      classify_row(want, EndpointVerdict{commit_low, take_group ? commit_low : low, take_group && bin_zero, bin_zero});
    } else {
      classify_row(want, [=](float value) { return Verdict::of_digit(coarse_key(value), d, take_group); });
    }
    advance(take_group, d, 0);
  }

  // A carried group of `group` <= kSmallGroup candidates (frontier slots
  // [0, group), all stored) with `remaining` of them still to commit: each
  // candidate counts the group's candidates whose rank key beats its own
  // (all threads read the same slot at once: a shared-memory broadcast), and
  // those beaten by fewer than `remaining` are committed. One step instead of
  // one or more radix rounds, each several barriers and a 2048-bin scan
  // (docs/decisions/2026-11-30-refinement-fewer-barriers-small-group.md).
  // Returns false, doing nothing, when the group is larger. Block-uniform
  // arguments; the caller's barrier ends it.
  SGTOPK_DEVICE bool finish_small_group(u32 group, u32 remaining) {
    // A span's group is spread over its CTAs: each holds a part.
    if (Span::kCtas > 1 || group > static_cast<u32>(kSmallGroup)) return false;
    if (threadIdx.x < group) {
      float value;
      u32 index;
      store.load(threadIdx.x, &value, &index);
      const u64 key = rank_key(value, index);
      u32 beaten_by = 0u;
      for (u32 j = 0; j < group; ++j) {
        float other_value;
        u32 other_index;
        store.load(j, &other_value, &other_index);
        beaten_by += rank_key(other_value, other_index) > key ? 1u : 0u;
      }
      const bool take = beaten_by < remaining;
      const u32 slot = warp_append(take, Span::committed(state));
      if (take) out.commit(slot, index, value);
    }
    return true;
  }

  // Rounds 1.. until the rank is filled. Round 0 (or the sampled family's
  // certification) has run: the frontier holds the boundary group and the
  // histogram its digit of round 1.
  SGTOPK_DEVICE void refine() {
    const Schedule s = schedule();
    bool done = state.done != 0u;  // block-uniform: set before the caller's last barrier
    // The caller's barrier published the first group and its rank.
    if (!done) done = finish_small_group(state.frontier_count, state.remaining);
    for (int r = 1; r < s.rounds() && !done; ++r) {
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
            if (slot < count) classify(s, value[b], index[b], s.digit(rank_key(value[b], index[b]), r), d, take_group, r);
          }
        }
      } else {
        row.for_each([&](int i, float value) {
          const u32 index = static_cast<u32>(i);
          if (in_group(s, value, index, r)) classify(s, value, index, s.digit(rank_key(value, index), r), d, take_group, r);
        });
      }
      advance(take_group, d, r);
      // advance's barrier made the carried group's size final and its
      // candidates visible; resolve set the rank left in it.
      done = take_group || finish_small_group(state.next_count, state.remaining);
    }
    __syncthreads();  // thread 0's last advance is visible to whatever reads the state next
  }
};

}  // namespace sgtopk

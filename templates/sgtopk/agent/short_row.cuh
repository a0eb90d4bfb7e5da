// Short-row select (the paper's row-local mapping, section 5.5, for rows a
// CTA holds in registers): one CTA per row, the row read once, a histogram
// round over its coarse keys; a small boundary bin is then ranked directly,
// a wide one by rounds over its ordered-key offsets, 11 bits at a time
// (histograms in shared memory), until the K-th key's group is either taken
// whole or is a single key, whose ties go to the lower indices; each warp
// writes its selected scores from its slot of one block scan. A row with
// len <= K is copied.
//
// The including source defines `Config` with the plan's constants:
//   kK, kThreads, kRegisterItems, kWidth, kPitch, kOutPitch, kValues, kSorted,
//   kStarts, kRouteStats, kSortSlots, kIndexTransform, kPageSize, kPageTablePitch,
//   kScoresInRegisters.
#pragma once
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/block/row_order_ranks.cuh"
#include "sgtopk/selection/select_output.cuh"

namespace sgtopk {

template <typename Config>
struct ShortRowAgent {
  static constexpr int kThreads = Config::kThreads;
  static constexpr int kItems = Config::kRegisterItems;
  static constexpr int kK = Config::kK;
  typedef RowOutput<Config::kValues> Output;
  typedef SelectRowTask<Config::kValues> RowTask;
  typedef RowOrderRanks<kThreads, kItems, 4, Config::kScoresInRegisters ? kItems / 4 : 2> Ranks;

  // Dynamic shared memory (abi.h): the state, the rank table, the coarse
  // keys, the sort buffer.
  static constexpr unsigned kCoarseOffset = short_row_coarse_offset(kThreads, kItems);
  static constexpr unsigned kSortOffset = short_row_sort_offset(kThreads, kItems);
  static constexpr unsigned kSharedBytes = short_row_shared_bytes(kThreads, kItems, Config::kSorted, Config::kSortSlots);

  // The row in runs of four: thread t's slot u holds element
  // (u / 4) * 4 * kThreads + 4 * t + u % 4, so a run is one float4 load
  // where the row is 16-byte aligned, and its four coarse keys + 1 (0: past
  // the row) are one 8-byte word in shared memory. Every pass after the load
  // compares these keys as integers, four to a shared load, keying a score
  // again only in the boundary bin (the passes are bound by instructions, not
  // by memory). The keys are addressed from the dynamic shared memory itself,
  // not through a pointer held in the row: a 32-bit shared address off the
  // thread index. Without kScoresInRegisters the scores are not kept: the
  // boundary bin's few and the selected values are read again (from L2), and
  // the CTA's registers are few enough for more CTAs per SM.
  static constexpr int kRun = 4;
  static constexpr int kRuns = kItems / kRun;
  static constexpr bool kScoresInRegisters = Config::kScoresInRegisters;
  static_assert(kItems % kRun == 0, "the plan gives whole runs of four scores");
  // Passes over the runs: unrolled whole where the scores are registers
  // (indexed by constants), two at a time otherwise (fewer registers).
  static constexpr int kRunUnroll = kScoresInRegisters ? kRuns : 2;
  static SGTOPK_DEVICE u64* coarse_runs() {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    return reinterpret_cast<u64*>(shared_bytes + kCoarseOffset);  // [kRuns][kThreads]
  }
  struct Row {
    const float* scores;
    float value[kScoresInRegisters ? kItems : 1];

    SGTOPK_DEVICE void load(const float* row_scores, int len) {
      scores = row_scores;
      // Block-uniform: a window may begin at any element (SGTOPK_STARTS).
      const bool aligned = (reinterpret_cast<unsigned long long>(scores) & 15ull) == 0ull;
      if constexpr (kScoresInRegisters) {
#pragma unroll
        for (int c = 0; c < kRuns; ++c) load_run(c, len, aligned, &value[c * kRun]);
      } else {
        // Two runs in flight a thread: the registers stay few, and the SM's
        // other CTAs keep its loads in flight.
        float v[kRun];
#pragma unroll kRunUnroll
        for (int c = 0; c < kRuns; ++c) {
          // A run wholly past the row (a ragged row's last quarter) is not
          // read: its keys are 0, and the passes skip it at one compare.
          if (index(c * kRun) < len) load_run(c, len, aligned, v);
          else coarse_runs()[c * kThreads + threadIdx.x] = 0ull;
        }
      }
    }
    // Reads run c into v and stores its coarse keys + 1 (0: past the row).
    SGTOPK_DEVICE void load_run(int c, int len, bool aligned, float* v) const {
      const int i = index(c * kRun);
      const bool whole = i + kRun <= len;
      if (aligned && whole) {
        const float4 q = __ldg(reinterpret_cast<const float4*>(scores + i));
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
      } else {
#pragma unroll
        for (int s = 0; s < kRun; ++s) v[s] = i + s < len ? __ldg(scores + i + s) : 0.0f;
      }
      // Keys + 1, two to a word (no lane carries into the next: a key is 11 bits).
      u32 low = coarse_key_pair_packed(v[0], v[1]) + 0x00010001u;
      u32 high = coarse_key_pair_packed(v[2], v[3]) + 0x00010001u;
      if (!whole) {
        low &= (i < len ? 0xffffu : 0u) | (i + 1 < len ? 0xffff0000u : 0u);
        high &= (i + 2 < len ? 0xffffu : 0u) | (i + 3 < len ? 0xffff0000u : 0u);
      }
      coarse_runs()[c * kThreads + threadIdx.x] = static_cast<u64>(high) << 32 | low;
    }
    // Slot u's score (a valid one: its coarse key is not 0).
    SGTOPK_DEVICE float score(int u) const {
      if constexpr (kScoresInRegisters) return value[u];
      else return __ldg(scores + index(u));
    }
    // The coarse keys + 1 of run c, slot c * 4 + s in bits [16 s, 16 s + 16).
    SGTOPK_DEVICE static u64 coarse_run(int c) { return coarse_runs()[c * kThreads + threadIdx.x]; }
    SGTOPK_DEVICE static u32 key_in_run(u64 run, int s) { return static_cast<u32>(run >> (16 * s)) & 0xffffu; }
    SGTOPK_DEVICE static u32 index(int u) {
      return static_cast<u32>((u / kRun) * kRun * kThreads + kRun * static_cast<int>(threadIdx.x) + u % kRun);
    }
  };

  // Where the K-th largest score lies. Round 0 bins by coarse key (FP16
  // bins spread a binade's scores over 32 bins, where the top bits of the
  // FP32 key put them in 4 and the histogram's atomics would queue on them);
  // later rounds bin the boundary bin's members by the offset of their
  // ordered key from the bin's lowest, 11 bits at a time from the top of the
  // bin's span. A score is above the boundary when its coarse key is above
  // `bin`, or it is in the bin and its offset >> shift is above `prefix`;
  // `take` of those level with it are selected: all when take is kWhole,
  // else (shift 0: one key) the lowest indices.
  static constexpr u32 kWhole = 0xffffffffu;
  struct Boundary {
    u32 bin;
    bool refined;  // false: decided by the coarse bin alone
    u32 low_key;   // ordered key of the bin's lowest number
    int shift;
    u32 prefix;
    u32 take;  // kWhole: every score level with the boundary

    // 1: above, 0: level with the boundary, -1: below (or past the row).
    SGTOPK_DEVICE int compare(const Row& row, int u, u32 coarse) const {  // coarse: key + 1
      if (coarse != bin + 1u) return coarse > bin + 1u ? 1 : -1;
      if (!refined) return 0;
      const u32 p = (ordered_key(row.score(u)) - low_key) >> shift;
      return p > prefix ? 1 : p == prefix ? 0 : -1;
    }
  };

  // Bits of the ordered-key offsets within coarse bin `bin` (0: one key;
  // NaN's bin 0 holds only key 0).
  static SGTOPK_DEVICE void bin_span(u32 bin, u32& low_key, int& bits) {
    if (bin == 0u) {
      low_key = 0u;
      bits = 0;
      return;
    }
    const float low = coarse_bin_lower_endpoint_direct(bin), high = coarse_bin_lower_endpoint_direct(bin + 1u);
    low_key = ordered_key(low);
    const u32 end = high == high ? ordered_key(high) : ordered_key(__int_as_float(0x7f800000)) + 1u;
    bits = 32 - __clz(end - low_key - 1u);
  }

  // Run `run`'s slots whose key + 1 is at least `key` (< 0x8000, as every
  // key + 1 is), as 4 bits: the four 16-bit lanes compared by one 64-bit
  // subtraction (no lane borrows from the next: each is at most 0x7fff).
  static SGTOPK_DEVICE u32 run_at_or_above(u64 run, u32 key) {
    constexpr u64 kLaneTops = 0x8000800080008000ull;
    const u64 ge = ((run | kLaneTops) - key * 0x0001000100010001ull) & kLaneTops;
    const u32 low = static_cast<u32>(ge), high = static_cast<u32>(ge >> 32);
    return (low >> 15 & 1u) | (low >> 30 & 2u) | (high >> 13 & 4u) | (high >> 28 & 8u);
  }

  // A boundary bin of at most kGatherMax scores (a hundred or two at K =
  // 2048 of 16K indexer or uniform rows) is ranked in place of two or three
  // more passes over every key with a 2048-bin rank search each. Its members
  // are gathered as (ordered key, ~index), so one u64 compare orders them by
  // score and then by lower index; a counting sort by the top 8 bits of their
  // offset within the bin groups them, and each counts only the members of
  // its own group above it (one or two on uniform rows, where counting
  // against every member cost count^2 compares). The `take` first get coarse
  // key + 1 = kSelectedKey (above every bin), the others 0 (below). The
  // coarse keys' u16 slot of element i is i.
  static constexpr u32 kGatherMax = static_cast<u32>(kThreads) / 2u;
  static constexpr int kMemberDigitBits = 8;
  static constexpr u32 kMemberDigits = 1u << kMemberDigitBits;
  static constexpr u32 kDirectRankCompares = 16u;
  static constexpr u32 kSelectedKey = 0x7fffu;  // below 0x8000: runs compare four keys at once
  static_assert(kCoarseBins < static_cast<int>(kSelectedKey), "a selected member's key is above every bin");
  static_assert(kGatherMax * 4u <= static_cast<u32>(kCoarseBins), "the members and their sorted copy fit the second histogram");
  static_assert(4u * kMemberDigits + kGatherMax <= static_cast<u32>(kCoarseBins), "the digit tables and ranks fit the first histogram");
  static SGTOPK_DEVICE u32 member_digit(u64 member, u32 low_key, int shift) {
    return (static_cast<u32>(member >> 32) - low_key) >> shift;
  }
  static SGTOPK_DEVICE void rank_bin_members(ShortRowState& state, const Row& row, u32 bin, u32 take, u32 count) {
    // The first histogram was cleared after round 0: the counters, the digit
    // counts and the ranks start at 0; the second is still clear.
    u32* next_slot = &state.histogram[0][0];
    u32* digit_count = &state.histogram[0][kMemberDigits];
    u32* digit_first = &state.histogram[0][2 * kMemberDigits];
    u32* digit_next = &state.histogram[0][3 * kMemberDigits];
    u32* ranks = &state.histogram[0][4 * kMemberDigits];
    u64* members = reinterpret_cast<u64*>(&state.histogram[1][0]);
    u64* sorted = reinterpret_cast<u64*>(&state.histogram[1][2 * kGatherMax]);
    u32 low_key;
    int bits;
    bin_span(bin, low_key, bits);
    const int shift = bits > kMemberDigitBits ? bits - kMemberDigitBits : 0;
    // A bin small enough that counting against every member costs a thread
    // at most kDirectRankCompares compares (64 of a 4K row) skips the sort
    // and its two barriers: one group, the whole bin.
    const bool by_digit = count * count > kDirectRankCompares * static_cast<u32>(kThreads);
    __syncthreads();  // every thread's clear of the first histogram is done
    const auto add_member = [&](int u) {
      const u64 member = static_cast<u64>(ordered_key(row.score(u))) << 32 | ~Row::index(u);
      members[atomicAdd(next_slot, 1u)] = member;
      if (by_digit) atomicAdd(&digit_count[member_digit(member, low_key, shift)], 1u);
    };
    // Members are a few in a thousand: a run's four keys are compared at
    // once, and only runs holding one visit their slots (by a loop over its
    // bits where the scores are read again, by constant slots where they are
    // registers).
#pragma unroll kRunUnroll
    for (int c = 0; c < kRuns; ++c) {
      const u64 run = Row::coarse_run(c);
      u32 in_bin = run_at_or_above(run, bin + 1u) & ~run_at_or_above(run, bin + 2u);
      if constexpr (kScoresInRegisters) {
#pragma unroll
        for (int s = 0; s < kRun; ++s)
          if ((in_bin >> s) & 1u) add_member(c * kRun + s);
      } else {
        for (; in_bin != 0u; in_bin &= in_bin - 1u) add_member(c * kRun + __ffs(in_bin) - 1);
      }
    }
    __syncthreads();
    const u64* ranked = members;
    if (by_digit) {
      sort_members_by_digit(members, sorted, count, digit_count, digit_first, digit_next, low_key, shift);
      ranked = sorted;
    }
    // kThreads / count (at least 2) threads count each member's group, each
    // over a slice of it: a group of equal scores is as large as the bin.
    const u32 helpers = static_cast<u32>(kThreads) / count;
    if (threadIdx.x < helpers * count) {
      const u32 i = threadIdx.x % count, part = threadIdx.x / count;
      const u64 mine = ranked[i];
      const u32 digit = by_digit ? member_digit(mine, low_key, shift) : 0u;
      const u32 group = by_digit ? digit_first[digit] : 0u, size = by_digit ? digit_count[digit] : count;
      const u32 slice = (size + helpers - 1u) / helpers;
      const u32 begin = group + part * slice, end = group + min_of(size, part * slice + slice);
      u32 above = 0u;
      for (u32 j = begin; j < end; ++j) above += ranked[j] > mine ? 1u : 0u;
      if (above != 0u) atomicAdd(&ranks[i], above);
    }
    __syncthreads();
    unsigned short* keys = reinterpret_cast<unsigned short*>(coarse_runs());
    if (threadIdx.x < count) {
      const u64 mine = ranked[threadIdx.x];
      const u32 rank = (by_digit ? digit_first[member_digit(mine, low_key, shift)] : 0u) + ranks[threadIdx.x];
      keys[~static_cast<u32>(mine)] = rank < take ? kSelectedKey : 0u;
    }
    __syncthreads();
  }

  // The counting sort of the gathered members by digit (their counts made
  // by the gather): each group's first slot, then each member into its
  // group. Barriers before (the caller's) and after.
  static SGTOPK_DEVICE void sort_members_by_digit(const u64* members, u64* sorted, u32 count, const u32* digit_count,
                                                  u32* digit_first, u32* digit_next, u32 low_key, int shift) {
    if (threadIdx.x < 32) {  // each group's first slot, the highest digit first
      constexpr u32 kPerLane = kMemberDigits / 32u;
      const u32 lane = threadIdx.x, top = kMemberDigits - kPerLane * lane;  // digits [top - kPerLane, top)
      u32 sum = 0u;
#pragma unroll
      for (u32 j = 1; j <= kPerLane; ++j) sum += digit_count[top - j];
      u32 inclusive = sum;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= static_cast<u32>(d)) inclusive += up;
      }
      u32 first = inclusive - sum;
#pragma unroll
      for (u32 j = 1; j <= kPerLane; ++j) {
        digit_first[top - j] = first;
        digit_next[top - j] = first;
        first += digit_count[top - j];
      }
    }
    __syncthreads();
    if (threadIdx.x < count) {
      const u64 member = members[threadIdx.x];
      sorted[atomicAdd(&digit_next[member_digit(member, low_key, shift)], 1u)] = member;
    }
    __syncthreads();
  }

  // The radix rounds. Both histograms are clear on entry and, past a
  // gathered bin, on return: a round clears its own once the rank search has
  // read it, and the next round's barriers separate that from the round
  // after (a CTA selects one row, so the gathered bin's leftovers are never
  // read).
  static SGTOPK_DEVICE Boundary find_boundary(ShortRowState& state, const Row& row) {
    // Round 0: coarse keys.
#pragma unroll kRunUnroll
    for (int c = 0; c < kRuns; ++c) {
      const u64 run = Row::coarse_run(c);
      if (run == 0ull) continue;
#pragma unroll
      for (int s = 0; s < kRun; ++s) {
        const u32 coarse = Row::key_in_run(run, s);
        if (coarse != 0u) atomicAdd(&state.histogram[0][coarse - 1u], 1u);
      }
    }
    __syncthreads();
    const RankBin coarse = find_rank_bin<kThreads, kCoarseBins>(state.histogram[0], static_cast<u32>(kK), state.scratch);
    clear_words_x4<kThreads, kCoarseBins>(state.histogram[0]);
    Boundary b{coarse.bin, false, 0u, 0, 0u, static_cast<u32>(kK) - coarse.above};
    if (b.take == coarse.count) {
      b.take = kWhole;
      return b;
    }
    if (coarse.count <= kGatherMax) {  // block-uniform
      rank_bin_members(state, row, b.bin, b.take, coarse.count);
      b.take = kWhole;  // the bin's members now sit above it or below it
      return b;
    }
    b.refined = true;
    int bits;
    bin_span(b.bin, b.low_key, bits);
    // Rounds 1..3 over the offsets (at most 32 bits: 11 + 11 + 10); none
    // when the bin is one key.
    for (int round = 1; bits > 0; ++round) {
      const int shift = bits > kCoarseBits ? bits - kCoarseBits : 0;
      u32* histogram = state.histogram[round & 1];
#pragma unroll kRunUnroll
      for (int c = 0; c < kRuns; ++c) {
        const u64 run = Row::coarse_run(c);
#pragma unroll
        for (int s = 0; s < kRun; ++s) {
          // Members of this round's group: in the bin, and (after round 1)
          // sharing the prefix resolved so far.
          if (Row::key_in_run(run, s) == b.bin + 1u) {
            const u32 offset = ordered_key(row.score(c * kRun + s)) - b.low_key;
            if (round == 1 || (offset >> b.shift) == b.prefix) atomicAdd(&histogram[(offset >> shift) & (kCoarseBins - 1)], 1u);
          }
        }
      }
      __syncthreads();
      const RankBin found = find_rank_bin<kThreads, kCoarseBins>(histogram, b.take, state.scratch);
      clear_words_x4<kThreads, kCoarseBins>(histogram);
      b.prefix = round == 1 ? found.bin : (b.prefix << (b.shift - shift)) | found.bin;
      b.shift = shift;
      b.take -= found.above;
      bits = shift;
      if (b.take == found.count) {
        b.take = kWhole;
        break;
      }
    }
    return b;
  }

  // Writes the taken slots (the order within a row is unspecified): one
  // block scan of the counts gives each warp its first output slot. A warp
  // with many (a half-row selection) writes slot by slot across its lanes, so
  // neighbouring lanes store to neighbouring slots; a warp with few (K of a
  // 16K row) visits only its taken slots, each thread writing its own in a
  // row: a ballot per slot would cost more than the scattered stores.
  static SGTOPK_DEVICE void write_taken(ShortRowState& state, const Row& row, u32 taken, const Output& out) {
    const u32 count = static_cast<u32>(__popc(taken));
    u32 total;
    const u32 first = block_exclusive_sum<kThreads>(count, state.scratch, &total);
    const u32 warp_first = __shfl_sync(0xffffffffu, first, 0);
    const u32 warp_count = __shfl_sync(0xffffffffu, first + count, 31) - warp_first;
    const auto commit = [&](u32 slot, int u) {
      if constexpr (Config::kValues) out.commit(slot, Row::index(u), row.score(u));
      else out.commit(slot, Row::index(u), 0.0f);
    };
    if (warp_count * 4u > 32u * static_cast<u32>(kItems)) {  // warp-uniform: over a quarter taken
      const u32 lower = (1u << (threadIdx.x & 31u)) - 1u;
      u32 slot = warp_first;
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const bool mine = ((taken >> u) & 1u) != 0u;
        const u32 lanes = __ballot_sync(0xffffffffu, mine);
        if (mine) commit(slot + static_cast<u32>(__popc(lanes & lower)), u);
        slot += static_cast<u32>(__popc(lanes));
      }
    } else if constexpr (kScoresInRegisters && Config::kValues) {  // registers are indexed by constants only
      u32 slot = first;
#pragma unroll
      for (int u = 0; u < kItems; ++u)
        if ((taken >> u) & 1u) commit(slot++, u);
    } else {
      for (u32 slot = first; taken != 0u; taken &= taken - 1u) commit(slot++, __ffs(taken) - 1);
    }
  }

  static SGTOPK_DEVICE void select_row(ShortRowState& state, u32* table, u64* sort_buffer, const RowTask& task) {
    Row row;
    row.load(task.scores, task.len);
    const Boundary boundary = find_boundary(state, row);
    u32 taken = 0u;
    if (!boundary.refined) {  // block-uniform: the coarse bin decides, its scores taken whole
#pragma unroll kRunUnroll
      for (int c = 0; c < kRuns; ++c) {
          taken |= run_at_or_above(Row::coarse_run(c), boundary.bin + 1u) << (c * kRun);
      }
    } else {
      u32 level = 0u;
#pragma unroll kRunUnroll
      for (int c = 0; c < kRuns; ++c) {
        const u64 run = Row::coarse_run(c);
#pragma unroll
        for (int s = 0; s < kRun; ++s) {
          const int u = c * kRun + s;
          const int side = boundary.compare(row, u, Row::key_in_run(run, s));
          taken |= (side > 0 ? 1u : 0u) << u;
          level |= (side == 0 ? 1u : 0u) << u;
        }
      }
      if (boundary.take == kWhole) {
        taken |= level;
      } else {  // block-uniform: one key, the lowest indices of it
        Ranks::for_each_ranked(level, table, [&](int u, u32 rank) { taken |= (rank < boundary.take ? 1u : 0u) << u; });
      }
    }
    write_taken(state, row, taken, task.out);
    if constexpr (Config::kSorted)
      sort_row_output<kThreads, Config::kSortSlots, Config::kValues>(task.out, task.scores, kK, sort_buffer);
  }

  static SGTOPK_DEVICE void run(const SelectParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    ShortRowState& state = *reinterpret_cast<ShortRowState*>(shared_bytes);
    u32* table = reinterpret_cast<u32*>(shared_bytes + sizeof(ShortRowState));
    u64* sort_buffer = reinterpret_cast<u64*>(shared_bytes + kSortOffset);
    // One CTA a row: the plan's grid is the launch's row capacity. (A loop
    // over rows keeps its counters in registers the 32-score rows need.)
    const long long r = blockIdx.x;
    if (r >= live_row_count(p, static_cast<long long>(p.rows))) return;
    clear_words_x4<kThreads, 2 * kCoarseBins>(&state.histogram[0][0]);
    __syncthreads();
    const RowTask task = select_row_task<Config>(p, r);
    count_route<Config::kRouteStats>(p.route_stats, task.len <= kK ? kRouteShort : kRouteExact);
    if (task.len <= kK) {
      write_whole_row<kThreads, kK, Config::kValues>(task.out, task.scores, task.len);
      if constexpr (Config::kSorted) {
        if (task.len > 1) sort_row_output<kThreads, Config::kSortSlots, Config::kValues>(task.out, task.scores, task.len, sort_buffer);
      }
    } else {
      select_row(state, table, sort_buffer, task);
    }
    transform_indices<kThreads, kK, Config::kIndexTransform, Config::kPageSize, Config::kPageTablePitch>(task.out, p, r);
  }
};

}  // namespace sgtopk

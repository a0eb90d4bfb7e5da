// Ranks of flagged items in row order, for a row held in registers in runs:
// thread t's slot u holds element (u / kRun) * kRun * kThreads + t * kRun +
// u % kRun (kRun 1: u * kThreads + t; kRun 4: a float4 per run). A ballot
// per slot, one word per run and warp in shared memory, one scan of those
// words by warp 0. Two barriers, whatever the number of flagged items.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

// kUnroll: runs a pass unrolls (all: the visitor may index registers by slot).
template <int kThreads, int kItems, int kRun = 1, int kUnroll = kItems / kRun>
struct RowOrderRanks {
  static_assert(kThreads % 32 == 0 && kItems >= 1 && kItems <= 32, "whole warps, at most 32 slots a thread");
  static_assert(kItems % kRun == 0, "whole runs");
  static constexpr int kRuns = kItems / kRun;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kWords = kRuns * kWarps;  // and one more for the total
  static constexpr int kWordsPerLane = (kWords + 31) / 32;

  // `flags` bit u: slot u is flagged. Calls visit(u, rank) for each flagged
  // slot u of this thread, with its rank among the flagged items of the
  // block in row order, and returns their count. `table` holds kWords + 1
  // words; the caller's next barrier makes it reusable. The ranks are not
  // kept in registers: the second ballot of each slot recomputes the lanes'.
  template <typename Visit>
  static SGTOPK_DEVICE u32 for_each_ranked(u32 flags, u32* table, Visit&& visit) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 lower = (1u << lane) - 1u;
#pragma unroll kUnroll
    for (int c = 0; c < kRuns; ++c) {
      u32 count = 0u;
#pragma unroll
      for (int s = 0; s < kRun; ++s) count += __popc(__ballot_sync(0xffffffffu, ((flags >> (c * kRun + s)) & 1u) != 0u));
      if (lane == 0) table[c * kWarps + warp] = count;
    }
    __syncthreads();
    if (warp == 0) {
      // Each lane sums a run of consecutive words, the warp scans the sums,
      // and each lane writes its run's exclusive prefixes back.
      const int first = lane * kWordsPerLane;
      u32 sum = 0u;
#pragma unroll
      for (int j = 0; j < kWordsPerLane; ++j)
        if (first + j < kWords) sum += table[first + j];
      u32 inclusive = sum;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += up;
      }
      u32 running = inclusive - sum;
#pragma unroll
      for (int j = 0; j < kWordsPerLane; ++j) {
        if (first + j < kWords) {
          const u32 count = table[first + j];
          table[first + j] = running;
          running += count;
        }
      }
      if (lane == 31) table[kWords] = inclusive;
    }
    __syncthreads();
#pragma unroll kUnroll
    for (int c = 0; c < kRuns; ++c) {
      // Flagged items of this run in lower lanes come first, then this
      // thread's own, in slot order.
      u32 rank = table[c * kWarps + warp];
#pragma unroll
      for (int s = 0; s < kRun; ++s)
        rank += static_cast<u32>(__popc(__ballot_sync(0xffffffffu, ((flags >> (c * kRun + s)) & 1u) != 0u) & lower));
#pragma unroll
      for (int s = 0; s < kRun; ++s) {
        const int u = c * kRun + s;
        if ((flags >> u) & 1u) visit(u, rank++);
      }
    }
    return table[kWords];
  }
};

}  // namespace sgtopk

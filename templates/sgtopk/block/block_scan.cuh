// Block-wide scans and the rank search over a histogram.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

// Exclusive prefix sum over the block in thread order, in scratch[0, 33)
// (words of T: u32, or u64 for sums of mass). Ends without a barrier: the
// caller's next barrier, which every thread reaches after its reads here,
// makes that scratch reusable.
template <int kThreads, typename T = u32>
SGTOPK_DEVICE T block_exclusive_sum(T value, T* scratch, T* block_total) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T inclusive = value;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    T up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  if (lane == 31) scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    T w = lane < kWarps ? scratch[lane] : T(0);
    T w_inclusive = w;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      T up = __shfl_up_sync(0xffffffffu, w_inclusive, d);
      if (lane >= d) w_inclusive += up;
    }
    if (lane < kWarps) scratch[lane] = w_inclusive - w;
    if (lane == 31) scratch[32] = w_inclusive;
  }
  __syncthreads();
  T result = scratch[warp] + inclusive - value;
  *block_total = scratch[32];
  return result;
}

// Adds every thread's `value` to the shared word *sum: each warp's sum
// first, then one atomic a warp. A 64-bit shared atomicAdd is a
// compare-and-swap loop, so one a thread on one word retries quadratically
// in the threads (docs/decisions/2026-12-04-filter-total-by-warp.md).
// Every lane of every warp calls it.
SGTOPK_DEVICE void add_block_sum(u64* sum, u64 value) {
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) value += __shfl_sync(0xffffffffu, value, lane ^ d);
  if (lane == 0) atomicAdd(reinterpret_cast<unsigned long long*>(sum), static_cast<unsigned long long>(value));
}

// Where rank `rank` (1-based, counted from the top) falls in a histogram.
struct RankBin {
  u32 bin;    // the bin holding the element of that rank
  u32 above;  // elements in bins above it (above < rank <= above + count)
  u32 count;  // elements in the bin
  u32 total;  // every count of the histogram; bin and above are meaningful only when rank <= total
};

// Every thread gets the same answers. When a rank exceeds total no bin holds
// it: callers check `total` first (the sampled proposal does; refinement
// cannot get there, its rank never exceeds its group).
// Thread t owns kBins/kThreads consecutive bins counted from the top, so a
// block prefix sum in thread order is a suffix sum over bins. Several ranks
// share one scan (the sampled proposal's q0 and q1). Three barriers: the
// bins are read before the first (and again by the thread holding a rank,
// before the last), so the caller may change them on return;
// the answers lie past the scan's words, so the next call's scan cannot
// overwrite them before every thread has read them.
template <int kThreads, int kBins, int kRanks>
SGTOPK_DEVICE void find_rank_bins(const u32* bins, const u32 (&ranks)[kRanks], u32* scratch, RankBin (&found)[kRanks]) {
  static_assert(kBins % kThreads == 0 || kThreads % kBins == 0, "bins and threads must nest");
  static_assert(kScanWords + 3 * kRanks <= kRankScratchWords, "scratch holds three words per rank");
  constexpr int kPerThread = kBins >= kThreads ? kBins / kThreads : 1;
  const int first = kBins - (static_cast<int>(threadIdx.x) + 1) * kPerThread;  // lowest bin owned
  // The lanes of a warp read their runs in a rotated order: lanes whose runs
  // start in the same bank start at different words, so each read is one
  // wavefront instead of up to 32 (runs of 8 words: 8 lanes to a bank).
  constexpr int kLanesPerBankRow = kPerThread >= 32 ? 1 : 32 / kPerThread;
  const int rotation = (static_cast<int>(threadIdx.x) & 31) / kLanesPerBankRow;
  u32 owned = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) owned += first >= 0 ? bins[first + (j + rotation) % kPerThread] : 0u;
  u32 total;
  const u32 owned_above = block_exclusive_sum<kThreads>(owned, scratch, &total);
  u32* answers = scratch + kScanWords;
#pragma unroll
  for (int q = 0; q < kRanks; ++q) {
    const u32 rank = ranks[q];
    u32 above = owned_above;
    if (first >= 0 && above < rank && rank <= above + owned) {  // one thread: reads its run again, in order
      for (int j = kPerThread - 1; j >= 0; --j) {
        const u32 count = bins[first + j];
        if (above < rank && rank <= above + count) {
          answers[3 * q] = static_cast<u32>(first + j);
          answers[3 * q + 1] = above;
          answers[3 * q + 2] = count;
        }
        above += count;
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < kRanks; ++q) found[q] = RankBin{answers[3 * q], answers[3 * q + 1], answers[3 * q + 2], total};
}

template <int kThreads, int kBins>
SGTOPK_DEVICE RankBin find_rank_bin(const u32* bins, u32 rank, u32* scratch) {
  const u32 ranks[1] = {rank};
  RankBin found[1];
  find_rank_bins<kThreads, kBins, 1>(bins, ranks, scratch, found);
  return found[0];
}

template <int kThreads>
SGTOPK_DEVICE void clear_words(u32* words, int count) {
  for (int i = threadIdx.x; i < count; i += kThreads) words[i] = 0u;
}
// The same four words a store: `words` 16-byte aligned, kCount a multiple of 4.
template <int kThreads, int kCount>
SGTOPK_DEVICE void clear_words_x4(u32* words) {
  static_assert(kCount % 4 == 0, "whole 16-byte words");
  uint4* quads = reinterpret_cast<uint4*>(words);
  for (int i = threadIdx.x; i < kCount / 4; i += kThreads) quads[i] = uint4{0u, 0u, 0u, 0u};
}

}  // namespace sgtopk

// Shared-memory histogram updates.
#pragma once
#include "sgtopk/common.cuh"

namespace sgtopk {

// Adds one to bins[bin]. Score rows are skewed (ReLU zeros, plateaus, a mode
// many lanes share), so same-address shared atomics would serialize within a
// warp; aggregated, the lanes of one bin issue a single atomic.
template <bool kAggregate>
SGTOPK_DEVICE void count_in_bin(u32* bins, u32 bin) {
  if (kAggregate) {
    const u32 peers = __match_any_sync(__activemask(), bin);
    const int leader = __ffs(peers) - 1;
    if ((threadIdx.x & 31) == static_cast<unsigned>(leader)) atomicAdd(&bins[bin], static_cast<u32>(__popc(peers)));
  } else {
    atomicAdd(&bins[bin], 1u);
  }
}

// Raises `floor_bin` to the highest bin that already has `rank` counts at or
// above it. Counts only grow, so a bin with enough mass above it stays a
// valid lower bound for the final boundary: elements below the floor can
// skip the histogram entirely, and the counts at or above it stay exact.
// Run by one warp while the others keep streaming; the racy reads only ever
// under-count, which keeps the floor conservative.
template <int kBins>
SGTOPK_DEVICE void raise_floor(const u32* bins, u32 rank, u32* floor_bin) {
  constexpr int kPerLane = kBins / 32;
  const int lane = threadIdx.x & 31;
  const volatile u32* v = bins;
  const int first = kBins - (lane + 1) * kPerLane;  // lane 0 owns the top bins
  u32 owned = 0;
#pragma unroll 8
  for (int j = 0; j < kPerLane; ++j) owned += v[first + j];
  u32 inclusive = owned;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  const u32 reached = __ballot_sync(0xffffffffu, inclusive >= rank);
  if (reached == 0u) return;
  const int owner = __ffs(reached) - 1;
  if (lane == owner) {
    u32 above = inclusive - owned;
    int bin = first + kPerLane - 1;
    for (; bin > first; --bin) {
      above += v[bin];
      if (above >= rank) break;
    }
    if (static_cast<u32>(bin) > *floor_bin) *reinterpret_cast<volatile u32*>(floor_bin) = static_cast<u32>(bin);
  }
}

}  // namespace sgtopk

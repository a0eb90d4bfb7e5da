// Shared-memory histogram updates.
#pragma once
#include "sgtopk/util/common.cuh"

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

// The highest bin that already has `rank` counts at or above it, or 0 when
// none has yet; every lane of the (converged) warp gets it. Counts only grow,
// so such a bin stays a valid lower bound for the final boundary (a floor):
// elements below it can skip the histogram entirely, and the counts at or
// above it stay exact. Run by one warp while the others keep streaming
// (agent/direct_exact.cuh says when); the racy reads only ever under-count,
// which keeps the floor conservative.
template <int kBins>
SGTOPK_DEVICE u32 proven_floor(const u32* bins, u32 rank) {
  static_assert(kBins == 2048, "two bins per lane in the owner's range");
  constexpr int kPerLane = kBins / 32;
  const u32 all = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  // The bins are read once each, while other warps count (a compiler
  // barrier rather than volatile, so the owned bins come as 16-byte loads).
  asm volatile("" ::: "memory");
  const volatile u32* v = bins;
  // 1. Which lane's 64 bins (lane 0 owns the top ones) hold the crossing?
  const int first = kBins - (lane + 1) * kPerLane;
  const uint4* quads = reinterpret_cast<const uint4*>(bins + first);  // first: a multiple of 64
  u32 owned = 0;
#pragma unroll 4
  for (int j = 0; j < kPerLane / 4; ++j) {
    const uint4 q = quads[j];
    owned += (q.x + q.y) + (q.z + q.w);
  }
  u32 inclusive = owned;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const u32 up = __shfl_up_sync(all, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  const u32 reached = __ballot_sync(all, inclusive >= rank);
  if (reached == 0u) return 0u;
  const int owner = __ffs(reached) - 1;
  const u32 above_owner = __shfl_sync(all, inclusive - owned, owner);
  // 2. The whole warp scans the owner's bins, two per lane, top down.
  const int top = kBins - owner * kPerLane - 1;
  const u32 high = v[top - 2 * lane], low = v[top - 2 * lane - 1];
  u32 pair_inclusive = high + low;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const u32 up = __shfl_up_sync(all, pair_inclusive, d);
    if (lane >= d) pair_inclusive += up;
  }
  const u32 hit = __ballot_sync(all, above_owner + pair_inclusive >= rank);
  if (hit == 0u) return 0u;
  const int hit_lane = __ffs(hit) - 1;
  const u32 before = above_owner + pair_inclusive - high - low;
  const u32 bin = static_cast<u32>(before + high >= rank ? top - 2 * lane : top - 2 * lane - 1);
  return __shfl_sync(all, bin, hit_lane);
}

}  // namespace sgtopk

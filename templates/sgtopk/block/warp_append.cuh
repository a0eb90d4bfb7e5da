// Warp-aggregated append: one shared atomic per warp instead of per lane.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

// Returns the slot of this lane's item (valid only when `take`). Safe under
// divergence: only the lanes that reach the call take part.
SGTOPK_DEVICE u32 warp_append(bool take, u32* counter) {
  const u32 active = __activemask();
  const u32 takers = __ballot_sync(active, take);
  if (takers == 0u) return 0u;
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(takers) - 1;
  u32 base = 0u;
  if (lane == leader) base = atomicAdd(counter, static_cast<u32>(__popc(takers)));
  base = __shfl_sync(active, base, leader);
  return base + static_cast<u32>(__popc(takers & ((1u << lane) - 1u)));
}


// Exclusive prefix sum over a converged warp (every lane calls it);
// `total` gets the warp's sum.
SGTOPK_DEVICE u32 warp_exclusive_sum(u32 value, u32* total) {
  const int lane = threadIdx.x & 31;
  u32 inclusive = value;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  *total = __shfl_sync(0xffffffffu, inclusive, 31);
  return inclusive - value;
}

// The largest `value` of a converged warp (every lane calls it and gets it).
SGTOPK_DEVICE u32 warp_max(u32 value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_max_sync(0xffffffffu, value);  // one instruction where the five shuffles are a chain
#else
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) value = max_of(value, __shfl_sync(0xffffffffu, value, (threadIdx.x & 31) ^ d));
  return value;
#endif
}

// The sum of `value` over a converged warp (every lane calls it and gets it).
SGTOPK_DEVICE u32 warp_sum(u32 value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(0xffffffffu, value);
#else
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) value += __shfl_sync(0xffffffffu, value, (threadIdx.x & 31) ^ d);
  return value;
#endif
}

// Reserves `count` consecutive slots of `counter` for this lane with one
// atomic per warp: the batched form of warp_append for a converged warp that
// has counted a whole chunk first. Returns the lane's first slot.
SGTOPK_DEVICE u32 warp_reserve(u32 count, u32* counter) {
  u32 total;
  const u32 before = warp_exclusive_sum(count, &total);
  if (total == 0u) return 0u;
  u32 base = 0u;
  if ((threadIdx.x & 31) == 0) base = atomicAdd(counter, total);
  return __shfl_sync(0xffffffffu, base, 0) + before;
}

}  // namespace sgtopk

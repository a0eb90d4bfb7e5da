// Warp-aggregated append: one shared atomic per warp instead of per lane.
#pragma once
#include "sgtopk/common.cuh"

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

}  // namespace sgtopk

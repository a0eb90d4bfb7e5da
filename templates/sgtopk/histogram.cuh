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

}  // namespace sgtopk

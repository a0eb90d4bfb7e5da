// Starting a row's selection on its shared state (SelectionState, abi.h).
#pragma once
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/util/keys.cuh"

namespace sgtopk {

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
    state.known_key_bits = 0u;
    state.frontier_high_key = 0u;
    state.units_taken = 0u;
    state.floor_bin = 0u;
    state.floor_low_key = ordered_key(__int_as_float(0xff800000));
    state.admit_by_threshold = admit_by_threshold;
  }
  __syncthreads();
}

}  // namespace sgtopk

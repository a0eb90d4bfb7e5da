// Where the frontier's candidates live: the first slots in shared memory,
// the next in the worker's own global workspace slice.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

template <int kSharedCapacity, int kGlobalCapacity>
struct FrontierStore {
  static constexpr u32 kCapacity = static_cast<u32>(kSharedCapacity) + static_cast<u32>(kGlobalCapacity);
  float* shared_value;
  u32* shared_index;
  float* global_value;
  u32* global_index;

  SGTOPK_DEVICE void store(u32 slot, float value, u32 index) const {
    if (slot < static_cast<u32>(kSharedCapacity)) {
      shared_value[slot] = value;
      shared_index[slot] = index;
    } else if (slot < kCapacity) {
      global_value[slot - kSharedCapacity] = value;
      global_index[slot - kSharedCapacity] = index;
    }
  }
  SGTOPK_DEVICE void load(u32 slot, float* value, u32* index) const {
    if (slot < static_cast<u32>(kSharedCapacity)) {
      *value = shared_value[slot];
      *index = shared_index[slot];
    } else {
      *value = global_value[slot - kSharedCapacity];
      *index = global_index[slot - kSharedCapacity];
    }
  }
};

}  // namespace sgtopk

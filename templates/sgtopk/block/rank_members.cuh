// Direct ranking of a small group in shared memory: each member counts the
// members whose key beats its own.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

// Adds to ranks[i] (clear on entry) the number of the `count` members with a
// larger key than members[i]. Every thread counts: kThreads / count threads
// share each member's count, each over a slice of the members; one thread a
// member would leave the others idle at the barrier for as many compares as
// the group has members. The caller's barriers come before and after.
template <int kThreads>
SGTOPK_DEVICE void count_members_above(const u64* members, u32 count, u32* ranks) {
  const u32 helpers = static_cast<u32>(kThreads) / count;
  if (threadIdx.x < helpers * count) {
    const u32 i = threadIdx.x % count, part = threadIdx.x / count;
    const u32 slice = (count + helpers - 1u) / helpers;
    const u32 begin = part * slice, end = min_of(count, begin + slice);
    const u64 mine = members[i];
    u32 above = 0u;
    for (u32 j = begin; j < end; ++j) above += members[j] > mine ? 1u : 0u;
    if (above != 0u) atomicAdd(&ranks[i], above);
  }
}

}  // namespace sgtopk

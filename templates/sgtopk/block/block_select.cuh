// The K largest of a CTA's items, exactly: thread t's item u is the (value,
// index) pair in shared-memory slot u * kThreads + t, the live ones (a bit a
// thread keeps per item) all at or above `low` (so none is NaN). Rounds bin
// the live items by a composite key, the offset of the value's ordered key
// from low's, then the inverted index (ties to the lower index), 11 bits at a
// time from the top; a round's boundary group is taken whole when it fills
// the rank, else ranked directly once it is small, else carried to the next
// round. No round moves an item; only the small group is gathered (split's
// finisher: a few thousand candidates, one round and a small group on
// uniform rows). Shared memory, not registers: a CTA of 1024 threads has 64
// registers a thread.
#pragma once
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/block/rank_members.cuh"
#include "sgtopk/block/warp_append.cuh"
#include "sgtopk/util/keys.cuh"

namespace sgtopk {

// kGroupBytes: shared memory for the directly ranked group (16 bytes a
// member, and a counter).
template <int kThreads, int kItems, int kIndexBits, unsigned kGroupBytes>
struct BlockSelectItems {
  static_assert(kItems >= 1 && kItems <= 32, "one live bit per item");
  static_assert(kIndexBits >= 1 && kIndexBits <= 31, "row-relative indices below 2^31");
  // Direct ranking costs group^2 / kThreads compares a thread: at 128 that
  // is 16 at 1024 threads, below one more round's histogram and scan.
  static constexpr u32 kRankMax = (kGroupBytes - 4u) / 16u < 128u ? (kGroupBytes - 4u) / 16u : 128u;
  static_assert(kRankMax >= 2u && kRankMax <= static_cast<u32>(kThreads), "room for a ranked group, a member a thread");
  static constexpr u32 kIndexMask = (1u << kIndexBits) - 1u;
  typedef BlockSelectItems Self;

  const float* value;  // shared memory, kThreads x kItems slots
  const u32* index;
  u32 live;     // bit u: item u takes part
  u32 low_key;  // ordered_key(low)

  static SGTOPK_DEVICE u32 slot(int u) { return static_cast<u32>(u * kThreads) + threadIdx.x; }
  SGTOPK_DEVICE u64 key(int u) const {
    return static_cast<u64>(ordered_key(value[slot(u)]) - low_key) << kIndexBits | (kIndexMask - index[slot(u)]);
  }

  // The largest live key offset, for every thread (histogram and scratch
  // clear; ends with a barrier). `high` is a shared word holding 0.
  SGTOPK_DEVICE u32 highest_offset(u32* high) const {
    u32 mine = 0u;
#pragma unroll 1
    for (int u = 0; u < kItems; ++u)
      if ((live >> u) & 1u) mine = max_of(mine, ordered_key(value[slot(u)]) - low_key);
    mine = warp_max(mine);
    if ((threadIdx.x & 31) == 0 && mine != 0u) atomicMax(high, mine);
    __syncthreads();
    return *high;
  }

  // Commits the `k` largest live items (k <= their count): out(slot, index,
  // value) for slots [0, k). `histogram` holds kCoarseBins clear words and is
  // clear again on return; `scratch` is find_rank_bin's; `group` holds
  // kGroupBytes; `high` is highest_offset's. Block-uniform; the caller's
  // barrier publishes the output.
  template <typename Commit>
  SGTOPK_DEVICE void select(u32 k, u32 high, u32* histogram, u32* scratch, unsigned char* group, Commit&& out) const {
    const int offset_bits = high == 0u ? 0 : 32 - __clz(high);
    int shift = offset_bits + kIndexBits;  // the bits below the resolved prefix
    u64 prefix = 0ull;
    u32 take = k;
    bool whole = false;
    u32 ranked = 0u;  // members of a directly ranked group
    u64* members = reinterpret_cast<u64*>(group);
    float* member_value = reinterpret_cast<float*>(members + kRankMax);
    u32* member_rank = reinterpret_cast<u32*>(member_value + kRankMax);
    u32* member_count = member_rank + kRankMax;
    for (u32 i = threadIdx.x; i < kRankMax + 1u; i += kThreads) member_rank[i] = 0u;  // and member_count
    while (shift > 0) {
      const int bits = shift < kCoarseBits ? shift : kCoarseBits;
      const int next = shift - bits;
#pragma unroll 1
      for (int u = 0; u < kItems; ++u) {
        if (!((live >> u) & 1u)) continue;
        const u64 x = key(u);
        if ((x >> shift) == prefix) atomicAdd(&histogram[static_cast<u32>(x >> next) & (kCoarseBins - 1)], 1u);
      }
      __syncthreads();
      const RankBin found = find_rank_bin<kThreads, kCoarseBins>(histogram, take, scratch);
      clear_words<kThreads>(histogram, kCoarseBins);
      __syncthreads();  // cleared before the next round counts into it
      prefix = prefix << bits | found.bin;
      shift = next;
      take -= found.above;
      if (take == found.count) {
        whole = true;
        break;
      }
      if (found.count <= kRankMax) {
        ranked = found.count;
        break;
      }
    }
    if (shift == 0) whole = true;  // one composite key is one item
    if (!whole) {
      // Gather the group and count for each member the members above it;
      // those below `take` are committed.
#pragma unroll 1
      for (int u = 0; u < kItems; ++u) {
        if (!((live >> u) & 1u)) continue;
        const u64 x = key(u);
        if ((x >> shift) == prefix) {
          const u32 slot = atomicAdd(member_count, 1u);
          members[slot] = x;
          member_value[slot] = value[Self::slot(u)];
        }
      }
      __syncthreads();
      count_members_above<kThreads>(members, ranked, member_rank);
      __syncthreads();
    }
    // Output slots from one block scan (no shared counter for every warp to
    // queue on): thread i's member of a ranked group first, then its items.
    u32 in = 0u;
#pragma unroll 1
    for (int u = 0; u < kItems; ++u) {
      const u64 x = ((live >> u) & 1u) ? key(u) >> shift : 0ull;
      if (((live >> u) & 1u) && (x > prefix || (whole && x == prefix))) in |= 1u << u;
    }
    const bool member_in = threadIdx.x < ranked && member_rank[threadIdx.x] < take;
    u32 total;
    u32 slot = block_exclusive_sum<kThreads>(static_cast<u32>(__popc(in)) + (member_in ? 1u : 0u), scratch, &total);
    if (member_in) out(slot++, kIndexMask - static_cast<u32>(members[threadIdx.x] & kIndexMask), member_value[threadIdx.x]);
#pragma unroll 1
    for (int u = 0; u < kItems; ++u)
      if ((in >> u) & 1u) out(slot++, index[Self::slot(u)], value[Self::slot(u)]);
  }
};

}  // namespace sgtopk

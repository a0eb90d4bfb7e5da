// The 64 largest of a CTA's 32-bit keys, sorted descending, in warp 0's
// registers. Each warp sorts its pieces of 64 keys in registers (bitonic,
// two keys a lane: element 2 lane + h in v[h]) and keeps the 64 largest it
// has seen; the warps' lists then merge in a tree through shared memory,
// one barrier a level. A rank of at most 64 costs log2(warps) barriers this
// way, where digit rounds take a 2048-bin histogram, a block scan and five
// barriers each. Missing keys are 0, the smallest key. BlockRankedKey, at
// the end, takes only the key at a rank of at most 32, by pops of warp maxima;
// BlockSortKeys sorts up to 64 keys a warp across the CTA.
#pragma once
#include "sgtopk/block/warp_append.cuh"
#include "sgtopk/util/common.cuh"

namespace sgtopk {

struct WarpKeys64 {
  static constexpr int kKeys = 64;

  // Compare-exchange stages of a bitonic network at `size` (the run length
  // being merged) from element distance `stride` down to 1; `descending`
  // orders this lane's run.
  static SGTOPK_DEVICE void stages(u32 (&v)[2], u32 size, u32 stride) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const bool descending = ((2u * static_cast<u32>(lane)) & size) == 0u;
    for (; stride > 0u; stride >>= 1) {
      if (stride == 1u) {  // both elements in this lane
        const u32 hi = max_of(v[0], v[1]), lo = min_of(v[0], v[1]);
        v[0] = descending ? hi : lo;
        v[1] = descending ? lo : hi;
      } else {
        const int partner = lane ^ static_cast<int>(stride >> 1);
        const bool lower = lane < partner;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const u32 other = __shfl_sync(0xffffffffu, v[h], partner);
          v[h] = lower == descending ? max_of(v[h], other) : min_of(v[h], other);
        }
      }
    }
  }

  // Sorts the warp's 64 keys descending. Called by every lane of a warp.
  static SGTOPK_DEVICE void sort_descending(u32 (&v)[2]) {
    for (u32 size = 2u; size <= 64u; size <<= 1) stages(v, size, size >> 1);
  }

  // v becomes the 64 largest of v and p (both sorted descending), sorted:
  // the larger of v's i-th and p's (63 - i)-th form a bitonic sequence
  // holding them, which one merge sorts.
  static SGTOPK_DEVICE void keep_largest(u32 (&v)[2], const u32 (&p)[2]) {
    const int mirror = 31 - static_cast<int>(threadIdx.x & 31);
    const u32 q0 = __shfl_sync(0xffffffffu, p[1], mirror), q1 = __shfl_sync(0xffffffffu, p[0], mirror);
    v[0] = max_of(v[0], q0);
    v[1] = max_of(v[1], q1);
    stages(v, 64u, 32u);
  }

  // Element e (0..63, the same in every lane) of the sorted keys: selects,
  // so that v stays in registers.
  static SGTOPK_DEVICE u32 element(const u32 (&v)[2], u32 e) {
    return __shfl_sync(0xffffffffu, (e & 1u) != 0u ? v[1] : v[0], static_cast<int>(e >> 1));
  }

  // The keys greater than `key` among the 64.
  static SGTOPK_DEVICE u32 count_above(const u32 (&v)[2], u32 key) {
    return static_cast<u32>(__popc(__ballot_sync(0xffffffffu, v[0] > key)) +
                            __popc(__ballot_sync(0xffffffffu, v[1] > key)));
  }
};

template <int kThreads>
struct BlockTopKeys {
  static_assert(kThreads % 32 == 0, "whole warps");
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kListKeys = kWarps * WarpKeys64::kKeys;  // the tree's shared memory, in keys

  // The 64 largest of key_at(0..n-1) into warp 0's v, sorted descending
  // (0 past n); the other warps' v are partial. Every thread calls it;
  // `lists` (kListKeys words of shared memory) is read by warp 0 until it
  // returns, so a barrier precedes its reuse. Each warp's pieces are
  // [64 (warp + j warps), +64): a warp's loads are contiguous.
  template <typename KeyAt>
  static SGTOPK_DEVICE void largest(int n, KeyAt&& key_at, u32* lists, u32 (&v)[2]) {
    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
    v[0] = v[1] = 0u;
    for (int base = warp * WarpKeys64::kKeys; base < n; base += kListKeys) {
      u32 p[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = base + 2 * lane + h;
        p[h] = e < n ? key_at(e) : 0u;
      }
      WarpKeys64::sort_descending(p);
      if (base == warp * WarpKeys64::kKeys) {
        v[0] = p[0];
        v[1] = p[1];
      } else {
        WarpKeys64::keep_largest(v, p);
      }
    }
    // Level `step`: warps at odd multiples of step hand their list to the
    // warp step below. Each list is written once, so one barrier a level.
    for (int step = 1; step < kWarps; step <<= 1) {
      if ((warp & (2 * step - 1)) == step) {
        lists[warp * WarpKeys64::kKeys + 2 * lane] = v[0];
        lists[warp * WarpKeys64::kKeys + 2 * lane + 1] = v[1];
      }
      __syncthreads();
      if ((warp & (2 * step - 1)) == 0 && warp + step < kWarps) {
        const u32* other = lists + (warp + step) * WarpKeys64::kKeys;
        const u32 p[2] = {other[2 * lane], other[2 * lane + 1]};
        WarpKeys64::keep_largest(v, p);
      }
    }
  }
};

// The r-th largest of n keys in shared memory for a small rank r (at most
// 32), counting equal keys apart: each warp pops the largest of its part r
// times (one warp_max and one ballot a pop, each lane's keys sorted in its
// registers), then warp 0 pops r times over the warps' sorted lists. Where
// a digit round takes a 2048-bin histogram, a block scan and its barriers,
// this takes 2 r warp reductions and one barrier.
template <int kThreads, int kKeysPerLane>
struct BlockRankedKey {
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kMaxRank = 32;
  static constexpr int kMaxKeys = kThreads * kKeysPerLane;
  static constexpr int kListKeys = kWarps * kMaxRank;  // the lists' shared memory, in keys
  static_assert(kWarps <= 32, "warp 0 takes a list a lane");

  // Every thread calls it and gets the r-th largest of keys[0, n): n at
  // most kMaxKeys, r in [1, min(n, kMaxRank)]. `lists` (kListKeys words of
  // shared memory) and `answer` are written; a barrier follows its last read.
  static SGTOPK_DEVICE u32 at_rank(const u32* keys, int n, int r, u32* lists, u32* answer) {
    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
    const int part = (n + kWarps - 1) / kWarps, begin = warp * part;
    const int end = begin + part < n ? begin + part : n;
    u32 v[kKeysPerLane];
#pragma unroll
    for (int j = 0; j < kKeysPerLane; ++j) {
      const int i = begin + j * 32 + lane;
      v[j] = i < end ? keys[i] : 0u;
    }
#pragma unroll
    for (int a = 0; a < kKeysPerLane; ++a)  // descending: the lane's largest in v[0]
#pragma unroll
      for (int b = kKeysPerLane - 1; b > a; --b) {
        const u32 hi = max_of(v[b - 1], v[b]), lo = min_of(v[b - 1], v[b]);
        v[b - 1] = hi;
        v[b] = lo;
      }
    u32 mine = 0u;  // lane i: the warp's i-th largest
    for (int i = 0; i < r; ++i) {
      const u32 m = warp_max(v[0]);
      if (lane == __ffs(__ballot_sync(0xffffffffu, v[0] == m)) - 1) {
#pragma unroll
        for (int j = 0; j + 1 < kKeysPerLane; ++j) v[j] = v[j + 1];
        v[kKeysPerLane - 1] = 0u;
      }
      if (lane == i) mine = m;
    }
    lists[warp * kMaxRank + lane] = mine;
    __syncthreads();
    if (warp == 0) {
      int next = 1;  // lane l pops warp l's list, sorted descending
      u32 head = lane < kWarps ? lists[lane * kMaxRank] : 0u, m = 0u;
      for (int i = 0; i < r; ++i) {
        m = warp_max(head);
        if (lane == __ffs(__ballot_sync(0xffffffffu, head == m)) - 1) {
          head = lane < kWarps && next < r ? lists[lane * kMaxRank + next] : 0u;
          ++next;
        }
      }
      if (lane == 0) *answer = m;
    }
    __syncthreads();
    return *answer;
  }
};

// Sorts up to 64 keys a warp descending across the CTA: warp w holds
// elements [64 w, 64 w + 64) in registers (element 2 lane + h in v[h]) and
// sorts them; runs of 128, 256, ... then merge as bitonic networks in the
// "flip" form (each stage keeps every run descending): a stage whose
// partner lies in another warp's piece goes through shared memory, one
// barrier a stage; the strides within a piece (32 down to 1) are shuffles.
// For 1024 keys: 10 barriers, where three digit rounds over them take about
// 15 and three 2048-bin histograms.
template <int kThreads>
struct BlockSortKeys {
  static_assert(kThreads % 32 == 0, "whole warps");
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kMaxKeys = kWarps * WarpKeys64::kKeys;
  static constexpr int kBufferKeys = 2 * kMaxKeys;  // a stage writes one half while the last may still be read

  // Sorts the `size` keys of warps [0, size / 64) descending; `size` a power
  // of two in [64, kMaxKeys]. Every thread calls it (warps past the pieces
  // only meet the barriers); `buffer` (kBufferKeys words of shared memory)
  // is read until it returns, so a barrier precedes its reuse.
  static SGTOPK_DEVICE void sort(u32 (&v)[2], int size, u32* buffer) {
    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
    const bool holds = warp * WarpKeys64::kKeys < size;
    const int first = warp * WarpKeys64::kKeys + 2 * lane;  // v[0]'s element; v[1]'s is first + 1
    if (holds) WarpKeys64::sort_descending(v);
    int half = 0;
    for (int run = 2 * WarpKeys64::kKeys; run <= size; run <<= 1) {
      exchange(v, holds, first, buffer + (half++ & 1) * kMaxKeys, run - 1);  // the flip: i against run - 1 - i
      for (int stride = run >> 2; stride >= WarpKeys64::kKeys; stride >>= 1)
        exchange(v, holds, first, buffer + (half++ & 1) * kMaxKeys, stride);
      if (holds) WarpKeys64::stages(v, 64u, 32u);  // every lane descending
    }
  }

  // One compare-exchange stage through shared memory: element e against e ^
  // `mask` (run - 1: its mirror in the run; else a stride), the lower of
  // the two keeping the larger key.
  static SGTOPK_DEVICE void exchange(u32 (&v)[2], bool holds, int first, u32* half, int mask) {
    if (holds) {
      half[first] = v[0];
      half[first + 1] = v[1];
    }
    __syncthreads();
    if (holds) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = first + h, partner = e ^ mask;
        const u32 other = half[partner];
        v[h] = e < partner ? max_of(v[h], other) : min_of(v[h], other);
      }
    }
  }
};

}  // namespace sgtopk

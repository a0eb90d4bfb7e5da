// Streaming one row through the block: a scalar head up to 16-byte alignment,
// float4 loads (kUnroll vectors in flight per thread) for the body, scalars
// for the tail. Rows start anywhere (pitch, window starts), so alignment is
// found at run time rather than assumed.
#pragma once
#include "sgtopk/common.cuh"

namespace sgtopk {

SGTOPK_DEVICE float4 load_vector(const float4* p) { return __ldg(p); }

// Loads the kUnroll vectors of the chunk starting at `base` (those in range).
template <int kThreads, int kUnroll>
SGTOPK_DEVICE void load_chunk(const float4* body, int vectors, int base, float4 (&v)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
    if (j < vectors) v[u] = load_vector(body + j);
  }
}

// How a row is streamed (all compile-time):
//   kThreads      threads of the block
//   kUnroll       16-byte loads each thread issues before using the first
//   kVectorLoads  float4 body (else scalar loads throughout)
//   kPrefetch     the next chunk's loads are issued before this chunk is
//                 classified (a register double buffer)
//   kL2Ahead      0, or how many chunks ahead each thread asks L2 to fetch its
//                 future addresses (prefetch.global.L2): more bytes in flight
//                 without registers
template <int kThreads_, int kUnroll_, bool kVectorLoads_, bool kPrefetch_, int kL2Ahead_>
struct StreamShape {
  static constexpr int kThreads = kThreads_;
  static constexpr int kUnroll = kUnroll_;
  static constexpr bool kVectorLoads = kVectorLoads_;
  static constexpr bool kPrefetch = kPrefetch_;
  static constexpr int kL2Ahead = kL2Ahead_;
};

SGTOPK_DEVICE void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Asks L2 for this thread's vectors of the chunk starting at `base`.
template <int kThreads, int kUnroll>
SGTOPK_DEVICE void prefetch_chunk(const float4* body, int vectors, int base) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
    if (j < vectors) prefetch_l2(body + j);
  }
}

// Calls visit(index, value) for every i in [0, len). Not every lane reaches a
// given call (tails), so visit must not assume a converged warp. After each
// block-wide chunk of the body every thread calls between_chunks().
template <typename Shape, typename Visit, typename Between>
SGTOPK_DEVICE void for_each_score(const float* row, int len, Visit&& visit, Between&& between_chunks) {
  constexpr int kThreads = Shape::kThreads, kUnroll = Shape::kUnroll;
  constexpr bool kVectorLoads = Shape::kVectorLoads, kPrefetch = Shape::kPrefetch;
  const int t = threadIdx.x;
  int head = 0;
  if constexpr (kVectorLoads) {
    const u32 misalignment = static_cast<u32>(reinterpret_cast<u64>(row) & 15u) >> 2;
    head = min_of<int>(len, static_cast<int>((4u - misalignment) & 3u));
  } else {
    head = len;
  }
  // Head (and everything when vector loads are off): coalesced scalars.
  for (int i = t; i < head; i += kThreads) visit(i, __ldg(row + i));
  if constexpr (!kVectorLoads) return;

  const float4* body = reinterpret_cast<const float4*>(row + head);
  const int vectors = (len - head) >> 2;
  constexpr int kChunk = kThreads * kUnroll;
  if constexpr (Shape::kL2Ahead > 1) {
#pragma unroll
    for (int ahead = 1; ahead < Shape::kL2Ahead; ++ahead) prefetch_chunk<kThreads, kUnroll>(body, vectors, ahead * kChunk);
  }
  float4 v[kUnroll];
  if constexpr (kPrefetch) {
    if (vectors > 0) load_chunk<kThreads, kUnroll>(body, vectors, 0, v);
  }
  for (int base = 0; base < vectors; base += kChunk) {
    float4 next[kUnroll];
    if constexpr (kPrefetch) {
      if (base + kChunk < vectors) load_chunk<kThreads, kUnroll>(body, vectors, base + kChunk, next);
    } else {
      load_chunk<kThreads, kUnroll>(body, vectors, base, v);
    }
    if constexpr (Shape::kL2Ahead > 0) prefetch_chunk<kThreads, kUnroll>(body, vectors, base + Shape::kL2Ahead * kChunk);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = base + u * kThreads + t;
      if (j < vectors) {
        const int i = head + 4 * j;
        visit(i, v[u].x);
        visit(i + 1, v[u].y);
        visit(i + 2, v[u].z);
        visit(i + 3, v[u].w);
      }
    }
    between_chunks();
    if constexpr (kPrefetch) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = next[u];
    }
  }
  for (int i = head + 4 * vectors + t; i < len; i += kThreads) visit(i, __ldg(row + i));
}

struct NothingBetweenChunks {
  SGTOPK_DEVICE void operator()() const {}
};

// A short row held in registers: element u*kThreads + t lives in thread t's
// slot u. Loaded once, visited as often as the passes need.
template <int kThreads, int kItems>
struct RegisterRow {
  float value[kItems];
  int len;

  SGTOPK_DEVICE void load(const float* row, int row_len) {
    len = row_len;
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = u * kThreads + static_cast<int>(threadIdx.x);
      value[u] = i < len ? __ldg(row + i) : 0.0f;
    }
  }

  template <typename Visit, typename Between>
  SGTOPK_DEVICE void for_each(Visit&& visit, Between&&) const {
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = u * kThreads + static_cast<int>(threadIdx.x);
      if (i < len) visit(i, value[u]);
    }
  }
};

// The same interface over global memory, for rows too long for registers.
template <typename Shape>
struct StreamedRow {
  const float* row;
  int len;

  SGTOPK_DEVICE void load(const float* row_begin, int row_len) {
    row = row_begin;
    len = row_len;
  }

  template <typename Visit, typename Between>
  SGTOPK_DEVICE void for_each(Visit&& visit, Between&& between_chunks) const {
    for_each_score<Shape>(row, len, visit, between_chunks);
  }
};

}  // namespace sgtopk

// Streaming one row through the block: a scalar head up to 16-byte alignment,
// float4 loads (kLoadsInFlight vectors in flight per thread) for the body, scalars
// for the tail. Rows start anywhere (pitch, window starts), so alignment is
// found at run time rather than assumed.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

SGTOPK_DEVICE float4 load_vector(const float4* p) { return __ldg(p); }

// Loads the kLoadsInFlight vectors of the chunk starting at `base` that are in
// range and `wanted` (bit u: v[u]).
template <int kThreads, int kLoadsInFlight>
SGTOPK_DEVICE void load_chunk(const float4* body, int vectors, int base, float4 (&v)[kLoadsInFlight], u32 wanted = ~0u) {
#pragma unroll
  for (int u = 0; u < kLoadsInFlight; ++u) {
    const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
    // Defined either way, so the chunk stays in registers (a conditional
    // write would keep the previous value alive, and the compiler spills it).
    v[u] = j < vectors && ((wanted >> u) & 1u) ? load_vector(body + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

// Which of its vectors in a chunk a thread loads, by the chunk's number
// (bit u: v[u]). A pass that reads everything: every vector. (A selective
// one, such as floor_marks.cuh's, also lets a warp skip a chunk it wants
// nothing of.)
struct EveryVector {
  static constexpr bool kSelective = false;
  static constexpr int kSparseVectors = 0;  // see floor_marks.cuh
  static constexpr bool kGathers = false;   // see floor_marks.cuh
  SGTOPK_DEVICE u32 operator()(int) const { return ~0u; }
  SGTOPK_DEVICE void prune_below(u32) const {}
};

// How a row is streamed (all compile-time):
//   kThreads            threads of the block
//   kLoadsInFlight      16-byte loads each thread issues before using the first
//   kVectorLoads        float4 body (else scalar loads throughout)
//   kPrefetchNextChunk  the next chunk's loads are issued before this chunk is
//                       classified (a register double buffer)
//   kPrefetchL2Chunks   0, or how many chunks ahead each thread asks L2 to
//                       fetch its future addresses (prefetch.global.L2): more
//                       bytes in flight without registers
template <int kThreads_, int kLoadsInFlight_, bool kVectorLoads_, bool kPrefetchNextChunk_, int kPrefetchL2Chunks_>
struct StreamShape {
  static constexpr int kThreads = kThreads_;
  static constexpr int kLoadsInFlight = kLoadsInFlight_;
  static constexpr bool kVectorLoads = kVectorLoads_;
  static constexpr bool kPrefetchNextChunk = kPrefetchNextChunk_;
  static constexpr int kPrefetchL2Chunks = kPrefetchL2Chunks_;
};


// Asks L2 for this thread's vectors of the chunk starting at `base` (none
// when base is before the body: a backward stream's look-ahead past its end).
template <int kThreads, int kLoadsInFlight>
SGTOPK_DEVICE void prefetch_chunk(const float4* body, int vectors, int base) {
#pragma unroll
  for (int u = 0; u < kLoadsInFlight; ++u) {
    const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
    if (base >= 0 && j < vectors) hw::prefetch_l2(body + j);
  }
}

// A visitor's `const auto& chunk` without the reference, for its constants
// in constant expressions.
template <typename T>
struct Bare {
  typedef T type;
};
template <typename T>
struct Bare<const T&> {
  typedef T type;
};

// kLoadsInFlight float4 of one thread, as a pass visits them: element n = 4u + c
// is score(n). The chunk kinds below add where each vector lies in the row.
template <int kLoadsInFlight>
struct VectorSlots {
  static constexpr int kCount = 4 * kLoadsInFlight;
  static constexpr int kVectors = kLoadsInFlight;
  float4 v[kLoadsInFlight];
  u32 valid;  // bit u: v[u] lies in the row (and the pass wanted it)

  SGTOPK_DEVICE float score(int n) const {  // n is a constant in unrolled loops: a plain register
    const float4& q = v[n >> 2];
    const int c = n & 3;
    return c == 0 ? q.x : c == 1 ? q.y : c == 2 ? q.z : q.w;
  }
  // v[u] for a u known only at run time: selects, so the chunk stays in registers.
  SGTOPK_DEVICE float4 vector_at(int u) const {
    float4 q = v[0];
#pragma unroll
    for (int k = 1; k < kLoadsInFlight; ++k) q = k == u ? v[k] : q;
    return q;
  }
  // score(n) for an n known only at run time, likewise. A few selects beat
  // reading it again: in a loop over a lane's few kept scores each re-read
  // waits out an L1 round trip
  // (docs/decisions/2026-12-01-direct-scores-from-registers.md).
  SGTOPK_DEVICE float score_at(int n) const {
    const float4 q = vector_at(n >> 2);
    const int c = n & 3;
    return c == 0 ? q.x : c == 1 ? q.y : c == 2 ? q.z : q.w;
  }
  // v[u]'s highest score; fmaxf passes over NaN, so NaN is highest only in
  // an all-NaN vector.
  SGTOPK_DEVICE float vector_max(int u) const {
    const float4& q = v[u];
    return fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w));
  }
  SGTOPK_DEVICE bool is_valid(int n) const { return (valid >> (n >> 2)) & 1u; }
  // Bit n set when score(n) lies in the row. A pass that builds a mask over
  // every slot and ANDs this in once per chunk saves a test per score (the
  // slots past the row hold 0.0f, whatever a test says of them).
  SGTOPK_DEVICE u32 live_mask() const {
    u32 live = 0u;
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) live |= ((valid >> u) & 1u) ? 0xfu << (4 * u) : 0u;
    return live;
  }
};

// One block-wide chunk of the vector body as one thread holds it: v[u] is
// the body's vector number * kThreads * kLoadsInFlight + u * kThreads + slot.
template <int kThreads, int kLoadsInFlight>
struct VectorChunk : VectorSlots<kLoadsInFlight> {
  const float* row;  // the row's first score
  int first;  // row index of v[0].x
  int number;  // the chunk's place in the body (0: its first), whichever way the pass walks
  int slot;    // the thread slot held: threadIdx.x, or a work unit's (for_each_unit)

  SGTOPK_DEVICE u32 index(int n) const { return static_cast<u32>(first + (n >> 2) * 4 * kThreads + (n & 3)); }
  // score(n) read again (from L1 in the common case, the chunk was just
  // loaded): the sampled certification's admits, several in most warps'
  // chunks, where score_at's selects cost more than the round trip
  // (docs/decisions/2026-12-01-sampled-certification-keeps-reread.md).
  SGTOPK_DEVICE float score_again(int n) const { return __ldg(row + index(n)); }
};

// kLoadsInFlight vectors of one thread gathered from anywhere in the body
// (for_each_gathered): first[u] is the row index of v[u].x.
template <int kLoadsInFlight>
struct GatheredVectors : VectorSlots<kLoadsInFlight> {
  const float* row;
  int first[kLoadsInFlight];

  // For an n known only at run time: masks rather than selects, which the
  // compiler turned into an indexed load, moving the batch to local memory.
  SGTOPK_DEVICE u32 index(int n) const {
    u32 f = 0u;
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) f |= static_cast<u32>(first[k]) & (0u - static_cast<u32>(k == (n >> 2)));
    return f + static_cast<u32>(n & 3);
  }
};

// A row as 16-byte loads see it: `head` scalars up to 16-byte alignment,
// then `vectors` whole float4 from `body`; the tail's scalars after them.
struct VectorBody {
  int head;
  const float4* body;
  int vectors;
};
SGTOPK_DEVICE VectorBody vector_body(const float* row, int len) {
  const u32 misalignment = static_cast<u32>(reinterpret_cast<u64>(row) & 15u) >> 2;
  const int head = min_of<int>(len, static_cast<int>((4u - misalignment) & 3u));
  return VectorBody{head, reinterpret_cast<const float4*>(row + head), (len - head) >> 2};
}
// Block-wide chunks of kChunk vectors covering `vectors` (the last one partial).
template <int kChunk>
SGTOPK_DEVICE int chunk_count(int vectors) {
  return (vectors + kChunk - 1) / kChunk;
}

}  // namespace sgtopk

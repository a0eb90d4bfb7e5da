// Streaming one row through the block: a scalar head up to 16-byte alignment,
// float4 loads (kUnroll vectors in flight per thread) for the body, scalars
// for the tail. Rows start anywhere (pitch, window starts), so alignment is
// found at run time rather than assumed.
#pragma once
#include "sgtopk/common.cuh"

namespace sgtopk {

SGTOPK_DEVICE float4 load_vector(const float4* p) { return __ldg(p); }

// Loads the kUnroll vectors of the chunk starting at `base` that are in
// range and `wanted` (bit u: v[u]).
template <int kThreads, int kUnroll>
SGTOPK_DEVICE void load_chunk(const float4* body, int vectors, int base, float4 (&v)[kUnroll], u32 wanted = ~0u) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
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

// Asks L2 for this thread's vectors of the chunk starting at `base` (none
// when base is before the body: a backward stream's look-ahead past its end).
template <int kThreads, int kUnroll>
SGTOPK_DEVICE void prefetch_chunk(const float4* body, int vectors, int base) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int j = base + u * kThreads + static_cast<int>(threadIdx.x);
    if (base >= 0 && j < vectors) prefetch_l2(body + j);
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

// kUnroll float4 of one thread, as a pass visits them: element n = 4u + c
// is score(n). The chunk kinds below add where each vector lies in the row.
template <int kUnroll>
struct VectorSlots {
  static constexpr int kCount = 4 * kUnroll;
  static constexpr int kVectors = kUnroll;
  float4 v[kUnroll];
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
    for (int k = 1; k < kUnroll; ++k) q = k == u ? v[k] : q;
    return q;
  }
  // score(n) for an n known only at run time, likewise. A few selects beat
  // reading it again: in a loop over a lane's few kept scores each re-read
  // waited out an L1 round trip (the classification pass's carries: -11% at
  // 2^20 iid rows from registers; bench/NOTES.md).
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
    for (int u = 0; u < kUnroll; ++u) live |= ((valid >> u) & 1u) ? 0xfu << (4 * u) : 0u;
    return live;
  }
};

// One block-wide chunk of the vector body as one thread holds it: v[u] is
// the body's vector number * kThreads * kUnroll + u * kThreads + slot.
template <int kThreads, int kUnroll>
struct VectorChunk : VectorSlots<kUnroll> {
  const float* row;  // the row's first score
  int first;  // row index of v[0].x
  int number;  // the chunk's place in the body (0: its first), whichever way the pass walks
  int slot;    // the thread slot held: threadIdx.x, or a work unit's (for_each_unit)

  SGTOPK_DEVICE u32 index(int n) const { return static_cast<u32>(first + (n >> 2) * 4 * kThreads + (n & 3)); }
  // score(n) read again (from L1 in the common case, the chunk was just
  // loaded): the sampled certification's admits, measured with it.
  SGTOPK_DEVICE float score_again(int n) const { return __ldg(row + index(n)); }
};

// kUnroll vectors of one thread gathered from anywhere in the body
// (for_each_gathered): first[u] is the row index of v[u].x.
template <int kUnroll>
struct GatheredVectors : VectorSlots<kUnroll> {
  const float* row;
  int first[kUnroll];

  // For an n known only at run time: masks rather than selects, which the
  // compiler turned into an indexed load, moving the batch to local memory.
  SGTOPK_DEVICE u32 index(int n) const {
    u32 f = 0u;
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) f |= static_cast<u32>(first[k]) & (0u - static_cast<u32>(k == (n >> 2)));
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

// Streams [0, len): visit_chunk(chunk) for each block-wide chunk of the
// 16-byte-aligned body, called by every thread of the block (with nothing
// valid where its slots run past the row), so a visitor may use warp
// collectives; visit_scalar(index, value) for the head and the tail, where
// lanes diverge. Without vector loads every score goes to visit_scalar.
// kBackward visits the body's chunks from the last to the first: a pass that
// follows another over the same row in the opposite direction then starts on
// the bytes the first one read last, which are the likeliest still in L2.
// `want` (EveryVector, or a selective filter) says which vectors each thread
// loads; the rest read as not in the row, and a warp that wants nothing of a
// chunk skips it whole (warp-uniform, so the visitor's collectives hold).
template <typename Shape, bool kBackward = false, typename Want, typename VisitChunk, typename VisitScalar>
SGTOPK_DEVICE void for_each_chunk(const float* row, int len, const Want& want, VisitChunk&& visit_chunk,
                                  VisitScalar&& visit_scalar) {
  constexpr int kThreads = Shape::kThreads, kUnroll = Shape::kUnroll;
  constexpr bool kVectorLoads = Shape::kVectorLoads, kPrefetch = Shape::kPrefetch;
  const int t = threadIdx.x;
  const VectorBody shape = kVectorLoads ? vector_body(row, len) : VectorBody{len, nullptr, 0};
  const int head = shape.head;
  // Head (and everything when vector loads are off): coalesced scalars.
  for (int i = t; i < head; i += kThreads) visit_scalar(i, __ldg(row + i));
  if constexpr (!kVectorLoads) return;

  const float4* body = shape.body;
  const int vectors = shape.vectors;
  constexpr int kChunk = kThreads * kUnroll;
  const int chunks = chunk_count<kChunk>(vectors);
  const int step = kBackward ? -kChunk : kChunk;  // from one chunk's base to the next's
  const int first = kBackward ? (chunks - 1) * kChunk : 0;
  // The L2 look-ahead fetches whole chunks, so a selective pass (which reads
  // a few vectors of each) does without it.
  constexpr int kL2Ahead = Want::kSelective ? 0 : Shape::kL2Ahead;
  if constexpr (kL2Ahead > 1) {
#pragma unroll
    for (int ahead = 1; ahead < kL2Ahead; ++ahead)
      prefetch_chunk<kThreads, kUnroll>(body, vectors, first + ahead * step);
  }
  const int number_step = kBackward ? -1 : 1;
  float4 ahead[kUnroll];  // kPrefetch: the next chunk, loading while this one is visited
  if constexpr (kPrefetch) {
    if (vectors > 0) load_chunk<kThreads, kUnroll>(body, vectors, first, ahead, Want::kSelective ? want(first / kChunk) : ~0u);
  }
  for (int c = 0, base = first, number = first / kChunk; c < chunks; ++c, base += step, number += number_step) {
    u32 valid = 0u;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * kThreads + t < vectors) valid |= 1u << u;
    if constexpr (Want::kSelective) {
      valid &= want(number);
      if constexpr (!kPrefetch) {
        if (__ballot_sync(0xffffffffu, valid != 0u) == 0u) continue;
      }
    }
    VectorChunk<kThreads, kUnroll> chunk;
    if constexpr (kPrefetch) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) chunk.v[u] = ahead[u];
      if (c + 1 < chunks)
        load_chunk<kThreads, kUnroll>(body, vectors, base + step, ahead, Want::kSelective ? want(number + number_step) : ~0u);
    } else {
      load_chunk<kThreads, kUnroll>(body, vectors, base, chunk.v, Want::kSelective ? valid : ~0u);
    }
    if constexpr (kL2Ahead > 0) prefetch_chunk<kThreads, kUnroll>(body, vectors, base + kL2Ahead * step);
    chunk.row = row;
    chunk.first = head + 4 * (base + t);
    chunk.number = number;
    chunk.slot = t;
    chunk.valid = valid;
    visit_chunk(static_cast<const VectorChunk<kThreads, kUnroll>&>(chunk));
  }
  for (int i = head + 4 * vectors + t; i < len; i += kThreads) visit_scalar(i, __ldg(row + i));
}

// for_each_chunk's visit (every vector) with warp-sized work units handed
// out at run time: unit u is warp slot u % kWarps of the chunk u / kWarps
// from the start (kBackward: from the end), taken by whichever warp asks
// next (`units_taken`: a shared counter, zero before the pass). A warp whose
// loads come back late takes fewer units instead of holding the block at the
// barrier after the pass: with fixed slices, warps waited there ~13% of a
// 2^17 row's time on average (bench/NOTES.md, eighth session). The chunk
// reaches the visitor as its slot's lanes hold it (chunk.slot). No register
// double buffer and no L2 look-ahead here.
// on_claim(ordinal, warp_slot) runs on the whole warp as it takes a unit,
// before the unit's loads (ordinal: the chunk's place in the walk).
template <typename Shape, bool kBackward, typename VisitChunk, typename VisitScalar, typename OnClaim>
SGTOPK_DEVICE void for_each_unit(const float* row, int len, u32* units_taken, VisitChunk&& visit_chunk,
                                 VisitScalar&& visit_scalar, OnClaim&& on_claim) {
  static_assert(Shape::kVectorLoads, "units of 16-byte vectors");
  constexpr int kThreads = Shape::kThreads, kUnroll = Shape::kUnroll, kWarps = kThreads / 32;
  constexpr int kChunk = kThreads * kUnroll;
  const int t = threadIdx.x, lane = t & 31;
  const VectorBody shape = vector_body(row, len);
  for (int i = t; i < shape.head; i += kThreads) visit_scalar(i, __ldg(row + i));
  const int chunks = chunk_count<kChunk>(shape.vectors);
  const u32 units = static_cast<u32>(chunks) * static_cast<u32>(kWarps);
  for (;;) {
    u32 unit = 0u;
    if (lane == 0) unit = atomicAdd(units_taken, 1u);
    unit = __shfl_sync(0xffffffffu, unit, 0);
    if (unit >= units) break;  // warp-uniform
    const int ordinal = static_cast<int>(unit / kWarps);
    on_claim(ordinal, static_cast<int>(unit % kWarps));
    const int number = kBackward ? chunks - 1 - ordinal : ordinal;
    const int slot = static_cast<int>(unit % kWarps) * 32 + lane;
    const int base = number * kChunk;
    VectorChunk<kThreads, kUnroll> chunk;
    chunk.valid = 0u;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * kThreads + slot < shape.vectors) chunk.valid |= 1u << u;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      chunk.v[u] = ((chunk.valid >> u) & 1u) ? load_vector(shape.body + base + u * kThreads + slot)
                                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    chunk.row = row;
    chunk.first = shape.head + 4 * (base + slot);
    chunk.number = number;
    chunk.slot = slot;
    visit_chunk(static_cast<const VectorChunk<kThreads, kUnroll>&>(chunk));
  }
  for (int i = shape.head + 4 * shape.vectors + t; i < len; i += kThreads) visit_scalar(i, __ldg(row + i));
}

// Visits the body's vectors that `next` names, kBatch at a time per thread,
// as chunk-shaped batches (GatheredVectors) that every thread of the block
// takes part in, until no lane of a warp has any left; the head and the
// tail as for_each_chunk. next() returns this thread's next vector index in
// the body, or -1 when it has none left. A batch's loads are all in flight
// before the first is used, wherever in the row they lie: for a pass that
// reads a few scattered vectors of each chunk (floor marks), one memory
// latency per batch instead of one per chunk.
template <typename Shape, int kBatch, typename Next, typename VisitChunk, typename VisitScalar>
SGTOPK_DEVICE void for_each_gathered(const float* row, int len, Next&& next, VisitChunk&& visit_chunk,
                                     VisitScalar&& visit_scalar) {
  static_assert(Shape::kVectorLoads, "gathers 16-byte vectors");
  static_assert(kBatch >= 1 && kBatch <= 8, "a batch's scores fit one 32-bit mask");
  constexpr int kThreads = Shape::kThreads;
  const int t = threadIdx.x;
  const VectorBody shape = vector_body(row, len);
  for (int i = t; i < shape.head; i += kThreads) visit_scalar(i, __ldg(row + i));
  for (;;) {
    GatheredVectors<kBatch> batch;
    batch.row = row;
    batch.valid = 0u;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = next();
      batch.first[u] = shape.head + 4 * max_of(j, 0);
      batch.v[u] = j >= 0 ? load_vector(shape.body + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      batch.valid |= (j >= 0 ? 1u : 0u) << u;
    }
    if (__ballot_sync(0xffffffffu, batch.valid != 0u) == 0u) break;  // warp-uniform
    visit_chunk(static_cast<const GatheredVectors<kBatch>&>(batch));
  }
  for (int i = shape.head + 4 * shape.vectors + t; i < len; i += kThreads) visit_scalar(i, __ldg(row + i));
}

// Calls visit(index, value) for every i in [0, len). Not every lane reaches a
// given call (tails), so visit must not assume a converged warp. (Passes that
// need the block-wide chunks use for_each_chunk.)
template <typename Shape, typename Visit>
SGTOPK_DEVICE void for_each_score(const float* row, int len, Visit&& visit) {
  for_each_chunk<Shape>(
      row, len, EveryVector{},
      [&](const auto& chunk) {
#pragma unroll
        for (int n = 0; n < chunk.kCount; ++n)
          if (chunk.is_valid(n)) visit(static_cast<int>(chunk.index(n)), chunk.score(n));
      },
      visit);
}

// A short row held in registers: element u*kThreads + t lives in thread t's
// slot u. Loaded once, visited as often as the passes need.
template <int kThreads, int kItems>
struct RegisterRow {
  float value[kItems];
  int len;
  // As a chunk (below): the row's only one, in this thread's own slot.
  static constexpr int number = 0;
  int slot;

  SGTOPK_DEVICE void load(const float* row, int row_len) {
    len = row_len;
    slot = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = u * kThreads + static_cast<int>(threadIdx.x);
      value[u] = i < len ? __ldg(row + i) : 0.0f;
    }
  }

  template <typename Visit>
  SGTOPK_DEVICE void for_each(Visit&& visit) const {
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = u * kThreads + static_cast<int>(threadIdx.x);
      if (i < len) visit(i, value[u]);
    }
  }

  // The whole row is one chunk (see for_each_chunk), visited by every thread.
  static constexpr int kCount = kItems;
  static constexpr int kVectors = 0;  // scores, not 16-byte vectors
  SGTOPK_DEVICE float score(int n) const { return value[n]; }
  SGTOPK_DEVICE float score_at(int n) const {  // n known at run time: select, never index
    float found = 0.0f;
#pragma unroll
    for (int k = 0; k < kItems; ++k) found = k == n ? value[k] : found;
    return found;
  }
  SGTOPK_DEVICE float score_again(int n) const { return score_at(n); }
  SGTOPK_DEVICE u32 index(int n) const { return static_cast<u32>(n * kThreads + static_cast<int>(threadIdx.x)); }
  SGTOPK_DEVICE bool is_valid(int n) const { return static_cast<int>(index(n)) < len; }
  SGTOPK_DEVICE u32 live_mask() const {  // as VectorChunk's
    u32 live = 0u;
#pragma unroll
    for (int n = 0; n < kItems; ++n) live |= is_valid(n) ? 1u << n : 0u;
    return live;
  }

  template <typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_chunk(VisitChunk&& visit_chunk, VisitScalar&&) const {
    visit_chunk(*this);
  }
  // Registers have no order to exploit, and nothing to save by skipping
  // loads: the same visit.
  template <typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_chunk_backward(VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    for_each_chunk(visit_chunk, visit_scalar);
  }
  template <bool kBackward, typename VisitChunk, typename VisitScalar, typename OnClaim>
  SGTOPK_DEVICE void for_each_unit(u32*, VisitChunk&& visit_chunk, VisitScalar&& visit_scalar, OnClaim&&) const {
    for_each_chunk(visit_chunk, visit_scalar);
  }
  template <typename Want, typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_wanted_chunk(const Want&, VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    for_each_chunk(visit_chunk, visit_scalar);
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

  template <typename Visit>
  SGTOPK_DEVICE void for_each(Visit&& visit) const {
    for_each_score<Shape>(row, len, visit);
  }

  template <typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_chunk(VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    sgtopk::for_each_chunk<Shape>(row, len, EveryVector{}, visit_chunk, visit_scalar);
  }
  template <typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_chunk_backward(VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    sgtopk::for_each_chunk<Shape, true>(row, len, EveryVector{}, visit_chunk, visit_scalar);
  }
  // Every vector, in warp-sized units any warp may take (sgtopk::for_each_unit).
  template <bool kBackward, typename VisitChunk, typename VisitScalar, typename OnClaim>
  SGTOPK_DEVICE void for_each_unit(u32* units_taken, VisitChunk&& visit_chunk, VisitScalar&& visit_scalar,
                                   OnClaim&& on_claim) const {
    sgtopk::for_each_unit<Shape, kBackward>(row, len, units_taken, visit_chunk, visit_scalar, on_claim);
  }
  // Only the vectors `want` asks for (the head and the tail always): chunk
  // by chunk, or gathered across chunks where `want` can list them
  // (floor_marks.cuh's cursor; block-uniform).
  template <typename Want, typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_wanted_chunk(const Want& want, VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    if constexpr (Want::kGathers && Shape::kVectorLoads) {
      const int vectors = vector_body(row, len).vectors;
      if (want.lists(vectors)) {
        sgtopk::for_each_gathered<Shape, Want::kGatherBatch>(row, len, want.cursor(vectors), visit_chunk, visit_scalar);
        return;
      }
    }
    sgtopk::for_each_chunk<Shape>(row, len, want, visit_chunk, visit_scalar);
  }
};

}  // namespace sgtopk

// Walking a row: its block-wide chunks in order or backward, warp-sized
// work units handed to whichever warp is free, gathered batches of chosen
// vectors, and every score.
#pragma once
#include "sgtopk/row/vector_loads.cuh"

namespace sgtopk {

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
  constexpr int kThreads = Shape::kThreads, kLoadsInFlight = Shape::kLoadsInFlight;
  constexpr bool kVectorLoads = Shape::kVectorLoads, kPrefetchNextChunk = Shape::kPrefetchNextChunk;
  const int t = threadIdx.x;
  const VectorBody shape = kVectorLoads ? vector_body(row, len) : VectorBody{len, nullptr, 0};
  const int head = shape.head;
  // Head (and everything when vector loads are off): coalesced scalars.
  for (int i = t; i < head; i += kThreads) visit_scalar(i, __ldg(row + i));
  if constexpr (!kVectorLoads) return;

  const float4* body = shape.body;
  const int vectors = shape.vectors;
  constexpr int kChunk = kThreads * kLoadsInFlight;
  const int chunks = chunk_count<kChunk>(vectors);
  const int step = kBackward ? -kChunk : kChunk;  // from one chunk's base to the next's
  const int first = kBackward ? (chunks - 1) * kChunk : 0;
  // The L2 look-ahead fetches whole chunks, so a selective pass (which reads
  // a few vectors of each) does without it.
  constexpr int kPrefetchL2Chunks = Want::kSelective ? 0 : Shape::kPrefetchL2Chunks;
  if constexpr (kPrefetchL2Chunks > 1) {
#pragma unroll
    for (int ahead = 1; ahead < kPrefetchL2Chunks; ++ahead)
      prefetch_chunk<kThreads, kLoadsInFlight>(body, vectors, first + ahead * step);
  }
  const int number_step = kBackward ? -1 : 1;
  float4 ahead[kLoadsInFlight];  // kPrefetchNextChunk: the next chunk, loading while this one is visited
  if constexpr (kPrefetchNextChunk) {
    if (vectors > 0) load_chunk<kThreads, kLoadsInFlight>(body, vectors, first, ahead, Want::kSelective ? want(first / kChunk) : ~0u);
  }
  for (int c = 0, base = first, number = first / kChunk; c < chunks; ++c, base += step, number += number_step) {
    u32 valid = 0u;
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u)
      if (base + u * kThreads + t < vectors) valid |= 1u << u;
    if constexpr (Want::kSelective) {
      valid &= want(number);
      if constexpr (!kPrefetchNextChunk) {
        if (__ballot_sync(0xffffffffu, valid != 0u) == 0u) continue;
      }
    }
    VectorChunk<kThreads, kLoadsInFlight> chunk;
    if constexpr (kPrefetchNextChunk) {
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; ++u) chunk.v[u] = ahead[u];
      if (c + 1 < chunks)
        load_chunk<kThreads, kLoadsInFlight>(body, vectors, base + step, ahead, Want::kSelective ? want(number + number_step) : ~0u);
    } else {
      load_chunk<kThreads, kLoadsInFlight>(body, vectors, base, chunk.v, Want::kSelective ? valid : ~0u);
    }
    if constexpr (kPrefetchL2Chunks > 0) prefetch_chunk<kThreads, kLoadsInFlight>(body, vectors, base + kPrefetchL2Chunks * step);
    chunk.row = row;
    chunk.first = head + 4 * (base + t);
    chunk.number = number;
    chunk.slot = t;
    chunk.valid = valid;
    visit_chunk(static_cast<const VectorChunk<kThreads, kLoadsInFlight>&>(chunk));
  }
  for (int i = head + 4 * vectors + t; i < len; i += kThreads) visit_scalar(i, __ldg(row + i));
}

// for_each_chunk's visit (every vector) with warp-sized work units handed
// out at run time: unit u is warp slot u % kWarps of the chunk u / kWarps
// from the start (kBackward: from the end), taken by whichever warp asks
// next (`units_taken`: a shared counter, zero before the pass). A warp whose
// loads come back late takes fewer units, where with fixed slices it would
// hold the block at the barrier after the pass
// (docs/decisions/2026-11-30-direct-work-units.md). The chunk reaches the
// visitor as its slot's lanes hold it (chunk.slot). No register double
// buffer (docs/decisions/2026-12-01-direct-claim-ahead-dropped.md) and no L2
// look-ahead here.
// on_claim(ordinal, warp_slot) runs on the whole warp as it takes a unit,
// before the unit's loads (ordinal: the chunk's place in the walk).
template <typename Shape, bool kBackward, typename VisitChunk, typename VisitScalar, typename OnClaim>
SGTOPK_DEVICE void for_each_unit(const float* row, int len, u32* units_taken, VisitChunk&& visit_chunk,
                                 VisitScalar&& visit_scalar, OnClaim&& on_claim) {
  static_assert(Shape::kVectorLoads, "units of 16-byte vectors");
  constexpr int kThreads = Shape::kThreads, kLoadsInFlight = Shape::kLoadsInFlight, kWarps = kThreads / 32;
  constexpr int kChunk = kThreads * kLoadsInFlight;
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
    VectorChunk<kThreads, kLoadsInFlight> chunk;
    chunk.valid = 0u;
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u)
      if (base + u * kThreads + slot < shape.vectors) chunk.valid |= 1u << u;
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u)
      chunk.v[u] = ((chunk.valid >> u) & 1u) ? load_vector(shape.body + base + u * kThreads + slot)
                                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    chunk.row = row;
    chunk.first = shape.head + 4 * (base + slot);
    chunk.number = number;
    chunk.slot = slot;
    visit_chunk(static_cast<const VectorChunk<kThreads, kLoadsInFlight>&>(chunk));
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

}  // namespace sgtopk

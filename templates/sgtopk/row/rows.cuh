// The two kinds of row a family selects from: a short row held in
// registers, and a streamed row read from global memory on each pass.
#pragma once
#include "sgtopk/row/traversal.cuh"

namespace sgtopk {

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

// A segment [begin, begin + len) of a longer row, streamed, that names its
// scores by the row's indices: the CTAs of a cluster each select over one
// segment and settle ties by row index (agent/cluster.cuh). A chunk keeps
// its type: its index base moves by `begin` and its row pointer back by as
// much, so score_again still reads the score it names.
template <typename Shape>
struct SegmentRow {
  StreamedRow<Shape> segment;
  int begin;

  SGTOPK_DEVICE void load(const float* row, int segment_begin, int segment_len) {
    segment.load(row + segment_begin, segment_len);
    begin = segment_begin;
  }

  template <typename Chunk>
  SGTOPK_DEVICE Chunk in_row(const Chunk& chunk) const {
    Chunk shifted = chunk;
    shifted.row -= begin;
    shifted.first += begin;
    return shifted;
  }

  template <typename Visit>
  SGTOPK_DEVICE void for_each(Visit&& visit) const {
    segment.for_each([&](int i, float value) { visit(i + begin, value); });
  }
  template <typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_chunk(VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    segment.for_each_chunk([&](const auto& chunk) { visit_chunk(in_row(chunk)); },
                           [&](int i, float value) { visit_scalar(i + begin, value); });
  }
  template <typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_chunk_backward(VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    segment.for_each_chunk_backward([&](const auto& chunk) { visit_chunk(in_row(chunk)); },
                                    [&](int i, float value) { visit_scalar(i + begin, value); });
  }
  template <bool kBackward, typename VisitChunk, typename VisitScalar, typename OnClaim>
  SGTOPK_DEVICE void for_each_unit(u32* units_taken, VisitChunk&& visit_chunk, VisitScalar&& visit_scalar,
                                   OnClaim&& on_claim) const {
    segment.template for_each_unit<kBackward>(
        units_taken, [&](const auto& chunk) { visit_chunk(in_row(chunk)); },
        [&](int i, float value) { visit_scalar(i + begin, value); }, on_claim);
  }
  // Gathered batches index their vectors one by one: not shifted here.
  template <typename Want, typename VisitChunk, typename VisitScalar>
  SGTOPK_DEVICE void for_each_wanted_chunk(const Want& want, VisitChunk&& visit_chunk, VisitScalar&& visit_scalar) const {
    static_assert(!Want::kGathers, "a segment's pass reads every vector it wants chunk by chunk");
    segment.for_each_wanted_chunk(want, [&](const auto& chunk) { visit_chunk(in_row(chunk)); },
                                  [&](int i, float value) { visit_scalar(i + begin, value); });
  }
};

}  // namespace sgtopk

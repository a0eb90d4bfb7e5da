// Direct-exact select (the paper's row-local exact mapping, section 5.5):
// one CTA owns a row; workers stride over the live rows.
//
//   pass 1  exact 2048-bin coarse histogram over the whole valid row
//   pass 2  commit every element above the boundary bin, collect the bin as
//           the frontier and histogram its first FP32 digit (round 0),
//           reading only the vectors pass 1 marked (row/floor_marks.cuh)
//   rounds  frontier-only refinement (selection/refinement.cuh)
//
// Short rows keep their scores in registers between the passes; long rows
// are streamed with 16-byte loads. Every later family falls back to this.
//
// The including source defines `Config` with the plan's constants:
//   kK, kThreads, kWidth, kPitch, kOutPitch, kValues, kSorted, kStarts,
//   kRegisterItems (0: stream), kLoadsInFlight, kVectorLoads,
//   kPrefetchNextChunk, kPrefetchL2Chunks, kAggregateHistogram,
//   kEndpointClassification, kHistogramBackward, kIndexBits, kSmallGroup,
//   kFrontierSharedCapacity, kFrontierGlobalCapacity, kSortSlots, kRouteStats,
//   kFloorMarkWords, kSparseVectors, kGatherMarked, kGatherBatch,
//   kMarkedBinChunks, kWorkUnits, kRaiseAtClaim, kRaisesPerChunk, kIndexTransform,
//   kPageSize, kPageTablePitch.
#pragma once
#include "sgtopk/row/floor_marks.cuh"
#include "sgtopk/selection/refinement.cuh"
#include "sgtopk/block/histogram.cuh"
#include "sgtopk/row/rows.cuh"
#include "sgtopk/selection/select_output.cuh"

namespace sgtopk {

template <typename Config>
struct DirectExactAgent {
  typedef FrontierStore<Config::kFrontierSharedCapacity, Config::kFrontierGlobalCapacity> Store;
  typedef RowOutput<Config::kValues> Output;
  // Rows too long for registers are streamed from global memory.
  typedef StreamedRow<StreamShape<Config::kThreads, Config::kLoadsInFlight, Config::kVectorLoads, Config::kPrefetchNextChunk,
                                  Config::kPrefetchL2Chunks>>
      StreamRow;
  // The refinement over either kind of row.
  template <typename Row, typename Span = BlockSpan>
  using Refine = Refinement<Config::kThreads, Config::kIndexBits, Config::kEndpointClassification, Config::kSmallGroup, Store,
                            Row, Output, Span>;

  // Pass 1's marks for pass 2, streamed rows only (kFloorMarkWords 0: none).
  typedef FloorMarks<Config::kThreads, Config::kLoadsInFlight, Config::kFloorMarkWords, Config::kSparseVectors,
                     Config::kGatherMarked, Config::kGatherBatch, Config::kMarkedBinChunks,
                     Config::kHistogramBackward>
      StreamMarks;
  typedef FloorMarks<Config::kThreads, Config::kLoadsInFlight, 0> NoMarks;

  // Dynamic shared memory: state, then the frontier (aliased by the sort
  // buffer), then the floor marks.
  static constexpr unsigned kStateBytes = selection_state_bytes();
  static constexpr unsigned kMarksOffset =
      select_shared_bytes(Config::kFrontierSharedCapacity, Config::kSorted, Config::kSortSlots, 0);
  static constexpr unsigned kSharedBytes =
      select_shared_bytes(Config::kFrontierSharedCapacity, Config::kSorted, Config::kSortSlots, StreamMarks::kSharedWords);

  // A row with len <= K: every valid index, no selection.
  static SGTOPK_DEVICE void select_short_row(const Output& out, const float* scores, int len, u64* sort_buffer) {
    write_whole_row<Config::kThreads, Config::kK, Config::kValues>(out, scores, len);
    if constexpr (Config::kSorted) {
      if (len > 1) sort_row_output<Config::kThreads, Config::kSortSlots, Config::kValues>(out, scores, len, sort_buffer);
    }
  }

  // Run by one warp: publishes a higher proven floor, bin first, then its
  // lowest number, each with atomicMax (keys order like the numbers), so a
  // slower warp with a lower floor never lowers either; every value a reader
  // can see is a proven floor, so readers stay conservative.
  static SGTOPK_DEVICE void raise_floor(SelectionState& state) {
    const u32 proven = proven_floor<kCoarseBins>(state.histogram, static_cast<u32>(Config::kK));
    if (proven <= kCoarseKeyMinNumber) return;  // warp-uniform
    if ((threadIdx.x & 31) == 0 && atomicMax(&state.floor_bin, proven) < proven)
      atomicMax(&state.floor_low_key, ordered_key(coarse_bin_lower_endpoint_direct(proven)));
  }

  // The exact coarse route up to refinement: the histogram pass, then the
  // boundary pass that commits everything above the boundary bin and leaves
  // the bin as the frontier, reading only what `marks` recorded.
  // `clock` (the direct family's own rows; null in the sampled recovery)
  // laps the histogram pass and the boundary pass apart.
  typedef PhaseClock<Config::kRouteStats> Clock;
  // Where the histogram pass raises the floor: as a chunk's last work unit
  // is taken (kRaiseAtClaim), else after one visit of each chunk.
  static constexpr bool kRaiseAtClaim = Config::kRaiseAtClaim && Config::kWorkUnits;
  // With a cluster's Span, `row` is this CTA's segment and the boundary is
  // the cluster's (agent/cluster.cuh).
  template <typename Span = BlockSpan, typename Row, typename Marks>
  static SGTOPK_DEVICE void exact_boundary(SelectionState& state, const Store& store, Row& row, const Output& out,
                                           const Marks& marks, Clock* clock = nullptr) {
    marks.clear_own();  // before begin_selection's first barrier (floor_marks.cuh)
    begin_selection<Config::kThreads>(state, static_cast<u32>(Config::kK), 0u);
    // Pass 1: the coarse histogram. Once K elements sit at or above a bin,
    // nothing below it can matter, so the floor rises as the pass goes and
    // most of a row skips the shared atomics (exact counts are only needed
    // at or above the final boundary). The floor is read once per chunk, as
    // a bin and as that bin's lowest number: above -inf's bin (where NaN can
    // no longer matter) one FP32 comparison decides, and only the scores
    // that pass compute their key. A stale read only lets more scores
    // through: either value is a proven lower bound on its own.
    const auto count = [&](float value, u32 floor_bin) {
      const u32 bin = coarse_key(value);
      if (bin >= floor_bin) count_in_bin<Config::kAggregateHistogram>(state.histogram, bin);
    };
    const volatile u32& floor_bin = state.floor_bin;
    const volatile u32& floor_low_key = state.floor_low_key;
    const auto visit_chunk = [&](const auto& chunk) {
      const u32 floor_now = floor_bin;
      if (floor_now > kCoarseKeyMinNumber) {
        const float low = float_from_ordered_key(floor_low_key);
        if constexpr (Bare<decltype(chunk)>::type::kVectors > 0) {
          // One test per vector, on its highest score (the marks are per
          // vector anyway), then only the marked vectors' scores are tested
          // and counted, from registers: a test per score costs instructions
          // on the path most of a row takes, and reading a lane's few marked
          // vectors again (L1) waits out a round trip each
          // (docs/decisions/2026-12-01-direct-vector-floor-test.md,
          // docs/decisions/2026-12-01-direct-scores-from-registers.md).
          u32 marked = 0u;
#pragma unroll
          for (int u = 0; u < chunk.kVectors; ++u) marked |= (chunk.vector_max(u) >= low ? 1u : 0u) << u;
          marked &= chunk.valid;
          if constexpr (Marks::kSelective) marks.record(chunk, marked);
          if (marked != 0u) {
#pragma unroll
            for (int n = 0; n < chunk.kCount; ++n)
              if (((marked >> (n >> 2)) & 1u) && chunk.score(n) >= low)
                count_in_bin<Config::kAggregateHistogram>(state.histogram, coarse_key(chunk.score(n)));
          }
        } else {
          // Scores kept in registers: mark, then key and count only those
          // (few, once the floor has risen), one set bit at a time.
          u32 above = 0u;
#pragma unroll
          for (int n = 0; n < chunk.kCount; ++n) above |= (chunk.score(n) >= low ? 1u : 0u) << n;
          above &= chunk.live_mask();
          static_assert(!Marks::kSelective || Bare<decltype(chunk)>::type::kVectors > 0, "register rows have no marks");
          if (__popc(above) > 4) {
            // Crowded: every marked score from its register, unrolled,
            // rather than one selected each.
#pragma unroll
            for (int n = 0; n < chunk.kCount; ++n)
              if ((above >> n) & 1u) count_in_bin<Config::kAggregateHistogram>(state.histogram, coarse_key(chunk.score(n)));
          } else {
            for (; above != 0u; above &= above - 1u)
              count_in_bin<Config::kAggregateHistogram>(state.histogram, coarse_key(chunk.score_at(__ffs(above) - 1)));
          }
        }
      } else {
        // No floor yet: every score is keyed (two at a time) and counted,
        // without a branch (a slot past the row, or NaN once the floor is
        // above its bin, goes to the word nobody reads).
        const u32 live = chunk.live_mask();
        const auto count_or_not = [&](int n, u32 bin) {
          const bool counted = ((live >> n) & 1u) != 0u && bin >= floor_now;
          count_in_bin<Config::kAggregateHistogram>(counted ? state.histogram : &state.uncounted, counted ? bin : 0u);
        };
#pragma unroll
        for (int n = 0; n < chunk.kCount; n += 2) {  // an odd count (register rows): the last score alone
          u32 first, second;
          coarse_key_pair(chunk.score(n), n + 1 < chunk.kCount ? chunk.score(n + 1) : 0.0f, first, second);
          count_or_not(n, first);
          if (n + 1 < chunk.kCount) count_or_not(n + 1, second);
        }
        if constexpr (Marks::kSelective) marks.record(chunk, chunk.valid);  // no floor yet: all of it
      }
      // Without kRaiseAtClaim: once per chunk, after its visit, by the warp
      // holding one of its slots, a different slot each chunk (fixed
      // slices: a different warp), so no warp falls behind the stream.
      // (Not by every warp until the row has a floor: that costs more than
      // it saves, docs/decisions/2026-12-01-direct-cheap-raises.md.)
      if (!kRaiseAtClaim && (chunk.slot >> 5) == chunk.number % (Config::kThreads / 32)) raise_floor(state);
    };
    const auto visit_scalar = [&](int, float value) { count(value, floor_bin); };
    // Backward, the boundary pass (forward) starts on the bytes this pass
    // read last, the likeliest still in L2; in the sampled family's recovery
    // this pass in turn starts where the certification pass ended.
    // kRaiseAtClaim: the warp taking a chunk's last unit takes it once
    // (about) every warp has counted its unit of the chunk before, so its
    // raise, before its loads, sees all of that chunk and lands while the
    // other units of this one are still loading.
    // kRaisesPerChunk > 1: also earlier claims of the chunk, evenly spaced,
    // each on a partly counted chunk before it.
    const auto on_claim = [&](int ordinal, int warp_slot) {
      static_assert((Config::kThreads / 32) % Config::kRaisesPerChunk == 0, "the last unit's claim always raises");
      constexpr int kEvery = Config::kThreads / 32 / Config::kRaisesPerChunk;
      if (kRaiseAtClaim && ordinal > 0 && (warp_slot + 1) % kEvery == 0) raise_floor(state);
    };
    if constexpr (Config::kWorkUnits)
      row.template for_each_unit<Config::kHistogramBackward>(&state.units_taken, visit_chunk, visit_scalar, on_claim);
    else if constexpr (Config::kHistogramBackward)
      row.for_each_chunk_backward(visit_chunk, visit_scalar);
    else
      row.for_each_chunk(visit_chunk, visit_scalar);
    __syncthreads();
    if (clock) clock->lap(kCyclesProposal);
    Refine<Row, Span>{state, store, row, out}
        .boundary_pass(marks);
    if (clock) clock->lap(kCyclesCertification);
  }

  // Every route ends here: frontier-only refinement, then the sorted option.
  template <typename Row>
  static SGTOPK_DEVICE void refine_and_write(SelectionState& state, const Store& store, Row& row, const Output& out,
                                             const float* scores, u64* sort_buffer) {
    Refine<Row>{state, store, row, out}
        .refine();
    if constexpr (Config::kSorted)
      sort_row_output<Config::kThreads, Config::kSortSlots, Config::kValues>(out, scores, Config::kK, sort_buffer);
  }

  template <typename Row, typename Marks>
  static SGTOPK_DEVICE void select_row(SelectionState& state, const Store& store, Row& row, const Output& out,
                                       const Marks& marks, const float* scores, int len, u64* sort_buffer, Clock& clock) {
    if (len <= Config::kK) return select_short_row(out, scores, len, sort_buffer);
    exact_boundary(state, store, row, out, marks, &clock);
    refine_and_write(state, store, row, out, scores, sort_buffer);
    clock.lap(kCyclesRefinement);
  }

  // The fused index transform of row r's output, once its slots are final.
  static SGTOPK_DEVICE void transform_row(const Output& out, const SelectParams& p, long long r) {
    transform_indices<Config::kThreads, Config::kK, Config::kIndexTransform, Config::kPageSize, Config::kPageTablePitch>(
        out, p, r);
  }

  // The worker CTA's own pieces: shared state, the frontier store (shared
  // memory, then the CTA's slice of `slices`), the sort buffer, the marks.
  struct Worker {
    SelectionState* state;
    Store store;
    u64* sort_buffer;
    StreamMarks marks;
  };
  static SGTOPK_DEVICE Worker make_worker(unsigned char* shared_bytes, void* slices) {
    unsigned char* frontier_bytes = shared_bytes + kStateBytes;
    float* slice = reinterpret_cast<float*>(slices) + static_cast<u64>(blockIdx.x) * 2u * Config::kFrontierGlobalCapacity;
    Worker w;
    w.state = reinterpret_cast<SelectionState*>(shared_bytes);
    w.store.shared_value = reinterpret_cast<float*>(frontier_bytes);
    w.store.shared_index = reinterpret_cast<u32*>(frontier_bytes) + Config::kFrontierSharedCapacity;
    w.store.global_value = slice;
    w.store.global_index = reinterpret_cast<u32*>(slice + Config::kFrontierGlobalCapacity);
    w.sort_buffer = reinterpret_cast<u64*>(frontier_bytes);
    if constexpr (StreamMarks::kSelective) {
      w.marks.words = reinterpret_cast<u32*>(shared_bytes + kMarksOffset);
      w.marks.bins = reinterpret_cast<unsigned short*>(w.marks.words + Config::kFloorMarkWords * Config::kThreads);
    }
    return w;
  }

  // Row r of the launch: its valid scores and its output slots.
  typedef SelectRowTask<Config::kValues> RowTask;
  static SGTOPK_DEVICE RowTask row_task(const SelectParams& p, long long r) { return select_row_task<Config>(p, r); }

  static SGTOPK_DEVICE void run(const SelectParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    const Worker w = make_worker(shared_bytes, p.workspace);
    const long long live = live_row_count(p, static_cast<long long>(p.rows));
    for (long long r = blockIdx.x; r < live; r += gridDim.x) {
      const RowTask task = row_task(p, r);
      count_route<Config::kRouteStats>(p.route_stats, task.len <= Config::kK ? kRouteShort : kRouteExact);
      Clock clock(p.route_stats);
      if constexpr (Config::kRegisterItems > 0) {
        RegisterRow<Config::kThreads, (Config::kRegisterItems > 0 ? Config::kRegisterItems : 1)> row;
        row.load(task.scores, task.len);
        select_row(*w.state, w.store, row, task.out, NoMarks{}, task.scores, task.len, w.sort_buffer, clock);
      } else {
        StreamRow row;
        row.load(task.scores, task.len);
        select_row(*w.state, w.store, row, task.out, w.marks.for_row(task.scores, task.len), task.scores, task.len,
                   w.sort_buffer, clock);
      }
      transform_row(task.out, p, r);
      __syncthreads();  // shared state is reused by the next row
      clock.lap(kCyclesRecovery);  // the row's set-up, the short route, the last barrier
    }
  }
};

}  // namespace sgtopk

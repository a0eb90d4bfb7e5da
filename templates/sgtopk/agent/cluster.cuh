// Cluster select (sm_90 thread-block clusters; HPC-Ops paper, section 5.5):
// for a few long rows, one cluster of kClusterSize CTAs a row, each CTA
// over one contiguous segment of it, the sampled route run together:
//
//   proposal  each CTA histograms its share of the row's view; the shares
//             are summed through distributed shared memory, so every CTA
//             proposes the same threshold (sampled.cuh, with a Span)
//   pass      each CTA stores its segment's scores at or above it; their
//             count summed over the cluster certifies the proposal (K or
//             more), else every CTA takes the exact route over its segment
//             (the coarse histograms summed likewise)
//   rounds    before each round's digit is resolved the CTAs' histograms are
//             summed, so every CTA resolves the same boundary; each commits
//             its own candidates into output slots counted once, in the
//             first CTA's shared memory, and carries its part of the group
//
// Ties resolve by row index as everywhere (segments name their scores by
// row index). Every decision is taken on cluster-wide sums, so the CTAs stay
// in step at the cluster's barriers; nothing goes through global memory
// between them, and a cluster is scheduled whole (no co-residency assumed).
//
// Config adds to the sampled constants: kClusterSize (CTAs a row, a cluster;
// the kernel is declared with it), kSegmentAlign (a segment starts at a
// multiple of it, so every segment has the row's 16-byte alignment).
#pragma once
#include "sgtopk/agent/sampled.cuh"

namespace sgtopk {

template <typename Config>
struct ClusterAgent {
  typedef DirectExactAgent<Config> Exact;
  typedef SampledAgent<Config> Sampled;
  typedef typename Exact::Store Store;
  typedef typename Exact::Output Output;
  typedef SegmentRow<StreamShape<Config::kThreads, Config::kLoadsInFlight, Config::kVectorLoads, Config::kPrefetchNextChunk,
                                 Config::kPrefetchL2Chunks>>
      Row;
  static constexpr int kCtas = Config::kClusterSize;
  static constexpr unsigned kSharedBytes = Exact::kSharedBytes;
  static_assert(kCtas >= 2 && kCtas <= 16, "a cluster of 2 to 16 CTAs");
  static_assert(kCoarseBins % Config::kThreads == 0, "each thread sums whole bins");
  static_assert(Config::kFloorMarkWords == 0 && !Config::kWorkUnits, "a segment's passes read it whole, chunk by chunk");

  // The cluster as the refinement's span.
  struct Span {
    static constexpr int kCtas = ClusterAgent::kCtas;
    // Every CTA sums every CTA's histogram into its own: the first barrier
    // waits for all of them to be complete, the second for all to be read
    // before any is overwritten (and cleared by resolve after it).
    static SGTOPK_DEVICE void combine(SelectionState& state) {
      constexpr int kBins = kCoarseBins / Config::kThreads;
      u32 sum[kBins];
#pragma unroll
      for (int b = 0; b < kBins; ++b) sum[b] = 0u;
      hw::cluster_sync();
#pragma unroll 4
      for (int c = 0; c < kCtas; ++c) {
        const u32* histogram = hw::peer_shared(state.histogram, static_cast<unsigned>(c));
#pragma unroll
        for (int b = 0; b < kBins; ++b) sum[b] += histogram[b * Config::kThreads + threadIdx.x];
      }
      hw::cluster_sync();
#pragma unroll
      for (int b = 0; b < kBins; ++b) state.histogram[b * Config::kThreads + threadIdx.x] = sum[b];
      __syncthreads();
    }
    static SGTOPK_DEVICE void combine_max(u32* word) {
      hw::cluster_sync();
      u32 high = 0u;
      for (int c = 0; c < kCtas; ++c) high = max_of(high, *hw::peer_shared(word, static_cast<unsigned>(c)));
      hw::cluster_sync();
      if (threadIdx.x == 0) *word = high;
      __syncthreads();
    }
    static SGTOPK_DEVICE u32* committed(SelectionState& state) { return hw::peer_shared(&state.committed, 0u); }
  };
  typedef typename Exact::template Refine<Row, Span> Refine;

  // The cluster's sums of two counts a CTA, returned to every thread (called
  // after a barrier; the scratch words are free between rounds).
  static SGTOPK_DEVICE void cluster_sums(SelectionState& state, u32 a, u32 b, u32& sum_a, u32& sum_b) {
    if (threadIdx.x == 0) {
      state.scratch[0] = a;
      state.scratch[1] = b;
    }
    hw::cluster_sync();
    sum_a = 0u;
    sum_b = 0u;
    for (int c = 0; c < kCtas; ++c) {
      const u32* words = hw::peer_shared(state.scratch, static_cast<unsigned>(c));
      sum_a += words[0];
      sum_b += words[1];
    }
    hw::cluster_sync();
  }

  // The pass: stores every score >= low of the segment; certified when the
  // cluster holds K or more of them and every CTA stored all of its own
  // (then the candidates' first digits are counted, as the sampled family's).
  static SGTOPK_DEVICE bool certify(SelectionState& state, Refine& refine, const Row& row, float low, u32* total) {
    begin_selection<Config::kThreads>(state, static_cast<u32>(Config::kK), 1u);
    const auto admit = [=](float value) { return value >= low; };
    row.for_each_chunk([&](const auto& chunk) { refine.admit_chunk(chunk, admit); },
                       [&](int i, float value) { refine.admit(admit(value), value, static_cast<u32>(i)); });
    __syncthreads();
    const u32 admitted = state.next_count;
    u32 lost = 0u;
    cluster_sums(state, admitted, admitted > Store::kCapacity ? 1u : 0u, *total, lost);
    if (*total < static_cast<u32>(Config::kK) || lost != 0u) return false;
    if (threadIdx.x == 0) {
      state.frontier_count = admitted;
      state.admit_low = low;
    }
    __syncthreads();
    refine.count_admitted_digits();
    return true;
  }

  // Scores per segment: a multiple of kSegmentAlign (the last may be
  // shorter, or empty).
  static SGTOPK_DEVICE int segment_width(int len) {
    const long long w = (static_cast<long long>(len) + kCtas - 1) / kCtas;
    return static_cast<int>((w + Config::kSegmentAlign - 1) / Config::kSegmentAlign * Config::kSegmentAlign);
  }

  static SGTOPK_DEVICE void run(const SelectParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    // The launch's clusters tile the grid: row r is cluster r, whole, so
    // every CTA of a cluster takes the same path out.
    const long long r = static_cast<long long>(blockIdx.x / kCtas);
    const unsigned rank = hw::cluster_rank();
    if (r >= live_row_count(p, static_cast<long long>(p.rows))) return;
    const typename Exact::RowTask task = Exact::row_task(p, r);
    const typename Exact::Worker w = Exact::make_worker(shared_bytes, p.workspace);
    if (task.len <= Config::kK) {
      if (rank != 0u) return;
      count_route<Config::kRouteStats>(p.route_stats, kRouteShort);
      Exact::select_short_row(task.out, task.scores, task.len, w.sort_buffer);
      return Exact::transform_row(task.out, p, r);
    }
    const int width = segment_width(task.len);
    const int begin = min_of(task.len, static_cast<int>(rank) * width), end = min_of(task.len, begin + width);
    Row row;
    row.load(task.scores, begin, end - begin);
    SelectionState& state = *w.state;
    Refine refine{state, w.store, row, task.out};
    typename Sampled::Proposal proposal{0.0f, 0.0f};
    int route = kRouteNoView;
    u32 candidates = 0u;
    // The CTAs run in step: the first one's clock times the row.
    PhaseClock<Config::kRouteStats> clock(rank == 0u ? p.route_stats : nullptr);
    if (Sampled::template propose<Span>(state, task.scores, task.len, r, &proposal, static_cast<int>(rank))) {
      clock.lap(kCyclesProposal);
      route = certify(state, refine, row, proposal.primary_low, &candidates) ? kRoutePrimary : kRouteExact;
      clock.lap(kCyclesCertification);
    }
    if (rank == 0u) {
      count_route<Config::kRouteStats>(p.route_stats, route);
      if (route == kRoutePrimary) count_route<Config::kRouteStats>(p.route_stats, kRouteCandidates, candidates);
    }
    if (route != kRoutePrimary) {
      Exact::template exact_boundary<Span>(state, w.store, row, task.out, typename Exact::NoMarks{});
      clock.lap(kCyclesRecovery);
    }
    refine.refine();
    // Every CTA's slots are written, and none reads another's shared memory
    // after this: the first CTA finishes the row.
    hw::cluster_sync();
    if (rank != 0u) return;
    if constexpr (Config::kSorted)
      sort_row_output<Config::kThreads, Config::kSortSlots, Config::kValues>(task.out, task.scores, Config::kK,
                                                                             w.sort_buffer);
    Exact::transform_row(task.out, p, r);
    clock.lap(kCyclesRefinement);
  }
};

}  // namespace sgtopk

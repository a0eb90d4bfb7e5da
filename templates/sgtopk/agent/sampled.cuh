// Sample-guided exact select (HPC-Ops paper, sections 3-5; ALGORITHM.md):
// persistent worker CTAs, one row at a time.
//
//   phase 1  proposal: a strided view of the row (hashed block phases) is
//            histogrammed by coarse key; the bins holding sample ranks q0 and
//            q1 become the primary and secondary boundaries tau0 >= tau1
//   phase 2  certification: the one full pass admits every x >= endpoint(tau0)
//            into the frontier; K or more admitted certifies the proposal
//            (lemma 4.1), and the stored candidates' first FP32 digit is then
//            histogrammed for refinement
//   band     on underfill only: a second pass adds endpoint(tau1) <= x < endpoint(tau0)
//   exact    on continued underfill (or a view too small): the direct-exact route
//   phase 3  frontier-only refinement, the same Refinement as direct-exact
//
// Nothing is written to the output before a route has certified its
// candidates, so sampling changes how much work a row costs, never its answer.
// The decisions match reference::decide_sampled_route row by row; the GPU
// tests compare the route statistics' per-launch totals with the reference's.
//
// Config adds to the direct-exact constants: kViewLoadsInFlight, kViewBlock,
// kStrideWide, kStrideNarrow, kWideRowThreshold, kQ0Wide, kQ1Wide, kQ0Narrow,
// kQ1Narrow (sample ranks computed on the host), kFineTriggerWide,
// kFineTriggerNarrow (the fine proposal's trigger, 0: off), kRouteStats.
#pragma once
#include "sgtopk/agent/direct_exact.cuh"

namespace sgtopk {

// The view (runtime/sampled_view.h, whose formulas the host reference
// uses): kBlock consecutive scores in each span of kBlock * stride positions
// (the paper's view is kBlock = 1; the density is 1/stride either way, so
// the sample ranks do not change, and blocks take fewer DRAM sectors per
// sample: docs/decisions/2026-11-30-sampled-blocked-view.md), block m at
// phase a_{r,m} of its span, hashed from the row's seed and m, so that
// scores periodic in the span cannot hide from the view
// (docs/decisions/2026-12-01-sampled-view-phase-per-block.md).
SGTOPK_DEVICE u32 view_seed(u64 row_id) { return static_cast<u32>((row_id * 0x9E3779B97F4A7C15ull) >> 32); }
SGTOPK_DEVICE u32 view_block_phase(u32 seed, u32 block_index, int stride) {
  u32 h = seed ^ (block_index * 0x85EBCA6Bu);
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  return __umulhi(h, static_cast<u32>(stride));
}
template <int kBlock>
SGTOPK_DEVICE long long view_position(int j, u32 seed, int stride) {
  const u32 block = static_cast<u32>(j) / kBlock, offset = static_cast<u32>(j) % kBlock;
  return (static_cast<long long>(block) * stride + view_block_phase(seed, block, stride)) * kBlock + offset;
}
template <int kBlock>
SGTOPK_DEVICE int view_size(int len, u32 seed, int stride) {
  const long long span = static_cast<long long>(stride) * kBlock;
  const int whole = static_cast<int>(len / span);  // spans inside the row hold a whole block each
  const long long last_start = whole * span + static_cast<long long>(view_block_phase(seed, static_cast<u32>(whole), stride)) * kBlock;
  return whole * kBlock + static_cast<int>(max_of(0ll, min_of(static_cast<long long>(kBlock), len - last_start)));
}

template <typename Config>
struct SampledAgent {
  typedef DirectExactAgent<Config> Exact;  // the recovery route
  typedef typename Exact::Store Store;
  typedef typename Exact::Output Output;
  typedef typename Exact::StreamRow Row;
  typedef typename Exact::template Refine<Row> Refine;
  static constexpr unsigned kSharedBytes = Exact::kSharedBytes;

  // The proposal's two boundaries as inclusive FP32 endpoints.
  struct Proposal {
    float primary_low;    // endpoint(tau0), or higher with the fine proposal
    float secondary_low;  // endpoint(tau1) <= primary_low, likewise
  };

  // A row's view: its samples [first, count) (view_position); a cluster's
  // CTAs each take an equal share of it.
  struct View {
    const float* scores;
    int first;
    int count;
    u32 seed;
    int stride;

    // visit(sample) for every sample, kViewLoadsInFlight independent gathers in
    // flight per thread before the first is visited (consecutive threads
    // take consecutive samples: a block's neighbours share their sectors).
    // With `kept`, sample j is also stored at kept[j - first].
    template <typename Visit>
    SGTOPK_DEVICE void for_each(Visit&& visit, float* kept = nullptr) const {
      constexpr int kGather = Config::kViewLoadsInFlight;
      for (int base = first; base < count; base += Config::kThreads * kGather) {
        float sample[kGather];
#pragma unroll
        for (int u = 0; u < kGather; ++u) {
          const int j = base + u * Config::kThreads + static_cast<int>(threadIdx.x);
          sample[u] = j < count ? __ldg(scores + view_position<Config::kViewBlock>(j, seed, stride))
                                : __int_as_float(0x7fc00000);
          if (kept != nullptr && j < count) kept[j - first] = sample[u];
        }
#pragma unroll
        for (int u = 0; u < kGather; ++u) visit(sample[u]);
      }
    }
  };

  // The view's samples as the first look kept them in shared memory (none:
  // the second look gathers them again).
  struct KeptView {
    const float* samples;
    int count;

    template <typename Visit>
    SGTOPK_DEVICE void for_each(Visit&& visit) const {
      for (int j = static_cast<int>(threadIdx.x); j < count; j += Config::kThreads) visit(samples[j]);
    }
  };

  // The fine proposal (policy select.sampled.fine_proposal_excess), for a
  // row whose view holds at least `trigger` samples in tau0's bin and above
  // (its coarse boundary would admit several times the targeted candidates;
  // elsewhere the second look costs more than it saves:
  // docs/decisions/2026-11-30-sampled-fine-proposal.md): each boundary
  // rises from its coarse bin's lowest number to the lowest number of the
  // 1/1024th of the bin (SubBins) that holds its sample rank, found by a
  // second look at the view that histograms only the two boundary bins'
  // samples: tau0's digits in the upper half of the histogram, tau1's in the
  // lower, so one scan finds both. The endpoints stay at or below the q-th
  // sample, and certification still counts what it admits (lemma 4.1 holds
  // for any threshold), so only the work changes: about primary_margin x K
  // candidates instead of a whole coarse bin's (16 K on 1M uniform rows).
  // A boundary that fell back to -inf's bin keeps it. Called after a barrier;
  // ends with one when it sharpens (a row it skips returns at once).
  template <typename Span, typename Samples>
  static SGTOPK_DEVICE void sharpen(SelectionState& state, const Samples& view, const RankBin (&found)[2],
                                    const u32 (&ranks)[2], u32 tau0, u32 tau1, u32 trigger) {
    constexpr u32 kHalf = kCoarseBins / 2;
    static_assert(kHalf == (1u << SubBins::kDigitBits), "two digit histograms fill the coarse one");
    // Block-uniform; the secondary only with the primary (ranks[1] >= ranks[0]).
    const bool sharpen0 = found[0].total >= ranks[0] && found[0].above + found[0].count >= trigger;
    const bool sharpen1 = found[1].total >= ranks[1];
    if (!sharpen0) return;
    const u32 in_tau0 = state.histogram[tau0];
    __syncthreads();  // every thread has read it
    clear_words<Config::kThreads>(state.histogram, kCoarseBins);
    coarse_bin_lower_endpoints(tau0 + 1u, tau1 + 1u, state.proposal_primary_high, state.proposal_secondary_high);
    __syncthreads();
    const SubBins sub0 = SubBins::of(state.proposal_primary_low, state.proposal_primary_high);
    const SubBins sub1 = SubBins::of(state.proposal_secondary_low, state.proposal_secondary_high);
    view.for_each([&](float sample) {
      const u32 bin = coarse_key(sample);
      if (bin == tau0) atomicAdd(&state.histogram[kHalf + sub0.digit(sample)], 1u);
      if (sharpen1 && bin == tau1) atomicAdd(&state.histogram[sub1.digit(sample)], 1u);
    });
    __syncthreads();
    Span::combine(state);
    // Ranks within the boundary bins; tau1's digits lie below all of tau0's.
    const u32 digit_ranks[2] = {ranks[0] - found[0].above, in_tau0 + ranks[1] - found[1].above};
    RankBin digit[2];
    find_rank_bins<Config::kThreads, kCoarseBins, 2>(state.histogram, digit_ranks, state.scratch, digit);
    if (threadIdx.x == 0) {
      state.proposal_primary_low = sub0.endpoint(digit[0].bin - kHalf);
      if (sharpen1) state.proposal_secondary_low = sub1.endpoint(digit[1].bin);
    }
    __syncthreads();
  }

  // Phase 1. Returns false when the view is too small to propose anything.
  // With a cluster's Span, the CTA of rank `part` histograms its share of the
  // view and the span's histograms are combined: every CTA proposes the same.
  // With `kept` (shared memory free until the proposal returns, room for
  // `kept_capacity` floats), a view of at most that many samples is kept
  // there for the fine proposal's second look, which then reads shared
  // memory instead of gathering the view again
  // (docs/decisions/2026-12-04-split-segment-capacity-and-kept-view.md).
  // after_view() runs on every thread once the view's gathers have returned
  // (the split asks L2 for its segment there, behind the proposal's loads).
  struct NothingAfterView {
    SGTOPK_DEVICE void operator()() const {}
  };
  template <typename Span = BlockSpan, typename AfterView = NothingAfterView>
  static SGTOPK_DEVICE bool propose(SelectionState& state, const float* scores, int len, long long row_id,
                                    Proposal* proposal, int part = 0, float* kept = nullptr, int kept_capacity = 0,
                                    const AfterView& after_view = AfterView{}) {
    const bool wide = static_cast<long long>(len) >= Config::kWideRowThreshold;
    const int stride = wide ? Config::kStrideWide : Config::kStrideNarrow;
    const u32 q0 = static_cast<u32>(wide ? Config::kQ0Wide : Config::kQ0Narrow);
    const u32 q1 = static_cast<u32>(wide ? Config::kQ1Wide : Config::kQ1Narrow);
    constexpr int kBlock = Config::kViewBlock;
    const u32 seed = view_seed(static_cast<u64>(row_id));
    const int view = view_size<kBlock>(len, seed, stride);
    if (view < static_cast<int>(max_of(q0, q1))) return false;

    clear_words<Config::kThreads>(state.histogram, kCoarseBins);
    __syncthreads();
    // NaN samples (bin 0) are not counted, so a rank reached only through
    // NaN falls back to -inf's bin (NaN is never admitted).
    const int first = static_cast<int>(static_cast<long long>(view) * part / Span::kCtas);
    const int end = static_cast<int>(static_cast<long long>(view) * (part + 1) / Span::kCtas);
    const View view_of_row{scores, first, end, seed, stride};
    const bool keep = kept != nullptr && end - first <= kept_capacity;  // block-uniform
    view_of_row.for_each(
        [&](float sample) {
          const u32 bin = coarse_key(sample);
          if (bin != 0u) atomicAdd(&state.histogram[bin], 1u);
        },
        keep ? kept : nullptr);
    __syncthreads();
    after_view();
    Span::combine(state);
    const u32 ranks[2] = {q0, q1};
    RankBin found[2];  // primary, secondary
    find_rank_bins<Config::kThreads, kCoarseBins, 2>(state.histogram, ranks, state.scratch, found);
    const u32 tau0 = found[0].total >= q0 ? found[0].bin : kCoarseKeyMinNumber;
    const u32 tau1 = found[1].total >= q1 ? found[1].bin : kCoarseKeyMinNumber;
    coarse_bin_lower_endpoints(tau0, tau1, state.proposal_primary_low, state.proposal_secondary_low);
    __syncthreads();
    if constexpr (Config::kFineTriggerWide != 0 || Config::kFineTriggerNarrow != 0) {
      const u32 trigger = static_cast<u32>(wide ? Config::kFineTriggerWide : Config::kFineTriggerNarrow);
      if (trigger != 0u) {
        if (keep) sharpen<Span>(state, KeptView{kept, end - first}, found, ranks, tau0, tau1, trigger);
        else sharpen<Span>(state, view_of_row, found, ranks, tau0, tau1, trigger);
      }
    }
    proposal->primary_low = state.proposal_primary_low;
    proposal->secondary_low = state.proposal_secondary_low;
    return true;
  }

  // Phase 2 and, on underfill, the band: each pass admits every x in
  // [low, high) as a candidate (stored; their first FP32 digit is counted
  // once a pass certifies). K or more candidates (exactly the x >= admit_low) hold the top-K:
  // lemma 4.1, since every admitted value exceeds every other. Returns the
  // route that certified (kRoutePrimary, kRouteBand), else kRouteExact.
  static SGTOPK_DEVICE int certify(SelectionState& state, Refine& refine, const Row& row, const Proposal& proposal,
                                   PhaseClock<Config::kRouteStats>& clock) {
    begin_selection<Config::kThreads>(state, static_cast<u32>(Config::kK), 1u);
    // Appends the pass's candidates; true when the frontier then holds K or
    // more (certified, with admit_low its threshold and the round-1 histogram
    // counted).
    const auto run_pass = [&](const auto& admit, float admit_low, int cycles_slot) {
      row.for_each_chunk([&](const auto& chunk) { refine.admit_chunk(chunk, admit); },
                         [&](int i, float value) { refine.admit(admit(value), value, static_cast<u32>(i)); });
      __syncthreads();
      clock.lap(cycles_slot);
      const u32 admitted = state.next_count;
      __syncthreads();  // every thread has the count before the band pass appends to it
      if (admitted < static_cast<u32>(Config::kK)) return false;
      if (threadIdx.x == 0) {
        state.frontier_count = admitted;
        state.admit_low = admit_low;
      }
      __syncthreads();
      refine.count_admitted_digits();
      clock.lap(cycles_slot);  // counting the candidates' digits is part of the pass's work
      return true;
    };
    // Primary: x >= endpoint(tau0), one comparison per score (it is most of the work).
    const float primary_low = proposal.primary_low;
    if (run_pass([=](float value) { return value >= primary_low; }, primary_low, kCyclesCertification))
      return kRoutePrimary;
    // Band, only when the primary underfills: endpoint(tau1) <= x < endpoint(tau0).
    // Its endpoint comes back from shared memory rather than being held in a
    // register across the primary pass.
    const float secondary_low = state.proposal_secondary_low, band_high = state.proposal_primary_low;
    if (!(secondary_low < band_high)) return kRouteExact;  // no band
    if (run_pass([=](float value) { return value >= secondary_low && value < band_high; }, secondary_low,
                 kCyclesRecovery))
      return kRouteBand;
    return kRouteExact;
  }

  static SGTOPK_DEVICE void select_row(SelectionState& state, const Store& store, const Output& out, const float* scores,
                                       int len, long long row_id, u64* sort_buffer, unsigned long long* stats) {
    if (len <= Config::kK) {
      count_route<Config::kRouteStats>(stats, kRouteShort);
      return Exact::select_short_row(out, scores, len, sort_buffer);
    }
    PhaseClock<Config::kRouteStats> clock(stats);
    Row row;
    row.load(scores, len);
    Refine refine{state, store, row, out};
    Proposal proposal;
    int route = kRouteNoView;
    if (propose(state, scores, len, row_id, &proposal)) {
      clock.lap(kCyclesProposal);
      route = certify(state, refine, row, proposal, clock);
    }
    count_route<Config::kRouteStats>(stats, route);
    if (route == kRoutePrimary || route == kRouteBand) {
      count_route<Config::kRouteStats>(stats, kRouteCandidates, state.frontier_count);
    } else {
      Exact::exact_boundary(state, store, row, out, typename Exact::NoMarks{});
      clock.lap(kCyclesRecovery);
    }
    Exact::refine_and_write(state, store, row, out, scores, sort_buffer);
    clock.lap(kCyclesRefinement);
  }

  static SGTOPK_DEVICE void run(const SelectParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    SGTOPK_BLOCK_SHARED(long long, claimed_row);
    RowClaims* claims = reinterpret_cast<RowClaims*>(p.workspace);
    const typename Exact::Worker w =
        Exact::make_worker(shared_bytes, static_cast<unsigned char*>(p.workspace) + kRowClaimsBytes);
    const long long live = live_row_count(p, static_cast<long long>(p.rows));
    // The first wave is assigned directly; later rows go to whichever worker
    // finishes first (ragged rows make a static stride unbalanced).
    for (long long r = blockIdx.x; r < live;) {
      const typename Exact::RowTask task = Exact::row_task(p, r);
      select_row(*w.state, w.store, task.out, task.scores, task.len, r, w.sort_buffer, p.route_stats);
      Exact::transform_row(task.out, p, r);
      __syncthreads();  // shared state is reused by the next row
      if (threadIdx.x == 0) claimed_row = static_cast<long long>(gridDim.x) + atomicAdd(&claims->next_row, 1u);
      __syncthreads();
      r = claimed_row;
    }
    // Every worker has made its last claim once all have arrived here: the
    // last one restores the counters for the next launch.
    if (threadIdx.x == 0) {
      __threadfence();
      if (atomicAdd(&claims->finished_workers, 1u) == gridDim.x - 1u) {
        claims->next_row = 0u;
        claims->finished_workers = 0u;
        __threadfence();
      }
    }
  }
};

}  // namespace sgtopk

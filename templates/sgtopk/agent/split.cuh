// KV-split select (HPC-Ops paper, section 5.5): for a few long rows, each
// row's valid length is cut into contiguous segments, one CTA each, so that
// one row's pass runs on many SMs.
//
//   proposal  every CTA of a row reads the same strided view of the whole
//             row and so finds the same sampled proposal (sampled.cuh)
//   segment   one pass over the CTA's own segment stores every score at or
//             above the secondary threshold, counts those at or above the
//             primary one, and publishes both in the row's workspace record,
//             with a histogram of the candidates' key offsets added to the row's
//   finisher  the last segment to arrive (the row's arrival counter) takes
//             the primary candidates when K or more, else the band's, else
//             the exact route over the whole row; with K or more candidates
//             the row histogram gives the K-th's bin at once, so one gather
//             commits the bins above it and ranks the boundary bin's few
//             (else the candidates are selected in shared memory, or refined)
//
// No CTA waits for another, so the grid needs no co-residency; the finisher
// restores the row's record, so a graph replay starts from zero. The route
// decisions are the sampled family's under the same view constants (both
// thresholds are counted in one pass, so the band costs no second one); a
// record that could not hold every candidate makes the finisher admit them
// again in one pass of its own.
//
// Config adds to the sampled constants: kSegments (CTAs per row), kMinSegmentWidth
// (a shorter row uses fewer of them), kCandidateCapacity (stored per row),
// kPrefetchBeforeViewKb, kPrefetchAfterViewKb and kPrefetchAheadChunks (the
// segment asked of L2 early: one CTA an SM keeps too few loads in flight to
// hide DRAM's latency).
#pragma once
#include "sgtopk/agent/sampled.cuh"
#include "sgtopk/block/block_select.cuh"

namespace sgtopk {

template <typename Config>
struct SplitAgent {
  typedef SampledAgent<Config> Sampled;
  typedef DirectExactAgent<Config> Exact;
  typedef typename Exact::Store Store;
  typedef typename Exact::Output Output;
  typedef typename Exact::StreamRow Row;
  typedef typename Exact::template Refine<Row> Refine;
  static constexpr unsigned kSharedBytes =
      split_shared_bytes(Exact::kSharedBytes, Config::kThreads, Config::kFinisherItems);
  static constexpr u32 kSegmentCapacity = static_cast<u32>(Config::kFrontierSharedCapacity);
  static_assert(Config::kSegments >= 1 && Config::kMinSegmentWidth >= 1 && Config::kCandidateCapacity >= 1,
                "a split plan has segments and a candidate record");
  // The finisher's shared forms: at most kFinisherCapacity candidates copied
  // (finish_in_shared), and a ranked group of at most kRankMax.
  static constexpr int kFinisherItems = Config::kFinisherItems > 0 ? Config::kFinisherItems : 1;
  static constexpr u32 kFinisherCapacity = static_cast<u32>(Config::kThreads * kFinisherItems);
  typedef BlockSelectItems<Config::kThreads, kFinisherItems, Config::kIndexBits, kSplitRankGroupBytes> FinisherSelect;

  // Row r's record in the workspace (abi.h, split_row_bytes): its parts are
  // found from the record's address when used, one pointer held across the
  // kernel instead of five (the kernel has 64 registers a thread).
  struct RowRecord {
    unsigned char* base;
    SGTOPK_DEVICE SplitRowHeader* header() const { return reinterpret_cast<SplitRowHeader*>(base); }
    // The row histogram: a word per coarse bin, log_offset_bin's.
    SGTOPK_DEVICE u32* bins() const { return reinterpret_cast<u32*>(base + kSplitRowHeaderBytes); }
    SGTOPK_DEVICE float* values() const {  // kCandidateCapacity
      return reinterpret_cast<float*>(base + kSplitRowHeaderBytes + kSplitRowHistogramBytes);
    }
    SGTOPK_DEVICE u32* indices() const { return reinterpret_cast<u32*>(values() + Config::kCandidateCapacity); }
    SGTOPK_DEVICE float* slice() const {  // the finisher's frontier slice: values, then indices
      return reinterpret_cast<float*>(indices() + Config::kCandidateCapacity);
    }
    // visit(value, index, valid) for the stored candidates [0, admitted),
    // kGather a thread in flight before the first is visited (the record is
    // in L2: one round trip per kThreads x kGather). Every thread visits as
    // often (with valid false past the end), so a visit may use warp votes.
    template <int kGather, typename Visit>
    SGTOPK_DEVICE void for_each_candidate(u32 admitted, Visit&& visit) const {
      for (u32 base = 0; base < admitted; base += Config::kThreads * kGather) {
        float value[kGather];
        u32 index[kGather];
#pragma unroll
        for (int u = 0; u < kGather; ++u) {
          const u32 i = base + static_cast<u32>(u * Config::kThreads) + threadIdx.x;
          value[u] = i < admitted ? hw::load_l2(values() + i) : 0.0f;
          index[u] = i < admitted ? hw::load_l2(indices() + i) : 0u;
        }
#pragma unroll
        for (int u = 0; u < kGather; ++u)
          visit(value[u], index[u], base + static_cast<u32>(u * Config::kThreads) + threadIdx.x < admitted);
      }
    }
  };
  static SGTOPK_DEVICE RowRecord record(void* workspace, long long r) {
    return RowRecord{static_cast<unsigned char*>(workspace) +
                     static_cast<u64>(r) * split_row_bytes(Config::kCandidateCapacity, Config::kFrontierGlobalCapacity)};
  }

  // Segments that take part in a row of `len` (> K): at least
  // kMinSegmentWidth scores each, at most kSegments.
  static SGTOPK_DEVICE int active_segments(int len) {
    const long long wanted = (static_cast<long long>(len) + Config::kMinSegmentWidth - 1) / Config::kMinSegmentWidth;
    return static_cast<int>(max_of(1ll, min_of(static_cast<long long>(Config::kSegments), wanted)));
  }
  // Scores per segment, a multiple of 64 so every segment starts on the
  // same 16-byte alignment as the row (the last may be shorter, or empty).
  static SGTOPK_DEVICE int segment_width(int len, int active) {
    const long long w = (static_cast<long long>(len) + active - 1) / active;
    return static_cast<int>((w + 63) / 64 * 64);
  }

  // The segment pass: stores each score >= low of [0, len) in the CTA's
  // shared frontier slots (state.next_count counts them, stored or not),
  // counts those >= primary_low in state.committed and the stored ones'
  // log_offset_bin above low in state.histogram (clear on entry). Ends with
  // a barrier.
  static_assert(kLogOffsetBins <= static_cast<u32>(kCoarseBins), "the row histogram's bins fit the state's");
  static SGTOPK_DEVICE void collect(SelectionState& state, const Store& store, const float* segment, int len, float low,
                                    float primary_low) {
    u32 primary = 0u;
    const u32 low_key = ordered_key(low);
    const auto keep = [&](u32 slot, float value, u32 index) {
      if (slot < kSegmentCapacity) {
        store.shared_value[slot] = value;
        store.shared_index[slot] = index;
        atomicAdd(&state.histogram[log_offset_bin(ordered_key(value) - low_key)], 1u);
      }
    };
    Row row;
    row.load(segment, len);
    row.for_each_chunk(
        [&](const auto& chunk) {
          typedef typename Bare<decltype(chunk)>::type Chunk;
          if constexpr (Config::kPrefetchAheadChunks > 0) {
            // Thread 0 asks L2 for the chunk kPrefetchAheadChunks ahead (at the
            // first chunk, every chunk up to it).
            constexpr int kChunkScores = Chunk::kCount * Config::kThreads;
            if (threadIdx.x == 0) {
              const long long start = chunk.first - 4 * chunk.slot;  // the chunk's first score
              const long long from = start + (chunk.number == 0 ? 1 : Config::kPrefetchAheadChunks) * kChunkScores;
              const long long to = min_of(static_cast<long long>(len), start + (Config::kPrefetchAheadChunks + 1) * kChunkScores);
              if (from < to) prefetch_l2_range<1>(segment + from, segment + to);
            }
          }
          u32 taken = 0u;
#pragma unroll
          for (int n = 0; n < Chunk::kCount; ++n) {
            if (chunk.is_valid(n) && chunk.score(n) >= low) taken |= 1u << n;
            if (chunk.is_valid(n) && chunk.score(n) >= primary_low) ++primary;
          }
          u32 slot = warp_reserve(static_cast<u32>(__popc(taken)), &state.next_count);
          for (; taken != 0u; taken &= taken - 1u) {
            const int n = __ffs(taken) - 1;
            keep(slot++, chunk.score_again(n), chunk.index(n));
          }
        },
        [&](int i, float value) {
          const bool take = value >= low;
          if (value >= primary_low) ++primary;
          const u32 slot = warp_append(take, &state.next_count);
          if (take) keep(slot, value, static_cast<u32>(i));
        });
    if (primary != 0u) atomicAdd(&state.committed, primary);
    __syncthreads();
  }

  // Publishes the segment's candidates (indices made row-relative by
  // `begin`) and arrives; true on the row's finisher, which then holds the
  // row's totals in state.scratch[2..4] and its histogram in state.histogram
  // (published by finish's first barrier), and has restored the record.
  static SGTOPK_DEVICE bool publish(SelectionState& state, const Store& store, const RowRecord& rec, u32 begin,
                                    int active) {
    const u32 count = state.next_count, primary = state.committed;
    u32* scratch = state.scratch;
    if (threadIdx.x == 0) {
      const u32 base = count != 0u ? atomicAdd(&rec.header()->admitted, count) : 0u;
      if (primary != 0u) atomicAdd(&rec.header()->primary, primary);
      const bool lost = count > kSegmentCapacity ||
                        static_cast<u64>(base) + count > static_cast<u64>(Config::kCandidateCapacity);
      if (lost) atomicOr(&rec.header()->overflow, 1u);
      scratch[0] = lost ? 0xffffffffu : base;
    }
    __syncthreads();
    const u32 base = scratch[0];
    if (base != 0xffffffffu) {
      for (u32 i = threadIdx.x; i < count; i += Config::kThreads) {
        rec.values()[base + i] = store.shared_value[i];
        rec.indices()[base + i] = store.shared_index[i] + begin;
      }
      for (u32 b = threadIdx.x; b < kLogOffsetBins; b += Config::kThreads)
        if (const u32 n = state.histogram[b]) atomicAdd(rec.bins() + b, n);
    }
    __syncthreads();  // every thread's candidates and bins precede thread 0's release
    if (threadIdx.x == 0) {
      // The arrival releases this CTA's writes and, on the last, acquires
      // every segment's (their barrier, then this thread: the finisher's
      // threads read them after the barrier below).
      const bool last = hw::atomic_add_acq_rel(&rec.header()->arrived, 1u) == static_cast<u32>(active - 1);
      scratch[1] = last ? 1u : 0u;
      if (last) {
        volatile SplitRowHeader* h = rec.header();
        scratch[2] = h->admitted;
        scratch[3] = h->primary;
        scratch[4] = h->overflow;
        h->arrived = 0u;
        h->admitted = 0u;
        h->primary = 0u;
        h->overflow = 0u;
      }
    }
    __syncthreads();
    if (scratch[1] == 0u) return false;
    take_row_histogram(state, rec);  // before finish's first barrier
    return true;
  }

  // The finisher: the row's route from the totals, then refinement. With
  // `no_view` (the row's view is too small) it takes the exact route alone;
  // with an overflowed record it admits its route's candidates in one pass
  // over the whole row instead of gathering them. One instance of each
  // route's code, however the row got here.
  static SGTOPK_DEVICE void finish(SelectionState& state, const Store& store, const Output& out, const RowRecord& rec,
                                   const float* scores, int len, bool no_view, const typename Sampled::Proposal& proposal,
                                   u64* sort_buffer, unsigned long long* stats, PhaseClock<Config::kRouteStats>& clock) {
    const u32 admitted = no_view ? 0u : state.scratch[2], primary = no_view ? 0u : state.scratch[3];
    const bool overflow = !no_view && state.scratch[4] != 0u;
    __syncthreads();  // every thread has the totals before the state is reset
    const u32 k = static_cast<u32>(Config::kK);
    const float secondary_low = min_of(proposal.secondary_low, proposal.primary_low);
    const int route = no_view ? kRouteNoView
                      : primary >= k ? kRoutePrimary
                      : (secondary_low < proposal.primary_low && admitted >= k) ? kRouteBand
                                                                                : kRouteExact;
    count_route<Config::kRouteStats>(stats, route);
    if ((route == kRoutePrimary || route == kRouteBand) && !overflow && Config::kFinisherItems > 0 &&
        finish_from_histogram(state, out, rec, admitted, secondary_low,
                              route == kRoutePrimary ? proposal.primary_low : secondary_low, scores, sort_buffer, stats,
                              clock))
      return;
    if ((route == kRoutePrimary || route == kRouteBand) && !overflow && Config::kFinisherItems > 0 &&
        admitted <= kFinisherCapacity) {
      const float admit_low = route == kRoutePrimary ? proposal.primary_low : secondary_low;
      return finish_in_shared(state, out, rec, admitted, admit_low, scores, sort_buffer, stats, clock);
    }
    Row row;
    row.load(scores, len);
    if (route == kRoutePrimary || route == kRouteBand) {
      const float admit_low = route == kRoutePrimary ? proposal.primary_low : secondary_low;
      Refine refine{state, store, row, out};
      begin_selection<Config::kThreads>(state, k, 1u);
      if (!overflow) {
        // Four candidates a thread in flight: one round trip per kThreads
        // candidates made the gather a few microseconds of the finisher's latency.
        rec.for_each_candidate<4>(admitted, [&](float value, u32 index, bool valid) {
          const bool take = valid && value >= admit_low;
          const u32 slot = warp_append(take, &state.next_count);
          if (take) refine.admit_at(slot, value, index);
        });
      } else {
        const auto admit = [=](float value) { return value >= admit_low; };
        row.for_each_chunk([&](const auto& chunk) { refine.admit_chunk(chunk, admit); },
                           [&](int i, float value) { refine.admit(admit(value), value, static_cast<u32>(i)); });
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        state.frontier_count = state.next_count;
        state.admit_low = admit_low;
      }
      __syncthreads();
      count_route<Config::kRouteStats>(stats, kRouteCandidates, state.frontier_count);
      refine.count_admitted_digits();
    } else {
      Exact::exact_boundary(state, store, row, out, typename Exact::NoMarks{});
    }
    clock.lap(kCyclesRecovery);
    Exact::refine_and_write(state, store, row, out, scores, sort_buffer);
  }

  // The row histogram into state.histogram, the record's cleared for the
  // next launch; the ranked group's counters cleared. Before a barrier.
  static SGTOPK_DEVICE void take_row_histogram(SelectionState& state, const RowRecord& rec) {
    // A thread's bins loaded at once (one L2 round trip, where a loop that
    // cleared each bin before loading the next took one a bin).
    constexpr int kPerThread = (kCoarseBins + Config::kThreads - 1) / Config::kThreads;
    constexpr int kBatch = kPerThread < 4 ? kPerThread : 4;
    for (int first = 0; first < kPerThread; first += kBatch) {
      u32 n[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const u32 b = static_cast<u32>((first + j) * Config::kThreads) + threadIdx.x;
        n[j] = b < kLogOffsetBins ? hw::load_l2(rec.bins() + b) : 0u;
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const u32 b = static_cast<u32>((first + j) * Config::kThreads) + threadIdx.x;
        if (n[j] != 0u) rec.bins()[b] = 0u;
        if (b < static_cast<u32>(kCoarseBins)) state.histogram[b] = n[j];
      }
    }
    RankedGroup group = ranked_group();
    for (u32 i = threadIdx.x; i < kRankMax + 2u; i += Config::kThreads) group.rank[i] = 0u;  // and both counters
    if (threadIdx.x == 0) state.frontier_count = 0u;
  }

  // The boundary bin's members, ranked directly (the finisher's shared
  // memory past the state, unused until the output is sorted): composite
  // keys (ordered key, then the inverted index: ties to the lower index),
  // values, ranks, then the members' and the committed candidates' counters.
  static constexpr u32 kRankMax = FinisherSelect::kRankMax;
  struct RankedGroup {
    u64* key;
    float* value;
    u32* rank;
    u32* members;
    u32* committed;
  };
  static SGTOPK_DEVICE RankedGroup ranked_group() {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    RankedGroup g;
    g.key = reinterpret_cast<u64*>(shared_bytes + Exact::kStateBytes);
    g.value = reinterpret_cast<float*>(g.key + kRankMax);
    g.rank = reinterpret_cast<u32*>(g.value + kRankMax);
    g.members = g.rank + kRankMax;
    g.committed = g.members + 1;
    return g;
  }
  static_assert(kRankMax * 16u + 8u <= kSplitRankGroupBytes, "the ranked group fits the finisher's group bytes");

  // The finisher's fastest form, from the row histogram (every stored
  // candidate's log_offset_bin above `low`): its K-th largest lies in bin
  // found.bin, so one gather from the record commits every candidate of a
  // higher bin (found.above of them) and ranks the boundary bin's members
  // directly, member i at slot found.above + its rank when that is below K.
  // False, having written nothing the other forms read, when the boundary
  // bin holds more members than a ranked group (many equal values).
  static SGTOPK_DEVICE bool finish_from_histogram(SelectionState& state, const Output& out, const RowRecord& rec,
                                                  u32 admitted, float low, float admit_low, const float* scores,
                                                  u64* sort_buffer, unsigned long long* stats,
                                                  PhaseClock<Config::kRouteStats>& clock) {
    const u32 k = static_cast<u32>(Config::kK);
    const RankBin found = find_rank_bin<Config::kThreads, kCoarseBins>(state.histogram, k, state.scratch);
    if (found.total < k || found.count > kRankMax) return false;
    const RankedGroup group = ranked_group();
    const u32 low_key = ordered_key(low);
    u32 live = 0u;  // candidates >= admit_low, for the route statistics
    // Four candidates a thread in flight: a row's 3 K to 4 K in one L2 round trip.
    rec.for_each_candidate<4>(admitted, [&](float value, u32 index, bool valid) {
      const u32 key = ordered_key(value);
      const u32 bin = valid ? log_offset_bin(key - low_key) : 0u;
      const bool above = valid && bin > found.bin, member = valid && bin == found.bin;
      const u32 slot = warp_append(above, group.committed);
      if (above) out.commit(slot, index, value);
      const u32 m = warp_append(member, group.members);
      if (member) {
        group.key[m] = static_cast<u64>(key) << 32 | (0xffffffffu - index);
        group.value[m] = value;
      }
      if constexpr (Config::kRouteStats) live += valid && value >= admit_low ? 1u : 0u;
    });
    if constexpr (Config::kRouteStats) {
      if (live != 0u) atomicAdd(&state.frontier_count, live);
    }
    __syncthreads();
    count_members_above<Config::kThreads>(group.key, found.count, group.rank);
    __syncthreads();
    count_route<Config::kRouteStats>(stats, kRouteCandidates, state.frontier_count);
    count_route<Config::kRouteStats>(stats, kSplitFromHistogram);
    clock.lap(kCyclesRecovery);
    if (threadIdx.x < found.count && group.rank[threadIdx.x] < k - found.above)
      out.commit(found.above + group.rank[threadIdx.x], 0xffffffffu - static_cast<u32>(group.key[threadIdx.x]),
                 group.value[threadIdx.x]);
    if constexpr (Config::kSorted)
      sort_row_output<Config::kThreads, Config::kSortSlots, Config::kValues>(out, scores, Config::kK, sort_buffer);
    return true;
  }

  // The finisher's fast form, for a record of at most kThreads x
  // kFinisherItems candidates: all copied at once into shared memory (one
  // round trip to L2), the K largest of those >= admit_low selected there by
  // BlockSelectItems (histograms of the candidates' key offsets, the last
  // small group ranked directly). No frontier is stored and no round moves
  // a candidate.
  static SGTOPK_DEVICE void finish_in_shared(SelectionState& state, const Output& out, const RowRecord& rec,
                                             u32 admitted, float admit_low, const float* scores, u64* sort_buffer,
                                             unsigned long long* stats, PhaseClock<Config::kRouteStats>& clock) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    float* value = reinterpret_cast<float*>(shared_bytes + Exact::kStateBytes);
    u32* index = reinterpret_cast<u32*>(value + kFinisherCapacity);
    unsigned char* group = reinterpret_cast<unsigned char*>(index + kFinisherCapacity);
    begin_selection<Config::kThreads>(state, static_cast<u32>(Config::kK), 1u);
    u32 live = 0u;
    // Four candidates' loads in flight a thread (eight spill 20 bytes of the
    // kernel's 64 registers a thread, four 12).
#pragma unroll 4
    for (int u = 0; u < kFinisherItems; ++u) {
      const u32 i = FinisherSelect::slot(u);
      if (i < admitted) {
        const float v = hw::load_l2(rec.values() + i);
        value[i] = v;
        index[i] = hw::load_l2(rec.indices() + i);
        if (v >= admit_low) live |= 1u << u;
      }
    }
    if constexpr (Config::kRouteStats) {
      u32 warp_total;
      warp_exclusive_sum(static_cast<u32>(__popc(live)), &warp_total);
      if ((threadIdx.x & 31) == 0 && warp_total != 0u) atomicAdd(&state.frontier_count, warp_total);
    }
    const FinisherSelect candidates{value, index, live, ordered_key(admit_low)};
    const u32 high = candidates.highest_offset(&state.frontier_high_key);  // its barrier publishes the copies
    count_route<Config::kRouteStats>(stats, kRouteCandidates, state.frontier_count);
    clock.lap(kCyclesRecovery);
    candidates.select(static_cast<u32>(Config::kK), high, state.histogram, state.scratch, group,
                      [&](u32 slot, u32 i, float v) { out.commit(slot, i, v); });
    if constexpr (Config::kSorted)
      sort_row_output<Config::kThreads, Config::kSortSlots, Config::kValues>(out, scores, Config::kK, sort_buffer);
  }

  static SGTOPK_DEVICE void run(const SelectParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    const long long r = static_cast<long long>(blockIdx.x / Config::kSegments);
    const int s = static_cast<int>(blockIdx.x % Config::kSegments);
    if (r >= live_row_count(p, static_cast<long long>(p.rows))) return;
    const typename Exact::RowTask task = Exact::row_task(p, r);
    SelectionState& state = *reinterpret_cast<SelectionState*>(shared_bytes);
    unsigned char* frontier_bytes = shared_bytes + Exact::kStateBytes;
    u64* sort_buffer = reinterpret_cast<u64*>(frontier_bytes);
    if (task.len <= Config::kK) {
      if (s != 0) return;
      count_route<Config::kRouteStats>(p.route_stats, kRouteShort);
      Exact::select_short_row(task.out, task.scores, task.len, sort_buffer);
      return Exact::transform_row(task.out, p, r);
    }
    const int active = active_segments(task.len);
    if (s >= active) return;
    const RowRecord rec = record(p.workspace, r);
    Store store;
    store.shared_value = reinterpret_cast<float*>(frontier_bytes);
    store.shared_index = reinterpret_cast<u32*>(frontier_bytes) + Config::kFrontierSharedCapacity;
    store.global_value = rec.slice();
    store.global_index = reinterpret_cast<u32*>(rec.slice() + Config::kFrontierGlobalCapacity);
    PhaseClock<Config::kRouteStats> clock(p.route_stats);
    typename Sampled::Proposal proposal{0.0f, 0.0f};
    // The segment's first kPrefetchBeforeViewKb asked of L2 before the
    // proposal, the next kPrefetchAfterViewKb once its view is read: the
    // proposal hides the fetch.
    const auto prefetch_segment = [&](int from_kb, int kb) {
      const int width = segment_width(task.len, active);
      const int begin = min_of(task.len, s * width), end = min_of(task.len, begin + width);
      const long long first = begin + 256ll * from_kb, last = min_of(static_cast<long long>(end), first + 256ll * kb);
      if (first < last) prefetch_l2_range<Config::kThreads>(task.scores + first, task.scores + last);
    };
    if constexpr (Config::kPrefetchBeforeViewKb > 0) prefetch_segment(0, Config::kPrefetchBeforeViewKb);
    const auto after_view = [&]() {
      if constexpr (Config::kPrefetchAfterViewKb > 0) prefetch_segment(Config::kPrefetchBeforeViewKb, Config::kPrefetchAfterViewKb);
    };
    // The frontier's bytes (value and index a candidate) keep the view.
    const bool viewed = Sampled::propose(state, task.scores, task.len, r, &proposal, 0,
                                         reinterpret_cast<float*>(frontier_bytes), 2 * Config::kFrontierSharedCapacity,
                                         after_view);
    clock.lap(kCyclesProposal);
    if (!viewed) {
      // Every CTA of the row finds the view too small (that depends on len
      // only): the first finishes the row alone, no record is touched.
      if (s != 0) return;
      finish(state, store, task.out, rec, task.scores, task.len, true, proposal, sort_buffer, p.route_stats, clock);
      Exact::transform_row(task.out, p, r);
      return clock.lap(kCyclesRefinement);
    }
    const int width = segment_width(task.len, active);
    const int begin = min_of(task.len, s * width), end = min_of(task.len, begin + width);
    begin_selection<Config::kThreads>(state, static_cast<u32>(Config::kK), 1u);
    collect(state, store, task.scores + begin, end - begin, min_of(proposal.secondary_low, proposal.primary_low),
            proposal.primary_low);
    const bool last = publish(state, store, rec, static_cast<u32>(begin), active);
    clock.lap(kCyclesCertification);
    if (!last) return;
    finish(state, store, task.out, rec, task.scores, task.len, false, proposal, sort_buffer, p.route_stats, clock);
    Exact::transform_row(task.out, p, r);
    clock.lap(kCyclesRefinement);
  }
};

}  // namespace sgtopk

// Filter for a few rows (docs/filter-design.md, "Mappings"): each row's
// vocabulary is cut into kSegments segments, one CTA each, so that a row's
// pass runs on many SMs; the last segment to arrive decides the row. No CTA
// waits for another, so the grid needs no co-residency.
//
//   threshold every CTA of a row samples the same strided logits and so
//             finds the same tau (filter_row's propose())
//   segment   one pass over the CTA's segment appends every key at or above
//             tau, with its index, to the row's workspace record, and its
//             largest key; out of place it writes the segment's mask in the
//             same pass: mask_value below tau, the logit's own bits at or
//             above (the finisher masks the candidates that are not kept)
//   finisher  the last to arrive loads the candidates into shared memory
//             and decides exactly as filter_row's sampled route (the same
//             integers over the same keys: the same kept set); in place it
//             writes the whole row (write_kept), out of place only the
//             dropped candidates. Where the candidates do not hold the
//             boundary (fewer than k, or more than the buffer) it runs
//             filter_row's exact route over the row alone.
//
// Top-p alone (in the mask-only kernels, whose plans make two launches):
// in the first launch each segment adds its histogram of first digits
// (counts and approximate masses, filter_row's histogram_pass) to the
// record's and folds its largest key into the record's; the last to arrive
// names the window of first digits that holds the top-p boundary
// (window_from_histogram, the record's `window`). Exact masses need the
// row's largest key, known only then: in the second launch each segment
// sums the masses of its part (Z, and above the window) into the record,
// appends the window's keys with their indices and, out of place, writes
// the logit's bits at or above the window and mask_value below; the last
// to arrive runs the mass rounds over the record's keys (filter_row's
// window_boundary), then masks the window's keys it drops. Where no window
// fits, the boundary lies outside it or the record overflowed, one CTA
// filters the row (filter_row's exact route). No CTA weighs the whole row
// on the usual path: a pass of one CTA over 128K logits costs 20 to 30 us
// (docs/decisions/2026-12-04-filter-top-p-sample-window.md).
//
// Rows the split does not serve (no filter; k past the candidate buffer; a
// sample predicting a miss; top-p alone in the kernels with the outputs'
// code) are filtered as filter_row does by one CTA: the last of the row's
// CTAs to arrive (none writes before every one has read its sample, which
// an in-place write would change). The finisher restores the record's
// header, so a graph replay starts from zero. Config adds kSegments and
// kPrefetchBeforeSampleKb (the segment's start asked of L2 before the
// sample) to filter_row's constants; FilterParams::workspace holds one
// record a row (abi.h, filter_split_row_bytes).
#pragma once
#include "sgtopk/agent/filter_row.cuh"

namespace sgtopk {

template <typename Config>
struct FilterSplitAgent {
  typedef FilterRowAgent<Config> RowAgent;
  typedef typename RowAgent::Shared Shared;
  typedef typename RowAgent::Row Row;
  typedef typename RowAgent::Elem Elem;
  typedef typename RowAgent::RowTask RowTask;
  typedef typename RowAgent::WindowSums WindowSums;  // the segments' sums (FilterSplitRowHeader::mass)
  static constexpr int kThreads = Config::kThreads;
  static constexpr int kSegments = Config::kSegments;
  static constexpr int kPerVector = RowAgent::kPerVector;
  static constexpr int kDigits = RowAgent::kDigits;
  static constexpr unsigned kSharedBytes = RowAgent::kSharedBytes;
  static constexpr int kCandidates = RowAgent::kCandidates;  // the finisher's buffer
  static_assert(kSegments >= 1, "a split plan has segments");
  static_assert(kFilterSplitRecordKeys == RowAgent::kWindowKeys, "a record holds a whole top-p window (abi.h)");

  // Row r's record in the workspace.
  struct Record {
    FilterSplitRowHeader* header;
    u32* keys;              // kFilterSplitRecordKeys unscaled keys
    u32* indices;           // their row indices
    u32* histogram_count;   // top-p alone: the row's keys a first digit (kDigits)
    float* histogram_mass;  // and their approximate mass (histogram_pass)
  };
  static SGTOPK_DEVICE Record record(void* workspace, int r) {
    unsigned char* base = static_cast<unsigned char*>(workspace) + static_cast<u64>(r) * filter_split_row_bytes();
    u32* keys = reinterpret_cast<u32*>(base + kFilterSplitRowHeaderBytes);
    u32* histogram = keys + 2 * kFilterSplitRecordKeys;
    return Record{reinterpret_cast<FilterSplitRowHeader*>(base), keys, keys + kFilterSplitRecordKeys, histogram,
                  reinterpret_cast<float*>(histogram + kDigits)};
  }

  // Elements per segment, a multiple of 64 so that every segment starts on
  // the row's 16-byte alignment (the last may be shorter, or empty).
  static SGTOPK_DEVICE int segment_width(int len) {
    const long long w = (static_cast<long long>(len) + kSegments - 1) / kSegments;
    return static_cast<int>((w + 63) / 64 * 64);
  }

  // The segment pass over [begin, end): every unscaled key in [threshold,
  // highest] with its row index into the candidate buffer (counted past
  // its capacity), the segment's largest unscaled key into s.max_key; with
  // `out` (out of place), the segment's mask: the logit's bits at or above
  // threshold, else mask_value, in 16-byte stores where out shares the
  // logits' alignment; with kWeigh, the masses relative to `top` (scaled)
  // of the segment's keys and of those above highest, into *sums (this
  // thread's). Returns the count.
  template <bool kWeigh = false>
  static SGTOPK_DEVICE u32 collect(Shared& s, const Row& row, int begin, int end, u32 threshold, u32 highest, Elem* out,
                                   Elem mask_value, float top = 0.0f, WindowSums* sums = nullptr) {
    if (threadIdx.x == 0) {
      s.max_key = 0u;
      s.candidates = 0u;
    }
    __syncthreads();
    const Elem* segment = row.logits + begin;
    Elem* segment_out = out != nullptr ? out + begin : nullptr;
    const bool vector_out = out != nullptr && ((reinterpret_cast<u64>(out) - reinterpret_cast<u64>(row.logits)) & 15u) == 0u;
    const u32 mask_bits = RowAgent::bits_of(mask_value);
    u32 local_max = 0u;
    // Weighing, half the loads in flight: at 64 registers a thread, all of them spilled.
    constexpr int kLoads = kWeigh && RowAgent::kLoadsInFlight > 1 ? RowAgent::kLoadsInFlight / 2 : RowAgent::kLoadsInFlight;
    // Weighing scales the logits (by_scaling: the division only where T scales).
    auto pass = [&](auto scaling) {
      auto visit = [&](const u32(&words)[4], int first, u32 valid) {
        u32 take = 0u, at_or_above = 0u;
        RowAgent::for_each_element(words, valid, [&](int u, Elem e, bool in) {
          const u32 key = RowAgent::pass_key(RowAgent::Logit::widen(e));
          if constexpr (kWeigh) {
            const u64 m = RowAgent::template mass_of<RowAgent::kBranchFreePasses>(row.scale(e, scaling), top);
            sums->z += m;
            sums->above += key > highest ? m : 0u;
          }
          local_max = max_of(local_max, key);
          at_or_above |= static_cast<u32>(in && key >= threshold) << u;
          take |= static_cast<u32>(in && key >= threshold && key <= highest) << u;
        });
        if (segment_out != nullptr) {
          if (vector_out && valid == (1u << kPerVector) - 1u) {
            // Built from zero words, not as a copy of `words` with the masked
            // elements set (filter_row's write): that copy spills 4 bytes in
            // the f16 kernel at 64 registers.
            u32 w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
            for (int u = 0; u < kPerVector; ++u) {
              const u32 bits = (at_or_above >> u) & 1u ? RowAgent::bits_of(RowAgent::element(words, u)) : mask_bits;
              if constexpr (sizeof(Elem) == 4) w[u] = bits;
              else w[u / 2] |= bits << (16 * (u & 1));
            }
            RowAgent::store_vector(segment_out + first, w);
          } else {
#pragma unroll
            for (int u = 0; u < kPerVector; ++u)
              if ((valid >> u) & 1u)
                segment_out[first + u] =
                    (at_or_above >> u) & 1u ? RowAgent::element(words, u) : RowAgent::from_bits(mask_bits);
          }
        }
        RowAgent::append_taken(s, words, take, static_cast<u32>(begin + first));
      };
      RowAgent::template stream_row<kLoads>(segment, end - begin, visit);
    };
    if constexpr (kWeigh) RowAgent::by_scaling(row, pass);
    else pass(typename RowAgent::template ScalingIs<false>{});
    local_max = warp_max(local_max);
    if ((threadIdx.x & 31) == 0) atomicMax(&s.max_key, local_max);
    __syncthreads();
    return s.candidates;
  }

  // visit(i, key, index) for the record's keys [0, count) (index 0 without
  // kIndices), four a thread loaded before the first is visited: the record
  // is in L2, one round trip per 4 x kThreads keys (a loop that stored each
  // before loading the next took one per kThreads: 32 for a 16384-key window).
  template <bool kIndices, typename Visit>
  static SGTOPK_DEVICE void for_each_record_key(const Record& rec, u32 count, Visit&& visit) {
    constexpr int kGather = 4;
    for (u32 base = 0; base < count; base += kGather * kThreads) {
      u32 key[kGather], index[kGather];
#pragma unroll
      for (int u = 0; u < kGather; ++u) {
        const u32 i = base + static_cast<u32>(u * kThreads) + threadIdx.x;
        key[u] = i < count ? hw::load_l2(rec.keys + i) : 0u;
        index[u] = kIndices && i < count ? hw::load_l2(rec.indices + i) : 0u;
      }
#pragma unroll
      for (int u = 0; u < kGather; ++u) {
        const u32 i = base + static_cast<u32>(u * kThreads) + threadIdx.x;
        if (i < count) visit(i, key[u], index[u]);
      }
    }
  }

  // Thread 0's arrival, after a barrier: releases its CTA's writes and, on
  // the row's last, acquires every segment's (the CTA's threads read them
  // after the barrier that follows). s.scratch[0] is 1 on the last, which
  // copies the header into s.scratch (1: the count, 2: the largest key;
  // with `sums`, 3 and 4: the masses, restored) and restores the arrival
  // counter and, unless `keep` (the first launch of a top-p-alone row: the
  // second reads them), the rest.
  static SGTOPK_DEVICE void arrive(Shared& s, const Record& rec, bool keep, bool sums) {
    const bool last = hw::atomic_add_acq_rel(&rec.header->arrived, 1u) == static_cast<u32>(kSegments - 1);
    s.scratch[0] = last ? 1u : 0u;
    if (!last) return;
    volatile FilterSplitRowHeader* h = rec.header;
    s.scratch[1] = h->candidates;
    s.scratch[2] = h->max_key;
    if (sums) {
      for (int i = 0; i < 2; ++i) {
        s.scratch[3 + i] = h->mass[i];
        h->mass[i] = 0u;
      }
    }
    h->arrived = 0u;
    if (!keep) {
      h->candidates = 0u;
      h->max_key = 0u;
      h->window = 0u;
    }
  }

  // Publishes the segment's `count` candidates and its largest key (in
  // s.max_key) in the row's record and arrives; true on the row's finisher,
  // which then holds the row's count and largest key in s.scratch[1] and
  // [2] and has restored the header.
  // With `sums` (the second launch of a top-p-alone row, the segment's
  // masses), they are added to the record's instead of the largest key
  // (the first launch's, scaled), and the finisher holds the row's in
  // s.scratch[3] and [4].
  static SGTOPK_DEVICE bool publish(Shared& s, const Record& rec, u32 count, const WindowSums* sums = nullptr) {
    // A segment past its own buffer adds more than the record holds, so the
    // row's count tells the finisher that keys are missing.
    const u32 added = count > static_cast<u32>(kCandidates) ? kFilterSplitRecordKeys + 1u : count;
    if (threadIdx.x == 0) {
      s.scratch[0] = added != 0u ? atomicAdd(&rec.header->candidates, added) : 0u;
      if (sums == nullptr) {
        atomicMax(&rec.header->max_key, s.max_key);
      } else {
        unsigned long long* mass = reinterpret_cast<unsigned long long*>(rec.header->mass);
        if (sums->z != 0u) atomicAdd(mass, sums->z);
        if (sums->above != 0u) atomicAdd(mass + 1, sums->above);
      }
    }
    __syncthreads();
    const u32 base = static_cast<u32>(s.scratch[0]);
    const u32 stored = min_of(count, static_cast<u32>(kCandidates));
    for (u32 i = threadIdx.x; i < stored && base + i < static_cast<u32>(kFilterSplitRecordKeys); i += kThreads) {
      rec.keys[base + i] = s.candidate_key[i];
      rec.indices[base + i] = s.candidate_index[i];
    }
    __syncthreads();  // every thread's candidates (and out-of-place mask) precede thread 0's release
    if (threadIdx.x == 0) arrive(s, rec, false, sums != nullptr);
    __syncthreads();
    return s.scratch[0] != 0u;
  }

  // Writes mask_value over the candidates of the n buffered ones that (b, t)
  // does not keep (out of place: the segments wrote every other element).
  static SGTOPK_DEVICE void drop_candidates(Shared& s, Elem* out, u32 b, u32 t, int n, Elem mask_value) {
    const u32 last = RowAgent::last_kept_copy(s, b, t, n);
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const u32 key = s.candidate_key[i], index = s.candidate_index[i];
      if (!(key > b || (key == b && t != 0u && index <= last))) out[index] = mask_value;
    }
  }

  // The finisher: `count` candidates (every key at or above tau) in the
  // record, max_key the row's largest unscaled key. False where they do not
  // hold the boundary (fewer than k, or more than the buffer): the exact
  // route must run.
  static SGTOPK_DEVICE bool finish(Shared& s, const FilterParams& p, int r, const Record& rec, u32 count, u32 max_key) {
    const RowTask task = RowAgent::row_task(p, r);  // again, here: nothing of it stays live across the segment pass
    const Row& row = task.row;
    if (count < static_cast<u32>(task.k) || count > static_cast<u32>(kCandidates)) return false;
    const int n = static_cast<int>(count);
    for_each_record_key<true>(rec, count, [&](u32 i, u32 key, u32 index) {
      s.candidate_key[i] = RowAgent::scaled_key(row, key);
      s.candidate_index[i] = index;
    });
    __syncthreads();  // every thread has read the totals
    if (threadIdx.x == 0) s.max_key = RowAgent::scaled_key(row, max_key);
    __syncthreads();
    u32 b = 0u, t = 0xffffffffu;
    RowAgent::decide(s, row, task.k, true, task.top_p, task.top_p_on, count, b, t);  // true: count >= k
    SGTOPK_FILTER_ROUTE(RowAgent::kRouteSampled);
    // The outputs first, while an in-place mask has not yet overwritten the logits.
    if (RowAgent::more_outputs(p)) RowAgent::outputs_from_buffer(s, p, r, row, s.max_key, b, t, count);
    if (p.out != nullptr) {
      Elem* out = RowAgent::output_row(p, r);
      const Elem mask_value = RowAgent::Logit::narrow(p.mask_value);
      if (p.out == p.logits) RowAgent::write_kept(s, row, out, b, t, count, mask_value);
      else drop_candidates(s, out, b, t, n, mask_value);
    }
    __syncthreads();
    return true;
  }

  // The segment [begin, end) of a row of len elements.
  static SGTOPK_DEVICE int segment_begin(int len, int segment) { return min_of(len, segment * segment_width(len)); }
  static SGTOPK_DEVICE int segment_end(int len, int segment) {
    return min_of(len, segment_begin(len, segment) + segment_width(len));
  }

  // Top-p alone, the first launch, on segment `segment` of row r: the
  // segment's histogram (filter_row's histogram_pass) added to the
  // record's, its largest (scaled) key folded into the record's. The last
  // segment to arrive reads and clears the record's histogram and stores
  // the window for the second launch (window_from_histogram); where none
  // fits, it returns true: it filters the row itself (filter_row's exact
  // route). Out of line, its arguments by value: inlined into run, at 64
  // registers a thread, it spilled.
  static SGTOPK_DEVICE_OUT_OF_LINE bool weigh_histogram(Shared& s, void* workspace, int r, int segment, Row row,
                                                        float top_p) {
    const int begin = segment_begin(row.len, segment), end = segment_end(row.len, segment);
    const Record rec = record(workspace, r);
    RowAgent::clear_histogram(s);
    RowAgent::histogram_pass(s, Row{row.logits + begin, end - begin, row.inverse, row.scales});
    for (int d = threadIdx.x; d < kDigits; d += kThreads) {
      const u32 n = s.count[d];
      if (n != 0u) {
        atomicAdd(rec.histogram_count + d, n);
        atomicAdd(rec.histogram_mass + d, s.approx_mass[d]);
      }
    }
    __syncthreads();  // every thread's additions precede thread 0's release
    if (threadIdx.x == 0) {
      atomicMax(&rec.header->max_key, s.max_key);
      arrive(s, rec, true, false);
    }
    __syncthreads();
    if (s.scratch[0] == 0u) return false;
    const u32 max_key = static_cast<u32>(s.scratch[2]);
    for (int d = threadIdx.x; d < kDigits; d += kThreads) {  // the row's histogram; the record's restored
      s.count[d] = hw::load_l2(rec.histogram_count + d);
      s.approx_mass[d] = hw::load_l2(rec.histogram_mass + d);
      rec.histogram_count[d] = 0u;
      rec.histogram_mass[d] = 0.0f;
    }
    __syncthreads();
    const u32 window = RowAgent::window_from_histogram(s, top_p, max_key);
    if (threadIdx.x == 0) {
      if (window != 0u) rec.header->window = window;
      else rec.header->max_key = 0u;  // the header restored: the second launch passes the row by
    }
    __syncthreads();  // every thread has read the bins
    return window == 0u;
  }

  // collect() weighing, its sums in s.mass[0] and [1]. Out of line (its
  // arguments by value): inlined, at 64 registers a thread, it spilled.
  static SGTOPK_DEVICE_OUT_OF_LINE u32 collect_weighing(Shared& s, Row row, int begin, int end, u32 threshold, u32 highest,
                                                        Elem* out, Elem mask_value, float top) {
    if (threadIdx.x < 2) s.mass[threadIdx.x] = 0u;  // collect's first barrier orders this before the sums
    WindowSums mine{0u, 0u};
    const u32 count = collect<true>(s, row, begin, end, threshold, highest, out, mask_value, top, &mine);
    add_block_sum(&s.mass[0], mine.z);
    add_block_sum(&s.mass[1], mine.above);
    __syncthreads();
    return count;
  }

  // Top-p alone, the second launch, on segment `segment` of row r (rows
  // with a window only): the masses of the segment's logits relative to the
  // row's largest key (Z, and above the window) into the record, the
  // window's keys with their indices, out of place the segment's mask; the
  // last segment to arrive decides (finish_window) and restores the record.
  static SGTOPK_DEVICE void weigh_window(Shared& s, const FilterParams& p, int r, int segment) {
    const Record rec = record(p.workspace, r);
    const u32 window = rec.header->window;  // the first launch's: a kernel boundary before
    if (window == 0u) return;
    const RowTask task = RowAgent::row_task(p, r);
    const Row& row = task.row;
    const float top = float_from_ordered_key(rec.header->max_key);  // scaled
    const typename RowAgent::WindowDigits digits = RowAgent::window_digits(window);
    // The window in unscaled keys (scaling is monotone): [lowest, highest].
    const u32 lowest = RowAgent::unscaled_threshold(row, digits.low << 21);
    const u32 above = digits.high + 1u >= static_cast<u32>(kDigits)
                          ? 0xffffffffu
                          : RowAgent::unscaled_threshold(row, (digits.high + 1u) << 21);
    const u32 highest = above == 0xffffffffu ? 0xffffffffu : above - 1u;
    const int begin = segment_begin(row.len, segment), end = segment_end(row.len, segment);
    Elem* out = p.out != nullptr && p.out != p.logits ? RowAgent::output_row(p, r) : nullptr;
    const u32 count = collect_weighing(s, row, begin, end, lowest, highest, out, RowAgent::Logit::narrow(p.mask_value), top);
    const WindowSums sums{s.mass[0], s.mass[1]};
    if (!publish(s, rec, count, &sums)) return;
    const WindowSums row_sums{s.scratch[3], s.scratch[4]};
    const u32 total = static_cast<u32>(s.scratch[1]), max_key = static_cast<u32>(s.scratch[2]);
    __syncthreads();  // every thread has read scratch
    finish_window(s, p, r, rec, total, max_key, window, row_sums);
  }

  // The index of the t-th copy of b among the n buffered candidates
  // (filter_row's last_kept_copy), out of line: inlined into finish_window
  // it spilled 8 bytes at 64 registers.
  static SGTOPK_DEVICE_OUT_OF_LINE u32 window_last_copy(Shared& s, u32 b, u32 t, int n) {
    return RowAgent::template last_kept_copy<false>(s, b, t, n);  // the digit rounds: warp 0's sort spilled here
  }

  // The finisher of a top-p-alone row: `count` window keys in the record
  // (counted past its capacity), max_key the row's largest (scaled) key,
  // sums the segments' masses (Z, and above the window). Where the target
  // lies in the window, the mass rounds over the record's keys (filter_row's
  // window_boundary); else top_p_alone's histogram pass over the row. Then,
  // out of place where the window decided, mask_value over the window's
  // keys it drops (the segments wrote the rest; where copies of the boundary
  // are dropped, through the candidate buffer, by index); else the whole row.
  // Out of line, its arguments by value (p is the kernel's
  // __grid_constant__ parameter: no copy); inlined into run, at 64
  // registers a thread, the 16-bit kernels spilled.
  static SGTOPK_DEVICE_OUT_OF_LINE void finish_window(Shared& s, const FilterParams& p, int r, Record rec, u32 count,
                                                      u32 max_key, u32 window, WindowSums sums) {
    const RowTask task = RowAgent::row_task(p, r);
    const Row& row = task.row;
    const u32 top_key = max_key;
    u32 b = top_key, t = 1u, copies = 0xffffffffu;
    bool windowed = false;
    if (count <= static_cast<u32>(kFilterSplitRecordKeys)) {  // else the histogram pass
      u32* keys = RowAgent::window_keys(s);
      for_each_record_key<false>(rec, count, [&](u32 i, u32 key, u32) { keys[i] = RowAgent::scaled_key(row, key); });
      __syncthreads();
      windowed = RowAgent::window_boundary(s, keys, count, sums, top_key, task.top_p, b, t, &copies);
    }
    if (!windowed) {
      __syncthreads();  // the window's shared state is read
      RowAgent::top_p_alone(s, row, task.top_p, top_key, b, t, &copies, 0u);  // the histogram pass
    }
    SGTOPK_FILTER_ROUTE(RowAgent::kRouteExact);
    if (p.out == nullptr) return;
    Elem* out = RowAgent::output_row(p, r);
    const Elem mask_value = RowAgent::Logit::narrow(p.mask_value);
    const bool every_copy = copies != 0xffffffffu && t >= copies;
    if (p.out != p.logits && windowed && (every_copy || copies <= static_cast<u32>(kCandidates))) {
      u32 last = 0xffffffffu;  // the last kept copy of b by index
      if (!every_copy) {
        // Some copies of b dropped (16-bit logits tie often): b lies in the
        // window, so the record holds every copy with its index; the t-th
        // is found among them in the candidate buffer, not by this one CTA
        // writing the whole row.
        __syncthreads();  // the window's keys in shared memory are read
        if (threadIdx.x == 0) s.candidates = 0u;
        __syncthreads();
        for_each_record_key<true>(rec, count, [&](u32, u32 key, u32 index) {
          const bool copy = RowAgent::scaled_key(row, key) == b;
          const u32 slot = warp_append(copy, &s.candidates);
          if (copy) {
            s.candidate_key[slot] = b;
            s.candidate_index[slot] = index;
          }
        });
        __syncthreads();
        last = window_last_copy(s, b, t, static_cast<int>(copies));
      }
      for_each_record_key<true>(rec, count, [&](u32, u32 key, u32 index) {
        const u32 scaled = RowAgent::scaled_key(row, key);
        if (scaled < b || (scaled == b && (t == 0u || index > last))) out[index] = mask_value;
      });
    } else {
      const u32 end = every_copy ? RowAgent::kEveryCopy : RowAgent::copies_end(s, row, b, t);
      if (end != RowAgent::kTooManyCopies) RowAgent::write_order_prefix(s, row, out, b, end, mask_value);
      else RowAgent::write_mask(s, row, out, b, t, mask_value);
    }
    __syncthreads();
  }

  static SGTOPK_DEVICE void run(const FilterParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    Shared& s = *reinterpret_cast<Shared*>(shared_bytes);
    const int r = static_cast<int>(blockIdx.x / kSegments), segment = static_cast<int>(blockIdx.x % kSegments);
    if (r >= live_row_count(p, static_cast<long long>(p.rows))) return;
    if constexpr (!RowAgent::kMoreOutputs) {
      if (p.phase == 1) {  // the second launch: top-p-alone rows only
        weigh_window(s, p, r, segment);
        return;
      }
    }
    bool try_sampled = true;  // for a row filtered by one CTA: filter_row's sampled route first
    {
      const RowTask task = RowAgent::row_task(p, r);
      if constexpr (Config::kPrefetchBeforeSampleKb > 0) {
        // The segment's first kPrefetchBeforeSampleKb asked of L2: the sample's reads and decisions hide the fetch.
        const int begin = segment_begin(task.row.len, segment), end = segment_end(task.row.len, segment);
        const long long last = min_of(static_cast<long long>(end),
                                      begin + 1024ll * Config::kPrefetchBeforeSampleKb / static_cast<long long>(sizeof(Elem)));
        if (begin < last) prefetch_l2_range<kThreads>(task.row.logits + begin, task.row.logits + last);
      }
      const Record rec = record(p.workspace, r);
      u32 tau = 0u;
      const bool top_p_alone = !RowAgent::kMoreOutputs && !task.top_k_on && task.top_p_on;
      const bool split = task.top_k_on && task.k <= kCandidates &&
                         RowAgent::propose(s, task.row, task.k, true, task.top_p, &tau);
      if (top_p_alone) {  // the histogram, then the window; where none fits, this finisher filters the row
        if (!weigh_histogram(s, p.workspace, r, segment, task.row, task.top_p)) return;
        try_sampled = false;
      } else if (!split) {
        // One CTA filters the row: the last of its CTAs to arrive, so that
        // in place no write precedes another CTA's read of the sample.
        if (threadIdx.x == 0) s.max_key = 0u;
        __syncthreads();
        if (!publish(s, rec, 0u)) return;
        __syncthreads();  // every thread has read the arrival's answer
      } else {
        const int begin = segment_begin(task.row.len, segment), end = segment_end(task.row.len, segment);
        Elem* out = p.out != nullptr && p.out != p.logits ? RowAgent::output_row(p, r) : nullptr;
        const u32 count = collect(s, task.row, begin, end, RowAgent::unscaled_threshold(task.row, tau), 0xffffffffu, out,
                                  RowAgent::Logit::narrow(p.mask_value));
        if (!publish(s, rec, count)) return;
        const u32 total = static_cast<u32>(s.scratch[1]), max_key = static_cast<u32>(s.scratch[2]);
        __syncthreads();  // every thread has read the totals
        if (finish(s, p, r, rec, total, max_key)) return;
        try_sampled = false;  // the candidates miss the boundary: the exact route (it rewrites the whole row)
      }
    }
    RowAgent::filter_row(s, p, r, try_sampled);
  }
};

}  // namespace sgtopk

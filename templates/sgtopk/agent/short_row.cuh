// Short-row select (the paper's row-local mapping, section 5.5, for rows a
// CTA holds in registers): one CTA per row, the row read once, a histogram
// round over its coarse keys, then rounds over the boundary bin's
// ordered-key offsets, 11 bits at a time (histograms in shared memory), until
// the K-th key's group is either taken whole or is a single key, whose ties
// go to the lower indices; the selected scores are written in row order. A
// row with len <= K is copied.
//
// The including source defines `Config` with the plan's constants:
//   kK, kThreads, kRegisterItems, kWidth, kPitch, kOutPitch, kValues, kSorted,
//   kStarts, kRouteStats, kSortSlots, kIndexTransform, kPageSize, kPageTablePitch.
#pragma once
#include "sgtopk/block/block_scan.cuh"
#include "sgtopk/block/row_order_ranks.cuh"
#include "sgtopk/selection/select_output.cuh"

namespace sgtopk {

template <typename Config>
struct ShortRowAgent {
  static constexpr int kThreads = Config::kThreads;
  static constexpr int kItems = Config::kRegisterItems;
  static constexpr int kK = Config::kK;
  typedef RowOutput<Config::kValues> Output;
  typedef SelectRowTask<Config::kValues> RowTask;
  typedef RowOrderRanks<kThreads, kItems> Ranks;

  // Dynamic shared memory (abi.h): the state, the rank table, the coarse
  // keys, the sort buffer.
  static constexpr unsigned kCoarseOffset = short_row_coarse_offset(kThreads, kItems);
  static constexpr unsigned kSortOffset = short_row_sort_offset(kThreads, kItems);
  static constexpr unsigned kSharedBytes = short_row_shared_bytes(kThreads, kItems, Config::kSorted, Config::kSortSlots);

  // Element u * kThreads + t of the row in thread t's slot u, and its coarse
  // key + 1 (0: past the row) in shared memory: every pass after the load
  // compares these as integers, keying a score again only in the boundary
  // bin (the passes are bound by integer instructions, not by memory), and
  // in shared memory they leave the registers to the scores.
  // The coarse keys are addressed from the dynamic shared memory itself, not
  // through a pointer held in the row: a 32-bit shared address off the
  // thread index, not a 64-bit generic pointer in registers.
  static SGTOPK_DEVICE unsigned short* coarse_keys() {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    return reinterpret_cast<unsigned short*>(shared_bytes + kCoarseOffset);  // [kItems][kThreads]
  }
  struct Row {
    float value[kItems];

    SGTOPK_DEVICE void load(const float* scores, int len) {
      unsigned short* coarse = coarse_keys();
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = u * kThreads + static_cast<int>(threadIdx.x);
        value[u] = i < len ? __ldg(scores + i) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kItems; u += 2) {
        u32 low, high;
        coarse_key_pair(value[u], u + 1 < kItems ? value[u + 1] : 0.0f, low, high);
        coarse[u * kThreads + threadIdx.x] = static_cast<unsigned short>(static_cast<int>(index(u)) < len ? low + 1u : 0u);
        if (u + 1 < kItems)
          coarse[(u + 1) * kThreads + threadIdx.x] =
              static_cast<unsigned short>(static_cast<int>(index(u + 1)) < len ? high + 1u : 0u);
      }
    }
    SGTOPK_DEVICE u32 coarse_of(int u) const { return coarse_keys()[u * kThreads + threadIdx.x]; }
    SGTOPK_DEVICE static u32 index(int u) { return static_cast<u32>(u * kThreads + static_cast<int>(threadIdx.x)); }
  };

  // Where the K-th largest score lies. Round 0 bins by coarse key (FP16
  // bins spread a binade's scores over 32 bins, where the top bits of the
  // FP32 key put them in 4 and the histogram's atomics would queue on them);
  // later rounds bin the boundary bin's members by the offset of their
  // ordered key from the bin's lowest, 11 bits at a time from the top of the
  // bin's span. A score is above the boundary when its coarse key is above
  // `bin`, or it is in the bin and its offset >> shift is above `prefix`;
  // `take` of those level with it are selected: all when take is kWhole,
  // else (shift 0: one key) the lowest indices.
  static constexpr u32 kWhole = 0xffffffffu;
  struct Boundary {
    u32 bin;
    bool refined;  // false: decided by the coarse bin alone
    u32 low_key;   // ordered key of the bin's lowest number
    int shift;
    u32 prefix;
    u32 take;  // kWhole: every score level with the boundary

    // 1: above, 0: level with the boundary, -1: below (or past the row).
    SGTOPK_DEVICE int compare(const Row& row, int u) const {
      const u32 coarse = row.coarse_of(u);  // + 1
      if (coarse != bin + 1u) return coarse > bin + 1u ? 1 : -1;
      if (!refined) return 0;
      const u32 p = (ordered_key(row.value[u]) - low_key) >> shift;
      return p > prefix ? 1 : p == prefix ? 0 : -1;
    }
  };

  // Bits of the ordered-key offsets within coarse bin `bin` (0: one key;
  // NaN's bin 0 holds only key 0).
  static SGTOPK_DEVICE void bin_span(u32 bin, u32& low_key, int& bits) {
    if (bin == 0u) {
      low_key = 0u;
      bits = 0;
      return;
    }
    const float low = coarse_bin_lower_endpoint_direct(bin), high = coarse_bin_lower_endpoint_direct(bin + 1u);
    low_key = ordered_key(low);
    const u32 end = high == high ? ordered_key(high) : ordered_key(__int_as_float(0x7f800000)) + 1u;
    bits = 32 - __clz(end - low_key - 1u);
  }

  // The radix rounds. Both histograms are clear on entry and on return: a
  // round clears its own once the rank search has read it, and the next
  // round's barriers separate that from the round after.
  static SGTOPK_DEVICE Boundary find_boundary(ShortRowState& state, const Row& row) {
    // Round 0: coarse keys.
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const u32 coarse = row.coarse_of(u);
      if (coarse != 0u) atomicAdd(&state.histogram[0][coarse - 1u], 1u);
    }
    __syncthreads();
    const RankBin coarse = find_rank_bin<kThreads, kCoarseBins>(state.histogram[0], static_cast<u32>(kK), state.scratch);
    clear_words<kThreads>(state.histogram[0], kCoarseBins);
    Boundary b{coarse.bin, false, 0u, 0, 0u, static_cast<u32>(kK) - coarse.above};
    if (b.take == coarse.count) {
      b.take = kWhole;
      return b;
    }
    b.refined = true;
    int bits;
    bin_span(b.bin, b.low_key, bits);
    // Rounds 1..3 over the offsets (at most 32 bits: 11 + 11 + 10); none
    // when the bin is one key.
    for (int round = 1; bits > 0; ++round) {
      const int shift = bits > kCoarseBits ? bits - kCoarseBits : 0;
      u32* histogram = state.histogram[round & 1];
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        // Members of this round's group: in the bin, and (after round 1)
        // sharing the prefix resolved so far.
        if (row.coarse_of(u) == b.bin + 1u) {
          const u32 offset = ordered_key(row.value[u]) - b.low_key;
          if (round == 1 || (offset >> b.shift) == b.prefix) atomicAdd(&histogram[(offset >> shift) & (kCoarseBins - 1)], 1u);
        }
      }
      __syncthreads();
      const RankBin found = find_rank_bin<kThreads, kCoarseBins>(histogram, b.take, state.scratch);
      clear_words<kThreads>(histogram, kCoarseBins);
      b.prefix = round == 1 ? found.bin : (b.prefix << (b.shift - shift)) | found.bin;
      b.shift = shift;
      b.take -= found.above;
      bits = shift;
      if (b.take == found.count) {
        b.take = kWhole;
        break;
      }
    }
    return b;
  }

  static SGTOPK_DEVICE void select_row(ShortRowState& state, u32* table, u64* sort_buffer, const RowTask& task) {
    Row row;
    row.load(task.scores, task.len);
    const Boundary boundary = find_boundary(state, row);
    u32 above = 0u, level = 0u;
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int side = boundary.compare(row, u);
      above |= (side > 0 ? 1u : 0u) << u;
      level |= (side == 0 ? 1u : 0u) << u;
    }
    u32 taken = above;
    if (boundary.take == kWhole) {
      taken |= level;
    } else {  // block-uniform: one key, the lowest indices of it
      Ranks::for_each_ranked(level, table, [&](int u, u32 rank) { taken |= (rank < boundary.take ? 1u : 0u) << u; });
      __syncthreads();  // the table is reused below
    }
    Ranks::for_each_ranked(taken, table, [&](int u, u32 slot) { task.out.commit(slot, Row::index(u), row.value[u]); });
    if constexpr (Config::kSorted)
      sort_row_output<kThreads, Config::kSortSlots, Config::kValues>(task.out, task.scores, kK, sort_buffer);
  }

  static SGTOPK_DEVICE void run(const SelectParams& p) {
    SGTOPK_DYNAMIC_SHARED(shared_bytes);
    ShortRowState& state = *reinterpret_cast<ShortRowState*>(shared_bytes);
    u32* table = reinterpret_cast<u32*>(shared_bytes + sizeof(ShortRowState));
    u64* sort_buffer = reinterpret_cast<u64*>(shared_bytes + kSortOffset);
    // One CTA a row: the plan's grid is the launch's row capacity. (A loop
    // over rows keeps its counters in registers the 32-score rows need.)
    const long long r = blockIdx.x;
    if (r >= live_row_count(p, static_cast<long long>(p.rows))) return;
    clear_words<kThreads>(&state.histogram[0][0], 2 * kCoarseBins);
    __syncthreads();
    const RowTask task = select_row_task<Config>(p, r);
    count_route<Config::kRouteStats>(p.route_stats, task.len <= kK ? kRouteShort : kRouteExact);
    if (task.len <= kK) {
      write_whole_row<kThreads, kK, Config::kValues>(task.out, task.scores, task.len);
      if constexpr (Config::kSorted) {
        if (task.len > 1) sort_row_output<kThreads, Config::kSortSlots, Config::kValues>(task.out, task.scores, task.len, sort_buffer);
      }
    } else {
      select_row(state, table, sort_buffer, task);
    }
    transform_indices<kThreads, kK, Config::kIndexTransform, Config::kPageSize, Config::kPageTablePitch>(task.out, p, r);
  }
};

}  // namespace sgtopk

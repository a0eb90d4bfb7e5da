// Every fact the host and the kernels share, declared once: the launch
// parameters, the workspace's row counters, the route-statistic slots, the
// selection state and the shared-memory layout arithmetic. Plain C++17 with
// no system header: the runtime compiles it as C++, NVRTC as a named header,
// and both take sizes from these declarations.
#pragma once

#if defined(__CUDACC__)
#define SGTOPK_ABI_FN __host__ __device__ constexpr
#else
#define SGTOPK_ABI_FN constexpr
#endif

namespace sgtopk {

typedef unsigned int u32;
typedef unsigned long long u64;

// Kernel parameters of a select launch, passed by value.
struct SelectParams {
  const float* scores;   // [rows][pitch]
  const int* lengths;    // [rows] or null: every row has kWidth
  const int* starts;     // [rows] or null
  const int* live_rows;  // scalar or null: every row is live
  int* indices;          // [rows][out_pitch]
  float* values;         // [rows][out_pitch] or null
  void* workspace;       // per-worker frontier slices (the sampled family: row counters first)
  unsigned long long rows;          // row capacity (the plan's)
  unsigned long long* route_stats;  // [kRouteStatSlots] or null (plans with kRouteStats)
  const int* index_offsets;         // [rows] (plans with kIndexTransform 1) or null
  const int* page_table;            // [rows][kPageTablePitch] (plans with kIndexTransform 2) or null
};

// One filter launch's arguments (docs/filter-design.md): per-row top-k,
// top-p and temperature from arrays, or one value each where a pointer is null.
// The filter's logits element type (its Config's kDtype): the values of
// sgtopk_dtype, SGTOPK_F32, SGTOPK_BF16, SGTOPK_F16 (bf16 and fp16 as their
// raw 16-bit patterns; static_asserted against sgtopk.h in runtime/launch.cpp).
constexpr int kFilterF32 = 0, kFilterBf16 = 1, kFilterF16 = 2;
// The outputs a plan may write (its Config's kOutputs, a sum of these): a
// kernel compiled without the candidate and sample outputs holds none of
// their code (the mask's registers and speed stay as they were).
constexpr int kFilterOutMask = 1, kFilterOutCandidates = 2, kFilterOutSample = 4;
// The rows a filter_row kernel takes (its Config's kRows, where declared):
// every row, or, in a plan of two kernels, every row but the top-p-alone
// ones (top-k off, top-p on) and those alone.
constexpr int kFilterRowsAll = 0, kFilterRowsButTopPAlone = 1, kFilterRowsTopPAlone = 2;
// The outputs are chosen by their pointers (null: not written): the mask
// (out), the candidates (candidate_indices and candidate_counts, with
// candidate_logits and candidate_probs optional), the sampled token
// (sampled_tokens).
struct FilterParams {
  const void* logits;        // [rows][pitch] of the Config's kDtype
  void* out;                 // [rows][pitch], the same type: the masked rows (may be logits: in place), or null
  long long pitch;
  int rows, width;           // rows: the plan's capacity
  const int* top_k;          // [rows] or null: top_k_value for every row
  const float* top_p;        // [rows] or null: top_p_value
  const float* temperature;  // [rows] or null: temperature_value
  const int* live_rows;      // scalar or null: every row is live
  int top_k_value;
  float top_p_value, temperature_value, mask_value;
  int* candidate_indices;    // [rows][candidate_pitch] or null: no candidate output
  float* candidate_logits;   // [rows][candidate_pitch] or null
  float* candidate_probs;    // [rows][candidate_pitch] or null
  int* candidate_counts;     // [rows] (with candidate_indices)
  long long candidate_pitch;
  int candidate_capacity;    // 1..kFilterCandidates (with candidate_indices)
  int* sampled_tokens;       // [rows] or null: no sampled token
  const unsigned long long* seeds;  // [rows] or null: seed_value, the row's index the stream
  unsigned long long seed_value;
  void* workspace;           // the filter_split family's row records (filter_split_row_bytes each), or null
  int phase;                 // which of the plan's launches this is (0, or 1: filter_split's second, or a plan's second kernel)
};

// Counters at the start of a persistent family's workspace, restored by the
// last worker out so that the next launch (or graph replay) starts from zero.
struct RowClaims {
  u32 next_row;          // rows claimed after the first wave
  u32 finished_workers;  // workers that have claimed their last row
};
// Bytes reserved for them ahead of the frontier slices (keeps the slices aligned).
constexpr unsigned kRowClaimsBytes = 256u;
static_assert(sizeof(RowClaims) <= kRowClaimsBytes, "the row counters outgrew their reserved bytes");

// The split family's per-row record in its workspace: the segments' arrival
// counter and candidate totals, then the row histogram of the candidates'
// key offsets (the segments add to it; log_offset_bin), all restored by the
// row's finisher (the last segment to arrive) so that the next launch starts
// from zero. Then the candidates (values, then indices) and the finisher's
// frontier slice.
struct SplitRowHeader {
  u32 arrived;   // segments that have published their candidates
  u32 admitted;  // candidates at or above the secondary threshold, every segment
  u32 primary;   // of them, at or above the primary threshold
  u32 overflow;  // nonzero: some candidates were not stored
};
constexpr unsigned kSplitRowHeaderBytes = 256u;
static_assert(sizeof(SplitRowHeader) <= kSplitRowHeaderBytes, "the split row header outgrew its reserved bytes");
constexpr unsigned kSplitRowHistogramBytes = 4u * 2048u;  // a word per coarse bin (checked below)
SGTOPK_ABI_FN unsigned long long split_row_bytes(int candidate_capacity, int frontier_global_capacity) {
  return kSplitRowHeaderBytes + kSplitRowHistogramBytes + 8ull * static_cast<unsigned long long>(candidate_capacity) +
         8ull * static_cast<unsigned long long>(frontier_global_capacity);
}

// Route statistics (include/sgtopk/route_stats.def): one counter per route a
// row can take, the candidate volume, and the cycles per phase.
enum RouteStat {
#define SGTOPK_ROUTE_STAT(slot, name, text) k##name,
#include "sgtopk/route_stats.def"
#undef SGTOPK_ROUTE_STAT
  kRouteStatSlots
};

// Coarse keys: 11 bits, 2048 bins (util/keys.cuh).
constexpr int kCoarseBits = 11;
constexpr int kCoarseBins = 1 << kCoarseBits;
static_assert(kSplitRowHistogramBytes == 4u * kCoarseBins, "the split row histogram has a word per coarse bin");

// Words of scratch the block scans use: the block sum's 32 warp offsets and
// its total, then three per rank (bin, above, count) for up to two ranks
// (and one spare, an even count of words in SelectionState).
constexpr int kScanWords = 33;
constexpr int kRankScratchWords = kScanWords + 3 * 2 + 1;

// Shared state of one row's selection. Lives at the start of dynamic shared memory.
struct SelectionState {
  u32 histogram[kCoarseBins];
  u32 uncounted;        // where branch-free counting sends what it does not count (never read)
  u32 scratch[kRankScratchWords];
  u32 committed;        // output slots filled
  u32 frontier_count;   // candidates of the current group (may exceed capacity)
  u32 next_count;       // candidates carried into the next round
  u32 remaining;        // rank still to fill from the current group
  u32 coarse_boundary;  // round-0 boundary bin
  u32 done;
  u32 floor_bin;        // coarse bins below it cannot hold the K-th value (histogram pass)
  u32 floor_low_key;    // ordered_key of a proven floor bin's lowest number (-inf's until one is known)
  float proposal_primary_low;     // sampled proposal: endpoint(tau0)
  float proposal_secondary_low;   // sampled proposal: endpoint(tau1) <= endpoint(tau0)
  float proposal_primary_high;    // fine proposal: the lowest number above tau0's bin (NaN when none)
  float proposal_secondary_high;  // fine proposal: the same for tau1
  float admit_low;         // sampled routes: the candidates are exactly the x >= admit_low
  u32 admit_by_threshold;  // 1: round-1 membership is x >= admit_low; 0: the coarse boundary bin
  u32 known_key_bits;      // high ordered-key bits the round-1 candidates share (DigitSchedule)
  u32 frontier_high_key;   // sampled routes: the highest stored candidate's ordered key
  u32 units_taken;         // the histogram pass's work units handed out (row/traversal.cuh, for_each_unit)
  u64 prefix;              // rank_key >> shift(last resolved round)
};

// ---- the select families' shared memory: the selection state, then the
// frontier (aliased by the sort buffer), then the direct family's floor marks.

SGTOPK_ABI_FN unsigned selection_state_bytes() { return (static_cast<unsigned>(sizeof(SelectionState)) + 15u) / 16u * 16u; }
SGTOPK_ABI_FN unsigned frontier_shared_bytes(int capacity) { return static_cast<unsigned>(capacity) * 8u; }
SGTOPK_ABI_FN unsigned sort_buffer_bytes(bool sorted, int sort_slots) {
  return sorted ? static_cast<unsigned>(sort_slots) * 8u : 0u;
}

// Floor marks (row/floor_marks.cuh): per thread, a field of loads_in_flight
// bits, rounded up to a power of two, for each block-wide chunk of 16-byte
// vectors of the row's body, packed in 32-bit words.
SGTOPK_ABI_FN int floor_mark_field_bits(int loads_in_flight) {
  return loads_in_flight <= 1 ? 1 : loads_in_flight <= 2 ? 2 : loads_in_flight <= 4 ? 4 : 8;
}
// Block-wide chunks (threads x loads_in_flight vectors) of a row of `width` scores.
SGTOPK_ABI_FN long long body_chunks(long long width, int threads, int loads_in_flight) {
  const long long chunk_vectors = static_cast<long long>(threads) * loads_in_flight;
  return ((width + 3) / 4 + chunk_vectors - 1) / chunk_vectors;
}
// Words per thread for the marks of `chunks` chunks.
SGTOPK_ABI_FN long long floor_mark_words(long long chunks, int loads_in_flight) {
  const int per_word = 32 / floor_mark_field_bits(loads_in_flight);
  return (chunks + per_word - 1) / per_word;
}
// Shared words of the marks, then of the marked vectors' highest bins (2
// bytes each) for the first `bin_chunks` chunks.
SGTOPK_ABI_FN int floor_marks_shared_words(int words, int threads, int bin_chunks, int loads_in_flight) {
  return words * threads + (bin_chunks * threads * loads_in_flight + 1) / 2;
}

SGTOPK_ABI_FN unsigned select_shared_bytes(int frontier_capacity, bool sorted, int sort_slots, int floor_marks_words) {
  const unsigned frontier = frontier_shared_bytes(frontier_capacity), sort = sort_buffer_bytes(sorted, sort_slots);
  return selection_state_bytes() + (frontier > sort ? frontier : sort) + static_cast<unsigned>(floor_marks_words) * 4u;
}

// ---- the split family's: the select families' layout, or where larger the
// finisher's (agent/split.cuh): the state, then threads x finisher_items
// candidate values and indices, then the directly ranked group (128
// members of 16 bytes and a counter).
constexpr unsigned kSplitRankGroupBytes = 128u * 16u + 16u;
SGTOPK_ABI_FN unsigned split_shared_bytes(unsigned select_bytes, int threads, int finisher_items) {
  const unsigned finisher = finisher_items > 0 ? selection_state_bytes() + static_cast<unsigned>(threads) *
                                                                                static_cast<unsigned>(finisher_items) * 8u +
                                                     kSplitRankGroupBytes
                                               : 0u;
  return select_bytes > finisher ? select_bytes : finisher;
}

// ---- the short-row family's shared memory: two digit histograms (a round
// counts into one while the other is cleared for the round after), the scan
// scratch, the row-order rank table (a word per item slot and warp, and the
// total), the row's coarse keys (2 bytes a score), then the sorted option's
// buffer.
struct ShortRowState {
  u32 histogram[2][kCoarseBins];
  u32 scratch[kRankScratchWords];
};
SGTOPK_ABI_FN unsigned short_row_rank_words(int threads, int items) { return static_cast<unsigned>(items * (threads / 32) + 1); }
SGTOPK_ABI_FN unsigned short_row_coarse_offset(int threads, int items) {
  return (static_cast<unsigned>(sizeof(ShortRowState)) + short_row_rank_words(threads, items) * 4u + 15u) / 16u * 16u;
}
SGTOPK_ABI_FN unsigned short_row_sort_offset(int threads, int items) {
  return short_row_coarse_offset(threads, items) + (static_cast<unsigned>(threads * items) * 2u + 15u) / 16u * 16u;
}
SGTOPK_ABI_FN unsigned short_row_shared_bytes(int threads, int items, bool sorted, int sort_slots) {
  return short_row_sort_offset(threads, items) + sort_buffer_bytes(sorted, sort_slots);
}

// ---- the filter_row family's shared memory: one digit round's mass and
// count per digit, the block scan's scratch, the row's total mass and its
// largest key, then the candidates: every key of the row at or above a
// threshold (the sampled route's tau, or the exact route's first digit),
// when that many fit, with their row indices (the sampled route resolves
// ties and writes the kept values from them, without reading the row
// again), and their count. The sample is held in the key array before the
// gather. A plan sizes the buffer (kCandidates; filter.candidate_buffer):
// the most, 8192, keeps the whole at about 88 KB, two CTAs an SM on sm_90
// (227 KB), past the default 48 KB (the plan opts in), under every sm_80+
// per-block limit (99 KB at least); 4032 fit four CTAs an SM.
constexpr int kFilterDigitBits = 11;
constexpr int kFilterCandidates = 8192;  // the largest buffer: 32 KB of keys and 32 KB of indices
template <int kCandidates = kFilterCandidates>
struct FilterRowShared {
  union {
    u32 mass_words[2][1 << kFilterDigitBits];  // a digit's mass: its low words, then its high words (add_mass)
    u64 mass[1 << kFilterDigitBits];           // or the two joined (finish_mass, at 1024 threads)
    float approx_mass[1 << kFilterDigitBits];  // or top-p alone's approximate mass a digit (histogram_pass)
  };
  u32 count[1 << kFilterDigitBits];
  u64 scratch[36];  // a block scan's 33 words and a digit search's answer
  u64 total;
  u32 max_key;
  u32 candidates;  // slots of candidate_key taken (the gather counts past the capacity)
  u32 candidate_key[kCandidates];
  u32 candidate_index[kCandidates];  // the sampled route's: the row index of candidate_key's key (right after the keys:
                                     // top-p alone reads both as one window of keys)
};
// The state before the candidates, in bytes: FilterRowShared<n> is that and 8 n.
constexpr unsigned kFilterRowStateBytes = static_cast<unsigned>(sizeof(FilterRowShared<2>)) - 16u;
static_assert(sizeof(FilterRowShared<kFilterCandidates>) == kFilterRowStateBytes + 8u * kFilterCandidates,
              "the candidates' keys and indices follow the state, with no padding");
// The filter_split family's per-row record in its workspace: the segments'
// arrival counter, their candidates' count (past the capacity too) and the
// row's largest unscaled key, restored by the row's finisher (the last
// segment to arrive) so that the next launch starts from zero; then the
// candidates' unscaled keys and row indices, kFilterSplitRecordKeys of each;
// then, for top-p alone, the segments' histogram of the row's first digits
// (counts, then approximate masses: FilterRowAgent::histogram_pass), which
// the first launch's finisher reads and clears.
struct FilterSplitRowHeader {
  u32 arrived;     // segments that have published their candidates (in each launch)
  u32 candidates;  // keys at or above the row's threshold, every segment (counted past the capacity)
  u32 max_key;     // the row's largest unscaled key (top-p alone: scaled), an atomic max over the segments
  u32 window;      // top-p alone: the histogram's window of first digits, for the second launch (0: the first decided the row)
  u64 mass[2];     // top-p alone, the second launch's sums: Z, and above the window
  u64 unused[4];
};
constexpr unsigned kFilterSplitRowHeaderBytes = 64u;
static_assert(sizeof(FilterSplitRowHeader) == kFilterSplitRowHeaderBytes, "the record's header is 64 bytes");
// Keys a record holds: as many as top-p alone's window in shared memory
// (FilterRowAgent::kWindowKeys), so that the finisher can mask a window of
// more than kFilterCandidates keys without writing the row.
constexpr int kFilterSplitRecordKeys = 2 * kFilterCandidates;
SGTOPK_ABI_FN unsigned long long filter_split_row_bytes() {
  return kFilterSplitRowHeaderBytes + 8ull * static_cast<unsigned long long>(kFilterSplitRecordKeys) +
         8ull * (1ull << kFilterDigitBits);
}

// The filter's sample of `count` from a row of `len` (len past count): runs
// of 2^shift consecutive elements at a fixed stride from element 0. Top-k
// samples runs of one 32-byte sector (a lone element costs its sector too),
// top-p alone single elements (FilterRowAgent::propose; the tests build
// rows against it).
struct FilterSamplePoints {
  int count, stride, shift;
  SGTOPK_ABI_FN int index(int n) const { return (n >> shift) * stride + (n & ((1 << shift) - 1)); }
};
SGTOPK_ABI_FN FilterSamplePoints filter_sample_points(int len, int count, int shift) {
  const int runs = (count + (1 << shift) - 1) >> shift;
  return FilterSamplePoints{count, (len / runs) >> shift << shift, shift};
}

// FilterRowShared<candidates>'s bytes, for a plan's number (rounded to 16).
SGTOPK_ABI_FN unsigned filter_row_shared_bytes(int candidates) {
  return (kFilterRowStateBytes + 8u * static_cast<unsigned>(candidates) + 15u) / 16u * 16u;
}
// filter_row's top-p alone by 16-bit patterns (policy filter.top_p_by_patterns_min_width):
// a 16-bit count a pattern, two to a word, after FilterRowShared.
constexpr unsigned kFilterPatternBinBytes = (1u << 16) * 2u;

}  // namespace sgtopk

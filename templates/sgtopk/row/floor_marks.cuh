// Floor marks: what the exact route's histogram pass tells its
// classification pass about where the top-K can lie.
//
// Pass 1 tests every score against a rising floor, the lowest number of a
// coarse bin already proven to lie at or below the boundary bin (K scores
// seen at or above it). The final boundary bin's lowest number is at least
// every floor the pass used, and pass 2 keeps only scores at or above it
// (committed, or carried as the frontier). So a vector none of whose
// scores passed the floor test holds nothing pass 2 keeps: pass 1 marks, per
// thread and chunk, the vectors that held a passing score (every vector in
// range before a floor exists), and pass 2 loads only those. After the
// first chunks the floor is high, so most of the second read is skipped;
// where a few candidates sit in every warp's chunk the pass's instructions,
// not its bytes, set the time, and the marks save little
// (docs/decisions/2026-11-30-direct-floor-marks.md).
//
// Storage: kLoadsInFlight bits per (thread slot, chunk), packed per slot into
// kWords shared words laid out word-major (words[w * kThreads + slot]). Pass
// 1 may hand a slot's chunks to any warp (row/traversal.cuh, for_each_unit), so
// it sets fields by atomicOr; pass 2 reads, and each thread clears, only its
// own slot's words, so the barriers the passes already have suffice. The
// planner sizes kWords for the plan's width.
//
// Marked bins (kBinChunks > 0): a mark only says a vector passed the floor
// of its moment, and early in a row that floor is low: the first chunk is
// marked whole, the next ones at the K-th score of a few chunks, far more
// vectors than hold a score at or above the final boundary bin. So for the
// first kBinChunks chunks the pass reads (from the row's end when it walks
// backward), pass 1 also keeps each marked vector's highest coarse bin (2
// bytes, shared), and pass 2, knowing the final boundary bin, first unmarks
// there the vectors that do not reach it (prune_below), so it reads only
// those that do. Bins are written for marked vectors only and read only for
// those, so nothing needs clearing between rows. Pruned before the pass, not
// tested as the cursor lists: a shared load in the cursor serialises a
// gathered batch's global loads. Only the first few chunks: past them the
// floor is high, and pass 1's bin stores cost more than the skipped reads
// save (docs/decisions/2026-11-30-direct-marked-bins.md).
#pragma once
#include "sgtopk/util/keys.cuh"
#include "sgtopk/row/rows.cuh"

namespace sgtopk {

template <int kThreads, int kLoadsInFlight, int kWords, int kSparseVectors_ = 0, bool kGathers_ = false,
          int kGatherBatch_ = kLoadsInFlight, int kBinChunks_ = 0, bool kBinsAtEnd_ = false>
struct FloorMarks {
  static constexpr bool kSelective = true;
  // The chunks pass 1 reads first keep their marked vectors' highest bins:
  // kBinChunks of them, the row's last ones where the pass walks backward.
  static constexpr int kBinChunks = kBinChunks_;
  static constexpr bool kBinsAtEnd = kBinsAtEnd_;
  // Shared memory, in words: the marks, then the bins (2 bytes each).
  static constexpr int kSharedWords = floor_marks_shared_words(kWords, kThreads, kBinChunks, kLoadsInFlight);
  // The classification pass gathers the marked vectors kGatherBatch at a time
  // across chunks (row/traversal.cuh's for_each_gathered, through cursor())
  // instead of visiting chunk by chunk, where a warp waits out one memory
  // latency per chunk for its few marked vectors, one chunk after another
  // (docs/decisions/2026-11-30-direct-gather-marked.md).
  static constexpr bool kGathers = kGathers_;
  // Vectors per thread in each gathered batch: the loads in flight before
  // the first is used (the histogram pass's own count is kLoadsInFlight).
  static constexpr int kGatherBatch = kGatherBatch_;
  // A warp none of whose lanes holds more than this many marked vectors of a
  // chunk classifies only those (selection/refinement.cuh, classify_chunk);
  // 0: every slot of the chunk, unrolled.
  static constexpr int kSparseVectors = kSparseVectors_;
  static constexpr int kBits = floor_mark_field_bits(kLoadsInFlight);  // a chunk's field
  static constexpr int kPerWord = 32 / kBits;
  static constexpr u32 kField = kBits == 32 ? ~0u : (1u << kBits) - 1u;

  u32* words;             // kWords * kThreads, shared
  unsigned short* bins;   // kBinChunks * kThreads * kLoadsInFlight, shared, after the words
  int bin_first = 0;      // the row's first chunk with bins (for_row)

  // This row's marks: which of its chunks keep bins.
  SGTOPK_DEVICE FloorMarks for_row(const float* row, int len) const {
    FloorMarks m = *this;
    const int chunks = chunk_count<kThreads * kLoadsInFlight>(vector_body(row, len).vectors);
    m.bin_first = kBinsAtEnd && chunks > kBinChunks ? chunks - kBinChunks : 0;
    return m;
  }

  // Pass 1's writer. Bit u of `vectors`: the chunk's v[u] (chunk `number`,
  // thread slot `slot`) must be read again. The pass may hand a slot's chunks
  // to any warp (for_each_unit), so fields reach their words by atomicOr, on
  // words cleared before the row (clear_own). Past the planned words (never,
  // for rows the plan admits) nothing is stored, and the classification pass
  // reads those chunks whole. A marked vector's bin is its own (one thread
  // visits it): a plain store.
  template <typename Chunk>
  SGTOPK_DEVICE void record(const Chunk& chunk, u32 vectors) const {
    const int w = chunk.number / kPerWord;
    if (vectors != 0u && w < kWords)
      atomicOr(&words[w * kThreads + chunk.slot], (vectors & kField) << ((chunk.number % kPerWord) * kBits));
    const int binned = chunk.number - bin_first;
    if (kBinChunks > 0 && binned >= 0 && binned < kBinChunks) {
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; ++u)
        if ((vectors >> u) & 1u)
          bins[bin_slot(binned, u, chunk.slot)] = static_cast<unsigned short>(coarse_key(chunk.vector_max(u)));
    }
  }
  // This thread's own words: only it reads them (the classification pass),
  // so it may clear them once its own reading is over; the barrier that
  // starts the next row orders the clearing before any record.
  SGTOPK_DEVICE void clear_own() const {
    for (int w = 0; w < kWords; ++w) words[w * kThreads + static_cast<int>(threadIdx.x)] = 0u;
  }
  // Between the passes, once the boundary bin is known: this thread's marks
  // of the chunks with bins lose the vectors whose highest score lies below
  // the bin. Pass 2 reads only this thread's own words, so no barrier.
  SGTOPK_DEVICE void prune_below(u32 boundary) const {
    if constexpr (kBinChunks > 0) {
      const int t = static_cast<int>(threadIdx.x);
      for (int binned = 0; binned < kBinChunks; ++binned) {
        const int number = bin_first + binned;
        if (number >= kWords * kPerWord) break;
        u32& word = words[(number / kPerWord) * kThreads + t];
        const int shift = (number % kPerWord) * kBits;
        u32 keep = (word >> shift) & kField;
        for (u32 marked = keep; marked != 0u; marked &= marked - 1u) {
          const int u = __ffs(marked) - 1;
          if (bins[bin_slot(binned, u, t)] < boundary) keep &= ~(1u << u);
        }
        word = (word & ~(kField << shift)) | (keep << shift);
      }
    }
  }

  // Pass 2: the vectors of chunk `number` to load (row/traversal.cuh's `want`).
  SGTOPK_DEVICE u32 operator()(int number) const {
    if (number >= kWords * kPerWord) return ~0u;
    return (words[(number / kPerWord) * kThreads + static_cast<int>(threadIdx.x)] >> ((number % kPerWord) * kBits)) &
           kField;
  }

  // Can cursor() list a body of `vectors` 16-byte vectors? Not past the
  // planned words (never, for rows the plan admits: then chunk by chunk).
  static SGTOPK_DEVICE bool lists(int vectors) {
    return chunk_count<kThreads * kLoadsInFlight>(vectors) <= kWords * kPerWord;
  }

  // This thread's marked vectors of the body, as body indices in ascending
  // order, then -1. Reads only the words of the row's own chunks.
  struct Cursor {
    const u32* words;
    int word;        // the word `fields` came from
    int last_word;   // the row's last word
    u32 fields;      // its marks not yet listed
    SGTOPK_DEVICE int operator()() {
      while (fields == 0u) {
        if (word >= last_word) return -1;
        ++word;
        fields = words[word * kThreads + static_cast<int>(threadIdx.x)];
      }
      const int bit = __ffs(fields) - 1;
      fields &= fields - 1u;
      const int number = word * kPerWord + bit / kBits;
      return (number * kLoadsInFlight + bit % kBits) * kThreads + static_cast<int>(threadIdx.x);
    }
  };
  SGTOPK_DEVICE Cursor cursor(int vectors) const {
    const int chunks = chunk_count<kThreads * kLoadsInFlight>(vectors);
    return Cursor{words, -1, (chunks + kPerWord - 1) / kPerWord - 1, 0u};
  }

  // Where v[u] of the `binned`-th chunk with bins, in thread slot `slot`, keeps its bin.
  static SGTOPK_DEVICE int bin_slot(int binned, int u, int slot) { return (binned * kLoadsInFlight + u) * kThreads + slot; }
};

// No marks (register rows, the sampled family's recovery, plans without
// the words): the classification pass reads everything.
template <int kThreads, int kLoadsInFlight, int kSparseVectors_, bool kGathers_, int kGatherBatch_, int kBinChunks_,
          bool kBinsAtEnd_>
struct FloorMarks<kThreads, kLoadsInFlight, 0, kSparseVectors_, kGathers_, kGatherBatch_, kBinChunks_, kBinsAtEnd_>
    : EveryVector {
  static constexpr int kSharedWords = 0;
  SGTOPK_DEVICE FloorMarks for_row(const float*, int) const { return *this; }
  SGTOPK_DEVICE void prune_below(u32) const {}
  template <typename Chunk>
  SGTOPK_DEVICE void record(const Chunk&, u32) const {}
  SGTOPK_DEVICE void clear_own() const {}
};

}  // namespace sgtopk

// One worker CTA of a select family on the host (tools/emulate/run): adversarial
// rows in, every row checked against a stable sort. Configuration by -D macros
// (configs.txt).
#include "prelude.h"
#include <vector>
#include <thread>
#include <random>
#include <algorithm>
#include <cmath>
#include <string>
#include "sgtopk/agent/split.cuh"
#include "sgtopk/agent/short_row.cuh"
#include "sgtopk/agent/cluster.cuh"
using namespace sgtopk;

#ifndef K_
#define K_ 256
#endif
#ifndef WIDTH_
#define WIDTH_ 30000
#endif
#ifndef REG_ITEMS
#define REG_ITEMS 0
#endif
#ifndef SMALL_GROUP
#define SMALL_GROUP 64
#endif
#ifndef FSHARED
#define FSHARED 512
#endif
#ifndef FGLOBAL
#define FGLOBAL 1024
#endif
#ifndef Q0
#define Q0 24
#endif
#ifndef Q1
#define Q1 28
#endif
#ifndef VIEW_BLOCK
#define VIEW_BLOCK 1
#endif
#ifndef STRIDE
#define STRIDE 16
#endif
#ifndef STRIDE_WIDE  // rows of at least WIDE_ROW scores: view stride and sample ranks
#define STRIDE_WIDE STRIDE
#endif
#ifndef WIDE_ROW
#define WIDE_ROW (1ll << 40)
#endif
#ifndef Q0_WIDE
#define Q0_WIDE Q0
#endif
#ifndef Q1_WIDE
#define Q1_WIDE Q1
#endif
#ifndef AGG
#define AGG false
#endif
#ifndef ENDPOINT
#define ENDPOINT false
#endif
#ifndef PREFETCH
#define PREFETCH false
#endif
#ifndef SORTED
#define SORTED false
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef VECTOR
#define VECTOR true
#endif
#ifndef SAMPLED
#define SAMPLED 1
#endif
#ifndef BACKWARD
#define BACKWARD false
#endif
#ifndef FINE_TRIGGER
#define FINE_TRIGGER 0
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef SHORT_ROW
#define SHORT_ROW 0  // the short-row family: the row in REG_ITEMS registers a thread (REG_ITEMS * THREADS >= WIDTH_)
#endif
#ifndef SCORES_IN_REGISTERS
#define SCORES_IN_REGISTERS true  // short_row: false reads the boundary bin's and the selected scores again
#endif
#ifndef TRANSFORM
#define TRANSFORM 0  // the fused index transform: 1 offsets, 2 page table
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE 64
#endif
#ifndef CLUSTER
#define CLUSTER 0  // the cluster family: CLUSTER CTAs a row, run at once
#endif
#ifndef SEGMENT_ALIGN
#define SEGMENT_ALIGN 64
#endif
#ifndef SEGMENTS
#define SEGMENTS 4
#endif
#ifndef MIN_SEGMENT
#define MIN_SEGMENT 4096
#endif
#ifndef CANDIDATES
#define CANDIDATES 4096
#endif
#ifndef FINISHER_ITEMS
#define FINISHER_ITEMS 8  // split: the finisher's candidates a thread in shared memory (0: a stored frontier, refined)
#endif
#ifndef PREFETCH_BEFORE_VIEW_KB
#define PREFETCH_BEFORE_VIEW_KB 0  // split: the segment's first KB asked of L2 before the proposal
#endif
#ifndef PREFETCH_AFTER_VIEW_KB
#define PREFETCH_AFTER_VIEW_KB 0  // split: the next KB asked of L2 once the view is read
#endif
#ifndef PREFETCH_AHEAD_CHUNKS
#define PREFETCH_AHEAD_CHUNKS 0  // split: the segment pass's L2 look-ahead in chunks
#endif
// Floor marks as the planner sizes them (templates/sgtopk/abi.h): streamed
// rows with vector loads only.
static constexpr int floor_mark_words() {
  return (REG_ITEMS == 0 && VECTOR) ? static_cast<int>(sgtopk::floor_mark_words(sgtopk::body_chunks(WIDTH_, THREADS, UNROLL), UNROLL)) : 0;
}
#ifndef SPARSE
#define SPARSE 2
#endif
#ifndef GATHER
#define GATHER true
#endif
#ifndef GATHER_BATCH
#define GATHER_BATCH UNROLL
#endif
#ifndef UNITS
#define UNITS (VECTOR && !PREFETCH)
#endif
#ifndef RAISE_AT_CLAIM
#define RAISE_AT_CLAIM true
#endif
#ifndef RAISES_PER_CHUNK
#define RAISES_PER_CHUNK 2
#endif
#ifndef MARK_WORDS
#define MARK_WORDS floor_mark_words()
#endif
#ifndef BINS
#define BINS 2
#endif
constexpr long long kPitchV = WIDTH_ + 7;
static constexpr int ceil_log2(long long n) { int b = 0; while ((1ll << b) < n) ++b; return b; }
static constexpr int sort_slots() { int s = 1; while (s < K_) s <<= 1; return s; }
struct Config {
  static constexpr int kK = K_;
  static constexpr int kThreads = THREADS;
  static constexpr long long kWidth = WIDTH_;
  static constexpr long long kPitch = kPitchV;
  static constexpr long long kOutPitch = K_;
  static constexpr bool kValues = true;
  static constexpr bool kSorted = SORTED;
  static constexpr bool kStarts = true;
  static constexpr bool kRouteStats = true;
  static constexpr int kRegisterItems = REG_ITEMS;
  static constexpr bool kScoresInRegisters = SCORES_IN_REGISTERS;
  static constexpr int kLoadsInFlight = UNROLL;
  static constexpr bool kPrefetchNextChunk = PREFETCH;
  static constexpr int kPrefetchL2Chunks = 0;
  static constexpr bool kAggregateHistogram = AGG;
  static constexpr bool kEndpointClassification = ENDPOINT;
  static constexpr bool kHistogramBackward = BACKWARD;
  static constexpr bool kVectorLoads = VECTOR;
  static constexpr int kIndexBits = ceil_log2(WIDTH_) > 15 ? ceil_log2(WIDTH_) : 15;  // 15 for the default 30000
  static constexpr int kFrontierSharedCapacity = FSHARED;
  static constexpr int kFrontierGlobalCapacity = FGLOBAL;
  static constexpr int kSortSlots = SORTED ? sort_slots() : 1;
  static constexpr int kSmallGroup = SMALL_GROUP < THREADS ? (SMALL_GROUP < FSHARED + FGLOBAL ? SMALL_GROUP : FSHARED + FGLOBAL)
                                                           : (THREADS < FSHARED + FGLOBAL ? THREADS : FSHARED + FGLOBAL);
  static constexpr int kViewLoadsInFlight = 3;
  static constexpr int kViewBlock = VIEW_BLOCK;
  static constexpr int kStrideWide = STRIDE_WIDE;
  static constexpr int kStrideNarrow = STRIDE;
  static constexpr long long kWideRowThreshold = WIDE_ROW;
  static constexpr int kQ0Wide = Q0_WIDE, kQ1Wide = Q1_WIDE, kQ0Narrow = Q0, kQ1Narrow = Q1;
  static constexpr int kFineTriggerWide = FINE_TRIGGER, kFineTriggerNarrow = FINE_TRIGGER;
  static constexpr int kFloorMarkWords = (SAMPLED || SPLIT || CLUSTER) ? 0 : MARK_WORDS;
  static constexpr int kMarkedBinChunks = (SAMPLED || SPLIT || CLUSTER) ? 0 : BINS;
  static constexpr int kClusterSize = CLUSTER;
  static constexpr int kSegmentAlign = SEGMENT_ALIGN;
  static constexpr int kSegments = SEGMENTS;
  static constexpr long long kMinSegmentWidth = MIN_SEGMENT;
  static constexpr int kCandidateCapacity = CANDIDATES;
  static constexpr int kFinisherItems = FINISHER_ITEMS;
  static constexpr int kPrefetchBeforeViewKb = PREFETCH_BEFORE_VIEW_KB;
  static constexpr int kPrefetchAfterViewKb = PREFETCH_AFTER_VIEW_KB;
  static constexpr int kPrefetchAheadChunks = PREFETCH_AHEAD_CHUNKS;
  static constexpr int kIndexTransform = TRANSFORM;
  static constexpr int kPageSize = TRANSFORM == 2 ? PAGE_SIZE : 0;
  static constexpr long long kPageTablePitch = TRANSFORM == 2 ? (WIDTH_ + PAGE_SIZE - 1) / PAGE_SIZE : 0;
  static constexpr int kSparseVectors = SPARSE;
  static constexpr bool kGatherMarked = GATHER;
  static constexpr int kGatherBatch = GATHER_BATCH;
  static constexpr bool kWorkUnits = UNITS && !CLUSTER;
  static constexpr bool kRaiseAtClaim = RAISE_AT_CLAIM;
  static constexpr int kRaisesPerChunk = RAISES_PER_CHUNK;
};

static unsigned okey(float x) {
  unsigned b = __float_as_uint(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0u;
  if (b == 0x80000000u) b = 0u;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

int main(int argc, char** argv) {
  if (ceil_log2(WIDTH_) > Config::kIndexBits) { std::printf("index bits\n"); return 2; }
  const int rows = argc > 1 ? std::atoi(argv[1]) : 60;
  const unsigned seed = argc > 2 ? std::atoi(argv[2]) : 1;
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> scores(rows * kPitchV);
  std::vector<int> lens(rows), starts(rows), fam(rows);
  for (int r = 0; r < rows; ++r) {
    int f = r % 14; fam[r] = f;
    int len;
    int pick = (r / 14) % 6;
    if (pick == 0) len = WIDTH_;
    else if (pick == 1) len = std::max(0, K_ + (int)(rng() % 3) - 1);
    else if (pick == 2) len = rng() % (WIDTH_ + 1);
    else len = WIDTH_ - (int)(rng() % 64);
    lens[r] = len;
    starts[r] = rng() % (kPitchV - len + 1);
    float* row = scores.data() + r * kPitchV;
    for (long long i = 0; i < kPitchV; ++i) row[i] = __uint_as_float(0x7fc00000u | (rng() & 0xffff));  // garbage
    row += starts[r];
    const int phase = rng() % 64;
    for (int i = 0; i < len; ++i) {
      float x;
      switch (f) {
        case 0: x = u(rng); break;
        case 1: x = g(rng); break;
        case 2: x = 1.0f; break;
        case 3: { x = std::max(0.f, g(rng)); if (x == 0.f && (rng() & 1)) x = -0.0f; break; }
        case 4: x = std::round(g(rng) * 4.f) / 4.f; break;
        case 5: x = (rng() % 10 < 3) ? NAN : g(rng) * 100.f; break;
        case 6: x = (rng() % 100 < 97) ? -INFINITY : g(rng); break;
        case 7: x = i * 1e-3f; break;
        case 8: x = (i % 64 == phase) ? 10.f + g(rng) : g(rng); break;
        case 9: { int k = rng() % 4; x = k == 0 ? g(rng) * 1e5f : k == 1 ? g(rng) * 1e-40f : k == 2 ? g(rng) * 65504.f : g(rng) * 1e-7f; break; }
        case 10: x = (rng() % 1000 == 0) ? 50.f + g(rng) : g(rng) * 0.1f; break;
        case 11: x = (rng() % 100 < 99) ? NAN : 1.0f; break;  // fewer than K numbers
        case 12: x = -(float)i; break;
        default: x = (rng() % 2) ? INFINITY : std::round(g(rng)); break;
      }
      row[i] = x;
    }
  }
  std::vector<int> indices(rows * K_, -7);
  std::vector<float> values(rows * K_, 0.f);
  typedef typename std::conditional<
      SHORT_ROW, ShortRowAgent<Config>,
      typename std::conditional<
          SPLIT, SplitAgent<Config>,
          typename std::conditional<CLUSTER, ClusterAgent<Config>,
                                    typename std::conditional<SAMPLED, SampledAgent<Config>, DirectExactAgent<Config>>::type>::type>::type>::type
      Agent;
  static_assert(!SHORT_ROW || REG_ITEMS * THREADS >= WIDTH_, "a short row fits its CTA's registers");
  // The split family: one record per row, and one CTA per row and segment,
  // run one after another in a shuffled order (any order is a legal schedule,
  // and it varies which CTA finishes a row).
  const size_t record_bytes = split_row_bytes(CANDIDATES, FGLOBAL);
  // cluster: a frontier slice per CTA of the launch.
  std::vector<unsigned char> workspace(SPLIT     ? rows * record_bytes
                                       : CLUSTER ? (size_t)rows * CLUSTER * FGLOBAL * 8 + 64
                                                 : kRowClaimsBytes + (size_t)FGLOBAL * 8 + 64,
                                       0);
  unsigned long long stats[kRouteStatSlots] = {};
  SelectParams p{};
  p.scores = scores.data(); p.lengths = lens.data(); p.starts = starts.data(); p.live_rows = nullptr;
  p.indices = indices.data(); p.values = values.data(); p.workspace = workspace.data(); p.rows = rows; p.route_stats = stats;
  // The fused index transform: offsets r * 7919 + 3; a page table that maps
  // row r's page q to r * pages + (pages - 1 - q). Undone before the check.
  const long long pages = (WIDTH_ + PAGE_SIZE - 1) / PAGE_SIZE;
  std::vector<int> offsets(rows), table(rows * pages);
  for (int r = 0; r < rows; ++r) {
    offsets[r] = r * 7919 + 3;
    for (long long q = 0; q < pages; ++q) table[r * pages + q] = static_cast<int>(r * pages + (pages - 1 - q));
  }
  p.index_offsets = TRANSFORM == 1 ? offsets.data() : nullptr;
  p.page_table = TRANSFORM == 2 ? table.data() : nullptr;
  static_assert(Agent::kSharedBytes <= sizeof(emu_shared));
  blockDim.x = THREADS;
  // A cluster's CTAs run at once, each with its own shared memory (poisoned),
  // barrier and warps; every other family runs one CTA at a time.
  const int ctas = CLUSTER ? CLUSTER : 1;
  std::vector<std::vector<unsigned char>> cta_shared(ctas, std::vector<unsigned char>(sizeof(emu_shared) + 16, 0xcd));
  std::vector<EmuCta> cta(ctas);
  EmuCluster cluster;
  cluster.bar = new std::barrier<>(ctas * THREADS);
  cluster.size = static_cast<unsigned>(ctas);
  for (int c = 0; c < ctas; ++c) {
    std::uintptr_t at = reinterpret_cast<std::uintptr_t>(cta_shared[c].data());
    cta[c].shared = reinterpret_cast<unsigned char*>((at + 15) & ~std::uintptr_t{15});
    cta[c].block = new std::barrier<>(THREADS);
    cta[c].warps = new EmuWarp[THREADS / 32];
    cta[c].cluster = CLUSTER ? &cluster : nullptr;
    cta[c].rank = static_cast<unsigned>(c);
    cluster.ctas[c] = &cta[c];
  }
  // split: SEGMENTS CTAs a row; short_row: one CTA a row; cluster: one
  // cluster a row (clusters numbered here); else one CTA loops over the rows.
  std::vector<unsigned> blocks(SPLIT ? rows * SEGMENTS : (SHORT_ROW || CLUSTER) ? rows : 1);
  for (size_t b = 0; b < blocks.size(); ++b) blocks[b] = static_cast<unsigned>(b);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  gridDim.x = static_cast<unsigned>(blocks.size() * ctas);
  for (unsigned b : blocks) {
    std::vector<std::thread> ts;
    for (int c = 0; c < ctas; ++c)
      for (int t = 0; t < THREADS; ++t)
        ts.emplace_back([&, t, c, b] {
          emu_cta = &cta[c];
          blockIdx.x = CLUSTER ? b * ctas + c : b;
          threadIdx.x = t;
          Agent::run(p);
        });
    for (auto& t : ts) t.join();
  }
  // check
  int bad_rows = 0;
  for (int r = 0; r < rows; ++r) {
    const float* row = scores.data() + r * kPitchV + starts[r];
    const int len = lens[r];
    std::vector<int> got(indices.begin() + r * K_, indices.begin() + (r + 1) * K_);
    for (int& i : got) {
      if (i < 0) continue;
      if (TRANSFORM == 1) i -= offsets[r];
      if (TRANSFORM == 2) i = static_cast<int>((pages - 1 - (i / PAGE_SIZE - r * pages)) * PAGE_SIZE + i % PAGE_SIZE);
    }
    std::vector<int> want;
    if (len <= K_) {
      for (int i = 0; i < K_; ++i) want.push_back(i < len ? i : -1);
    } else {
      std::vector<int> idx(len);
      for (int i = 0; i < len; ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return okey(row[a]) > okey(row[b]); });
      want.assign(idx.begin(), idx.begin() + K_);
    }
    bool ok = true;
    std::vector<int> gs = got, ws = want;
    if (SORTED && len > K_) { ok = got == want; }
    std::sort(gs.begin(), gs.end()); std::sort(ws.begin(), ws.end());
    if (gs != ws) ok = false;
    for (int s = 0; s < K_ && ok; ++s) {
      int i = got[s];
      float v = values[r * K_ + s];
      if (i >= 0 && __float_as_uint(v) != __float_as_uint(row[i])) { ok = false; std::printf("value mismatch row %d slot %d\n", r, s); }
    }
    if (!ok) {
      if (bad_rows < 10) {
        int missing = 0; std::vector<int> d;
        std::set_difference(ws.begin(), ws.end(), gs.begin(), gs.end(), std::back_inserter(d));
        std::printf("BAD row %d family %d len %d start %d: %zu expected indices missing (first %d)\n", r, fam[r], len, starts[r], d.size(), d.empty() ? -99 : d[0]);
        (void)missing;
      }
      ++bad_rows;
    }
  }
  std::printf("rows %d bad %d | short %llu noview %llu primary %llu band %llu exact %llu candidates %llu%s\n", rows,
              bad_rows, stats[0], stats[1], stats[2], stats[3], stats[4], stats[5],
              SPLIT ? (" from_histogram " + std::to_string(stats[kSplitFromHistogram])).c_str() : "");
  unsigned claims[2]; std::memcpy(claims, workspace.data(), 8);
  if (!SPLIT && SAMPLED && (claims[0] || claims[1])) std::printf("claims not restored %u %u\n", claims[0], claims[1]);
  int unrestored = 0;
  for (int r = 0; SPLIT && r < rows; ++r) {
    SplitRowHeader h;
    std::memcpy(&h, workspace.data() + r * record_bytes, sizeof h);
    unsigned bins[kSplitRowHistogramBytes / 4];  // the row histogram, cleared by the finisher too
    std::memcpy(bins, workspace.data() + r * record_bytes + kSplitRowHeaderBytes, sizeof bins);
    bool histogram_clear = true;
    for (unsigned b : bins) histogram_clear = histogram_clear && b == 0u;
    if (h.arrived || h.admitted || h.primary || h.overflow || !histogram_clear) ++unrestored;
  }
  if (unrestored) std::printf("claims not restored: %d split records\n", unrestored);
  return bad_rows || unrestored ? 1 : 0;
}

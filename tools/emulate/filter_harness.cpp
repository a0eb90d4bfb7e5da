// The filter template (agent/filter_row.cuh) on the host: one CTA, one OS
// thread per CUDA thread, over rows of every generator family and the
// filter's own adversaries (-inf fractions, NaN patterns, tied and
// near-equal logits at the top-p boundary), each row with its own k, p and
// temperature (edge values included), every masked row checked against the
// CPU reference (reference/filter.h); the last two rows lie past live_rows
// and must stay untouched. Vocabularies above abi.h's kFilterCandidates take
// both of the kernel's top-k paths (the candidate buffer, and the row when
// the candidates overflow it); smaller ones only the buffer's.
// Built by tools/emulate/run.
// TOPP_HEAVY makes three rows in four top-p alone.
// DTYPE 1 / 2: bf16 / fp16 logits (rows made in fp32 and rounded), each row
// checked against the reference of its widened values; MASK_VALUE: the mask
// (a finite one is narrowed, by round to nearest even).
// SAMPLE_SIZE / TOPP_SAMPLE_SIZE / SAMPLE_SIGMAS: the sampled route's Config
// (filter.sample_size, filter.top_p_sample_size, filter.sample_sigmas). EXPECT_ROUTES: fail unless some row took the
// sampled route and some row fell back from it to the exact one. IN_PLACE:
// out is logits.
// CANDIDATES=C: the candidate output with capacity C (row stride C + 3),
// checked against the reference: the count (one the contract accepts), the
// first min(count, C) indices in order, their scaled logits (bits) and
// probabilities (1e-6 relative; the same integer masses as the reference's),
// every other entry untouched. SAMPLE: the sampled token, checked exactly
// against the reference's draw (per-row seeds; SCALAR_SEED: one seed and the
// row as the stream). NO_MASK: no mask output (out is null; the logits must
// be left as they were).
// SEGMENTS=S: the filter_split family, S CTAs a row (one record a row in a
// workspace, every header restored afterwards), run one after another in a
// shuffled order (any order is a legal schedule, and it varies which CTA
// finishes a row).
// Without CANDIDATES or SAMPLE the kernel is compiled for the mask alone
// (kOutputs), as a plan without those outputs is: the code paths only such
// kernels hold (top-p over a few survivors in one warp, the exact route's
// barrier-free write) run here.
// PATTERN_BINS: the two kernels of a plan with filter.top_p_by_patterns_min_width,
// one after the other: the top-p-alone rows by 16-bit pattern counts in the
// second, the others in the first.
// Usage: filter_harness [ROWS] [SEED] [OUT_FILE: the output rows, raw]
#include "prelude.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "reference/filter.h"
#include "reference/row_families.h"

// The rows each route took (thread 0 counts): the template's hook.
inline std::atomic<long> g_routes[3];
#define SGTOPK_FILTER_ROUTE(route) (threadIdx.x == 0 ? (void)g_routes[route].fetch_add(1) : (void)0)
#include "sgtopk/agent/filter_split.cuh"
using namespace sgtopk;

#ifndef THREADS
#define THREADS 256
#endif
#ifndef VOCAB
#define VOCAB 3000
#endif
#ifndef DTYPE  // the logits' element type: abi.h's kFilterF32, kFilterBf16, kFilterF16
#define DTYPE 0
#endif
#ifndef SAMPLE_SIZE  // filter.sample_size; one key a thread with the outputs at 1024 threads, as the planner gives
#if (defined(CANDIDATES) || defined(SAMPLE)) && THREADS >= 1024
#define SAMPLE_SIZE THREADS
#else
#define SAMPLE_SIZE 2048
#endif
#endif
#ifndef TOPP_SAMPLE_SIZE  // filter.top_p_sample_size
#define TOPP_SAMPLE_SIZE (SAMPLE_SIZE < 1024 ? SAMPLE_SIZE : 1024)
#endif
#ifndef SAMPLE_SIGMAS  // filter.sample_sigmas
#define SAMPLE_SIGMAS 4
#endif
#ifndef LOADS_IN_FLIGHT  // filter.loads_in_flight
#define LOADS_IN_FLIGHT 4
#endif
#ifndef MASK_VALUE
#define MASK_VALUE (-std::numeric_limits<float>::infinity())
#endif
#ifndef CANDIDATE_BUFFER  // filter.candidate_buffer (mask-only plans; the planner keeps 8192 with the outputs)
#define CANDIDATE_BUFFER 8192
#endif

struct Config {
  static constexpr int kThreads = THREADS;
  static constexpr int kDtype = DTYPE;
  static constexpr int kSampleSize = SAMPLE_SIZE;
  static constexpr int kTopPSampleSize = TOPP_SAMPLE_SIZE;
  static constexpr int kSampleSigmas = SAMPLE_SIGMAS;
  static constexpr int kLoadsInFlight = LOADS_IN_FLIGHT;
  static constexpr int kCandidates = CANDIDATE_BUFFER;
#if defined(CANDIDATES) || defined(SAMPLE)
  static constexpr int kOutputs = kFilterOutMask | kFilterOutCandidates | kFilterOutSample;  // the pointers choose
#else
  static constexpr int kOutputs = kFilterOutMask;  // the mask alone, as a default plan compiles it
#endif
#ifdef SEGMENTS
  static constexpr int kSegments = SEGMENTS;
#ifndef PREFETCH_BEFORE_SAMPLE_KB
#define PREFETCH_BEFORE_SAMPLE_KB 0
#endif
  static constexpr int kPrefetchBeforeSampleKb = PREFETCH_BEFORE_SAMPLE_KB;  // the segment's first KB asked of L2
#endif
#ifndef PREFETCH_AHEAD_STEPS
#define PREFETCH_AHEAD_STEPS 0
#endif
  static constexpr int kPrefetchAheadSteps = PREFETCH_AHEAD_STEPS;  // the passes' L2 look-ahead in steps
#ifdef PATTERN_BINS
  static constexpr int kPatternBins = 0;
  static constexpr int kRows = kFilterRowsButTopPAlone;  // the top-p-alone rows are the second kernel's
#endif
};
using Agent = FilterRowAgent<Config>;
#ifdef PATTERN_BINS
// The plan's second kernel (runtime/families/filter_row.cpp): the top-p-alone
// rows by 16-bit patterns.
struct SecondConfig : Config {
  static constexpr int kCandidates = kFilterCandidates;  // as the planner gives the second kernel
  static constexpr int kPatternBins = 1;
  static constexpr int kRows = kFilterRowsTopPAlone;
};
using SecondAgent = FilterRowAgent<SecondConfig>;
#endif
#ifdef SEGMENTS
using Launched = FilterSplitAgent<Config>;
constexpr int kSegments = SEGMENTS;
#else
using Launched = Agent;
constexpr int kSegments = 1;
#endif
using Elem = Agent::Elem;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The filter's own adversaries, by index; rows of the generator families otherwise.
std::vector<float> adversary(int which, int vocab, std::mt19937_64& rng) {
  std::normal_distribution<float> logit(0.0f, 2.0f);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = logit(rng);
  switch (which) {
    case 0:  // -inf fractions (grammar masks)
    case 1:
    case 2: {
      const double fraction = which == 0 ? 0.5 : which == 1 ? 0.9 : 0.99;
      for (float& x : row)
        if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < fraction) x = -kInf;
      break;
    }
    case 3: std::fill(row.begin(), row.end(), -kInf); break;               // all -inf
    case 4: row[static_cast<size_t>(rng() % vocab)] = std::nanf(""); break;  // one NaN
    case 5:                                                                  // NaN in the top
      for (int i = 0; i < 5; ++i) row[static_cast<size_t>(rng() % vocab)] = std::nanf("");
      row[static_cast<size_t>(rng() % vocab)] = 50.0f;
      break;
    case 6: std::fill(row.begin(), row.end(), std::nanf("")); break;  // all NaN
    case 7: {  // many equal top tokens (the top-p boundary inside a tie)
      for (float& x : row) x = -5.0f;
      for (int i = 0; i < std::min(vocab, 1000); ++i) row[static_cast<size_t>(rng() % vocab)] = 3.0f;
      break;
    }
    case 8:  // near-equal logits (spread 1e-6)
      for (float& x : row) x = 1.0f + std::uniform_real_distribution<float>(0.0f, 1e-6f)(rng);
      break;
    case 9:  // few finite values among -inf (fewer than k)
      std::fill(row.begin(), row.end(), -kInf);
      for (int i = 0; i < 7; ++i) row[static_cast<size_t>(rng() % vocab)] = logit(rng);
      break;
    case 10: row[static_cast<size_t>(rng() % vocab)] = kInf; row[static_cast<size_t>(rng() % vocab)] = kInf; break;
    case 11: {  // the top-k candidates one under, at or one over the buffer's capacity (a tie at the top)
      const int copies = std::min(vocab, kFilterCandidates - 1 + static_cast<int>(rng() % 3));
      for (int i = 0; i < copies; ++i) row[static_cast<size_t>(i)] = 9.0f;
      std::shuffle(row.begin(), row.end(), rng);
      break;
    }
    case 13:  // the sample misses the mass: its points at 0 (every 100th at 9), the rest just below 0
    case 14: {  // the sample holds the top: its points above every other key (top-k falls back)
      const bool top_k = which == 14;  // top-k's sample (runs) or top-p alone's (single elements)
      const FilterSamplePoints points = Agent::sample_points(vocab, top_k);
      for (float& x : row) x = which == 13 ? -0.01f : x;
      for (int j = 0; j < points.count; ++j)
        row[static_cast<size_t>(points.index(j))] =
            which == 13 ? (j % 100 == 0 ? 9.0f : 0.0f) : 10.0f + 1e-3f * static_cast<float>(j % 1000);
      break;
    }
    case 12:  // a narrow spread at the top: distinct in fp32, many ties once rounded to bf16 / fp16
      for (float& x : row)
        if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < 0.2) x = 3.0f + std::uniform_real_distribution<float>(0.0f, 0.05f)(rng);
      break;
    default: break;
  }
  return row;
}

// The host's own conversions, independent of the template's: fp16 by the
// compiler's _Float16 (round to nearest even), bf16 by picking the nearer of
// the two neighbours in double (ties to the even pattern).
Elem narrow(float x) {
  if constexpr (DTYPE == kFilterF32) {
    return x;
  } else if constexpr (DTYPE == kFilterF16) {
    return emu_f16_bits(x);
  } else {
    if (std::isnan(x)) return static_cast<Elem>(0x7fc0);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    if (std::isinf(x)) return static_cast<Elem>(bits >> 16);
    const uint16_t lo = static_cast<uint16_t>(bits >> 16), hi = static_cast<uint16_t>(lo + 1u);
    const double d_lo = std::fabs(static_cast<double>(sgtopk::reference::bf16_to_float(lo)) - x);
    // Past the largest finite value the next pattern is infinity: IEEE rounds
    // as if it were 2^128.
    const double v_hi = (hi & 0x7f80u) == 0x7f80u ? std::copysign(std::ldexp(1.0, 128), x)
                                                  : static_cast<double>(sgtopk::reference::bf16_to_float(hi));
    const double d_hi = std::fabs(v_hi - x);
    return d_lo < d_hi || (d_lo == d_hi && (lo & 1u) == 0u) ? lo : hi;
  }
}
std::vector<float> widen(const Elem* x, int64_t n) {
  if constexpr (DTYPE == kFilterF32) return {x, x + n};
  else if constexpr (DTYPE == kFilterF16) return sgtopk::reference::widen_fp16(reinterpret_cast<const uint16_t*>(x), n);
  else return sgtopk::reference::widen_bf16(reinterpret_cast<const uint16_t*>(x), n);
}
bool same_bits(Elem a, Elem b) { return std::memcmp(&a, &b, sizeof(Elem)) == 0; }

}  // namespace

// The template's temperature scaling (x times 1 / T in double) against
// IEEE float division: random bit patterns of x over temperatures from the
// smallest subnormal to the largest float; the bad count.
long check_divide(std::mt19937_64& rng) {
  std::vector<float> ts = {0.7f, 1.9f, 3.0f, 0.1f, 1e-45f, 1e-40f, 1.17549435e-38f, 1e-30f, 1e30f, 3.4028235e38f};
  for (int i = 0; i < 20; ++i) {
    const float t = std::bit_cast<float>(static_cast<uint32_t>(rng()) & 0x7fffffffu);
    if (t > 0.0f && t < kInf) ts.push_back(t);
  }
  long bad = 0;
  for (const float t : ts) {
    const double inverse = 1.0 / static_cast<double>(t);
    for (int i = 0; i < 20000; ++i) {
      const float x = std::bit_cast<float>(static_cast<uint32_t>(rng())), want = x / t, got = Agent::divide(x, inverse);
      if (std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(got) && !(std::isnan(want) && std::isnan(got))) ++bad;
    }
  }
  return bad;
}

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 60;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 7);
  std::mt19937_64 divide_rng(seed);  // its own: the rows stay those of the seed
  if (const long bad = check_divide(divide_rng); bad != 0) {
    std::printf("BAD: the temperature scaling differs from float division %ld times\n", bad);
    return 1;
  }
  const int vocab = VOCAB;
  const long long pitch = vocab + 5;
  const auto families = sgtopk::rows::all_row_families();
  const Elem untouched = narrow(12345.0f);
  std::vector<Elem> logits(static_cast<size_t>(rows * pitch), narrow(0.0f)), out(logits.size(), untouched);
  std::vector<int> ks(static_cast<size_t>(rows));
  std::vector<float> ps(static_cast<size_t>(rows)), ts(static_cast<size_t>(rows));
  // 100 and 250: top-p over more survivors than warp 0 sorts, fewer than the CTA's pieces hold (top_p_sorted).
  const int k_values[] = {1, 2, 7, 50, 100, 250, 1000, vocab - 1, vocab, vocab + 3, 0, -4};
  const float p_values[] = {0.9f, 0.5f, 0.99f, 1e-7f, 0.0f, -1.0f, 1.0f, 1.5f, std::nanf(""), 0.999999f};
  const float t_values[] = {1.0f, 1.0f, 1.0f, 0.7f, 1.9f, 3.0f, 0.0f, -1.0f, kInf};
  for (int r = 0; r < rows; ++r) {
    const std::vector<float> row =
        r % 2 == 0 ? adversary(static_cast<int>(rng() % 16), vocab, rng)
                   : sgtopk::rows::make_row(families[rng() % families.size()], vocab, 64, rng);
    // Rows are made in fp32 and rounded: bf16 / fp16 rows tie far more often.
    std::transform(row.begin(), row.end(), logits.begin() + r * pitch, narrow);
    ks[static_cast<size_t>(r)] = k_values[rng() % 12];
    ps[static_cast<size_t>(r)] = p_values[rng() % 10];
    ts[static_cast<size_t>(r)] = t_values[rng() % 9];
#ifdef TOPP_HEAVY
    // Three rows in four: top-p alone (its own path), p below 1.
    if (rng() % 4 != 0) {
      const float p_on[] = {0.9f, 0.5f, 0.99f, 1e-7f, 0.999999f, 0.0f, 0.7f, 0.95f};
      ks[static_cast<size_t>(r)] = 0;
      ps[static_cast<size_t>(r)] = p_on[rng() % 8];
    }
#endif
  }
#ifdef IN_PLACE
  constexpr bool in_place = true;
  out = logits;
#else
  constexpr bool in_place = false;
#endif
  // What an element out of reach of the kernel must still hold.
  auto untouched_at = [&](size_t i) { return in_place ? logits[i] : untouched; };
  // The candidate and sample outputs, poisoned: what the kernel does not write stays so.
  const int poison_index = -7;
  const float poison_value = std::nanf("0x5a5");
#ifdef CANDIDATES
  constexpr int capacity = CANDIDATES;
  const long long candidate_pitch = capacity + 3;
#else
  constexpr int capacity = 0;
  const long long candidate_pitch = 0;
#endif
  std::vector<int> cand_indices(static_cast<size_t>(rows * candidate_pitch), poison_index), counts(static_cast<size_t>(rows), poison_index),
      tokens(static_cast<size_t>(rows), poison_index);
  std::vector<float> cand_logits(cand_indices.size(), poison_value), cand_probs(cand_indices.size(), poison_value);
  std::vector<unsigned long long> seeds(static_cast<size_t>(rows));
  for (auto& x : seeds) x = rng();
  const unsigned long long seed_value = rng();
  FilterParams p{};
#ifdef CANDIDATES
  p.candidate_indices = cand_indices.data();
  p.candidate_logits = cand_logits.data();
  p.candidate_probs = cand_probs.data();
  p.candidate_counts = counts.data();
  p.candidate_pitch = candidate_pitch;
  p.candidate_capacity = capacity;
#endif
#ifdef SAMPLE
  p.sampled_tokens = tokens.data();
#ifdef SCALAR_SEED
  p.seed_value = seed_value;
#else
  p.seeds = seeds.data();
#endif
#endif
  p.logits = in_place ? out.data() : logits.data();
#ifdef NO_MASK
  p.out = nullptr;
  const std::vector<Elem> logits_before = logits;
#else
  p.out = out.data();
#endif
  p.pitch = pitch;
  p.rows = rows;
  p.width = vocab;
  p.top_k = ks.data();
  p.top_p = ps.data();
  p.temperature = ts.data();
  p.mask_value = MASK_VALUE;
  const Elem mask_bits = narrow(p.mask_value);
  const int live = rows > 2 ? rows - 2 : rows;
  p.live_rows = &live;

  static_assert(sizeof(Agent::Shared) <= sizeof(emu_shared));
#ifdef PATTERN_BINS
  static_assert(SecondAgent::kSharedBytes <= sizeof(emu_shared));
#endif
  EmuCta cta;
  cta.block = new std::barrier<>(THREADS);
  blockDim.x = THREADS;
  cta.warps = new EmuWarp[THREADS / 32];
  std::vector<unsigned char> workspace(kSegments > 1 ? static_cast<size_t>(rows) * filter_split_row_bytes() : 0);
  p.workspace = workspace.data();
  std::vector<unsigned> blocks(kSegments > 1 ? static_cast<size_t>(rows) * kSegments : 1);
  for (size_t b = 0; b < blocks.size(); ++b) blocks[b] = static_cast<unsigned>(b);
  gridDim.x = static_cast<unsigned>(blocks.size());
  // The plan's launches (runtime/families/filter_split.cpp: two for the
  // split's mask-only kernels; filter_row.cpp: two kernels with the
  // patterns), each over every block in a shuffled order.
#ifdef PATTERN_BINS
  constexpr int kLaunches = 2;
#else
  constexpr int kLaunches = kSegments > 1 && !Agent::kMoreOutputs ? 2 : 1;
#endif
  for (int phase = 0; phase < kLaunches; ++phase) {
    p.phase = phase;
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (const unsigned b : blocks) {
      std::vector<std::thread> ts_;
      for (int t = 0; t < THREADS; ++t)
        ts_.emplace_back([&, t, b] {
          emu_cta = &cta;
          blockIdx.x = b;
          threadIdx.x = t;
#ifdef PATTERN_BINS
          if (phase == 1) {
            SecondAgent::run(p);
            return;
          }
#endif
          Launched::run(p);
        });
      for (auto& t : ts_) t.join();
    }
  }
  for (int r = 0; r < rows && kSegments > 1; ++r) {
    FilterSplitRowHeader h;
    std::memcpy(&h, workspace.data() + static_cast<size_t>(r) * filter_split_row_bytes(), sizeof h);
    bool sums = false;
    for (const auto m : h.mass) sums |= m != 0u;
    // Top-p alone's histogram, after the keys and indices: restored too.
    const unsigned char* histogram = workspace.data() + static_cast<size_t>(r) * filter_split_row_bytes() +
                                     kFilterSplitRowHeaderBytes + 8u * kFilterSplitRecordKeys;
    for (size_t i = 0; i < 8u << kFilterDigitBits; ++i) sums |= histogram[i] != 0u;
    if (h.arrived || h.candidates || h.max_key || h.window || sums) {
      std::printf("BAD: row %d's split record was not restored\n", r);
      return 1;
    }
  }

  int bad = 0;
  long candidate_rows = 0, truncated_rows = 0, sampled_rows = 0;
  auto report = [&](int r, const std::string& what) {
    ++bad;
    if (bad <= 10)
      std::printf("BAD row %d (k %d, p %g, T %g): %s\n", r, ks[static_cast<size_t>(r)],
                  static_cast<double>(ps[static_cast<size_t>(r)]), static_cast<double>(ts[static_cast<size_t>(r)]), what.c_str());
  };
  for (int r = 0; r < rows; ++r) {
    const Elem* row = logits.data() + r * pitch;
    // The candidate and sample outputs: past live_rows untouched, else against the reference.
    {
      const size_t at = static_cast<size_t>(r * candidate_pitch);
      if (r >= live) {
        for (long long i = 0; i < candidate_pitch; ++i)
          if (cand_indices[at + i] != poison_index) report(r, "candidate written past live_rows");
        if (counts[static_cast<size_t>(r)] != poison_index || tokens[static_cast<size_t>(r)] != poison_index)
          report(r, "count or token written past live_rows");
      } else if (p.candidate_indices || p.sampled_tokens) {
        const std::vector<float> wide_row = widen(row, vocab);
        const int k = ks[static_cast<size_t>(r)];
        const float pv = ps[static_cast<size_t>(r)], t = ts[static_cast<size_t>(r)];
        const auto ref = sgtopk::reference::filter_row_reference(wide_row.data(), vocab, k, pv, t);
        // The kernel's count: from the candidate output, else the reference's own.
        int64_t count = p.candidate_indices ? counts[static_cast<size_t>(r)] : ref.count;
        const auto& ok = ref.acceptable_counts;
        if (std::find(ok.begin(), ok.end(), count) == ok.end()) {
          report(r, "kept count " + std::to_string(count) + ", expected " + std::to_string(ref.count));
          continue;
        }
        const std::vector<int32_t> kept(ref.order.begin(), ref.order.begin() + count);
        const auto want = sgtopk::reference::filter_kept_outputs(wide_row.data(), vocab, t, kept, p.seeds ? seeds[static_cast<size_t>(r)] : seed_value,
                                                                 p.seeds ? 0u : static_cast<uint64_t>(r));
        if (p.candidate_indices) {
          ++candidate_rows;
          const int64_t m = std::min<int64_t>(count, capacity);
          truncated_rows += count > capacity;
          for (int64_t i = 0; i < candidate_pitch; ++i) {
            const int got = cand_indices[at + i];
            const float lg = cand_logits[at + i], pr = cand_probs[at + i];
            if (i >= m) {
              if (got != poison_index || std::memcmp(&lg, &poison_value, 4) != 0 || std::memcmp(&pr, &poison_value, 4) != 0) {
                report(r, "candidate slot " + std::to_string(i) + " past the count " + std::to_string(count) + " written");
                break;
              }
              continue;
            }
            const size_t j = static_cast<size_t>(i);
            if (got != kept[j]) {
              report(r, "candidate slot " + std::to_string(i) + ": index " + std::to_string(got) + ", expected " + std::to_string(kept[j]));
              break;
            }
            if (std::memcmp(&lg, &want.logits[j], 4) != 0) {
              report(r, "candidate slot " + std::to_string(i) + ": logit " + std::to_string(lg) + ", expected " + std::to_string(want.logits[j]));
              break;
            }
            if (!(std::fabs(static_cast<double>(pr) - want.probabilities[j]) <= 1e-6 * want.probabilities[j])) {
              report(r, "candidate slot " + std::to_string(i) + ": probability " + std::to_string(pr) + ", expected " +
                            std::to_string(want.probabilities[j]));
              break;
            }
          }
        }
        if (p.sampled_tokens) {
          ++sampled_rows;
          if (tokens[static_cast<size_t>(r)] != want.sampled)
            report(r, "sampled token " + std::to_string(tokens[static_cast<size_t>(r)]) + ", expected " + std::to_string(want.sampled));
        }
      }
    }
#ifdef NO_MASK
    for (long long i = 0; i < pitch; ++i)
      if (!same_bits(out[static_cast<size_t>(r * pitch + i)], untouched_at(static_cast<size_t>(r * pitch + i))) ||
          !same_bits(logits[static_cast<size_t>(r * pitch + i)], logits_before[static_cast<size_t>(r * pitch + i)])) {
        report(r, "written without a mask output at " + std::to_string(i));
        break;
      }
    continue;
#endif
    if (r >= live) {
      for (long long i = 0; i < pitch; ++i)
        if (!same_bits(out[static_cast<size_t>(r * pitch + i)], untouched_at(static_cast<size_t>(r * pitch + i)))) {
          std::printf("BAD row %d: past live_rows %d but written at %lld\n", r, live, i);
          ++bad;
          break;
        }
      continue;
    }
    // Against the reference of the widened row; the widening is one to one,
    // so kept entries compare bit for bit, masked ones to the narrowed mask.
    const std::vector<float> wide_row = widen(row, vocab), wide_out = widen(out.data() + r * pitch, vocab);
    const std::string e = sgtopk::reference::check_filter_mask(wide_row.data(), vocab, ks[static_cast<size_t>(r)], ps[static_cast<size_t>(r)],
                                                               wide_out.data(), widen(&mask_bits, 1)[0], ts[static_cast<size_t>(r)]);
    for (long long i = vocab; i < pitch; ++i)
      if (!same_bits(out[static_cast<size_t>(r * pitch + i)], untouched_at(static_cast<size_t>(r * pitch + i)))) {
        std::printf("BAD row %d: wrote past the vocabulary at %lld\n", r, i);
        ++bad;
        break;
      }
    if (!e.empty()) {
      ++bad;
      if (bad <= 10)
        std::printf("BAD row %d (k %d, p %g, T %g): %s\n", r, ks[static_cast<size_t>(r)],
                    static_cast<double>(ps[static_cast<size_t>(r)]), static_cast<double>(ts[static_cast<size_t>(r)]), e.c_str());
    }
  }
  if (argc > 3) {  // the output rows, for a byte-for-byte comparison between two builds
    if (FILE* f = std::fopen(argv[3], "wb")) {
      std::fwrite(out.data(), sizeof(out[0]), out.size(), f);
      std::fclose(f);
    }
  }
  const long sampled = g_routes[Agent::kRouteSampled], fallback = g_routes[Agent::kRouteFallback],
             exact = g_routes[Agent::kRouteExact];
#ifdef EXPECT_ROUTES
  if (sampled == 0 || fallback == 0) {
    std::printf("BAD routes: expected both the sampled route and a fallback from it\n");
    ++bad;
  }
#endif
  std::printf("rows %d bad %d (routes: sampled %ld, fallback %ld, exact %ld; candidates %ld rows, %ld truncated; sampled tokens %ld)\n",
              rows, bad, sampled, fallback, exact, candidate_rows, truncated_rows, sampled_rows);
  return bad == 0 ? 0 : 1;
}

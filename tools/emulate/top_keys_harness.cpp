// BlockTopKeys, BlockRankedKey and BlockSortKeys
// (templates/sgtopk/block/block_top_keys.cuh) on the host: one CTA of THREADS
// threads takes the 64 largest of n keys, for n from 0 to past several
// pieces a warp, the r-th largest (r up to 32) of up to 4 x THREADS keys in
// shared memory, and sorts 64 to 2 x THREADS keys, over key sets with ties
// (all equal, a few distinct values, zeros, the largest key), each checked
// against std::sort.
//   top_keys_harness CASES SEED
#include "prelude.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "sgtopk/block/block_top_keys.cuh"
using namespace sgtopk;

#ifndef THREADS
#define THREADS 128
#endif

int main(int argc, char** argv) {
  const int cases = argc > 1 ? std::atoi(argv[1]) : 24;
  const unsigned seed = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1u;
  std::mt19937 rng(seed);
  EmuCta cta;
  cta.block = new std::barrier<>(THREADS);
  blockDim.x = THREADS;
  cta.warps = new EmuWarp[THREADS / 32];
  u32* lists = reinterpret_cast<u32*>(emu_shared);
  int bad = 0;
  for (int c = 0; c < cases; ++c) {
    // Sizes around the piece and list boundaries, and a few random ones.
    const int sizes[] = {0, 1, 63, 64, 65, 2 * THREADS - 1, 2 * THREADS, 2 * THREADS + 1, 4 * THREADS + 17};
    const int n = c < 9 ? sizes[c] : static_cast<int>(rng() % (6u * THREADS + 1u));
    std::vector<u32> keys(static_cast<size_t>(n));
    const int kind = static_cast<int>(rng() % 6u);
    for (auto& k : keys) {
      switch (kind) {
        case 0: k = rng(); break;                                            // distinct, mostly
        case 1: k = 7u; break;                                               // all equal
        case 2: k = 1000u + rng() % 4u; break;                               // a few values, many ties
        case 3: k = rng() % 3u == 0u ? 0xffffffffu : rng() % 2u; break;      // the extremes and zero
        case 4: k = rng() % 97u == 0u ? 5000u + rng() % 100u : rng() % 50u;  // a few large among many small
        default: k = static_cast<u32>(&k - keys.data()) + 1u;                 // ascending: the largest in one warp's part
      }
    }
    u32 top[64] = {}, at = 0u, above = 0u;
    const u32 e = static_cast<u32>(c % 64);  // the element read as the agents read a rank
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; ++t)
      threads.emplace_back([&, t] {
        emu_cta = &cta;
        threadIdx.x = static_cast<unsigned>(t);
        u32 v[2];
        BlockTopKeys<THREADS>::largest(n, [&](int i) { return keys[static_cast<size_t>(i)]; }, lists, v);
        if (t < 32) {
          top[2 * t] = v[0];
          top[2 * t + 1] = v[1];
          const u32 key = WarpKeys64::element(v, e), count = WarpKeys64::count_above(v, key);
          if (t == 0) {
            at = key;
            above = count;
          }
        }
      });
    for (auto& t : threads) t.join();
    std::vector<u32> sorted = keys;
    std::sort(sorted.begin(), sorted.end(), std::greater<u32>());
    sorted.resize(64, 0u);
    const u32 expect_above = static_cast<u32>(std::count_if(sorted.begin(), sorted.end(), [&](u32 k) { return k > sorted[e]; }));
    bool ok = at == sorted[e] && above == expect_above;
    for (int i = 0; i < 64; ++i) ok = ok && top[i] == sorted[static_cast<size_t>(i)];
    if (!ok) {
      if (bad < 10) std::printf("BAD case %d (n %d, kind %d): element %u %u (expected %u), above %u (expected %u)\n", c, n, kind, e, at, sorted[e], above, expect_above);
      ++bad;
    }

    // The r-th largest of the first min(n, 4 THREADS) keys, from shared memory.
    const int m = std::min(n, 4 * THREADS);
    if (m > 0) {
      typedef BlockRankedKey<THREADS, 4> Ranked;
      const int r = 1 + static_cast<int>(rng() % static_cast<unsigned>(std::min(m, Ranked::kMaxRank)));
      u32* in = lists + Ranked::kListKeys + 1;
      std::copy(keys.begin(), keys.begin() + m, in);
      std::vector<u32> got(THREADS);
      threads.clear();
      for (int t = 0; t < THREADS; ++t)
        threads.emplace_back([&, t] {
          emu_cta = &cta;
          threadIdx.x = static_cast<unsigned>(t);
          got[static_cast<size_t>(t)] = Ranked::at_rank(in, m, r, lists, lists + Ranked::kListKeys);
        });
      for (auto& t : threads) t.join();
      std::vector<u32> first(keys.begin(), keys.begin() + m);
      std::sort(first.begin(), first.end(), std::greater<u32>());
      const u32 want = first[static_cast<size_t>(r - 1)];
      if (std::any_of(got.begin(), got.end(), [&](u32 g) { return g != want; })) {
        if (bad < 10) std::printf("BAD case %d (n %d, kind %d): rank %d gave %u (expected %u)\n", c, m, kind, r, got[0], want);
        ++bad;
      }
    }

    // BlockSortKeys: the first min(n, size) keys, 0 past them, for a size
    // from 64 to every warp's piece (cases cycle through them).
    typedef BlockSortKeys<THREADS> Sorter;
    int size = 64;
    for (int j = c % 8; j > 0 && size < Sorter::kMaxKeys; --j) size <<= 1;
    std::vector<u32> sort_in(static_cast<size_t>(Sorter::kMaxKeys), 0u), sort_out(sort_in.size(), 0xdeadbeefu);
    std::copy(keys.begin(), keys.begin() + std::min(n, size), sort_in.begin());
    threads.clear();
    for (int t = 0; t < THREADS; ++t)
      threads.emplace_back([&, t] {
        emu_cta = &cta;
        threadIdx.x = static_cast<unsigned>(t);
        const int first = 64 * (t / 32) + 2 * (t % 32);
        u32 v[2] = {first < size ? sort_in[static_cast<size_t>(first)] : 0u, first + 1 < size ? sort_in[static_cast<size_t>(first) + 1] : 0u};
        Sorter::sort(v, size, lists);
        if (first < size) {
          sort_out[static_cast<size_t>(first)] = v[0];
          sort_out[static_cast<size_t>(first) + 1] = v[1];
        }
      });
    for (auto& t : threads) t.join();
    std::vector<u32> want(sort_in.begin(), sort_in.begin() + size);
    std::sort(want.begin(), want.end(), std::greater<u32>());
    if (!std::equal(want.begin(), want.end(), sort_out.begin())) {
      if (bad < 10) std::printf("BAD case %d (n %d, kind %d): sort of %d keys\n", c, n, kind, size);
      ++bad;
    }
  }
  std::printf("top_keys threads %d: %d cases, %d bad\n", THREADS, cases, bad);
  return bad == 0 ? 0 : 1;
}

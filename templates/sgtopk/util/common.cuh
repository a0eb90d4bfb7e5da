// Utilities every piece uses: the device-function qualifier, route counting,
// phase clocks, the live row count, min and max. Compiled by NVRTC without
// any system header: keep it self-contained.
#pragma once
#include "sgtopk/abi.h"
#include "sgtopk/util/hardware.cuh"

namespace sgtopk {

#define SGTOPK_DEVICE __device__ __forceinline__
// A device function kept out of line: for a rarely taken path whose inlined
// copy would push a kernel past its register bound (a call, not a spill).
#define SGTOPK_DEVICE_OUT_OF_LINE __device__ __noinline__

template <bool kEnabled>
SGTOPK_DEVICE void count_route(unsigned long long* stats, int slot, unsigned long long amount = 1ull) {
  if (kEnabled && stats != nullptr && threadIdx.x == 0) atomicAdd(stats + slot, amount);
}

// Laps of thread 0's SM clock into the kCycles* slots.
template <bool kEnabled>
struct PhaseClock {
  unsigned long long* stats;
  long long last;
  SGTOPK_DEVICE explicit PhaseClock(unsigned long long* s) : stats(s), last(kEnabled ? clock64() : 0) {}
  SGTOPK_DEVICE void lap(int slot) {
    if (!kEnabled) return;
    const long long now = clock64();
    count_route<kEnabled>(stats, slot, static_cast<unsigned long long>(now - last));
    last = now;
  }
};

// The live rows of this launch, read on the device so graphs can replay it
// (SelectParams and FilterParams alike).
template <typename Params>
SGTOPK_DEVICE long long live_row_count(const Params& p, long long capacity) {
  if (p.live_rows == nullptr) return capacity;
  long long live = *p.live_rows;
  return live < 0 ? 0 : (live > capacity ? capacity : live);
}

template <typename T>
SGTOPK_DEVICE T min_of(T a, T b) { return a < b ? a : b; }
template <typename T>
SGTOPK_DEVICE T max_of(T a, T b) { return a > b ? a : b; }

// Asks L2 for the whole 16-byte blocks of [from, to) in bulk prefetches of
// at most 16 KB: piece i by thread i, or every piece by the calling thread
// when kIssuers is 1 (a hint: nothing waits for it, no register holds it).
template <int kIssuers>
SGTOPK_DEVICE void prefetch_l2_range(const void* from, const void* to) {
  constexpr unsigned long long kPiece = 16384;
  const unsigned long long first = (reinterpret_cast<unsigned long long>(from) + 15ull) & ~15ull;
  const unsigned long long end = reinterpret_cast<unsigned long long>(to) & ~15ull;
  const unsigned long long mine = kIssuers == 1 ? 0ull : static_cast<unsigned long long>(threadIdx.x);
  for (unsigned long long piece = first + mine * kPiece; piece < end; piece += kIssuers * kPiece)
    hw::prefetch_l2_bulk(reinterpret_cast<const void*>(piece), static_cast<unsigned>(min_of(end - piece, kPiece)));
}

}  // namespace sgtopk

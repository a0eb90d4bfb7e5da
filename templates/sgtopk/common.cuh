// Basic types and the launch parameters shared by every select family.
// Compiled by NVRTC without any system header: keep it self-contained.
#pragma once

namespace sgtopk {

typedef unsigned int u32;
typedef unsigned long long u64;

#define SGTOPK_DEVICE __device__ __forceinline__

// Kernel parameters of a select launch. The host mirrors this layout
// (DeviceSelectParams in runtime/launch.h); both sides check its size.
struct SelectParams {
  const float* scores;   // [rows][pitch]
  const int* lengths;    // [rows] or null: every row has kWidth
  const int* starts;     // [rows] or null
  const int* live_rows;  // scalar or null: every row is live
  int* indices;          // [rows][out_pitch]
  float* values;         // [rows][out_pitch] or null
  void* workspace;       // per-worker frontier slices (the sampled family: row counters first)
  unsigned long long rows;  // row capacity (the plan's)
  unsigned long long* route_stats;  // [kRouteStatSlots] or null (plans with kRouteStats)
};

// Bytes of row counters ahead of a persistent family's frontier slices (keeps
// the slices aligned).
constexpr unsigned kRowClaimsBytes = 256u;

// Route statistics: one counter per route a row can take, plus the candidate
// volume handed to refinement. Mirrored by SGTOPK_ROUTE_* in sgtopk.h.
enum RouteStat {
  kRouteShort = 0,     // len <= K: every valid index, no selection
  kRouteNoView = 1,    // the sample view was too small: exact route
  kRoutePrimary = 2,   // certified by the primary proposal
  kRouteBand = 3,      // certified after the band pass
  kRouteExact = 4,     // exact coarse route (recovery, or the direct family)
  kRouteCandidates = 5,  // candidates handed to refinement, summed over rows
  // Where a worker's time goes: SM clock cycles per phase, summed over rows
  // (thread 0's view, each phase ending at a block barrier). The direct
  // family: proposal = the histogram pass, certification = the boundary
  // pass, recovery = the row's set-up and the short route.
  kCyclesProposal = 6,       // view gather, histogram, boundaries
  kCyclesCertification = 7,  // the full pass admitting candidates
  kCyclesRecovery = 8,       // band pass and exact route
  kCyclesRefinement = 9,     // frontier-only radix rounds and the sorted option
  kRouteStatSlots = 10
};

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

// The live rows of this launch, read on the device so graphs can replay it.
SGTOPK_DEVICE long long live_row_count(const SelectParams& p, long long capacity) {
  if (p.live_rows == nullptr) return capacity;
  long long live = *p.live_rows;
  return live < 0 ? 0 : (live > capacity ? capacity : live);
}

template <typename T>
SGTOPK_DEVICE T min_of(T a, T b) { return a < b ? a : b; }
template <typename T>
SGTOPK_DEVICE T max_of(T a, T b) { return a > b ? a : b; }

}  // namespace sgtopk

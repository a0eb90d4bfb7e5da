// Basic types and the launch parameters shared by every select family.
// Compiled by NVRTC without any system header: keep it self-contained.
#pragma once

namespace sgtopk {

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#define SGTOPK_DEVICE __device__ __forceinline__

// Kernel parameters of a select launch. The host mirrors this layout
// (runtime/launch_params.h); both sides check its size.
struct SelectParams {
  const float* scores;   // [rows][pitch]
  const int* lengths;    // [rows] or null: every row has kWidth
  const int* starts;     // [rows] or null
  const int* live_rows;  // scalar or null: every row is live
  int* indices;          // [rows][out_pitch]
  float* values;         // [rows][out_pitch] or null
  void* workspace;       // per-worker frontier slices
  unsigned long long rows;  // row capacity (launch-time check against the plan)
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

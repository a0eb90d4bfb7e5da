// Writing one row's result: committed slots, short rows, the sorted option.
#pragma once
#include "sgtopk/util/keys.cuh"

namespace sgtopk {

template <bool kValues>
struct RowOutput {
  int* indices;
  float* values;

  SGTOPK_DEVICE void commit(u32 slot, u32 index, float value) const {
    indices[slot] = static_cast<int>(index);
    if (kValues) values[slot] = value;
  }
};

// Row r of a launch: its valid scores (the window start applied, the length
// clamped to [0, kWidth]) and its output slots.
template <bool kValues>
struct SelectRowTask {
  const float* scores;
  int len;
  RowOutput<kValues> out;
};
template <typename Config>
SGTOPK_DEVICE SelectRowTask<Config::kValues> select_row_task(const SelectParams& p, long long r) {
  int len = p.lengths ? p.lengths[r] : static_cast<int>(Config::kWidth);
  len = max_of(0, min_of(len, static_cast<int>(Config::kWidth)));
  const long long start = Config::kStarts ? max_of(0, p.starts[r]) : 0;
  return SelectRowTask<Config::kValues>{
      p.scores + r * Config::kPitch + start, len,
      RowOutput<Config::kValues>{p.indices + r * Config::kOutPitch, Config::kValues ? p.values + r * Config::kOutPitch : nullptr}};
}

// A row with len <= K: every valid index once, then -1 (values: -inf).
template <int kThreads, int kK, bool kValues>
SGTOPK_DEVICE void write_whole_row(const RowOutput<kValues>& out, const float* row, int len) {
  for (int s = threadIdx.x; s < kK; s += kThreads) {
    const bool valid = s < len;
    out.indices[s] = valid ? s : -1;
    if (kValues) out.values[s] = valid ? __ldg(row + s) : __int_as_float(0xff800000);
  }
}

// Orders slots [0, count) by value descending, ties by index ascending:
// a bitonic sort of rank keys in shared memory (`buffer` holds kSortSlots).
template <int kThreads, int kSortSlots, bool kValues>
SGTOPK_DEVICE void sort_row_output(const RowOutput<kValues>& out, const float* row, int count, u64* buffer) {
  __syncthreads();  // committed slots written by other threads are visible after this
  for (int s = threadIdx.x; s < kSortSlots; s += kThreads) {
    // Padding key 0 sorts below every real key (a NaN at index i has key 0xffffffff - i > 0).
    buffer[s] = s < count ? rank_key(__ldg(row + out.indices[s]), static_cast<u32>(out.indices[s])) : 0ull;
  }
  __syncthreads();
  int slots = 1;
  while (slots < count) slots <<= 1;
  for (int k = 2; k <= slots; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < slots; i += kThreads) {
        const int partner = i ^ j;
        if (partner > i) {
          const u64 a = buffer[i], b = buffer[partner];
          const bool descending = (i & k) == 0;
          if (descending ? a < b : a > b) {
            buffer[i] = b;
            buffer[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  for (int s = threadIdx.x; s < count; s += kThreads) {
    const u32 index = index_of_rank_key(buffer[s]);
    out.indices[s] = static_cast<int>(index);
    if (kValues) out.values[s] = __ldg(row + index);
  }
}

// The fused index transform (abi.h SelectParams; kTransform 1: index +
// index_offsets[row], 2: page_table[row][index / kPageSize] * kPageSize +
// index % kPageSize), in place over the row's K slots once they are final
// (after the sorted option, which reads the raw indices); -1 stays. Starts
// with a barrier (the slots were written by any thread); the caller's next
// barrier ends it.
template <int kThreads, int kK, int kTransform, int kPageSize, long long kPageTablePitch, bool kValues>
SGTOPK_DEVICE void transform_indices(const RowOutput<kValues>& out, const SelectParams& p, long long row) {
  if constexpr (kTransform != 0) {
    __syncthreads();
    const int offset = kTransform == 1 ? p.index_offsets[row] : 0;
    const int* pages = kTransform == 2 ? p.page_table + row * kPageTablePitch : nullptr;
    for (int s = threadIdx.x; s < kK; s += kThreads) {
      const int index = out.indices[s];
      if (index < 0) continue;
      if constexpr (kTransform == 1) {
        out.indices[s] = static_cast<int>(static_cast<unsigned>(index) + static_cast<unsigned>(offset));
      } else {
        const long long page = pages[index / kPageSize];
        out.indices[s] = static_cast<int>(page * kPageSize + index % kPageSize);
      }
    }
  }
}

}  // namespace sgtopk

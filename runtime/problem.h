// Stage 1: the caller's problem, validated and put in library terms.
#pragma once

#include <sgtopk/sgtopk.h>

#include <cstdint>
#include <string>

namespace sgtopk::detail {

inline constexpr int kMaxK = 8192;
inline constexpr int64_t kMaxWidth = int64_t{1} << 30;  // indices are int32; lengths are int32
inline constexpr int64_t kMaxRows = int64_t{1} << 31;
// rows x pitch and rows x out_pitch: every element's offset, in bytes, stays
// far inside 64-bit address arithmetic (2^48 bytes, more than any GPU holds).
inline constexpr int64_t kMaxElements = int64_t{1} << 46;
// The filter's vocabulary: its row template sums a row's mass in 64 bits
// (templates/sgtopk/agent/filter_row.cuh), each token at most 2^40 units.
inline constexpr int64_t kMaxFilterWidth = int64_t{1} << 23;
// The filter's candidate capacity per row: at most its shared candidate
// buffer (abi.h's kFilterCandidates, static_asserted in runtime/launch.cpp),
// which sorts the candidates written.
inline constexpr int kFilterCandidateCapacity = 8192;

struct Problem {
  sgtopk_operator op = SGTOPK_OP_SELECT;
  int k = 0;                  // select: the rank; filter: the candidate capacity (0 without candidates)
  int64_t rows = 0;
  int64_t width = 0;
  int64_t pitch = 0;
  int64_t out_pitch = 0;
  bool values = false;
  bool sorted = false;
  bool starts = false;
  bool route_stats = false;  // the kernel counts the routes rows take (SGTOPK_ROUTE_STATS)
  // The fused index transform of the output (SGTOPK_INDEX_OFFSETS, SGTOPK_PAGE_TABLE).
  enum class IndexTransform { kNone = 0, kOffsets = 1, kPageTable = 2 };
  IndexTransform index_transform = IndexTransform::kNone;
  int page_size = 0;              // kPageTable only
  int64_t page_table_pitch = 0;   // kPageTable only (resolved: never 0 there)
  bool filter_mask = false;       // filter: the masked rows are written (SGTOPK_FILTER_MASK)
  bool filter_candidates = false; // filter: the kept tokens in order, k of them a row (SGTOPK_FILTER_CANDIDATES)
  bool filter_sample = false;     // filter: one sampled token a row (SGTOPK_FILTER_SAMPLE)
  sgtopk_dtype dtype = SGTOPK_F32;  // the scores' / logits' element type (select: SGTOPK_F32)
};

// Bytes of one element of `dtype`.
inline int64_t dtype_bytes(sgtopk_dtype dtype) { return dtype == SGTOPK_F32 ? 4 : 2; }

// Throws SGTOPK_ERROR_INVALID_ARGUMENT with a message in the caller's terms,
// e.g. "K=0 is invalid: K must be in 1..8192".
Problem validate_problem(const sgtopk_problem* problem);

std::string to_string(const Problem& problem);

}  // namespace sgtopk::detail

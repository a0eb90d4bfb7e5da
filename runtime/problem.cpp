#include "runtime/problem.h"

#include <cstddef>
#include <cstring>
#include <sstream>

#include "runtime/error.h"

namespace sgtopk::detail {
namespace {

// A C caller may store any int in an enum field, and loading one that names
// no enumerator as the C++ enum type is undefined: validation reads the bits.
template <typename Enum>
int enum_bits(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

std::string hex_text(uint32_t bits) {
  std::ostringstream s;
  s << std::hex << bits;
  return s.str();
}

// The rows x pitch bound, checked as a quotient: the product may overflow.
void check_matrix_size(int64_t rows, int64_t pitch, const char* what) {
  if (pitch > kMaxElements / rows)
    invalid_argument("rows x pitch (" + std::to_string(rows) + " x " + std::to_string(pitch) + ") is too large: the " +
                     what + " matrix must hold at most 2^46 elements");
}

// The filter's problem. K and out_pitch describe the candidate output
// (SGTOPK_FILTER_CANDIDATES): its capacity per row and the row stride of its
// arrays; without it both stay 0.
Problem validate_filter(const sgtopk_problem& p, int dtype, int32_t page_size, int64_t page_table_pitch) {
  if (dtype != SGTOPK_F32 && dtype != SGTOPK_BF16 && dtype != SGTOPK_F16)
    invalid_argument("dtype=" + std::to_string(dtype) + " is invalid: the filter takes SGTOPK_F32, SGTOPK_BF16 or "
                     "SGTOPK_F16");
  if (p.rows < 1 || p.rows >= kMaxRows)
    invalid_argument("rows=" + std::to_string(p.rows) + " is invalid: the filter's batch capacity must be in 1.." +
                     std::to_string(kMaxRows - 1));
  if (p.width < 1 || p.width > kMaxFilterWidth)
    invalid_argument("width=" + std::to_string(p.width) + " is invalid: the filter's vocabulary (width) must be in 1.." +
                     std::to_string(kMaxFilterWidth));
  const int64_t pitch = p.pitch == 0 ? p.width : p.pitch;
  if (pitch < p.width) invalid_argument("pitch " + std::to_string(pitch) + " is smaller than width " + std::to_string(p.width));
  check_matrix_size(p.rows, pitch, "logits");
  if (page_size != 0 || page_table_pitch != 0)
    invalid_argument("page_size=" + std::to_string(page_size) + " and page_table_pitch=" + std::to_string(page_table_pitch) +
                     " are set for the filter, which has no index output: leave them 0");
  const uint32_t select_flags = SGTOPK_VALUES | SGTOPK_SORTED | SGTOPK_STARTS | SGTOPK_ROUTE_STATS |
                                SGTOPK_INDEX_OFFSETS | SGTOPK_PAGE_TABLE;
  const uint32_t filter_flags = SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE;
  if (p.flags & select_flags)
    invalid_argument("flags 0x" + hex_text(p.flags & select_flags) + " are select flags: the filter takes "
                     "SGTOPK_FILTER_MASK, SGTOPK_FILTER_CANDIDATES and SGTOPK_FILTER_SAMPLE (0: the mask)");
  if (p.flags & ~filter_flags)
    invalid_argument("flags 0x" + hex_text(p.flags & ~filter_flags) + " are not sgtopk flags (the filter "
                     "knows SGTOPK_FILTER_MASK, SGTOPK_FILTER_CANDIDATES and SGTOPK_FILTER_SAMPLE)");
  const bool candidates = (p.flags & SGTOPK_FILTER_CANDIDATES) != 0;
  int64_t out_pitch = 0;
  if (candidates) {
    if (p.k < 1 || p.k > kFilterCandidateCapacity)
      invalid_argument("K=" + std::to_string(p.k) + " is invalid: with SGTOPK_FILTER_CANDIDATES, K is the candidate "
                       "capacity of a row and must be in 1.." + std::to_string(kFilterCandidateCapacity));
    out_pitch = p.out_pitch == 0 ? p.k : p.out_pitch;
    if (out_pitch < p.k)
      invalid_argument("out_pitch " + std::to_string(out_pitch) + " is smaller than K=" + std::to_string(p.k) +
                       " (the candidate capacity)");
    if (out_pitch > kMaxElements / p.rows)
      invalid_argument("rows x out_pitch (" + std::to_string(p.rows) + " x " + std::to_string(out_pitch) +
                       ") is too large: the candidate matrices must hold at most 2^46 elements");
  } else {
    if (p.k != 0)
      invalid_argument("K=" + std::to_string(p.k) + " is invalid without SGTOPK_FILTER_CANDIDATES: the filter's K is "
                       "the capacity of its candidate output, 0 otherwise");
    if (p.out_pitch != 0)
      invalid_argument("out_pitch=" + std::to_string(p.out_pitch) + " is set without SGTOPK_FILTER_CANDIDATES (it is "
                       "the candidate arrays' row stride; the masked rows share the logits' pitch): leave it 0");
  }

  Problem out;
  out.op = SGTOPK_OP_FILTER;
  out.k = candidates ? p.k : 0;
  out.rows = p.rows;
  out.width = p.width;
  out.pitch = pitch;
  out.out_pitch = out_pitch;
  out.filter_mask = (p.flags & filter_flags) == 0 || (p.flags & SGTOPK_FILTER_MASK) != 0;  // 0: the mask alone
  out.filter_candidates = candidates;
  out.filter_sample = (p.flags & SGTOPK_FILTER_SAMPLE) != 0;
  out.dtype = static_cast<sgtopk_dtype>(dtype);
  return out;
}

}  // namespace

Problem validate_problem(const sgtopk_problem* p) {
  if (p == nullptr) invalid_argument("problem is NULL");
  // Callers built before the page fields existed pass the shorter struct.
  constexpr size_t kFirstSize = offsetof(sgtopk_problem, page_size);
  if (p->struct_size < kFirstSize)
    invalid_argument("problem.struct_size is " + std::to_string(p->struct_size) + ", expected " +
                     std::to_string(sizeof(sgtopk_problem)) + " (or " + std::to_string(kFirstSize) +
                     " from before page_size): initialize it with SGTOPK_PROBLEM_INIT");
  const bool has_pages = p->struct_size >= sizeof(sgtopk_problem);
  const int32_t page_size = has_pages ? p->page_size : 0;
  const int64_t page_table_pitch = has_pages ? p->page_table_pitch : 0;
  const int op = enum_bits(p->op), dtype = enum_bits(p->dtype);
  if (op == SGTOPK_OP_FILTER) return validate_filter(*p, dtype, page_size, page_table_pitch);
  if (op != SGTOPK_OP_SELECT)
    invalid_argument("op=" + std::to_string(op) + " is not an operator (SGTOPK_OP_SELECT or SGTOPK_OP_FILTER)");
  if (dtype != SGTOPK_F32) invalid_argument("dtype=" + std::to_string(dtype) + " is invalid: select takes float32 scores");
  if (p->k < 1 || p->k > kMaxK)
    invalid_argument("K=" + std::to_string(p->k) + " is invalid: K must be in 1.." + std::to_string(kMaxK));
  if (p->rows < 1 || p->rows >= kMaxRows)
    invalid_argument("rows=" + std::to_string(p->rows) + " is invalid: the row capacity must be in 1.." + std::to_string(kMaxRows - 1));
  if (p->width < 1 || p->width > kMaxWidth)
    invalid_argument("width=" + std::to_string(p->width) + " is invalid: width must be in 1.." + std::to_string(kMaxWidth));
  const int64_t pitch = p->pitch == 0 ? p->width : p->pitch;
  if (pitch < p->width) invalid_argument("pitch " + std::to_string(pitch) + " is smaller than width " + std::to_string(p->width));
  const int64_t out_pitch = p->out_pitch == 0 ? p->k : p->out_pitch;
  if (out_pitch < p->k) invalid_argument("out_pitch " + std::to_string(out_pitch) + " is smaller than K=" + std::to_string(p->k));
  // Checked as quotients: the products themselves may overflow.
  check_matrix_size(p->rows, pitch, "score");
  if (out_pitch > kMaxElements / p->rows)
    invalid_argument("rows x out_pitch (" + std::to_string(p->rows) + " x " + std::to_string(out_pitch) +
                     ") is too large: the output matrices must hold at most 2^46 elements");
  const uint32_t known = SGTOPK_VALUES | SGTOPK_SORTED | SGTOPK_STARTS | SGTOPK_ROUTE_STATS | SGTOPK_INDEX_OFFSETS |
                         SGTOPK_PAGE_TABLE;
  if (p->flags & SGTOPK_FILTER_MASK)
    invalid_argument("flags 0x" + hex_text(SGTOPK_FILTER_MASK) + " (SGTOPK_FILTER_MASK) is a filter flag: this is a "
                     "select problem (op SGTOPK_OP_SELECT)");
  if (p->flags & ~known) invalid_argument("flags 0x" + hex_text(p->flags & ~known) + " are not sgtopk flags (known: SGTOPK_VALUES, SGTOPK_SORTED, SGTOPK_STARTS, SGTOPK_ROUTE_STATS, "
          "SGTOPK_INDEX_OFFSETS, SGTOPK_PAGE_TABLE)");
  const bool offsets = (p->flags & SGTOPK_INDEX_OFFSETS) != 0, pages = (p->flags & SGTOPK_PAGE_TABLE) != 0;
  if (offsets && pages)
    invalid_argument("SGTOPK_INDEX_OFFSETS and SGTOPK_PAGE_TABLE are both set: the output takes one index transform");
  if (!pages && (page_size != 0 || page_table_pitch != 0))
    invalid_argument("page_size=" + std::to_string(page_size) + " and page_table_pitch=" + std::to_string(page_table_pitch) +
                     " are set without SGTOPK_PAGE_TABLE: leave them 0, or set the flag");
  int64_t table_pitch = 0;
  if (pages) {
    if (page_size < 1 || page_size > kMaxWidth)
      invalid_argument("page_size=" + std::to_string(page_size) + " is invalid: SGTOPK_PAGE_TABLE needs a page size in 1.." +
                       std::to_string(kMaxWidth));
    const int64_t pages_per_row = (p->width + page_size - 1) / page_size;
    table_pitch = page_table_pitch == 0 ? pages_per_row : page_table_pitch;
    if (table_pitch < pages_per_row)
      invalid_argument("page_table_pitch " + std::to_string(table_pitch) + " is smaller than the " +
                       std::to_string(pages_per_row) + " pages of a row of width " + std::to_string(p->width) +
                       " (page_size " + std::to_string(page_size) + ")");
    if (table_pitch > kMaxElements / p->rows)
      invalid_argument("rows x page_table_pitch (" + std::to_string(p->rows) + " x " + std::to_string(table_pitch) +
                       ") is too large: the page table must hold at most 2^46 entries");
  }

  Problem out;
  out.op = p->op;
  out.k = p->k;
  out.rows = p->rows;
  out.width = p->width;
  out.pitch = pitch;
  out.out_pitch = out_pitch;
  out.values = (p->flags & SGTOPK_VALUES) != 0;
  out.sorted = (p->flags & SGTOPK_SORTED) != 0;
  out.starts = (p->flags & SGTOPK_STARTS) != 0;
  out.route_stats = (p->flags & SGTOPK_ROUTE_STATS) != 0;
  out.index_transform = offsets ? Problem::IndexTransform::kOffsets
                        : pages ? Problem::IndexTransform::kPageTable
                                : Problem::IndexTransform::kNone;
  out.page_size = pages ? page_size : 0;
  out.page_table_pitch = table_pitch;
  return out;
}

std::string to_string(const Problem& p) {
  std::ostringstream s;
  if (p.op == SGTOPK_OP_FILTER) {
    s << "filter rows=" << p.rows << " width=" << p.width << " pitch=" << p.pitch
      << " dtype=" << (p.dtype == SGTOPK_BF16 ? "bf16" : p.dtype == SGTOPK_F16 ? "f16" : "f32")
      << (p.filter_mask ? " +mask" : "");
    if (p.filter_candidates) s << " +candidates(K=" << p.k << " out_pitch=" << p.out_pitch << ")";
    if (p.filter_sample) s << " +sample";
    return s.str();
  }
  s << "select K=" << p.k << " rows=" << p.rows << " width=" << p.width << " pitch=" << p.pitch
    << " out_pitch=" << p.out_pitch << (p.values ? " +values" : "") << (p.sorted ? " +sorted" : "")
    << (p.starts ? " +starts" : "") << (p.route_stats ? " +route_stats" : "");
  if (p.index_transform == Problem::IndexTransform::kOffsets) s << " +index_offsets";
  if (p.index_transform == Problem::IndexTransform::kPageTable)
    s << " +page_table(page_size=" << p.page_size << " pitch=" << p.page_table_pitch << ")";
  return s.str();
}

}  // namespace sgtopk::detail

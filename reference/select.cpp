#include "reference/select.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

namespace sgtopk::reference {

namespace {



// (key, index) packed so that a larger value is "better": value desc in
// contract order, then index asc.
uint64_t key64(uint32_t key, int64_t index) {
  return (static_cast<uint64_t>(key) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(index));
}

int64_t index_of(uint64_t k64) { return static_cast<int64_t>(0xFFFFFFFFu - static_cast<uint32_t>(k64)); }

std::string format_value(float x) {
  char buf[64];
  uint32_t b = float_bits(x);
  if (std::isnan(x)) {
    std::snprintf(buf, sizeof buf, "nan(0x%08x)", b);
  } else if (x == 0.0f) {
    std::snprintf(buf, sizeof buf, "%s", (b >> 31) ? "-0" : "0");
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
  }
  return buf;
}

std::string hex32(uint32_t b) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", b);
  return buf;
}

// Ordered keys of a row, in a per-thread buffer reused across calls.
const std::vector<uint32_t>& row_keys(const float* row, int64_t len) {
  thread_local std::vector<uint32_t> keys;
  keys.resize(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) keys[static_cast<size_t>(i)] = ordered_key(row[i]);
  return keys;
}

// The k-th largest key64 of a row given its ordered keys (1 <= k <= len). A
// 16-bit radix pre-pass narrows large rows to one bucket before nth_element.
uint64_t kth_key64(const std::vector<uint32_t>& keys, int k) {
  const int64_t len = static_cast<int64_t>(keys.size());
  thread_local std::vector<uint64_t> scratch;
  scratch.clear();
  if (len <= 65536) {
    scratch.resize(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) scratch[static_cast<size_t>(i)] = key64(keys[static_cast<size_t>(i)], i);
    std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), std::greater<uint64_t>());
    return scratch[static_cast<size_t>(k - 1)];
  }
  thread_local std::vector<uint32_t> hist;
  hist.assign(65536, 0);
  for (uint32_t key : keys) ++hist[key >> 16];
  int64_t above = 0;
  uint32_t bucket = 65535;
  for (;; --bucket) {
    if (above + hist[bucket] >= k || bucket == 0) break;
    above += hist[bucket];
  }
  const int64_t need = k - above;  // >= 1
  for (int64_t i = 0; i < len; ++i) {
    const uint32_t key = keys[static_cast<size_t>(i)];
    if ((key >> 16) == bucket) scratch.push_back(key64(key, i));
  }
  std::nth_element(scratch.begin(), scratch.begin() + (need - 1), scratch.end(), std::greater<uint64_t>());
  return scratch[static_cast<size_t>(need - 1)];
}

}  // namespace

uint32_t ordered_key(float x) {
  uint32_t b = float_bits(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0;  // NaN, any sign or payload
  if (b == 0x80000000u) b = 0;                     // -0 -> +0
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

float float_from_ordered_key(uint32_t key) {
  return float_from_bits((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

uint16_t float_to_half_bits(float x) {
  const uint32_t b = float_bits(x);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN stays NaN
  // 65520 = 65504 + half an FP16 ulp: the tie rounds to even, i.e. up to inf.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = a >> 23;  // biased FP32 exponent
  if (exponent >= 113) {              // FP16 normal: |x| >= 2^-14
    uint32_t h = ((exponent - 112u) << 10) | ((a >> 13) & 0x3ffu);
    const uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent as it should
    return static_cast<uint16_t>(sign | h);
  }
  if (exponent < 102) return sign;  // |x| < 2^-25: rounds to zero (2^-25 itself is handled below)
  // FP16 subnormal: value in units of 2^-24 is M * 2^(exponent - 126).
  const uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t h = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // may become 0x400, the smallest normal
  return static_cast<uint16_t>(sign | h);
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
  return float_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint32_t ordered_key16(uint16_t h) {
  uint32_t b = h;
  if ((b & 0x7fffu) > 0x7c00u) return 0;  // NaN
  if (b == 0x8000u) b = 0;                // -0 -> +0
  return (b & 0x8000u) ? (~b & 0xffffu) : (b | 0x8000u);
}

uint32_t coarse_key(float x) { return ordered_key16(float_to_half_bits(x)) >> 5; }

float coarse_bin_lower_endpoint(uint32_t bin) {
  constexpr uint32_t kLowest = 0x007fffffu;   // ordered_key(-inf)
  constexpr uint32_t kHighest = 0xff800000u;  // ordered_key(+inf)
  if (coarse_key(float_from_bits(0xff800000u)) >= bin) return -std::numeric_limits<float>::infinity();
  if (coarse_key(float_from_bits(0x7f800000u)) < bin) return std::numeric_limits<float>::quiet_NaN();
  // coarse_key(float_from_ordered_key(k)) is monotone in k over [kLowest, kHighest]
  // (the one extra key, 0x7fffffff = -0, has the bin of +0). Find the smallest k with
  // coarse key >= bin: invariant ck(lo) < bin <= ck(hi).
  uint32_t lo = kLowest, hi = kHighest;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (coarse_key(float_from_ordered_key(mid)) >= bin) hi = mid;
    else lo = mid;
  }
  float x = float_from_ordered_key(hi);
  return x == 0.0f ? 0.0f : x;  // never -0 (not reachable, but keep the promise)
}

std::vector<int32_t> select_row(const float* row, int64_t len, int k) {
  std::vector<int32_t> out;
  if (k <= 0 || len <= 0) return out;
  std::vector<uint64_t> chosen;
  if (len <= k) {
    chosen.reserve(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) chosen.push_back(key64(ordered_key(row[i]), i));
  } else {
    const std::vector<uint32_t>& keys = row_keys(row, len);
    const uint64_t boundary = kth_key64(keys, k);
    const uint32_t boundary_key = static_cast<uint32_t>(boundary >> 32);
    chosen.reserve(static_cast<size_t>(k));
    for (int64_t i = 0; i < len; ++i) {
      const uint32_t key = keys[static_cast<size_t>(i)];
      if (key >= boundary_key && key64(key, i) >= boundary) chosen.push_back(key64(key, i));
    }
  }
  std::sort(chosen.begin(), chosen.end(), std::greater<uint64_t>());
  out.reserve(chosen.size());
  for (uint64_t kk : chosen) out.push_back(static_cast<int32_t>(index_of(kk)));
  return out;
}

std::string check_select_row(const float* row, int64_t len, int k, const int32_t* indices, const float* values,
                             bool sorted) {
  if (k <= 0) return "invalid k=" + std::to_string(k);
  if (!indices) return "indices is null";
  const int64_t valid = std::max<int64_t>(len, 0);
  const int64_t n = std::min<int64_t>(valid, k);
  auto slot = [](int64_t s) { return "slot " + std::to_string(s) + ": "; };

  // Structure: range, duplicates, padding.
  std::vector<uint8_t> seen(static_cast<size_t>(valid), 0);
  for (int64_t s = 0; s < n; ++s) {
    const int32_t idx = indices[s];
    if (idx < 0 || idx >= valid) {
      return slot(s) + "index " + std::to_string(idx) + " out of range [0, " + std::to_string(valid) + ")";
    }
    if (seen[static_cast<size_t>(idx)]) {
      int64_t first = 0;
      while (indices[first] != idx) ++first;
      return slot(s) + "index " + std::to_string(idx) + " appears twice (also in slot " + std::to_string(first) + ")";
    }
    seen[static_cast<size_t>(idx)] = 1;
  }
  for (int64_t s = n; s < k; ++s) {
    if (indices[s] != -1) {
      return slot(s) + "expected -1 padding (row length " + std::to_string(valid) + " < k=" + std::to_string(k) +
             "), got " + std::to_string(indices[s]);
    }
  }

  if (valid >= k) {
    // Membership in the expected set: k distinct members of a k-element set are the set.
    const std::vector<uint32_t>& keys = row_keys(row, valid);
    const uint64_t boundary = kth_key64(keys, k);
    const uint32_t boundary_key = static_cast<uint32_t>(boundary >> 32);
    const int64_t boundary_index = index_of(boundary);
    for (int64_t s = 0; s < k; ++s) {
      const int32_t idx = indices[s];
      const uint32_t key = keys[static_cast<size_t>(idx)];
      if (key64(key, idx) >= boundary) continue;
      if (key == boundary_key) {
        int64_t lower = 0;
        while (lower < valid && (seen[static_cast<size_t>(lower)] || ordered_key(row[lower]) != boundary_key)) ++lower;
        return slot(s) + "index " + std::to_string(idx) + " (value " + format_value(row[idx]) +
               ") ties the boundary value but index " + std::to_string(lower) +
               " is lower and unselected (ties at the boundary go to the lower index; the expected set takes indices "
               "<= " + std::to_string(boundary_index) + " of that value)";
      }
      return slot(s) + "index " + std::to_string(idx) + " not in the expected set (value " + format_value(row[idx]) +
             ", boundary value " + format_value(row[boundary_index]) + ")";
    }
    // The exactness criterion, directly: min over selected >= max over unselected.
    int64_t min_sel = -1, max_unsel = -1;
    uint32_t min_sel_key = 0xffffffffu, max_unsel_key = 0;
    for (int64_t i = 0; i < valid; ++i) {
      const uint32_t key = keys[static_cast<size_t>(i)];
      if (seen[static_cast<size_t>(i)]) {
        if (min_sel < 0 || key < min_sel_key) {
          min_sel = i;
          min_sel_key = key;
        }
      } else if (max_unsel < 0 || key > max_unsel_key) {
        max_unsel = i;
        max_unsel_key = key;
      }
    }
    if (max_unsel >= 0 && min_sel_key < max_unsel_key) {
      return "min over selected (value " + format_value(row[min_sel]) + " at index " + std::to_string(min_sel) +
             ") < max over unselected (value " + format_value(row[max_unsel]) + " at index " +
             std::to_string(max_unsel) + ")";
    }
  }

  if (values) {
    for (int64_t s = 0; s < n; ++s) {
      const int32_t idx = indices[s];
      if (float_bits(values[s]) != float_bits(row[idx])) {
        return slot(s) + "value " + format_value(values[s]) + " (" + hex32(float_bits(values[s])) + ") differs from row[" +
               std::to_string(idx) + "] = " + format_value(row[idx]) + " (" + hex32(float_bits(row[idx])) + ")";
      }
    }
    for (int64_t s = n; s < k; ++s) {
      if (float_bits(values[s]) != 0xff800000u) {
        return slot(s) + "padding value must be -inf, got " + format_value(values[s]) + " (" +
               hex32(float_bits(values[s])) + ")";
      }
    }
  }

  if (sorted) {
    for (int64_t s = 1; s < n; ++s) {
      const int32_t a = indices[s - 1], b = indices[s];
      if (key64(ordered_key(row[a]), a) < key64(ordered_key(row[b]), b)) {
        return slot(s) + "sorted order broken: index " + std::to_string(b) + " (value " + format_value(row[b]) +
               ") comes after index " + std::to_string(a) + " (value " + format_value(row[a]) +
               ") but should precede it (value desc, index asc)";
      }
    }
  }
  return "";
}

}  // namespace sgtopk::reference

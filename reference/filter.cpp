#include "reference/filter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "reference/select.h"
#include "templates/sgtopk/util/philox.h"

namespace sgtopk::reference {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::string format_float(float x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(x), float_bits(x));
  return buf;
}

// Ascending consecutive counts: "a", "a or b", "a or b or c", else "a to b".
std::string format_counts(const std::vector<int64_t>& counts) {
  if (counts.size() > 3) return std::to_string(counts.front()) + " to " + std::to_string(counts.back());
  std::string s;
  for (int64_t c : counts) s += (s.empty() ? "" : " or ") + std::to_string(c);
  return s;
}

}  // namespace

std::vector<float> scaled_row(const float* logits, int64_t vocab, float temperature) {
  std::vector<float> row(logits, logits + std::max<int64_t>(vocab, 0));
  if (temperature_scales(temperature) && temperature != 1.0f)
    for (float& x : row) x = x / temperature;  // IEEE float division, as the kernels
  return row;
}

float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &wide, 4);
  return x;
}

float fp16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  uint32_t wide;
  if (exponent == 0x1fu) {
    wide = sign | 0x7f800000u | (mantissa << 13);  // infinity, or NaN with its payload
  } else if (exponent != 0) {
    wide = sign | ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 -> 127
  } else if (mantissa == 0) {
    wide = sign;  // signed zero
  } else {  // subnormal: m * 2^-24, a normal float
    int shift = 0;
    uint32_t m = mantissa;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      ++shift;
    }
    wide = sign | ((113u - static_cast<uint32_t>(shift)) << 23) | ((m & 0x3ffu) << 13);
  }
  float x;
  std::memcpy(&x, &wide, 4);
  return x;
}

std::vector<float> widen_bf16(const uint16_t* bits, int64_t n) {
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_float(bits[i]);
  return out;
}

std::vector<float> widen_fp16(const uint16_t* bits, int64_t n) {
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = fp16_to_float(bits[i]);
  return out;
}

FilterRowReference filter_row_reference(const float* logits, int64_t vocab, int k, float p, float temperature) {
  if (!temperature_scales(temperature)) return filter_row_reference(logits, vocab, 1, 1.0f);  // greedy
  if (temperature != 1.0f) {
    const std::vector<float> scaled = scaled_row(logits, vocab, temperature);
    return filter_row_reference(scaled.data(), vocab, k, p);
  }
  FilterRowReference r;
  if (vocab <= 0) return r;
  // select_row is the filter order already (value desc in contract order,
  // index asc); with rank vocab it sorts the whole row.
  const int rank = top_k_enabled(k, vocab) ? k : static_cast<int>(std::min<int64_t>(vocab, INT32_MAX));
  r.order = select_row(logits, vocab, rank);
  const int64_t n = static_cast<int64_t>(r.order.size());

  // Softmax weights over the survivors. The first survivor is the largest,
  // so subtracting it keeps every exponent <= 0 (no overflow).
  const float top = logits[r.order[0]];
  std::vector<double> weight(static_cast<size_t>(n), 0.0);
  for (int64_t s = 0; s < n; ++s) {
    const float x = logits[r.order[static_cast<size_t>(s)]];
    double w = 0.0;
    if (top == kInf) w = (x == kInf) ? 1.0 : 0.0;  // the softmax's limit
    else if (std::isfinite(x)) w = std::exp(static_cast<double>(x) - static_cast<double>(top));
    weight[static_cast<size_t>(s)] = w;  // -inf and NaN: 0
  }
  // cum[c] = mass of order[0, c), unnormalized. The total is the same running
  // sum, so cum[n] == total exactly and `cum[c] >= p * total` is reached by
  // some c whenever p <= 1 (no rounding can leave top-p without an answer).
  std::vector<double> cum(static_cast<size_t>(n) + 1, 0.0);
  for (size_t s = 0; s < static_cast<size_t>(n); ++s) cum[s + 1] = cum[s] + weight[s];
  const double total = cum[static_cast<size_t>(n)];

  r.probabilities.resize(static_cast<size_t>(n), 0.0f);
  if (total > 0.0) {
    for (int64_t s = 0; s < n; ++s) {
      r.probabilities[static_cast<size_t>(s)] = static_cast<float>(weight[static_cast<size_t>(s)] / total);
    }
  }

  if (!top_p_enabled(p)) {
    r.count = n;
  } else if (p <= 0.0f || total == 0.0) {
    r.count = 1;  // p <= 0 keeps the top token; a row without mass keeps the first of its order
  } else {
    const double target = static_cast<double>(p) * total;
    int64_t c = 1;
    while (cum[static_cast<size_t>(c)] < target) ++c;  // ends by c == n: cum[n] == total >= target
    r.count = c;
    // The counts the contract accepts: each the answer for some mass within
    // the tolerance of p's (cum[c'] >= target - slack, cum[c' - 1] <=
    // target + slack): c and its neighbours, more only where the boundary
    // tokens each weigh far less than the tolerance.
    const double slack = kFilterMassTolerance * target;
    int64_t lo = c, hi = c;
    while (lo > 1 && cum[static_cast<size_t>(lo) - 1] >= target - slack) --lo;
    while (hi < n && cum[static_cast<size_t>(hi)] <= target + slack) ++hi;
    for (int64_t a = lo; a <= hi; ++a) r.acceptable_counts.push_back(a);
    return r;
  }
  r.acceptable_counts.push_back(r.count);
  return r;
}

std::vector<int32_t> filter_row(const float* logits, int64_t vocab, int k, float p, float temperature) {
  return filter_row_reference(logits, vocab, k, p, temperature).kept();
}

uint64_t filter_mass_units(float x, float top) {
  // The kernels' mass_of (templates/sgtopk/agent/filter_row.cuh), line for line.
  if (top == kInf) return x == top ? uint64_t{1} << 40 : 0u;
  if (!(x - x == 0.0f)) return 0u;  // -inf, NaN
  const float m = std::exp(x - top);  // float expf
  return static_cast<uint64_t>(static_cast<double>(m) * static_cast<double>(uint64_t{1} << 40) + 0.5);
}

FilterKeptOutputs filter_kept_outputs(const float* logits, int64_t vocab, float temperature,
                                      const std::vector<int32_t>& kept, uint64_t seed, uint64_t stream) {
  FilterKeptOutputs out;
  if (kept.empty()) return out;
  // Greedy rows order the logits as they are (filter_row_reference).
  const std::vector<float> row = scaled_row(logits, vocab, temperature_scales(temperature) ? temperature : 1.0f);
  float top = row[static_cast<size_t>(kept[0])];
  if (top == 0.0f) top = 0.0f;  // -0: the kernels' largest key gives +0 back (the same mass either way)
  for (int32_t i : kept) {
    const float x = row[static_cast<size_t>(i)];
    out.logits.push_back(x);
    out.mass.push_back(filter_mass_units(x, top));
    out.total += out.mass.back();
  }
  for (uint64_t m : out.mass)
    out.probabilities.push_back(out.total == 0u ? 0.0f
                                                : static_cast<float>(static_cast<double>(m) / static_cast<double>(out.total)));
  out.sampled = kept[0];
  if (out.total != 0u) {
    const uint64_t draw = sgtopk::philox::sample_draw(seed, stream, out.total);
    uint64_t cumulative = 0;
    for (size_t j = 0; j < kept.size(); ++j) {
      cumulative += out.mass[j];
      if (cumulative > draw) {
        out.sampled = kept[j];
        break;
      }
    }
  }
  return out;
}

std::vector<float> masked_row(const float* logits, int64_t vocab, const std::vector<int32_t>& kept, float mask_value) {
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(vocab, 0)), mask_value);
  for (int32_t i : kept) out[static_cast<size_t>(i)] = logits[i];
  return out;
}

std::string check_filter_candidates(const float* logits, int64_t vocab, int k, float p, const int32_t* indices,
                                    int64_t count, float temperature) {
  const FilterRowReference r = filter_row_reference(logits, vocab, k, p, temperature);
  const auto& ok = r.acceptable_counts;
  if (std::find(ok.begin(), ok.end(), count) == ok.end()) {
    return "kept " + std::to_string(count) + " tokens, expected " + format_counts(ok);
  }
  if (count > 0 && !indices) return "indices is null";
  for (int64_t s = 0; s < count; ++s) {
    const int32_t want = r.order[static_cast<size_t>(s)];
    if (indices[s] != want) {
      const std::string got = (indices[s] >= 0 && indices[s] < vocab)
                                  ? std::to_string(indices[s]) + " (logit " + format_float(logits[indices[s]]) + ")"
                                  : std::to_string(indices[s]) + " (out of range)";
      return "slot " + std::to_string(s) + ": index " + got + ", expected " + std::to_string(want) + " (logit " +
             format_float(logits[want]) + "; order is logit desc, index asc)";
    }
  }
  return "";
}

std::string check_filter_mask(const float* logits, int64_t vocab, int k, float p, const float* masked,
                              float mask_value, float temperature) {
  const FilterRowReference r = filter_row_reference(logits, vocab, k, p, temperature);
  if (vocab > 0 && !masked) return "masked row is null";
  // One pass, however many counts are acceptable (the counts are consecutive,
  // lo..hi): order[0, lo) kept, every other element masked but for a kept
  // prefix of order[lo, hi).
  const auto& ok = r.acceptable_counts;
  const int64_t lo = ok.empty() ? 0 : ok.front(), hi = ok.empty() ? 0 : ok.back();
  auto kept_at = [&](int64_t i) { return float_bits(masked[i]) == float_bits(logits[i]); };
  auto masked_at = [&](int64_t i) { return float_bits(masked[i]) == float_bits(mask_value); };
  int64_t c = lo;  // the kernel's count: the kept prefix of the band, as far as it goes
  while (c < hi && kept_at(r.order[static_cast<size_t>(c)])) ++c;
  std::vector<char> kept(static_cast<size_t>(std::max<int64_t>(vocab, 0)), 0);
  for (int64_t s = 0; s < c; ++s) kept[static_cast<size_t>(r.order[static_cast<size_t>(s)])] = 1;
  for (int64_t i = 0; i < vocab; ++i) {
    const bool keep = kept[static_cast<size_t>(i)] != 0;
    if (keep ? kept_at(i) : masked_at(i)) continue;
    return "index " + std::to_string(i) + ": " + format_float(masked[i]) + ", expected " +
           format_float(keep ? logits[i] : mask_value) + " (logit " + format_float(logits[i]) + ", reference keeps " +
           format_counts(ok) + " tokens)";
  }
  return "";
}

}  // namespace sgtopk::reference

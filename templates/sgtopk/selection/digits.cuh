// The digits a refinement round resolves: the coarse key, then the rest
// of the FP32 ordered key 11 bits at a time, then the inverted index.
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

template <int kIndexBits>
struct DigitSchedule {
  static constexpr int kIndexRounds = (kIndexBits + 10) / 11;

  int known;       // high ordered-key bits every candidate shares (0..32)
  int key_rounds;  // rounds resolving the other 32 - known key bits

  SGTOPK_DEVICE explicit DigitSchedule(u32 known_key_bits)
      : known(static_cast<int>(known_key_bits)), key_rounds((32 - static_cast<int>(known_key_bits) + 10) / 11) {}

  // Rounds 0 .. rounds() - 1: coarse, key, index.
  SGTOPK_DEVICE int rounds() const { return 1 + key_rounds + kIndexRounds; }

  // Rank-key digits of round r >= 1: (key >> shift) & ((1 << bits) - 1).
  // shift(0) = 64 - known: the bits resolved before round 1.
  SGTOPK_DEVICE int shift(int r) const {
    if (r <= key_rounds) return 32 + max_of(0, 32 - known - 11 * r);
    const int j = r - 1 - key_rounds;  // index rounds from the top index bit down
    return max_of(0, kIndexBits - 11 * (j + 1));
  }
  SGTOPK_DEVICE int bits(int r) const {
    if (r <= key_rounds) return min_of(11, 32 - known - 11 * (r - 1));
    const int j = r - 1 - key_rounds;
    return min_of(11, kIndexBits - 11 * j);
  }
  SGTOPK_DEVICE u32 digit(u64 rank_key, int r) const {
    return static_cast<u32>(rank_key >> shift(r)) & ((1u << bits(r)) - 1u);
  }
};

}  // namespace sgtopk

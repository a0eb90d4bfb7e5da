// Round 0's classification of a score against the boundary: commit, carry
// into the frontier, or drop; per score and per 16-byte vector.
#pragma once
#include "sgtopk/util/keys.cuh"

namespace sgtopk {

// What round 0 does with one score.
struct Verdict {
  bool commit;  // above the boundary, or in a boundary group taken whole
  bool carry;   // in the boundary group, into the next round

  // A digit against the boundary digit d: above commits, d commits when its
  // group is taken whole and is carried otherwise, below is dropped.
  static SGTOPK_DEVICE Verdict of_digit(u32 digit, u32 d, bool take_group) {
    return Verdict{digit > d || (digit == d && take_group), digit == d && !take_group};
  }
};

// Round 0's verdicts by the boundary bin's FP32 endpoints (ALGORITHM.md,
// "Endpoint"): commit x >= commit_low, carry keep_low <= x < commit_low
// (keep_low == commit_low: nothing carried). When the boundary is NaN's bin,
// every score is at or above it (keep_all), and a bin taken whole commits
// them all (commit_all): NaN included, which no comparison would admit.
struct EndpointVerdict {
  float commit_low, keep_low;
  bool commit_all, keep_all;  // block-uniform
  SGTOPK_DEVICE Verdict operator()(float x) const {
    const bool commit = commit_all || x >= commit_low;
    return Verdict{commit, !commit && (keep_all || x >= keep_low)};
  }
};

// One 16-byte vector of a chunk, as a chunk of four scores (verdict_masks).
struct OneVector {
  static constexpr int kCount = 4;
  float4 q;
  SGTOPK_DEVICE float score(int n) const { return n == 0 ? q.x : n == 1 ? q.y : n == 2 ? q.z : q.w; }
};

// A chunk's commit and carry masks over every slot (the caller ANDs in the
// live ones): one verdict per score ...
template <typename Chunk, typename VerdictOf>
SGTOPK_DEVICE void verdict_masks(const Chunk& chunk, const VerdictOf& verdict_of, u32& commits, u32& carries) {
#pragma unroll
  for (int n = 0; n < Chunk::kCount; ++n) {
    const Verdict verdict = verdict_of(chunk.score(n));
    commits |= static_cast<u32>(verdict.commit) << n;
    carries |= static_cast<u32>(verdict.carry) << n;
  }
}
// ... or, by endpoints, two comparisons per score; the uniform cases and the
// carries once per chunk.
template <typename Chunk>
SGTOPK_DEVICE void verdict_masks(const Chunk& chunk, const EndpointVerdict& verdict_of, u32& commits, u32& carries) {
  u32 kept = 0u;
#pragma unroll
  for (int n = 0; n < Chunk::kCount; ++n) {
    commits |= (chunk.score(n) >= verdict_of.commit_low ? 1u : 0u) << n;
    kept |= (chunk.score(n) >= verdict_of.keep_low ? 1u : 0u) << n;
  }
  if (verdict_of.commit_all) commits = ~0u;
  if (verdict_of.keep_all) kept = ~0u;
  carries = kept & ~commits;
}

}  // namespace sgtopk

// The filter_row family (one CTA a row; a sampled threshold gathers the
// candidates in one pass and every decision runs over them, else digit
// histograms over the row; docs/filter-design.md):
// templates/sgtopk/agent/filter_row.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "runtime/families/select_common.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

// The CTAs of `threads` and `bytes` of shared memory an SM holds at once:
// its 2048 threads, its 65536 registers at the kernel's 64 a thread (the
// launch bounds hold it to that), and its shared memory (the per-block
// limit and 1 KB, with 1 KB reserved per CTA from sm_80 on).
int filter_ctas_per_sm(int threads, unsigned bytes, const std::string& arch) {
  int ctas = std::min(2048 / threads, 65536 / (threads * 64));
  const unsigned limit = max_dynamic_shared_bytes(arch);
  if (limit != 0u) ctas = std::min(ctas, static_cast<int>((limit + 1024u) / (bytes + 1024u)));
  return std::max(1, ctas);
}

// kDtype: abi.h's kFilterF32 / kFilterBf16 / kFilterF16 are sgtopk_dtype's values.
// kSampleSize and kTopPSampleSize (top-k's and top-p alone's; 0: the exact
// route only) and kSampleSigmas steer the sampled
// route (agent/filter_row.cuh, propose()); kLoadsInFlight is the 16-byte
// loads a thread keeps in flight in its passes (stream_row()); kOutputs:
// abi.h's kFilterOut* of the problem's flags.
// Top-k's sample is at most one key a thread where 1024 threads carry the
// candidate or sample output: at 64 registers a thread, a second step over
// the sample spilled there.
KernelConfig filter_config(Plan& plan, const Problem& p, const FilterPolicy& policy, int threads, int loads_in_flight,
                           int prefetch_ahead_steps) {
  int sample_size = policy.sample_size;
  if ((p.filter_candidates || p.filter_sample) && threads >= 1024 && sample_size > threads) {
    sample_size = threads;
    plan.derived.push_back("top-k's sample " + std::to_string(sample_size) + ", one key a thread, with the candidate or sample output at " +
                           std::to_string(threads) + " threads [filter.sample_size]");
  }
  return KernelConfig()
      .integer("kThreads", threads)
      .integer("kDtype", static_cast<int>(p.dtype))
      .integer("kSampleSize", sample_size)
      .integer("kTopPSampleSize", policy.top_p_sample_size)
      .integer("kSampleSigmas", policy.sample_sigmas)
      .integer("kLoadsInFlight", loads_in_flight)
      .integer("kPrefetchAheadSteps", prefetch_ahead_steps)
      .integer("kOutputs", (p.filter_mask ? sgtopk::kFilterOutMask : 0) |
                               (p.filter_candidates ? sgtopk::kFilterOutCandidates : 0) |
                               (p.filter_sample ? sgtopk::kFilterOutSample : 0));
}


FilterRowCta filter_row_cta(const Problem& p, const FilterPolicy& policy, int sm_count) {
  if (p.rows <= int64_t{policy.few_rows_per_sm} * sm_count)
    return FilterRowCta{policy.few_rows_block_threads, policy.few_rows_loads_in_flight, FilterRowCta::kFewRows};
  const bool outputs = p.filter_candidates || p.filter_sample;
  if (policy.many_rows_per_sm > 0 && !outputs && p.rows >= int64_t{policy.many_rows_per_sm} * sm_count)
    return FilterRowCta{policy.many_rows_block_threads, policy.loads_in_flight, FilterRowCta::kManyRows};
  return FilterRowCta{policy.block_threads, policy.loads_in_flight, FilterRowCta::kRows};
}

// The candidate buffer's keys (abi.h's FilterRowShared): the policy's in
// the CTAs of mask-only plans past the few rows; elsewhere the largest, a
// power of two (the candidate and sample outputs sort the buffer; a
// few-rows CTA is alone on its SM, so a smaller one gains nothing).
static int filter_row_candidates(Plan& plan, const Problem& p, const FilterPolicy& policy, const FilterRowCta& cta) {
  if (cta.rows == FilterRowCta::kManyRows) return policy.many_rows_candidate_buffer;
  const bool outputs = p.filter_candidates || p.filter_sample;
  const int candidates = outputs || cta.few_rows() ? sgtopk::kFilterCandidates : policy.candidate_buffer;
  if (candidates != policy.candidate_buffer)
    plan.derived.push_back("a candidate buffer of " + std::to_string(candidates) + " keys: " +
                           (outputs ? "the candidate and sample outputs sort it" : "the few-rows CTA is alone on its SM") +
                           " [filter.candidate_buffer]");
  return candidates;
}

void plan_filter_row(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const FilterRowCta cta = filter_row_cta(p, policy.filter, target.sm_count);
  const int candidates = filter_row_candidates(plan, p, policy.filter, cta);
  if (policy.filter.sample_size > candidates)
    plan.derived.push_back("top-k's sample " + std::to_string(candidates) + ", the candidate buffer's size [filter.sample_size]");
  // At 8192 candidates about 88 KB (their keys and indices are 64 KB): past
  // the default 48 KB, so the loader opts in (kernel_module.cpp), within
  // every sm_80+ limit (99 KB at least); two CTAs an SM on sm_90 by memory.
  plan.block = static_cast<unsigned>(cta.threads);
  plan.dynamic_smem_bytes = sgtopk::filter_row_shared_bytes(candidates);
  // The CTAs an SM holds at once, as the launch bounds' minimum: at 512
  // threads, two (64 registers a thread); at 1024, one; at 256 with 4032
  // candidates, four.
  plan.min_blocks_per_sm = static_cast<unsigned>(filter_ctas_per_sm(cta.threads, plan.dynamic_smem_bytes, target.arch));
  // A CTA takes every grid-th row: the CTAs an SM holds at once (threads and
  // shared memory permitting) on every SM, so rows past live_rows cost no
  // empty CTAs.
  plan.grid = static_cast<unsigned>(std::min<int64_t>(p.rows, int64_t{target.sm_count} * plan.min_blocks_per_sm));
  const bool prefetches = has_bulk_prefetch(target);
  describe_prefetches(plan, target, policy.filter.prefetch_ahead_steps != 0,
                      "passes ask L2 for " + std::to_string(policy.filter.prefetch_ahead_steps) + " step(s) ahead",
                      "filter.prefetch_ahead_steps");
  const int prefetch_ahead_steps = prefetches ? policy.filter.prefetch_ahead_steps : 0;
  plan.config = filter_config(plan, p, policy.filter, cta.threads, cta.loads_in_flight, prefetch_ahead_steps);
  plan.config.integer("kCandidates", candidates).integer("kPatternBins", 0);
  plan.workspace_bytes = 0;

  // Top-p alone by 16-bit patterns (of a 16-bit logit, of an fp32 key's top
  // half): their counts beside the row's shared state, in CTAs of 1024 (one
  // an SM by memory), a second kernel of the plan that takes the top-p-alone
  // rows while the first keeps the others in its CTAs.
  const unsigned pattern_bytes = sgtopk::filter_row_shared_bytes(sgtopk::kFilterCandidates) + sgtopk::kFilterPatternBinBytes;
  const int64_t min_width = policy.filter.top_p_by_patterns_min_width;
  const bool wanted = min_width > 0 && p.width >= min_width && !p.filter_candidates && !p.filter_sample;
  if (!wanted) return;  // mask plans of rows at least that wide only
  if (pattern_bytes > max_dynamic_shared_bytes(target.arch)) {
    plan.derived.push_back("no pattern counts: the device's shared memory cannot hold them beside the row's state "
                           "[filter.top_p_by_patterns_min_width]");
    return;
  }
  plan.derived.push_back("top-p-alone rows in a second kernel that counts each 16-bit pattern, CTAs of 1024; the "
                         "other rows in the first [filter.top_p_by_patterns_min_width]");
  plan.config.integer("kRows", sgtopk::kFilterRowsButTopPAlone);
  Plan::Kernel& second = plan.second;
  second.entry = plan.entry + "_top_p_alone";
  second.block = 1024u;
  second.dynamic_smem_bytes = pattern_bytes;
  second.min_blocks_per_sm = static_cast<unsigned>(filter_ctas_per_sm(1024, pattern_bytes, target.arch));
  second.grid = static_cast<unsigned>(std::min<int64_t>(p.rows, int64_t{target.sm_count} * second.min_blocks_per_sm));
  second.config = filter_config(plan, p, policy.filter, 1024, cta.loads_in_flight, prefetch_ahead_steps);
  second.config.integer("kCandidates", sgtopk::kFilterCandidates)  // top-p alone's window: twice the buffer
      .integer("kPatternBins", 1)
      .integer("kRows", sgtopk::kFilterRowsTopPAlone);
  plan.launches = 2;
}

}  // namespace sgtopk::detail

// The policy: every tunable of the planner and the kernel templates, in one
// place (ARCHITECTURE.md, "one source of truth for constants").
//
// Each knob is declared once, in one line of the lists below: its kind, name
// (the TOML key), compiled-in default, allowed range and comment. The lists
// expand into the structs here and into the table in policy.cpp that drives
// the parser, the range checks and to_toml(), so a new knob is one X(...)
// line here plus its use. `sgtopk policy` prints the defaults as TOML.
//
// Kinds: INT (int; range (lo, hi[, power_of_two[, zero_allowed]])), WIDE
// (int64_t, the same), REAL (double; (lo, hi)), BOOL, ARCH (an "sm_NN[a]"
// name), LIST (ascending ints; ((lo, hi), max_entries)).
//
// The constants follow the HPC-Ops Top-K paper (seeds/000, sections 4-5):
// stride 64/128, margins 1.5K/1.75K, split counts 2/4/8, a 512-thread
// persistent CTA, a 1024-thread row-local exact CTA; where a default departs
// from the paper its comment names the decision record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#define SGTOPK_UNPAREN(...) __VA_ARGS__

// [select.direct] the row-local exact family (also the exact recovery route).
#define SGTOPK_POLICY_SELECT_DIRECT(X) \
  X(INT, block_threads, 512, (128, 1024, kPow2), \
    "threads per row-local CTA for streamed rows (paper: 1024; two of 512 per SM measured\n" \
    "faster: a chunk of the histogram pass is half as long, so a floor comes after fewer\n" \
    "scores, and one CTA streams while the other refines; docs/decisions/2026-12-01-direct-two-ctas-per-sm.md)") \
  X(INT, workers_per_sm, 2, (1, 8), \
    "persistent worker CTAs per SM for streamed rows") \
  X(BOOL, row_per_sm, true, (), \
    "a launch of no more rows than SMs gives each streamed row one CTA of its SM's threads\n" \
    "(block_threads x workers_per_sm, at most 1024), since no second row would share the SM;\n" \
    "false: CTAs of block_threads as for more rows") \
  X(INT, register_block_threads, 1024, (128, 1024, kPow2), \
    "threads per CTA for rows kept in registers, with as many threads per SM as\n" \
    "block_threads x workers_per_sm (at least one CTA)") \
  X(INT, items_per_thread, 16, (1, 32), \
    "scores per thread kept in registers: rows with width <= register_block_threads *\n" \
    "items_per_thread use the register-resident short-row body") \
  X(INT, frontier_shared_capacity, 4096, (256, 16384), \
    "frontier entries kept in shared memory (at least; see frontier_shared_per_k)") \
  X(REAL, frontier_shared_per_k, 2.0, (0.0, 8.0), \
    "0: off; else the shared frontier of a sampled, split or cluster plan holds per_k x K\n" \
    "entries (rounded up to 256) when that is more than frontier_shared_capacity, up to\n" \
    "frontier_shared_limit: K = 4096 on iid rows admits 8 K candidates. Not the direct\n" \
    "family's, whose floor marks share its block (docs/decisions/2026-12-04-k-sweep-ranks-and-frontier.md)") \
  X(INT, frontier_shared_limit, 8192, (256, 16384), \
    "most frontier entries frontier_shared_per_k gives a plan (8192: two 512-thread sampled\n" \
    "CTAs still fit an SM)") \
  X(INT, frontier_global_capacity, 16384, (0, int64_t{1} << 24), \
    "frontier entries per worker CTA in its global workspace slice; a larger frontier\n" \
    "is refined by re-reading the row instead") \
  X(INT, vector_bytes, 16, (4, 16, kPow2), \
    "widest score load in bytes (16: float4 body after a scalar head; 4 and 8: scalar loads for now)") \
  X(INT, loads_in_flight, 8, (1, 8), \
    "16-byte loads each thread issues before classifying the first (this family's passes;\n" \
    "the sampled family has its own)") \
  X(BOOL, prefetch_next_chunk, false, (), \
    "issue the next chunk's loads before classifying this one (double buffer; measured slower, docs/decisions/2026-11-30-direct-prefetch-knobs-off.md)") \
  X(INT, prefetch_l2_chunks, 0, (0, 4), \
    "0: off; else every streamed pass that reads whole chunks (both families; not the\n" \
    "direct family's marked classification pass) asks L2 for the chunk that many ahead\n" \
    "(prefetch.global.L2; measured neutral to slower, docs/decisions/2026-11-30-direct-prefetch-knobs-off.md)") \
  X(BOOL, endpoint_classification, true, (), \
    "the classification pass compares scores with the boundary bin's FP32 endpoints\n" \
    "instead of computing coarse keys: two comparisons per score (docs/decisions/2026-11-30-direct-endpoint-classification.md)") \
  X(BOOL, aggregate_histogram, false, (), \
    "histogram updates aggregated per warp (one shared atomic per distinct bin)") \
  X(BOOL, histogram_backward, true, (), \
    "the exact route's histogram pass walks the row from its end to its start, so the\n" \
    "classification pass (from the start) begins on the bytes still in L2: up to one\n" \
    "L2 share (~0.45 MB per worker on an H200) of the second read (measured 4% faster, docs/decisions/2026-11-30-direct-histogram-backward.md)") \
  X(BOOL, floor_marks, true, (), \
    "the direct family's histogram pass marks, per thread, the 16-byte vectors holding a score\n" \
    "at or above its rising floor, and the classification pass reads only those; shared memory:\n" \
    "a bit per thread and load of each block-wide chunk (32 KB at width 2^20, 1024 threads);\n" \
    "off where that does not fit, for register rows, and in the sampled family's recovery") \
  X(INT, sparse_vectors, 2, (0, 8), \
    "with floor marks: a warp whose lanes each hold at most this many marked vectors of a\n" \
    "chunk takes verdicts on those vectors only, one at a time, instead of on every slot\n" \
    "of the chunk unrolled (0: always every slot)") \
  X(BOOL, gather_marked, true, (), \
    "with floor marks: the classification pass gathers each thread's marked vectors\n" \
    "loads_in_flight at a time across chunks, instead of visiting the row chunk by chunk\n" \
    "and waiting out a memory latency per chunk for a few vectors (docs/decisions/2026-11-30-direct-gather-marked.md)") \
  X(INT, marked_bin_chunks, 3, (0, 16), \
    "with floor marks: for this many block-wide chunks the histogram pass reads first, it\n" \
    "also keeps each marked vector's highest coarse bin (2 bytes of shared memory per\n" \
    "vector: 16 KB a chunk at 1024 threads x 8 loads), and the classification pass reads\n" \
    "only those reaching the final boundary bin: the floor is low early in a row and\n" \
    "marks many more there (0: off; docs/decisions/2026-11-30-direct-marked-bins.md)") \
  X(INT, gather_batch, 4, (0, 8), \
    "with gathered marks: vectors each thread loads per batch before using the first\n" \
    "(0: loads_in_flight)") \
  X(BOOL, work_units, true, (), \
    "the exact route's histogram pass (both families) hands out warp-sized work units at run\n" \
    "time to whichever warp is free, instead of a fixed slice of every chunk per warp, so no\n" \
    "warp holds the block at the barrier after it; with 16-byte loads, without\n" \
    "prefetch_next_chunk and prefetch_l2_chunks (docs/decisions/2026-11-30-direct-work-units.md)") \
  X(BOOL, raise_at_claim, true, (), \
    "with work units, the floor is raised by the warp that takes a chunk's last unit\n" \
    "(about when every warp has counted its unit of the chunk before), before its loads,\n" \
    "instead of after one visit of each chunk: the rest of the chunk meets a floor from\n" \
    "the whole chunk before it (docs/decisions/2026-12-01-direct-raise-at-claim.md)") \
  X(INT, raises_per_chunk, 2, (1, 32), \
    "with raise_at_claim: how many claims of each chunk's units raise the floor, evenly\n" \
    "spaced, the last unit's always (rounded down to a power of two, at most the block's\n" \
    "warps; docs/decisions/2026-12-01-direct-two-ctas-per-sm.md)") \
  X(INT, small_group, 0, (0, 1024), \
    "refinement finishes a carried group of at most this many candidates in one step, each\n" \
    "counting the candidates that outrank it, instead of more radix rounds (0: radix rounds\n" \
    "to the end; capped by the block's threads and the frontier capacity; the sampled family\n" \
    "has its own). Off here: neutral for this family, and without it 8 loads in flight\n" \
    "compile without spills (docs/decisions/2026-12-01-direct-eight-loads-in-flight.md)")

// [select.sampled] the persistent sampled family (proposal, certification, refinement).
#define SGTOPK_POLICY_SELECT_SAMPLED(X) \
  X(INT, block_threads, 512, (128, 1024, kPow2), \
    "threads per persistent CTA") \
  X(INT, stride_wide, 32, (1, 4096), \
    "view stride s for rows of at least wide_row_threshold elements (paper: 128)") \
  X(INT, stride_narrow, 32, (1, 4096), \
    "view stride s for narrower rows (paper: 64)") \
  X(WIDE, wide_row_threshold, 131072, (1, kMaxWidth), \
    "rows at least this wide use stride_wide") \
  X(REAL, primary_margin, 1.5, (1.0, 8.0), \
    "rho0: the proposal targets rank ceil(rho0 * K) (paper: 1.5)") \
  X(REAL, secondary_margin, 1.75, (1.0, 8.0), \
    "rho1 >= rho0: the band's target rank on underfill (paper: 1.75)") \
  X(INT, workers_per_sm, 2, (1, 8), \
    "persistent worker CTAs per SM; rows past the first wave are claimed from a device counter") \
  X(INT, view_loads_in_flight, 8, (1, 16), \
    "view samples each thread gathers before counting the first (the proposal's loads in flight)") \
  X(INT, loads_in_flight, 4, (1, 8), \
    "16-byte loads each thread issues before using the first in the certification pass, the\n" \
    "band pass and the exact recovery route (the direct family has its own)") \
  X(INT, small_group, 64, (0, 1024), \
    "refinement (the sampled family's) finishes a carried group of at most this many\n" \
    "candidates in one step, each counting the candidates that outrank it (0: radix rounds\n" \
    "to the end; capped as the direct family's)") \
  X(INT, view_block, 16, (1, 32, kPow2), \
    "consecutive scores the view takes per block: b scores every b * s positions (the same\n" \
    "density 1/s; paper: 1). Blocks of 16 at stride 32 (the default): half the DRAM sectors\n" \
    "of stride 128 for 4x its samples, enough that correlated neighbours do not underfill\n" \
    "(measured 10% faster than the paper's view, docs/decisions/2026-11-30-sampled-blocked-view.md)") \
  X(REAL, primary_confidence, 3.0, (0.0, 16.0), \
    "0: off; else z: the primary sample rank is at least ceil(K/s + z * sqrt(K/s)) (the\n" \
    "secondary rises by as much), so that the count at or above it underfills K with about\n" \
    "the same small odds at every K: rho0 = 1.5 alone is z = 1.4 at K = 256, s = 32 (10% of\n" \
    "iid rows underfilled) and z = 4 at K = 2048 (docs/decisions/2026-12-04-k-sweep-ranks-and-frontier.md)") \
  X(REAL, primary_excess_sigmas, 4.0, (0.0, 16.0), \
    "0: off; else the margins' primary sample rank is at most ceil(K/s + this * sqrt(K/s)) (the\n" \
    "secondary lowered by as much): rho0 = 1.5 asks for z = 8 at K = 8192, s = 32, whose 1.5x K\n" \
    "candidates overflow the shared frontier; K <= 2048 at s = 32 keeps its ranks\n" \
    "(docs/decisions/2026-12-04-split-view-stride-by-width.md)") \
  X(INT, min_sample_rank, 0, (0, 4096), \
    "0: off; else both strides shrink (at plan time, from K) until the primary sample rank\n" \
    "ceil(primary_margin * K / s) reaches it: small K gets a denser view (not yet measured)") \
  X(INT, min_view_blocks, 4, (0, 64), \
    "0: off; else view_block halves (at plan time, from K) until the primary sample rank q0\n" \
    "spans at least this many blocks: neighbours in a block are correlated, so small K\n" \
    "needs smaller blocks (K = 256 with blocks of 16: 14% of indexer rows recovered exactly)") \
  X(REAL, fine_proposal_excess, 2.0, (0.0, 64.0), \
    "0: off; else the fine proposal, for a row whose view holds at least ceil(excess *\n" \
    "primary_margin * K / s) samples in tau0's bin and above (its coarse boundary would admit\n" \
    "about excess times the targeted candidates; up to 1: every row): each boundary rises from\n" \
    "its coarse bin's lowest number to that of the 1/1024th of the bin holding its sample rank\n" \
    "(a second look at the view). 1M uniform rows: 16.6 K -> about 3 K candidates. Refines\n" \
    "ALGORITHM.md's proposal by coarse bins (docs/decisions/2026-11-30-sampled-fine-proposal.md)")

// [select.split] KV-split for a few long rows: a row's segments on several CTAs.
#define SGTOPK_POLICY_SELECT_SPLIT(X) \
  X(LIST, split_counts, (2, 4, 8, 16, 32, 64, 128, 256), ((1, 1024), 16), \
    "CTAs per row the planner chooses from: the largest whose rows x count CTAs fit\n" \
    "ctas_per_sm per SM and whose segments hold min_segment_width scores (paper: 2, 4, 8)") \
  X(WIDE, min_width, 65536, (1, kMaxWidth), \
    "rows narrower than this are never split (the crossover map: below 64K a row-local family\n" \
    "is as fast; docs/decisions/2026-12-01-crossover-map.md)") \
  X(INT, max_rows_per_sm, 1, (1, 64), \
    "split only while rows <= max_rows_per_sm * SMs") \
  X(INT, ctas_per_sm, 1, (1, 8), \
    "the grid holds at most this many CTAs per SM (each SM runs them at once)") \
  X(WIDE, min_segment_width, 8192, (64, kMaxWidth), \
    "scores per segment at least; a shorter row of the launch uses fewer segments") \
  X(INT, block_threads, 1024, (128, 1024, kPow2), \
    "threads per CTA (1024 x 1 per SM: the finisher's refinement and the replicated proposal\n" \
    "are latency-bound; docs/decisions/2026-12-01-split-family.md)") \
  X(INT, loads_in_flight, 4, (1, 8), \
    "16-byte loads in flight per thread in the segment pass") \
  X(INT, stride_narrow, 64, (1, 4096), \
    "view stride s of rows narrower than wide_row_threshold (each CTA of a row reads the whole\n" \
    "view; margins, view block and fine proposal as [select.sampled])") \
  X(INT, stride_wide, 128, (1, 4096), \
    "view stride s of rows of at least wide_row_threshold: every CTA of the row histograms the\n" \
    "view before its segment pass (docs/decisions/2026-12-04-split-view-stride-by-width.md)") \
  X(WIDE, wide_row_threshold, 786432, (1, kMaxWidth), \
    "rows at least this wide use stride_wide") \
  X(INT, segment_capacity, 8192, (0, 16384), \
    "0: as [select.direct] gives the frontier's shared entries; else at least this many: the\n" \
    "candidates a segment keeps in shared memory before its record (a segment with more marks\n" \
    "its row's record overflowed, and the finisher reads the whole row again). 8192 holds every\n" \
    "uniform 256K row split in two; it costs no shared memory beside the finisher's form\n" \
    "(docs/decisions/2026-12-04-split-segment-capacity-and-kept-view.md)") \
  X(INT, candidate_capacity, 16384, (256, int64_t{1} << 22), \
    "candidates stored per row for its finisher; with more, the finisher admits them again in\n" \
    "one pass of its own over the row") \
  X(INT, finisher_items, 8, (0, 16), \
    "0: off; else a finisher whose row has at most block_threads x finisher_items candidates\n" \
    "copies them all into shared memory at once and selects among them there\n" \
    "(block_select.cuh), instead of storing a frontier and refining it\n" \
    "(docs/decisions/2026-12-03-split-finisher-in-shared-memory.md)") \
  X(INT, prefetch_before_view_kb, 0, (0, 4096), \
    "0: off; else before its proposal each CTA asks L2 for this many KB from its segment's\n" \
    "start (bulk prefetches, sm_90 and newer): one CTA an SM keeps too few loads in flight to\n" \
    "hide DRAM's latency alone") \
  X(INT, prefetch_after_view_kb, 0, (0, 4096), \
    "0: off; else once its view's samples are read, each CTA asks L2 for the next this many KB\n" \
    "of its segment (after prefetch_before_view_kb), behind the view's own loads") \
  X(INT, prefetch_ahead_chunks, 0, (0, 8), \
    "0: off; else the segment pass asks L2 for the chunk (block_threads x loads_in_flight x\n" \
    "16 bytes) this many ahead of the one it reads (one bulk prefetch, sm_90 and newer)")

// [select.cluster] a few long rows on sm_90 clusters: one cluster a row, each
// CTA over one segment, the histograms summed in distributed shared memory.
#define SGTOPK_POLICY_SELECT_CLUSTER(X) \
  X(INT, max_rows, 0, (0, 1024), \
    "the planner picks the cluster family for at most this many rows (0: never) whose clusters\n" \
    "fit the GPU at once (rows x cluster_size <= SMs), on sm_90 or newer; forced, it runs any count") \
  X(WIDE, min_width, 65536, (1, kMaxWidth), \
    "rows narrower than this never take the cluster family") \
  X(INT, cluster_size, 8, (2, 8), \
    "CTAs a row, one cluster (at most 8: the portable size every sm_90 GPU schedules)") \
  X(INT, block_threads, 1024, (128, 1024, kPow2), \
    "threads per CTA (one CTA an SM)") \
  X(INT, loads_in_flight, 4, (1, 8), \
    "16-byte loads in flight per thread in the passes over a segment")

// [select.short_row] rows a CTA holds in registers: one CTA a row, radix
// rounds over the row's keys with histograms in shared memory.
#define SGTOPK_POLICY_SELECT_SHORT_ROW(X) \
  X(WIDE, max_width, 16384, (0, 32768), \
    "rows at most this wide use the short-row family (0: never; at most 1024 threads x 32); at\n" \
    "32768 it only ties the others (docs/decisions/2026-12-01-crossover-map.md)") \
  X(INT, items_per_thread, 16, (1, 32), \
    "scores a thread holds: a CTA is the fewest threads (a power of two, at least\n" \
    "min_block_threads) that hold the widest row in this many each; past max_block_threads,\n" \
    "more each (at most 32)") \
  X(INT, min_block_threads, 128, (32, 1024, kPow2), \
    "threads per CTA at least: narrow rows get small CTAs, several per SM") \
  X(INT, max_block_threads, 512, (32, 1024, kPow2), \
    "threads per CTA at most: two CTAs of 512 x 32 scores per SM hold 16384-score rows faster\n" \
    "than one of 1024 x 16 (the next row's loads overlap this one's rounds)") \
  X(INT, few_rows_items_per_thread, 4, (1, 32), \
    "launches of at most one row per SM: scores a thread instead of items_per_thread, in CTAs of\n" \
    "up to 1024 threads (there a row's latency sets the time, not the SM's throughput)") \
  X(BOOL, scores_in_registers, false, (), \
    "launches of more rows than SMs: keep the row's scores in registers after the load; false:\n" \
    "only their coarse keys (shared memory), the boundary bin's scores and the selected values\n" \
    "read again from L2, and more CTAs per SM (docs/decisions/2026-12-02-short-row-float4-runs.md);\n" \
    "launches of at most a row per SM keep them (a row's latency sets the time there)") \
  X(INT, threads_per_sm, 2048, (128, 2048), \
    "launches of more rows than SMs: resident threads per SM a plan asks for (CTAs per SM = this /\n" \
    "threads per CTA, at least 1): 1024 caps registers at 64 a thread, 1536 at 40, 2048 at 32")

// [select.dispatch] which family the planner picks.
#define SGTOPK_POLICY_SELECT_DISPATCH(X) \
  X(WIDE, sampled_min_width, 32768, (0, kMaxWidth), \
    "narrower rows use the direct family (sampling does not pay)") \
  X(INT, sampled_min_rows_per_sm, 2, (0, 64), \
    "fewer rows than this many per SM use the direct family (one CTA per row cannot fill the GPU;\n" \
    "at one row per SM the direct family is 5-20% faster on rows of 128K and more)")

// [filter] top-k / top-p: the filter_row family's CTA and its sampled route;
// Qrita's keys reserved.
#define SGTOPK_POLICY_FILTER(X) \
  X(INT, block_threads, 512, (128, 1024, kPow2), \
    "threads per CTA of the filter_row family past few_rows_per_sm rows an SM and below many_rows_per_sm\n" \
    "(one CTA a row, two an SM)") \
  X(INT, sample_size, 2048, (0, 8192), \
    "values of a row the sampled route samples for top-k, in runs of one 32-byte sector (held in the candidate\n" \
    "buffer, so at most its size); 0: the exact route only") \
  X(INT, top_p_sample_size, 1024, (0, 8192), \
    "values of a row, one at a time at a fixed stride, the sampled route samples for top-p alone (its window);\n" \
    "0: the exact route only") \
  X(INT, candidate_buffer, 8192, (64, 8192), \
    "keys (with their row indices) the shared candidate buffer of filter_row holds in the CTA of block_threads\n" \
    "in plans that write only the mask (elsewhere 8192, or many_rows_candidate_buffer): 8 bytes a key, so\n" \
    "fewer let more CTAs share an SM; rows whose candidates do not fit take the exact route") \
  X(INT, sample_sigmas, 4, (0, 32), \
    "the sampled route's margin: standard deviations added to the sample rank the threshold is taken at") \
  X(INT, loads_in_flight, 2, (1, 8), \
    "16-byte loads a thread keeps in flight in its passes over the row, past few_rows_per_sm rows an SM\n" \
    "(more spill at 512 threads and 64 registers)") \
  X(INT, few_rows_per_sm, 1, (0, 16), \
    "at most this many rows an SM take the few-rows CTA below (0: never)") \
  X(INT, few_rows_block_threads, 1024, (128, 1024, kPow2), \
    "threads per CTA with few rows (one CTA an SM at 64 registers a thread: more threads a row)") \
  X(INT, few_rows_loads_in_flight, 2, (1, 8), \
    "16-byte loads a thread keeps in flight with few rows (more would spill at 1024 threads)") \
  X(INT, many_rows_per_sm, 0, (0, 64), \
    "at least this many rows an SM take the many-rows CTA below in plans that write only the mask (0: never):\n" \
    "smaller CTAs, more of them an SM, so that their rows' serial steps overlap (fewer rows leave CTAs idle;\n" \
    "off: faster at some shapes, slower at others, docs/decisions/2026-12-07-filter-many-rows-cta.md)") \
  X(INT, many_rows_block_threads, 256, (128, 1024, kPow2), \
    "threads per CTA with many rows (with many_rows_candidate_buffer 4032, four CTAs an SM)") \
  X(INT, many_rows_candidate_buffer, 4032, (64, 8192), \
    "keys the candidate buffer holds with many rows (4032: 57,136 bytes of shared memory, four CTAs an SM;\n" \
    "4096 misses the fourth by 304 bytes)") \
  X(INT, prefetch_ahead_steps, 0, (0, 16), \
    "0: off; else each pass over a row asks L2 for the step (threads x loads in flight x 16 bytes)\n" \
    "this many ahead of the one it reads (one bulk prefetch, sm_90 and newer): two CTAs of 512\n" \
    "keep 32 KB of loads in flight an SM, too few to hide DRAM's latency") \
  X(INT, top_p_by_patterns_min_width, 32000, (0, 1 << 30), \
    "0: off; else mask plans of filter_row whose rows are at least this wide take their top-p-alone rows\n" \
    "in a second kernel that counts each 16-bit pattern of the row (the logit's bits in bf16 and fp16, an\n" \
    "fp32 key's top half, whose counts name the window of the next read), where the device's shared memory\n" \
    "holds the counts (sm_90): 128 KB, so CTAs of 1024 threads, one an SM; the other rows stay in the first") \
  X(REAL, sigma_cutoff, 3.0, (0.0, 10.0), \
    "outlier threshold in standard deviations above the sample mean (reserved: Qrita, not read)") \
  X(INT, pivot_iterations, 8, (1, 64), \
    "quaternary pivot search rounds (reserved: Qrita, not read)")

// [filter.split] a few rows: each row's vocabulary on several CTAs, the last
// to arrive decides the row (docs/filter-design.md).
#define SGTOPK_POLICY_FILTER_SPLIT(X) \
  X(INT, min_segments, 3, (0, 1024), \
    "split a launch when at least this many CTAs a row fit (0: never; else the filter_row family); at\n" \
    "two a row filter_row is as fast (docs/decisions/2026-12-02-filter-split-family.md)") \
  X(INT, ctas_per_sm, 2, (1, 8), \
    "the grid holds at most this many CTAs an SM (rows x segments; two of 512 threads fit an SM)") \
  X(WIDE, min_segment_width, 2048, (64, kMaxWidth), \
    "logits a segment holds at least (1 x 128256: 2048 4% faster than 4096, 16384 16% slower)") \
  X(INT, block_threads, 512, (128, 1024, kPow2), \
    "threads per CTA (the segment pass and the finisher's decisions)") \
  X(INT, loads_in_flight, 2, (1, 8), \
    "16-byte loads a thread keeps in flight in the segment pass and the finisher's passes") \
  X(INT, prefetch_before_sample_kb, 0, (0, 4096), \
    "0: off; else before reading its sample each CTA asks L2 for this many KB from its segment's\n" \
    "start (bulk prefetches, sm_90 and newer), so that the segment pass finds them there") \
  X(INT, prefetch_ahead_steps, 0, (0, 16), \
    "0: off; else the segment pass and the finisher's passes ask L2 for the step (block_threads x\n" \
    "loads_in_flight x 16 bytes) this many ahead, as [filter]'s for filter_row")

// [compile] NVRTC.
#define SGTOPK_POLICY_COMPILE(X) \
  X(ARCH, default_arch, "sm_90", (), \
    "architecture compiled for when none is named") \
  X(INT, max_registers, 0, (16, 255, false, true), \
    "register cap per thread (--maxrregcount); 0: the compiler's choice") \
  X(BOOL, fast_compile, false, (), \
    "reserved: favour compile time over kernel speed") \
  X(BOOL, line_info, false, (), \
    "compile with -lineinfo")

namespace sgtopk::detail {

#define SGTOPK_POLICY_MEMBER(kind, name, value, range, comment) SGTOPK_POLICY_MEMBER_##kind(name, value)
#define SGTOPK_POLICY_MEMBER_INT(name, value) int name = value;
#define SGTOPK_POLICY_MEMBER_WIDE(name, value) int64_t name = value;
#define SGTOPK_POLICY_MEMBER_REAL(name, value) double name = value;
#define SGTOPK_POLICY_MEMBER_BOOL(name, value) bool name = value;
#define SGTOPK_POLICY_MEMBER_ARCH(name, value) std::string name = value;
#define SGTOPK_POLICY_MEMBER_LIST(name, value) std::vector<int> name = {SGTOPK_UNPAREN value};

struct SelectDirectPolicy {
  SGTOPK_POLICY_SELECT_DIRECT(SGTOPK_POLICY_MEMBER)
  bool operator==(const SelectDirectPolicy&) const = default;
};
struct SelectSampledPolicy {
  SGTOPK_POLICY_SELECT_SAMPLED(SGTOPK_POLICY_MEMBER)
  bool operator==(const SelectSampledPolicy&) const = default;
};
struct SelectSplitPolicy {
  SGTOPK_POLICY_SELECT_SPLIT(SGTOPK_POLICY_MEMBER)
  bool operator==(const SelectSplitPolicy&) const = default;
};
struct SelectClusterPolicy {
  SGTOPK_POLICY_SELECT_CLUSTER(SGTOPK_POLICY_MEMBER)
  bool operator==(const SelectClusterPolicy&) const = default;
};
struct SelectShortRowPolicy {
  SGTOPK_POLICY_SELECT_SHORT_ROW(SGTOPK_POLICY_MEMBER)
  bool operator==(const SelectShortRowPolicy&) const = default;
};
struct SelectDispatchPolicy {
  SGTOPK_POLICY_SELECT_DISPATCH(SGTOPK_POLICY_MEMBER)
  bool operator==(const SelectDispatchPolicy&) const = default;
};
struct FilterPolicy {
  SGTOPK_POLICY_FILTER(SGTOPK_POLICY_MEMBER)
  bool operator==(const FilterPolicy&) const = default;
};
struct FilterSplitPolicy {
  SGTOPK_POLICY_FILTER_SPLIT(SGTOPK_POLICY_MEMBER)
  bool operator==(const FilterSplitPolicy&) const = default;
};
struct CompilePolicy {
  SGTOPK_POLICY_COMPILE(SGTOPK_POLICY_MEMBER)
  bool operator==(const CompilePolicy&) const = default;
};

struct Policy {
  SelectDirectPolicy direct;
  SelectSampledPolicy sampled;
  SelectSplitPolicy split;
  SelectClusterPolicy cluster;
  SelectShortRowPolicy short_row;
  SelectDispatchPolicy dispatch;
  FilterPolicy filter;
  FilterSplitPolicy filter_split;
  CompilePolicy compile;

  // The compiled-in defaults (the member initializers above).
  static Policy defaults();
  // TOML with every key, grouped by section, each with a short comment;
  // parse_policy_string(to_toml()) == *this.
  std::string to_toml() const;
  bool operator==(const Policy&) const = default;
};

// Overlay: keys present in the TOML replace those of `base`; absent keys keep
// base's value. The result is validated as a whole (ranges and cross-field
// consistency). Every error throws sgtopk::Error with SGTOPK_ERROR_POLICY; its
// message names the source, the line and column, and the dotted key, e.g.
//   "<source>:<line>:<col>: select.sampled.stride_wide = 0 is out of range: must be in 1..4096"
// When a document has several errors, all are reported, one per line, in
// source order.
Policy parse_policy_file(const std::string& path, const Policy& base = Policy::defaults());
Policy parse_policy_string(std::string_view toml, const std::string& source_name = "<policy string>",
                           const Policy& base = Policy::defaults());

// Checks a policy built in code against the same rules (ranges, consistency);
// throws sgtopk::Error with SGTOPK_ERROR_POLICY naming `source_name` and the key.
void validate_policy(const Policy& policy, const std::string& source_name = "<policy>");

}  // namespace sgtopk::detail

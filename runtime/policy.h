// The policy: every tunable of the planner and the kernel templates, in one
// place (ARCHITECTURE.md, "one source of truth for constants").
//
// Each constant lives in exactly one spot: the member initializer below. Its
// TOML key, bounds and one-line comment live in one row of the field table in
// policy.cpp, which drives the parser, the range checks and to_toml().
// configs/default.toml is Policy::defaults().to_toml(), byte for byte.
//
// The constants follow the HPC-Ops Top-K paper (seeds/000, sections 4-5):
// stride 64/128, margins 1.5K/1.75K, split counts 2/4/8, a 512-thread
// persistent CTA, a 1024-thread row-local exact CTA.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sgtopk::detail {

// [select.direct] the row-local exact family (also the exact recovery route).
struct SelectDirectPolicy {
  int block_threads = 512;               // streamed rows: power of two, 128..1024
  int workers_per_sm = 2;                // streamed rows: persistent worker CTAs per SM, 1..8
  int register_block_threads = 1024;     // rows kept in registers: power of two, 128..1024
  int items_per_thread = 16;             // rows with width <= register_block_threads * items_per_thread stay in registers; 1..32
  int frontier_shared_capacity = 4096;   // frontier entries kept in shared memory, 256..16384
  int frontier_global_capacity = 16384;  // frontier entries per worker CTA in the global workspace slice, 0..2^24;
                                         // a larger frontier is refined by re-reading the row instead
  int vector_bytes = 16;                 // widest load: 4, 8 or 16 (8 loads scalars for now)
  int loads_in_flight = 8;               // 16-byte loads each thread issues before using the first, 1..8
  bool prefetch_next_chunk = false;      // issue the next chunk's loads before classifying this one (measured slower)
  int prefetch_l2_chunks = 0;            // 0: off; else chunks ahead each thread asks L2 to fetch, 0..4
  bool endpoint_classification = true;   // classification pass compares with FP32 bin endpoints, not coarse keys
  bool aggregate_histogram = false;      // one shared atomic per distinct bin per warp (__match_any_sync)
  bool histogram_backward = true;        // the exact route's histogram pass walks the row from its end (L2 reuse)
  bool floor_marks = true;               // the classification pass reads only what passed the histogram pass's floor
  int sparse_vectors = 2;                // with floor marks: lanes with at most this many marked vectors classify only those, 0..8
  bool gather_marked = true;             // with floor marks: the classification pass loads the marked vectors across chunks
  int marked_bin_chunks = 3;             // with floor marks: first chunks read whose marked vectors keep their highest bin, 0..16
  int gather_batch = 4;                  // vectors per thread per gathered batch, 0..8 (0: loads_in_flight)
  bool work_units = true;                // the histogram pass hands warp-sized units to whichever warp is free
  bool raise_at_claim = true;            // with work units: a chunk's last unit claimed raises the floor first
  int raises_per_chunk = 2;              // with raise_at_claim: claims of a chunk's units that raise, 1..32
  int small_group = 0;                   // refinement finishes a carried group this small by counting ranks, 0..1024
  bool operator==(const SelectDirectPolicy&) const = default;
};

// [select.sampled] the persistent sampled family (proposal, certification, refinement).
struct SelectSampledPolicy {
  int block_threads = 512;               // power of two, 128..1024
  int stride_wide = 32;                  // view stride s for wide rows, 1..4096 (the paper: 128)
  int stride_narrow = 32;                // view stride s for narrower rows, 1..4096 (the paper: 64)
  int64_t wide_row_threshold = 131072;   // rows at least this wide use stride_wide
  double primary_margin = 1.5;           // rho0, 1.0..8.0
  double secondary_margin = 1.75;        // rho1, primary_margin..8.0
  int workers_per_sm = 2;                // persistent worker CTAs per SM, 1..8
  int view_loads_in_flight = 8;          // view samples each thread gathers before counting the first, 1..16
  int loads_in_flight = 4;               // 16-byte loads per thread in flight in the full-row passes, 1..8
  int small_group = 64;                  // refinement finishes a carried group this small by counting ranks, 0..1024
  int view_block = 16;                   // consecutive scores per view block (the view density stays 1/s), 1..32 (the paper: 1)
  int min_sample_rank = 0;               // 0: off; else strides shrink until q0 = ceil(rho0*K/s) >= it, 0..4096
  int min_view_blocks = 4;               // 0: off; else view_block halves until q0 >= it * block, 0..64
  double fine_proposal_excess = 2.0;     // 0: off; else rows whose coarse tau0 would admit this many times rho0*K sharpen
  bool operator==(const SelectSampledPolicy&) const = default;
};

// [select.split] KV-split for a few long rows.
struct SelectSplitPolicy {
  std::vector<int> split_counts = {2, 4, 8};  // each 1..64, strictly ascending
  int64_t min_width = 262144;
  int max_rows_per_sm = 1;
  bool operator==(const SelectSplitPolicy&) const = default;
};

// [select.dispatch] which family the planner picks.
struct SelectDispatchPolicy {
  int64_t sampled_min_width = 32768;  // narrower rows use the direct family
  int sampled_min_rows_per_sm = 1;    // fewer rows than this x SMs use the direct family, 0..64
  int64_t cluster_max_rows = 4;       // at most this many rows -> cluster mapping
  int cluster_size = 8;               // 1..16
  bool operator==(const SelectDispatchPolicy&) const = default;
};

// [filter] Qrita top-k / top-p.
struct FilterPolicy {
  int block_threads = 1024;
  int sample_size = 1024;      // values sampled for the Gaussian cutoff
  double sigma_cutoff = 3.0;   // outlier threshold in standard deviations
  int pivot_iterations = 8;    // quaternary pivot search rounds
  bool operator==(const FilterPolicy&) const = default;
};

// [compile] NVRTC.
struct CompilePolicy {
  std::string default_arch = "sm_90";  // sm_[0-9]+a?
  int max_registers = 0;               // 0: the compiler's choice, else 16..255
  bool fast_compile = false;           // reserved
  bool line_info = false;              // -lineinfo
  bool operator==(const CompilePolicy&) const = default;
};

struct Policy {
  SelectDirectPolicy direct;
  SelectSampledPolicy sampled;
  SelectSplitPolicy split;
  SelectDispatchPolicy dispatch;
  FilterPolicy filter;
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

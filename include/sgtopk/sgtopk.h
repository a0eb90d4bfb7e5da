/*
 * sgtopk: exact top-K selection and top-k/top-p filtering on NVIDIA GPUs.
 *
 * Public C API. Plain C, opaque handles, every call returns a status; the
 * message of the last failure on the calling thread is sgtopk_last_error().
 * Nothing here aborts the process or throws.
 *
 * One call, end to end:
 *   sgtopk_compile(problem, options) -> plan (planned, generated, compiled with
 *   NVRTC or loaded from the disk cache, and, when a device is named, loaded)
 *   sgtopk_select(plan, args, stream) -> indices (and values) on the device
 *   (op SGTOPK_OP_SELECT), or sgtopk_filter(plan, args, stream) -> the masked
 *   logits, the kept candidates and / or a sampled token (op SGTOPK_OP_FILTER)
 *
 * Versioning: structs carry `struct_size` (set it with the SGTOPK_*_INIT
 * macros); fields are only ever appended.
 */
#ifndef SGTOPK_SGTOPK_H
#define SGTOPK_SGTOPK_H

#include <math.h> /* INFINITY, for SGTOPK_FILTER_ARGS_INIT */
#include <stddef.h>
#include <stdint.h>

#if defined(SGTOPK_BUILDING) && defined(__GNUC__)
#define SGTOPK_API __attribute__((visibility("default")))
#else
#define SGTOPK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SGTOPK_VERSION_MAJOR 0
#define SGTOPK_VERSION_MINOR 1
#define SGTOPK_VERSION_PATCH 0

/* The driver API's stream type (CUstream, cudaStream_t) without including cuda.h. */
struct CUstream_st;
typedef struct CUstream_st* sgtopk_stream;
/* A device address (CUdeviceptr). */
typedef uint64_t sgtopk_devptr;

typedef enum sgtopk_status {
  SGTOPK_OK = 0,
  SGTOPK_ERROR_INVALID_ARGUMENT = 1, /* the caller passed something the contract rejects */
  SGTOPK_ERROR_POLICY = 2,           /* policy TOML: syntax, unknown key, wrong type, range */
  SGTOPK_ERROR_COMPILE = 3,          /* NVRTC failed; the message names the reproduction folder */
  SGTOPK_ERROR_NO_DRIVER = 4,        /* libcuda.so.1 could not be opened, or no device */
  SGTOPK_ERROR_CUDA = 5,             /* a driver API call failed */
  SGTOPK_ERROR_UNSUPPORTED = 6,      /* valid request this build cannot serve */
  SGTOPK_ERROR_INTERNAL = 7
} sgtopk_status;

typedef enum sgtopk_operator {
  SGTOPK_OP_SELECT = 1, /* exact top-K indices per row (sparse-attention indexer) */
  SGTOPK_OP_FILTER = 2  /* top-k / top-p filtering of logits (sampling) */
} sgtopk_operator;

/* Element type of the scores / logits. Select takes SGTOPK_F32; the filter
 * all three (bf16 and fp16 widened exactly to float, temperature applied in
 * float; its output rows have the logits' type). */
typedef enum sgtopk_dtype { SGTOPK_F32 = 0, SGTOPK_BF16 = 1, SGTOPK_F16 = 2 } sgtopk_dtype;

/* Problem flags. */
#define SGTOPK_VALUES  (1u << 0) /* also write the selected scores */
#define SGTOPK_SORTED  (1u << 1) /* order each row by value descending, ties by index ascending */
#define SGTOPK_STARTS  (1u << 2) /* rows carry a start offset (args.starts) */
#define SGTOPK_ROUTE_STATS (1u << 3) /* count the route each row takes into args.route_stats */
/* The fused index transform (sparse attention's addressing), at most one of
 * the two; -1 padding stays -1, and the results must fit in int32:
 *   SGTOPK_INDEX_OFFSETS  write index + args.index_offsets[row]
 *   SGTOPK_PAGE_TABLE     write page_table[row][index / page_size] * page_size
 *                         + index % page_size (problem.page_size,
 *                         problem.page_table_pitch; args.page_table) */
#define SGTOPK_INDEX_OFFSETS (1u << 4)
#define SGTOPK_PAGE_TABLE (1u << 5)
/* Filter outputs (op SGTOPK_OP_FILTER), any combination; flags 0 means the
 * mask alone.
 *   SGTOPK_FILTER_MASK        the rows written to args.out with every token
 *                             that is not kept set to args.mask_value, kept
 *                             tokens copied unchanged
 *   SGTOPK_FILTER_CANDIDATES  per row the kept tokens in filter order (scaled
 *                             logit descending, ties to the lower index):
 *                             the first min(count, K) of them into
 *                             args.candidate_indices (and _logits, _probs),
 *                             the kept count (which may exceed K) into
 *                             args.candidate_counts; K (problem.k, 1..8192)
 *                             is the capacity of a row, problem.out_pitch its
 *                             stride. Entries past the count stay untouched.
 *   SGTOPK_FILTER_SAMPLE      one token per row drawn from the kept set with
 *                             the probabilities of _probs, from the row's
 *                             seed (args.seeds, args.seed_value), into
 *                             args.sampled_tokens: the same seed, logits, k,
 *                             p and temperature give the same token.
 * Without SGTOPK_FILTER_MASK the logits are only read (args.out stays 0). */
#define SGTOPK_FILTER_MASK (1u << 8)
#define SGTOPK_FILTER_CANDIDATES (1u << 9)
#define SGTOPK_FILTER_SAMPLE (1u << 10)

/* Slots of the route statistics buffer (uint64 each), from the one list in
 * sgtopk/route_stats.def: SGTOPK_ROUTE_SHORT, _NO_VIEW, _PRIMARY, _BAND,
 * _EXACT, _CANDIDATES, SGTOPK_CYCLES_PROPOSAL, _CERTIFICATION, _RECOVERY,
 * _REFINEMENT, SGTOPK_SPLIT_FROM_HISTOGRAM. The kernel adds to them; zero
 * the buffer before a call to count that call alone.
 * sgtopk_route_stat_name() names each slot. */
enum {
#define SGTOPK_ROUTE_STAT(slot, name, text) SGTOPK_##slot,
#include "route_stats.def"
#undef SGTOPK_ROUTE_STAT
  SGTOPK_ROUTE_STAT_SLOTS
};

/* What the user asks for. Shapes here are fixed in the plan; the live row
 * count, the lengths and the starts are device inputs of each launch.
 * The filter (op SGTOPK_OP_FILTER) reads rows (batch capacity, 1..2^31 - 1),
 * width (the vocabulary, 1..2^23), pitch, dtype and flags (0, or any of
 * SGTOPK_FILTER_MASK, SGTOPK_FILTER_CANDIDATES, SGTOPK_FILTER_SAMPLE); k is
 * the candidate output's capacity per row (1..8192 with
 * SGTOPK_FILTER_CANDIDATES, else 0) and out_pitch the row stride of its
 * arrays (0: k; else 0); the page fields stay 0. */
typedef struct sgtopk_problem {
  uint32_t struct_size;
  sgtopk_operator op;
  sgtopk_dtype dtype;
  int32_t k;          /* rank, 1..8192 (filter: the candidate capacity, 1..8192, or 0) */
  int64_t rows;       /* row capacity */
  int64_t width;      /* longest valid row, elements (filter: the vocabulary) */
  int64_t pitch;      /* row stride of scores (logits) in elements; 0 means width */
  int64_t out_pitch;  /* row stride of indices/values in elements; 0 means k */
  uint32_t flags;     /* SGTOPK_VALUES | SGTOPK_SORTED | SGTOPK_STARTS | SGTOPK_ROUTE_STATS |
                         SGTOPK_INDEX_OFFSETS | SGTOPK_PAGE_TABLE; filter: SGTOPK_FILTER_MASK |
                         SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE */
  int32_t page_size;         /* tokens per page (SGTOPK_PAGE_TABLE only, else 0) */
  int64_t page_table_pitch;  /* int32 entries from one row of args.page_table to the next;
                                0 means ceil(width / page_size) */
} sgtopk_problem;
#define SGTOPK_PROBLEM_INIT {sizeof(sgtopk_problem), SGTOPK_OP_SELECT, SGTOPK_F32, 0, 0, 0, 0, 0, 0u, 0, 0}

/* How to compile. With device >= 0 the plan is loaded on that device and
 * can launch; with device < 0 it is compiled for `arch` only (no GPU needed:
 * prewarming a cache on a build box). */
typedef struct sgtopk_compile_options {
  uint32_t struct_size;
  int32_t device;           /* CUDA device ordinal, or -1 for compile-only */
  const char* arch;         /* "sm_90"; NULL: the device's own, or with device < 0 the policy's compile.default_arch */
  const char* policy_file;  /* TOML file, or NULL */
  const char* policy_toml;  /* TOML text, or NULL (applied after policy_file) */
  const char* family;       /* force a kernel family by name, NULL: the planner's choice */
  int32_t own_workspace;    /* nonzero: the plan allocates its workspace at compile time */
} sgtopk_compile_options;
#define SGTOPK_COMPILE_OPTIONS_INIT {sizeof(sgtopk_compile_options), -1, NULL, NULL, NULL, NULL, 0}

/* Device pointers of one select launch. Optional pointers may be 0. */
typedef struct sgtopk_select_args {
  uint32_t struct_size;
  sgtopk_devptr scores;     /* float[rows][pitch] */
  sgtopk_devptr lengths;    /* int32[rows] valid lengths; 0: every row has `width` */
  sgtopk_devptr starts;     /* int32[rows] window starts (needs SGTOPK_STARTS) */
  sgtopk_devptr live_rows;  /* int32 scalar: rows at or past it are untouched; 0: all rows */
  sgtopk_devptr indices;    /* int32[rows][out_pitch] output */
  sgtopk_devptr values;     /* float[rows][out_pitch] output (needs SGTOPK_VALUES) */
  sgtopk_devptr workspace;  /* sgtopk_workspace_size bytes; 0: the plan's own.
                               A caller's buffer must be zero-filled before a sampled
                               or split plan's first launch on it (row counters, restored
                               to zero by every launch); after another plan used it,
                               zero-fill it again. */
  sgtopk_devptr route_stats; /* uint64[SGTOPK_ROUTE_STAT_SLOTS] (needs SGTOPK_ROUTE_STATS) */
  sgtopk_devptr index_offsets; /* int32[rows] (needs SGTOPK_INDEX_OFFSETS) */
  sgtopk_devptr page_table;    /* int32[rows][page_table_pitch] (needs SGTOPK_PAGE_TABLE) */
} sgtopk_select_args;
#define SGTOPK_SELECT_ARGS_INIT {sizeof(sgtopk_select_args), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

/* Device pointers and values of one filter launch. Each row r keeps the
 * tokens of CONTRACT section 2: order by logit / T descending, ties to the
 * lower index; top-k keeps the first k (k <= 0 or k >= width: off); top-p
 * keeps the shortest prefix of those whose softmax mass reaches p (p >= 1 or
 * NaN: off; p <= 0: the first token only); at least one token is kept. A
 * temperature T that is not finite and > 0 means greedy (the first token
 * only). A per-row pointer of 0 uses the scalar below it for every row.
 * The candidate and sample outputs (fields from candidate_indices on; a
 * caller built before them passes the shorter struct) see the same kept
 * set: mass m_i = expf(x_i / T - M) in integer units of 2^-40 (M the row's
 * largest scaled logit), Z the kept set's sum; probability m_i / Z (0 where
 * Z is 0); the sampled token is the first kept token in filter order whose
 * cumulative mass exceeds floor(u * Z) (the first kept token where Z is 0),
 * u in [0, 1) from Philox-4x32-10 keyed by the row's seed: seeds[r] (the
 * token then depends on the seed alone, never on the row's position), or
 * seed_value with the row's index r as the counter (a different stream per
 * row). */
typedef struct sgtopk_filter_args {
  uint32_t struct_size;
  sgtopk_devptr logits;       /* dtype[rows][pitch], read; aligned to the dtype's size */
  sgtopk_devptr out;          /* dtype[rows][pitch], the masked rows (SGTOPK_FILTER_MASK, else 0);
                                 may equal logits (in place), must not overlap it otherwise;
                                 kept tokens' bits are copied */
  sgtopk_devptr top_k;        /* int32[rows], or 0: top_k_value */
  sgtopk_devptr top_p;        /* float[rows], or 0: top_p_value */
  sgtopk_devptr temperature;  /* float[rows], or 0: temperature_value */
  sgtopk_devptr live_rows;    /* int32 scalar: rows at or past it are untouched; 0: all rows */
  int32_t top_k_value;        /* default 0: no top-k */
  float top_p_value;          /* default 1: no top-p */
  float temperature_value;    /* default 1: logits as they are */
  float mask_value;           /* written where a token is not kept; default -inf (bf16 / fp16:
                                 rounded to nearest even, past the range to infinity) */
  /* SGTOPK_FILTER_CANDIDATES (row stride problem.out_pitch, capacity problem.k): */
  sgtopk_devptr candidate_indices; /* int32[rows][out_pitch], required: the kept tokens in filter order */
  sgtopk_devptr candidate_logits;  /* float[rows][out_pitch], or 0: their logits / T (the scaled fp32
                                      values the order uses; a greedy row's logit as it is) */
  sgtopk_devptr candidate_probs;   /* float[rows][out_pitch], or 0: their probabilities over the kept
                                      set (fp32) */
  sgtopk_devptr candidate_counts;  /* int32[rows], required: the kept count (may exceed problem.k) */
  /* SGTOPK_FILTER_SAMPLE: */
  sgtopk_devptr sampled_tokens;    /* int32[rows], required: the sampled token's index */
  sgtopk_devptr seeds;             /* uint64[rows], or 0: seed_value */
  uint64_t seed_value;             /* default 0 */
  sgtopk_devptr workspace;         /* sgtopk_workspace_size bytes (a filter_split plan's row records), or
                                      0: the plan's own. A caller's buffer must be zero-filled before
                                      the first launch on it (restored to zero by every launch) */
} sgtopk_filter_args;
#define SGTOPK_FILTER_ARGS_INIT \
  {sizeof(sgtopk_filter_args), 0, 0, 0, 0, 0, 0, 0, 1.0f, 1.0f, -INFINITY, 0, 0, 0, 0, 0, 0, 0, 0}

typedef struct sgtopk_plan_s* sgtopk_plan;
typedef struct sgtopk_graph_s* sgtopk_graph;

/* What a plan is, for logs and tests. Strings live as long as the plan. */
typedef struct sgtopk_plan_info {
  uint32_t struct_size;
  const char* family;       /* kernel family name */
  const char* parameters;   /* every specialization parameter, "name=value" lines */
  const char* cache_key;    /* 32 hex digits (xxh3-128) */
  const char* arch;         /* compiled target, "sm_90" */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_smem_bytes;
  uint64_t workspace_bytes;
  int32_t from_cache;       /* 0: compiled now; 1: memory cache; 2: disk cache */
  double compile_ms;        /* NVRTC time (0 when served from a cache) */
  double load_ms;           /* module load time (0 when compile-only) */
  int32_t on_disk;          /* 1: the kernel's entry is in the disk cache (read from it, or stored now);
                             * 0: in memory only (disk cache off or read-only, or the store failed) */
} sgtopk_plan_info;
#define SGTOPK_PLAN_INFO_INIT {sizeof(sgtopk_plan_info), NULL, NULL, NULL, NULL, {0, 0, 0}, {0, 0, 0}, 0, 0, 0, 0.0, 0.0, 0}

SGTOPK_API const char* sgtopk_version_string(void);
SGTOPK_API const char* sgtopk_status_string(sgtopk_status status);
/* "short", "no_view", ... "cycles_refinement"; NULL for a slot outside
 * 0 .. SGTOPK_ROUTE_STAT_SLOTS - 1. */
SGTOPK_API const char* sgtopk_route_stat_name(int slot);
/* Message of the last failing call on this thread ("" when none). */
SGTOPK_API const char* sgtopk_last_error(void);

SGTOPK_API sgtopk_status sgtopk_compile(const sgtopk_problem* problem, const sgtopk_compile_options* options,
                             sgtopk_plan* out_plan);
SGTOPK_API sgtopk_status sgtopk_plan_destroy(sgtopk_plan plan);
SGTOPK_API sgtopk_status sgtopk_workspace_size(sgtopk_plan plan, size_t* bytes);
SGTOPK_API sgtopk_status sgtopk_plan_describe(sgtopk_plan plan, sgtopk_plan_info* info);
/* A human-readable description of the plan (policy values included). */
SGTOPK_API const char* sgtopk_plan_text(sgtopk_plan plan);

/* Enqueue one selection on `stream`. Never allocates, synchronizes or reads
 * device memory on the host: safe inside CUDA graph capture. Launches that
 * share a workspace (the plan's own, or one buffer passed to several) must not
 * overlap, on any stream: serialize them, or give each its own workspace. */
SGTOPK_API sgtopk_status sgtopk_select(sgtopk_plan plan, const sgtopk_select_args* args, sgtopk_stream stream);

/* Enqueue one filter launch (a plan compiled with op SGTOPK_OP_FILTER) on
 * `stream`: rows below live_rows are read from args.logits and their outputs
 * written (the plan's flags: args.out, the candidate arrays, sampled_tokens). Like sgtopk_select: no allocation, no synchronization, no read
 * back, so it can be captured in a CUDA graph. */
SGTOPK_API sgtopk_status sgtopk_filter(sgtopk_plan plan, const sgtopk_filter_args* args, sgtopk_stream stream);

/* A graph object: the launch captured once, replayed many times. Pointers
 * can be replaced without rebuilding; live_rows and lengths (the filter's
 * per-row arrays) are read on the device at each replay, so changing their
 * contents needs no update. sgtopk_graph_create / _update take a select plan,
 * sgtopk_filter_graph_create / _update a filter plan; launch and destroy take
 * either graph. The scalar values of sgtopk_filter_args are fixed at create
 * or update; the graph holds only the launches they need, so an update whose
 * scalars need other launches of the plan (a filter plan's two kernels)
 * builds the graph anew, and a failed update leaves it as it was. */
SGTOPK_API sgtopk_status sgtopk_graph_create(sgtopk_plan plan, const sgtopk_select_args* args, sgtopk_graph* out_graph);
SGTOPK_API sgtopk_status sgtopk_graph_update(sgtopk_graph graph, const sgtopk_select_args* args);
SGTOPK_API sgtopk_status sgtopk_filter_graph_create(sgtopk_plan plan, const sgtopk_filter_args* args,
                                                    sgtopk_graph* out_graph);
SGTOPK_API sgtopk_status sgtopk_filter_graph_update(sgtopk_graph graph, const sgtopk_filter_args* args);
SGTOPK_API sgtopk_status sgtopk_graph_launch(sgtopk_graph graph, sgtopk_stream stream);
SGTOPK_API sgtopk_status sgtopk_graph_destroy(sgtopk_graph graph);
/* A graph keeps its plan's kernel alive: plan and graph may be destroyed in either order. */

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* SGTOPK_SGTOPK_H */

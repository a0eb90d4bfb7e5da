#!/usr/bin/env python3
"""sgtopk select benchmark, after /work/shared/design/BENCH.md.

    python3 bench/bench_select.py --build build/release --out DIR \\
        --workload {operator-matrix,few-long-rows,many-short-rows,k-sweep,all} [--quick]
        [--scores indexer,iid] [--policy-toml TOML] [--family NAME] [--tag TAG]
        [--shapes MxN[xK],...] [--stop-after-s S] [--no-torch]

Per configuration: compile a plan (own workspace), generate the scores on the
GPU, run once and VERIFY EXACTNESS on every row (contract section 1: K distinct
indices in [0, len), min(selected) >= max(unselected), boundary ties to the
lower index, -1 padding for short rows), verify the graph path the same way,
then time CUDA-graph replays of the library's graph object (warm-up, median of
several rounds of events around 20..100 replays, inputs under 200 MB rotated
among several buffers so L2 does not hold them) and torch.topk on the same
tensors (the invalid suffix set to -inf in place after our timing, not timed;
captured in a torch CUDA graph, eager if capture fails). The floor is measured
in the same run: a plain streaming read (torch.sum / torch.amax over 2 GiB,
the faster of the two) gives the read bandwidth, and
floor = (sum of valid lengths x 4 B + rows x K x 4 B of index writes) / bandwidth.
A configuration that is not exact is a failure and is not timed.

Writes DIR/<workload>-<date>-<commit>[-<tag>].json (BENCH.md format) and .md
(rewritten after every configuration, so a killed run keeps what it measured),
prints one line per configuration, SUMMARY lines, and the Markdown tables last.
Exit status: 0 all exact and no errors, 1 otherwise, 2 setup failure.

Score generator
---------------
"indexer" rows model the sparse-attention indexer's output
    I[r, t] = sum_j w[r, j] * relu(q[r, j] . k[t])      (a few heads j)
without materializing q and k. Per head the pre-activation dot product is a
Gaussian made of a per-key part shared by all rows (some keys are salient for
many queries, so rows are correlated by column, as real indexer rows are) and a
per-(query, key) part, scaled by a per-query head scale, shifted by a small
negative bias and put through ReLU (so a head contributes exact zeros often).
Four heads are mixed with fixed weights, one small weight negative (learned
head weights are signed, so scores can be negative and the sign handling of
the kernels is exercised). Two effects of real attention raise the top-K
density at BOTH ENDS of a row, which is what makes selection hard for
sampling / bucketing kernels: an attention sink (the first 64 positions get a
large boost and are nearly always selected) and a recency ramp (the last 2048
positions of each row's valid length get a boost rising linearly to the row's
end, so the newest tokens crowd the top-K). Because the ramp follows each
row's own length, the dense end moves with the ragged (causal) lengths.
"iid" rows are torch.rand, uniform in [0, 1): the textbook case; its 24-bit
granularity makes ties at the K-th value happen, exercising the tie rule.
Three adversaries at the same shapes (workload "robustness", against iid): no
input may fall off a cliff.
"ties" rows hold 64 distinct values (uniform, rounded down to 1/64): the
boundary's tie group is about N/64 scores (4096 at N = 262144, twice K).
"periodic" rows are uniform plus 1 on positions i with i mod 32 >= 16:
periodic in the sampled view's stride, so a row's view can see only the low
half or only the high one.
"packed" rows are uniform with the top K packed in one run of K consecutive
positions (2 + uniform) at a random place in the row.
Both are generated directly on the GPU in float32 from fixed seeds (one per
shape, length rule, kind and buffer), chunked by rows to bound memory.
Positions at or past a row's valid length are filled with +1e30 for our
kernel: a kernel that reads past len would select them and fail the check.
"""

import argparse
import datetime
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))  # the package in this checkout, not an installed one

from sgtopk import _capi as sg  # noqa: E402
import make_results_readme as mrr  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # pragma: no cover - the GPU machine has it
    torch = None

GIB = 1 << 30
POISON_INDEX = -559038737          # 0xDEADBEEF as int32: never a valid index, never -1
SUFFIX_POISON = 1.0e30             # beyond len, for our kernel (must never be read)
ROTATE_BYTES = 200_000_000         # rotate inputs until at least this much is cycled (L2 is ~60 MB)
MAX_BUFFERS = 128
GEN_CHUNK_ELEMS = 1 << 27          # rows per generation / verification chunk: <= 512 MiB temporaries
VERIFY_CHUNK_ELEMS = 1 << 27

# Indexer-like generator constants (see the module docstring).
HEAD_WEIGHTS = (0.45, 0.35, 0.30, -0.10)
KEY_SHARE = 0.6                    # weight of the per-key (shared by rows) component
NOISE_SHARE = 0.8                  # weight of the per-(query, key) component
HEAD_BIAS = -0.25                  # pre-ReLU shift: about 40% zeros per head
SINK_POSITIONS = 64
SINK_BOOST = 4.0
RECENT_POSITIONS = 2048
RECENT_BOOST = 3.0

WORKLOADS = ["operator-matrix", "few-long-rows", "many-short-rows", "k-sweep", "margin-sweep", "stride-sweep",
             "robustness"]
SCORE_KINDS = ("indexer", "iid", "ties", "periodic", "packed")
ROBUSTNESS_KINDS = "iid,ties,periodic,packed"

# The sampled family's two knobs, swept as in the paper's figures 9 and 10: the
# primary margin rho0 (K to 2K; the band margin follows 0.25 above it) and the
# view stride s (16 to 256, both row classes).
MARGINS = (1.0, 1.25, 1.5, 1.75, 2.0)
STRIDES = (16, 32, 64, 128, 256)


def policy_for(cfg, args):
    """The policy TOML of one configuration: a sweep's variant, else --policy-toml."""
    own = cfg.get("policy")
    if own and args.policy_toml:
        return args.policy_toml + "\n" + own
    return own or args.policy_toml


# --- route statistics ------------------------------------------------------------
def route_stats(ctx, cfg, args, scores, lengths, stream, h):
    """Which route each row took (primary / band / exact ...), from one untimed
    launch of the same plan compiled with SGTOPK_ROUTE_STATS (the timed plan
    carries no counters). Returns {name: count} plus recovery_rate."""
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    plan = ctx.lib.compile(k=K, rows=M, width=N, flags=sg.SGTOPK_ROUTE_STATS, device=0, policy_toml=policy_for(cfg, args),
                           family=args.family, own_workspace=True)
    try:
        parameters = dict(line.split("=", 1) for line in plan.info["parameters"].splitlines() if "=" in line)
        with torch.cuda.stream(stream):
            stats = torch.zeros(len(ctx.lib.route_stat_names()), dtype=torch.int64, device=scores.device)
            idx = torch.empty(M, K, dtype=torch.int32, device=scores.device)
        plan.select(sg.select_args(scores=scores, lengths=lengths, indices=idx, route_stats=stats), h)
        with torch.cuda.stream(stream):
            counts = [int(v) for v in stats.cpu().tolist()]
    finally:
        plan.close()
    out = dict(zip(ctx.lib.route_stat_names(), counts))
    selected = out["primary"] + out["band"] + out["exact"] + out["no_view"]
    out["recovery_rate"] = (out["exact"] + out["no_view"]) / selected if selected else 0.0
    out["band_rate"] = out["band"] / selected if selected else 0.0
    out["candidates_per_row"] = out["candidates"] / (out["primary"] + out["band"]) if out["primary"] + out["band"] else 0.0
    cycles = {n: v for n, v in out.items() if n.startswith("cycles_")}
    total = sum(cycles.values())
    out["phase_share"] = {n[len("cycles_"):]: (v / total if total else 0.0) for n, v in cycles.items()}
    out["cycles_per_row"] = total / selected if selected else 0.0
    if "kSegments" in parameters and selected:
        # The split family: every segment CTA of a row proposes and passes its
        # segment; the row's last CTA alone finishes (agent/split.cuh). Per CTA
        # and per finisher, the phases are the call's latency chain.
        segments, min_width = int(parameters["kSegments"]), int(parameters["kMinSegmentWidth"])
        lens = [N] * M if lengths is None else [int(v) for v in lengths.cpu().tolist()]
        ctas = sum(max(1, min(segments, -(-n // min_width))) for n in lens if n > K)
        if ctas:
            out["split_cycles"] = {
                "ctas": ctas,
                "proposal_per_cta": out["cycles_proposal"] / ctas,
                "segment_per_cta": out["cycles_certification"] / ctas,
                "finisher_per_row": (out["cycles_recovery"] + out["cycles_refinement"]) / selected,
            }
    return out


# --- configurations ------------------------------------------------------------
def make_configs(workload, quick, shapes_override=None):
    """List of dicts M, N, K, lengths (the length rule)."""
    out = []
    if workload == "operator-matrix":
        k, rule = 2048, "causal"
        shapes = [(m, n) for n in (131072, 262144, 524288, 1048576) for m in (512, 1024, 2048, 4096, 8192)]
        if quick:
            shapes = [(512, 131072), (2048, 262144), (4096, 524288), (8192, 1048576)]
        out = [dict(M=m, N=n, K=k, lengths=rule) for m, n in shapes]
    elif workload == "few-long-rows":
        rule = "full"
        shapes = [(m, n) for n in (262144, 1048576) for m in (1, 4, 16, 64)]
        if quick:
            shapes = [(1, 1048576), (16, 262144), (64, 1048576)]
        out = [dict(M=m, N=n, K=2048, lengths=rule) for m, n in shapes]
    elif workload == "many-short-rows":
        rule = "random-half"
        shapes = [(m, n) for n in (4096, 16384, 32768) for m in (4096, 16384, 65536)]
        if quick:
            shapes = [(4096, 4096), (16384, 16384), (65536, 32768)]
        out = [dict(M=m, N=n, K=2048, lengths=rule) for m, n in shapes]
    elif workload == "k-sweep":
        ks = (256, 512, 1024, 2048, 4096, 8192)
        if quick:
            ks = (256, 2048, 8192)
        out = [dict(M=2048, N=262144, K=k, lengths="causal") for k in ks]
    elif workload == "robustness":
        shapes = [(2048, 262144)] if quick else [(512, 131072), (2048, 262144), (8192, 1048576)]
        out = [dict(M=m, N=n, K=2048, lengths="causal") for m, n in shapes]
    elif workload in ("margin-sweep", "stride-sweep"):
        shapes = [(2048, 262144)] if quick else [(2048, 262144), (8192, 1048576)]
        if workload == "margin-sweep":
            variants = [("rho0=%g" % m, "[select.sampled]\nprimary_margin = %r\nsecondary_margin = %r\n" % (m, m + 0.25))
                        for m in MARGINS]
        else:
            variants = [("s=%d" % s, "[select.sampled]\nstride_wide = %d\nstride_narrow = %d\n" % (s, s))
                        for s in STRIDES]
        out = [dict(M=m, N=n, K=2048, lengths="causal", variant=v, policy=p) for m, n in shapes for v, p in variants]
    else:
        raise ValueError("unknown workload %r" % workload)
    if shapes_override:
        rule = out[0]["lengths"] if out else "causal"
        default_k = out[0]["K"] if out else 2048
        out = []
        for s in shapes_override.split(","):
            parts = [int(p) for p in s.lower().strip().split("x")]
            if len(parts) not in (2, 3):
                raise ValueError("--shapes wants MxN or MxNxK, got %r" % s)
            out.append(dict(M=parts[0], N=parts[1], K=parts[2] if len(parts) == 3 else default_k, lengths=rule))
    out.sort(key=lambda c: (c["M"] * c["N"], c["K"]))
    return out


def seed_for(cfg, kind, buffer_index):
    text = "%d|%d|%s|%s|%d" % (cfg["M"], cfg["N"], cfg["lengths"], kind, buffer_index)
    if "first_len" in cfg:
        text += "|%d" % cfg["first_len"]
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def make_lengths(cfg, device):
    M, N = cfg["M"], cfg["N"]
    rule = cfg["lengths"]
    if rule == "causal":     # the last M causal rows of a chunk: row r has N - M + 1 + r
        L = (torch.arange(M, device=device, dtype=torch.int64) + (N - M + 1)).clamp(0, N)
    elif rule == "causal-from":  # consecutive causal rows from a given length: row r has first_len + r
        L = (torch.arange(M, device=device, dtype=torch.int64) + cfg["first_len"]).clamp(0, N)
    elif rule == "full":
        L = torch.full((M,), N, device=device, dtype=torch.int64)
    elif rule == "random-half":
        g = torch.Generator(device=device)
        g.manual_seed(zlib.crc32(("len|%d|%d" % (M, N)).encode()) & 0x7FFFFFFF)
        L = torch.randint(N // 2, N + 1, (M,), generator=g, device=device, dtype=torch.int64)
    else:
        raise ValueError("unknown length rule %r" % rule)
    return L.to(torch.int32).contiguous()


# --- score generation ------------------------------------------------------------
@torch.no_grad() if torch is not None else (lambda f: f)
def generate_scores(out, lengths, kind, seed, k=2048):
    """Fill out[M, N] (float32, on the GPU) with `kind` rows; suffix past len = SUFFIX_POISON."""
    M, N = out.shape
    dev = out.device
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    pos = torch.arange(N, device=dev)
    heads = len(HEAD_WEIGHTS)
    if kind == "indexer":
        keys = torch.randn(heads, N, generator=g, device=dev, dtype=torch.float32).mul_(KEY_SHARE)
        qscale = torch.rand(M, heads, generator=g, device=dev, dtype=torch.float32).mul_(0.5).add_(0.75)
        off = torch.arange(RECENT_POSITIONS, device=dev)
        ramp_row = (off + 1).to(torch.float32).mul_(RECENT_BOOST / RECENT_POSITIONS)
    elif kind not in SCORE_KINDS:
        raise ValueError("unknown score kind %r (%s)" % (kind, ", ".join(SCORE_KINDS)))
    rows_per = max(1, GEN_CHUNK_ELEMS // max(N, 1))
    z = None
    for r0 in range(0, M, rows_per):
        r1 = min(M, r0 + rows_per)
        c = r1 - r0
        dst = out[r0:r1]
        L = lengths[r0:r1].to(torch.int64)
        if kind in ("iid", "ties", "periodic", "packed"):
            dst.uniform_(0.0, 1.0, generator=g)
            if kind == "ties":
                dst.mul_(64.0).floor_().div_(64.0)
            elif kind == "periodic":
                dst.add_(((pos % 32) >= 16).to(torch.float32)[None, :])
            elif kind == "packed":
                room = (L - k).clamp_min(0)
                start = (torch.rand(c, generator=g, device=dev) * (room + 1).to(torch.float32)).to(torch.int64)
                start = torch.minimum(start, room)
                cols = (start[:, None] + torch.arange(k, device=dev)[None, :]).clamp_max(N - 1)
                run = torch.rand(c, k, generator=g, device=dev).add_(2.0)
                dst.scatter_(1, cols, run)
        else:
            if z is None or z.shape[0] != c:
                z = torch.empty(c, N, device=dev, dtype=torch.float32)
            dst.zero_()
            for h in range(heads):
                z.normal_(0.0, NOISE_SHARE, generator=g)
                z.add_(keys[h])
                z.mul_(qscale[r0:r1, h:h + 1]).add_(HEAD_BIAS).relu_()
                dst.add_(z, alpha=HEAD_WEIGHTS[h])
            s = min(SINK_POSITIONS, N)
            dst[:, :s].add_(SINK_BOOST)
            cols = L[:, None] - RECENT_POSITIONS + off[None, :]
            ramp = torch.where(cols >= 0, ramp_row[None, :].expand(c, -1), torch.zeros((), device=dev))
            dst.scatter_add_(1, cols.clamp_min(0), ramp.contiguous())
        dst.masked_fill_(pos[None, :] >= L[:, None], SUFFIX_POISON)
    del z


@torch.no_grad() if torch is not None else (lambda f: f)
def fill_suffix(buf, lengths, value):
    M, N = buf.shape
    pos = torch.arange(N, device=buf.device)
    rows_per = max(1, GEN_CHUNK_ELEMS // max(N, 1))
    for r0 in range(0, M, rows_per):
        r1 = min(M, r0 + rows_per)
        L = lengths[r0:r1].to(torch.int64)
        buf[r0:r1].masked_fill_(pos[None, :] >= L[:, None], value)


# --- exactness -------------------------------------------------------------------
@torch.no_grad() if torch is not None else (lambda f: f)
def verify_select(scores, lengths, idx, K):
    """Check idx[M, K] against the contract on every row. Returns (ok, message, bad_rows).

    Rows with len >= K: K distinct indices in [0, len); with v the K-th largest
    valid value (torch.topk), every selected value >= v and the number selected
    above v equals the number of valid values above v (so min(selected) >=
    max(unselected)); the selected ties (== v) are exactly the lowest-index
    valid positions holding v (the stable reference set). Rows with len < K:
    slots [0, len) are a permutation of 0..len-1, slots [len, K) are -1.
    """
    M, N = scores.shape
    dev = scores.device
    pos = torch.arange(N, device=dev)
    slot = torch.arange(K, device=dev)
    rows_per = max(1, VERIFY_CHUNK_ELEMS // max(N, 1))
    bad_rows = 0
    messages = []
    for r0 in range(0, M, rows_per):
        r1 = min(M, r0 + rows_per)
        c = r1 - r0
        S = scores[r0:r1]
        L = lengths[r0:r1].to(torch.int64)
        I = idx[r0:r1].to(torch.int64)
        nfill = L.clamp(max=K)
        slot_valid = slot[None, :] < nfill[:, None]
        in_range = (I >= 0) & (I < L[:, None])
        f_range = ~torch.where(slot_valid, in_range, I == -1).all(dim=1)
        key = torch.where(slot_valid, I, -1 - slot[None, :])
        if K > 1:
            srt = torch.sort(key, dim=1).values
            f_dup = (srt[:, 1:] == srt[:, :-1]).any(dim=1)
            del srt
        else:
            f_dup = torch.zeros(c, dtype=torch.bool, device=dev)
        f_thr = torch.zeros(c, dtype=torch.bool, device=dev)
        f_tie = torch.zeros(c, dtype=torch.bool, device=dev)
        full = L >= K
        if bool(full.any()):
            masked = torch.where(pos[None, :] < L[:, None], S, torch.full((), float("-inf"), device=dev))
            v = torch.topk(masked, K, dim=1, largest=True, sorted=False).values.amin(dim=1)
            vcol = v[:, None]
            Ic = I.clamp(0, N - 1)
            sel = torch.gather(S, 1, Ic)
            cnt_gt = (masked > vcol).sum(dim=1)
            sel_gt = (sel > vcol).sum(dim=1)
            below = ~(sel >= vcol).all(dim=1)
            f_thr = full & (below | (sel_gt != cnt_gt))
            tie_sel = sel == vcol
            n_tie_sel = tie_sel.sum(dim=1)
            mpos = torch.where(tie_sel, Ic, torch.full((), -1, device=dev, dtype=torch.int64)).amax(dim=1)
            n_tie_le = ((masked == vcol) & (pos[None, :] <= mpos[:, None])).sum(dim=1)
            f_tie = full & ~f_thr & (n_tie_le != n_tie_sel)
            del masked, sel, tie_sel
        fail = f_range | f_dup | f_thr | f_tie
        n = int(fail.sum().item())
        if n:
            bad_rows += n
            if len(messages) < 3:
                for rr in torch.nonzero(fail).flatten()[: 3 - len(messages)].tolist():
                    why = []
                    if bool(f_range[rr]):
                        row = I[rr]
                        sv = slot_valid[rr]
                        badslots = torch.nonzero(torch.where(sv, ~in_range[rr], row != -1)).flatten()
                        j = int(badslots[0]) if badslots.numel() else -1
                        why.append("index/padding out of range (slot %d holds %d)" % (j, int(row[j]) if j >= 0 else 0))
                    if bool(f_dup[rr]):
                        why.append("duplicate indices")
                    if bool(f_thr[rr]):
                        why.append("not the top K (a selected value is below the K-th largest, or a larger one is missing)")
                    if bool(f_tie[rr]):
                        why.append("boundary ties not resolved to the lowest indices")
                    messages.append("row %d (len %d): %s" % (r0 + rr, int(L[rr]), "; ".join(why)))
    if bad_rows:
        return False, "%d of %d rows wrong; %s" % (bad_rows, M, " | ".join(messages)), bad_rows
    return True, "all %d rows exact" % M, 0


# --- timing ----------------------------------------------------------------------
def gpu_sleep(ms, stream):
    """Keep the stream busy for ~ms so the host can queue a whole round behind it."""
    if ms <= 0 or not hasattr(torch.cuda, "_sleep"):
        return
    with torch.cuda.stream(stream):
        torch.cuda._sleep(int(ms * 1e-3 * 2.0e9))


def time_calls(fns, stream, rounds, min_reps=20, max_reps=100, target_ms=25.0, warmup=3):
    """Median ms per call of fns (called round robin on `stream`), events around each round."""
    n = len(fns)
    with torch.cuda.stream(stream):
        for i in range(max(warmup, n)):
            fns[i % n]()
    stream.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    k = max(3, min(n, 10))
    with torch.cuda.stream(stream):
        h0 = time.perf_counter()
        e0.record(stream)
        for i in range(k):
            fns[i % n]()
        e1.record(stream)
        host_per_call = (time.perf_counter() - h0) / k
    e1.synchronize()
    est = max(e0.elapsed_time(e1) / k, 1e-4)
    reps = int(min(max_reps, max(min_reps, math.ceil(target_ms / est))))
    times = []
    j = 0
    for _ in range(rounds):
        gpu_sleep(min(50.0, host_per_call * 1e3 * reps * 1.5 + 0.05), stream)
        with torch.cuda.stream(stream):
            e0.record(stream)
            for _ in range(reps):
                fns[j % n]()
                j += 1
            e1.record(stream)
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / reps)
    return statistics.median(times), times, reps


def measure_read_bandwidth(stream, rounds, gib=2.0):
    """GB/s of a plain streaming read: torch.sum and torch.amax over a float32 buffer; the faster."""
    n = int(gib * GIB) // 4
    x = torch.empty(n, dtype=torch.float32, device="cuda")
    x.uniform_(-1.0, 1.0)
    torch.cuda.synchronize()       # x was written on the default stream; it is read on `stream`
    detail = {}
    for name, fn in (("sum", lambda: x.sum()), ("amax", lambda: torch.amax(x))):
        med, times, reps = time_calls([fn], stream, rounds, min_reps=20, max_reps=50, target_ms=20.0)
        detail[name] = {"GBps": n * 4 / (med * 1e-3) / 1e9, "ms": med, "reps": reps}
    del x
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    best = max(v["GBps"] for v in detail.values())
    detail["bytes"] = n * 4
    return best, detail


def time_torch_topk(bufs, K, stream, args):
    """(median ms, mode, rounds) of torch.topk(buf, K, dim=1, sorted=False) over the buffers."""
    graphs, outs = [], []
    mode = "graph"
    try:
        pool = None
        capture_stream = torch.cuda.Stream()
        for x in bufs:
            with torch.cuda.stream(stream):
                torch.topk(x, K, dim=1, sorted=False)     # eager warm-up before capture
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool, stream=capture_stream):
                o = torch.topk(x, K, dim=1, sorted=False)
            pool = g.pool()
            graphs.append(g)
            outs.append(o)
        fns = [g.replay for g in graphs]
    except Exception as e:  # capture failed: time eager launches instead
        graphs, outs = [], []
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
        mode = "eager (graph capture failed: %s)" % str(e).splitlines()[0][:160] if str(e) else "eager"
        fns = [functools.partial(torch.topk, x, K, dim=1, sorted=False) for x in bufs]
    try:
        med, times, reps = time_calls(fns, stream, args.rounds, args.min_reps, args.max_reps, args.target_round_ms)
    finally:
        del fns
        graphs.clear()
        outs.clear()
    return med, mode, times, reps


# --- one configuration -------------------------------------------------------------
class Context:
    def __init__(self, args, lib, stream, bandwidth):
        self.args = args
        self.lib = lib
        self.stream = stream
        self.bandwidth = bandwidth
        self.broken = None          # message once the CUDA context is unusable


def run_config(ctx, cfg, kind):
    args = ctx.args
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    run = {"op": "select", "M": M, "N": N, "K": K, "scores": kind, "lengths": cfg["lengths"],
           "variant": cfg.get("variant"), "policy_toml": policy_for(cfg, args),
           "family": None, "time_ms": None, "floor_ms": None, "ratio": None, "exact": None,
           "baselines": {}, "speedup_vs_torch": None, "plan": None, "workspace_bytes": None}
    bytes_scores = M * N * 4
    if bytes_scores > args.max_gib * GIB:
        run["skipped"] = "score matrix %.1f GiB > %.0f GiB" % (bytes_scores / GIB, args.max_gib)
        return run
    if ctx.broken:
        run["error"] = "not run: CUDA context unusable after an earlier error: " + ctx.broken
        return run
    stream = ctx.stream
    h = stream.cuda_stream
    plan = None
    graphs = []
    bufs = []
    t_start = time.perf_counter()
    try:
        dev = torch.device("cuda")
        with torch.cuda.stream(stream):
            lengths = make_lengths(cfg, dev)
            total_valid = int(lengths.to(torch.int64).sum().item())
            nbuf = 1 if bytes_scores >= ROTATE_BYTES else min(MAX_BUFFERS, math.ceil(ROTATE_BYTES / bytes_scores))
            for b in range(nbuf):
                buf = torch.empty(M, N, dtype=torch.float32, device=dev)
                generate_scores(buf, lengths, kind, seed_for(cfg, kind, b), K)
                bufs.append(buf)
            idx = torch.empty(M, K, dtype=torch.int32, device=dev)
        run["buffers"] = nbuf
        run["valid_elements"] = total_valid
        floor_bytes = total_valid * 4 + M * K * 4
        run["floor_bytes"] = floor_bytes
        run["floor_ms"] = floor_bytes / (ctx.bandwidth * 1e6)

        c0 = time.perf_counter()
        plan = ctx.lib.compile(k=K, rows=M, width=N, device=0, policy_toml=policy_for(cfg, args), family=args.family,
                               own_workspace=True)
        run["compile_wall_ms"] = (time.perf_counter() - c0) * 1e3
        info = plan.info
        run["family"] = info["family"]
        run["plan"] = info
        run["workspace_bytes"] = plan.workspace_size
        sargs = [sg.select_args(scores=buf, lengths=lengths, indices=idx) for buf in bufs]

        # Exactness first: a plain launch on every buffer, then the graph path on buffer 0.
        for b in range(nbuf):
            with torch.cuda.stream(stream):
                idx.fill_(POISON_INDEX)
            plan.select(sargs[b], h)
            with torch.cuda.stream(stream):
                ok, msg, _ = verify_select(bufs[b], lengths, idx, K)
            if not ok:
                run["exact"] = False
                run["verify"] = "select launch, buffer %d: %s" % (b, msg)
                return run
        graphs = [plan.graph(a) for a in sargs]
        with torch.cuda.stream(stream):
            idx.fill_(POISON_INDEX)
        graphs[0].launch(h)
        with torch.cuda.stream(stream):
            ok, msg, _ = verify_select(bufs[0], lengths, idx, K)
        if not ok:
            run["exact"] = False
            run["verify"] = "graph launch, buffer 0: %s" % msg
            return run
        run["exact"] = True
        run["verify"] = msg
        torch.cuda.synchronize()
        run["routes"] = route_stats(ctx, cfg, args, bufs[0], lengths, stream, h)

        fns = [functools.partial(g.launch, h) for g in graphs]
        med, times, reps = time_calls(fns, stream, args.rounds, args.min_reps, args.max_reps, args.target_round_ms)
        run["time_ms"] = med
        run["rounds_ms"] = times
        run["reps"] = reps
        run["ratio"] = med / run["floor_ms"] if run["floor_ms"] else None
        run["GBps_valid"] = total_valid * 4 / (med * 1e-3) / 1e9
        del fns
        for g in graphs:
            g.close()
        graphs = []
        plan.close()
        plan = None
        torch.cuda.synchronize()

        if not args.no_torch:
            # torch.topk sees the invalid suffix as -inf: prepared in place now that our
            # kernel is done with these buffers (the valid part is unchanged); not timed.
            try:
                with torch.cuda.stream(stream):
                    for buf in bufs:
                        fill_suffix(buf, lengths, float("-inf"))
                tmed, tmode, ttimes, treps = time_torch_topk(bufs, K, stream, args)
                run["baselines"]["torch_topk_ms"] = tmed
                run["baselines"]["torch_topk_mode"] = tmode
                run["baselines"]["torch_topk_rounds_ms"] = ttimes
                run["speedup_vs_torch"] = tmed / med if med else None
                run["torch_ratio"] = tmed / run["floor_ms"] if run["floor_ms"] else None
            except Exception as e:  # the baseline failing is recorded but is not our failure
                run["baselines"]["torch_topk_error"] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]
                _check_context(ctx)
        return run
    except Exception as e:
        run["error"] = ("%s: %s" % (type(e).__name__, e)).strip()[:2000]
        run["traceback"] = traceback.format_exc()[-4000:]
        _check_context(ctx)
        return run
    finally:
        run["wall_s"] = time.perf_counter() - t_start
        for g in graphs:
            try:
                g.close()
            except Exception:
                pass
        if plan is not None:
            try:
                plan.close()
            except Exception:
                pass
        bufs.clear()
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:
            pass


def _check_context(ctx):
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as e:
        ctx.broken = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]


# --- run metadata / output -----------------------------------------------------------
def git_commit():
    """The commit measured: SGTOPK_COMMIT when set (a copied working tree may carry a stale .git), else git."""
    if os.environ.get("SGTOPK_COMMIT"):
        return os.environ["SGTOPK_COMMIT"], None
    try:
        r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                           timeout=10)
        if r.returncode == 0 and r.stdout.strip():
            dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10)
            return r.stdout.strip(), bool(dirty.stdout.strip()) if dirty.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("SGTOPK_COMMIT") or "unknown", None


def driver_version():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0:
            return r.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return None


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _clean(x):
    """JSON-safe: NaN/inf floats become None."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def write_outputs(doc, base):
    write_atomic(base + ".json", json.dumps(_clean(doc), indent=1) + "\n")
    write_atomic(base + ".md", mrr.render_table(doc, heading_level=2))


def fmt_line(i, n, run):
    head = "[%d/%d] M=%d N=%d K=%d %s%s" % (i, n, run["M"], run["N"], run["K"], run.get("scores"),
                                          (" " + run["variant"]) if run.get("variant") else "")
    if run.get("skipped"):
        return head + ": skipped (%s)" % run["skipped"]
    if run.get("error"):
        return head + ": ERROR %s" % run["error"].splitlines()[0][:200]
    if run.get("exact") is False:
        return head + ": %s NOT EXACT: %s" % (run.get("family"), run.get("verify", "")[:200])
    t = run.get("baselines", {}).get("torch_topk_ms")
    r = run.get("routes") or {}
    routes = ""
    if r:
        share = r.get("phase_share", {})
        routes = ", routes p%d b%d x%d nv%d s%d cand/row %.0f, kcyc/row %.0f (prop %.0f%% cert %.0f%% rec %.0f%% ref %.0f%%)" % (
            r.get("primary", 0), r.get("band", 0), r.get("exact", 0), r.get("no_view", 0), r.get("short", 0),
            r.get("candidates_per_row", 0.0), r.get("cycles_per_row", 0.0) / 1e3,
            100 * share.get("proposal", 0), 100 * share.get("certification", 0), 100 * share.get("recovery", 0),
            100 * share.get("refinement", 0))
        sc = r.get("split_cycles")
        if sc:
            routes += ", split kcyc: proposal %.1f, segment %.1f a CTA (%d), finisher %.1f a row (%d from the histogram)" % (
                sc["proposal_per_cta"] / 1e3, sc["segment_per_cta"] / 1e3, sc["ctas"], sc["finisher_per_row"] / 1e3,
                r.get("split_from_histogram", 0))
    return head + ": %s %.4f ms, floor %.4f ms, ratio %.3f, torch %s ms (%sx), exact%s, %.1f s" % (
        run.get("family"), run["time_ms"], run["floor_ms"], run["ratio"],
        ("%.3f" % t) if t is not None else "-",
        ("%.2f" % run["speedup_vs_torch"]) if run.get("speedup_vs_torch") else "-", routes, run.get("wall_s", 0.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description="sgtopk select benchmark (BENCH.md protocol)")
    ap.add_argument("--build", default=os.path.join(REPO, "build", "release"), help="build folder with libsgtopk.so")
    ap.add_argument("--workload", default="operator-matrix", choices=WORKLOADS + ["all"])
    ap.add_argument("--out", required=True, help="output folder (bench/results to keep the run)")
    ap.add_argument("--quick", action="store_true", help="a small subset of each workload, fewer rounds")
    ap.add_argument("--scores", default=None,
                    help="comma list of %s (default: indexer,iid; --quick: indexer; robustness: %s)" % (
                        ",".join(SCORE_KINDS), ROBUSTNESS_KINDS))
    ap.add_argument("--policy-toml", default=None, help="policy TOML text passed to sgtopk_compile")
    ap.add_argument("--family", default=None, help="force a kernel family by name")
    ap.add_argument("--tag", default=None, help="file-name suffix (default: derived from --family/--policy-toml)")
    ap.add_argument("--shapes", default=None, help="override the workload's shapes: MxN[xK],... (its length rule)")
    ap.add_argument("--rounds", type=int, default=None, help="timing rounds (default 7, --quick 5)")
    ap.add_argument("--min-reps", type=int, default=20)
    ap.add_argument("--max-reps", type=int, default=100)
    ap.add_argument("--target-round-ms", type=float, default=25.0, help="aim for rounds this long (within reps bounds)")
    ap.add_argument("--max-gib", type=float, default=40.0, help="skip configurations whose score matrix is larger")
    ap.add_argument("--stop-after-s", type=float, default=0.0, help="start no configuration after this many seconds (0: none)")
    ap.add_argument("--no-torch", action="store_true", help="skip the torch.topk baseline")
    ap.add_argument("--bandwidth-gib", type=float, default=2.0, help="size of the streaming-read buffer")
    ap.add_argument("--baseline", action="append", default=[],
                    help="a result JSON of the same workload to compare with (repeatable): a table of the "
                         "time/floor changes is printed last")
    args = ap.parse_args(argv)
    baselines = []
    for path in args.baseline:
        try:
            with open(path) as f:
                baselines.append(json.load(f))
        except (OSError, ValueError) as e:
            ap.error("cannot read baseline %s: %s" % (path, e))
    if args.rounds is None:
        args.rounds = 5 if args.quick else 7
    args.rounds = max(args.rounds, 5)
    default_kinds = ROBUSTNESS_KINDS if args.workload == "robustness" else ("indexer" if args.quick else "indexer,iid")
    kinds = [k.strip() for k in (args.scores or default_kinds).split(",") if k.strip()]
    for k in kinds:
        if k not in SCORE_KINDS:
            ap.error("unknown score kind %r (%s)" % (k, ", ".join(SCORE_KINDS)))
    tag = args.tag
    if tag is None and (args.family or args.policy_toml):
        parts = []
        if args.family:
            parts.append(args.family)
        if args.policy_toml:
            parts.append("policy%08x" % (zlib.crc32(args.policy_toml.encode()) & 0xFFFFFFFF))
        tag = "-".join(parts)
    if tag:
        tag = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in tag)

    if torch is None:
        print("bench_select: PyTorch is not installed", file=sys.stderr)
        return 2
    t_begin = time.perf_counter()
    try:
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")              # create the primary context before the library uses it
        lib = sg.Library(args.build)
        stream = torch.cuda.Stream()
    except Exception as e:
        print("bench_select: setup failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    commit, dirty = git_commit()
    date = datetime.date.today().isoformat()
    try:
        bw, bw_detail = measure_read_bandwidth(stream, args.rounds, args.bandwidth_gib)
    except Exception as e:
        print("bench_select: bandwidth measurement failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 2
    print("device %s, CUDA %s, torch %s, sgtopk %s (%s), commit %s; streaming read %.0f GB/s (sum %.0f, amax %.0f)" % (
        props.name, torch.version.cuda, torch.__version__, lib.version(), lib.path, commit, bw,
        bw_detail["sum"]["GBps"], bw_detail["amax"]["GBps"]), flush=True)

    workloads = WORKLOADS if args.workload == "all" else [args.workload]
    ctx = Context(args, lib, stream, bw)
    docs = []
    any_fail = False
    for wl in workloads:
        cfgs = make_configs(wl, args.quick, args.shapes)
        doc = {
            "workload": wl, "date": date, "commit": commit, "dirty": dirty,
            "device": props.name, "cuda": torch.version.cuda, "driver": driver_version(),
            "torch": torch.__version__, "sgtopk_version": lib.version(),
            "sm_count": props.multi_processor_count, "l2_bytes": getattr(props, "L2_cache_size", None),
            "read_bandwidth_GBps": bw, "read_bandwidth_detail": bw_detail,
            "quick": bool(args.quick), "scores_kinds": kinds, "policy_toml": args.policy_toml,
            "family_forced": args.family, "tag": tag,
            "protocol": {"rounds": args.rounds, "min_reps": args.min_reps, "max_reps": args.max_reps,
                         "target_round_ms": args.target_round_ms, "rotate_bytes": ROTATE_BYTES,
                         "timing": "CUDA events around graph replays, median of rounds",
                         "floor": "(sum(len)*4 + M*K*4) / read_bandwidth"},
            "started": datetime.datetime.now().isoformat(timespec="seconds"),
            "finished": None,
            "runs": [],
        }
        base = os.path.join(args.out, "%s-%s-%s%s" % (wl, date, commit, ("-" + tag) if tag else ""))
        todo = [(c, k) for c in cfgs for k in kinds]
        for i, (cfg, kind) in enumerate(todo, 1):
            if args.stop_after_s and time.perf_counter() - t_begin > args.stop_after_s:
                run = {"op": "select", "M": cfg["M"], "N": cfg["N"], "K": cfg["K"], "scores": kind,
                       "lengths": cfg["lengths"], "skipped": "not started after %.0f s (--stop-after-s)" % args.stop_after_s}
            else:
                run = run_config(ctx, cfg, kind)
            doc["runs"].append(run)
            if run.get("error") or run.get("exact") is False:
                any_fail = True
            doc["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
            try:
                write_outputs(doc, base)
            except OSError as e:
                print("bench_select: cannot write %s: %s" % (base, e), file=sys.stderr)
            print(fmt_line(i, len(todo), run), flush=True)
        docs.append((doc, base))

    print("")
    for doc, base in docs:
        print("wrote %s.json and .md" % base)
    for doc, _ in docs:
        print(mrr.summary_line(doc))
    print("")
    for doc, _ in docs:
        print(mrr.render_table(doc, heading_level=3))
    for doc, _ in docs:
        for b in baselines:
            if b.get("workload") == doc["workload"]:
                print(mrr.render_comparison(doc, b))
    sys.stdout.flush()
    return 1 if any_fail else 0


if __name__ == "__main__":
    sys.exit(main())

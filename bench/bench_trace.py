#!/usr/bin/env python3
"""Framework traces of the indexer's top-K (BENCH.md "framework traces").

    python3 bench/bench_trace.py --out DIR [--trace prefill-245k,prefill-430k,decode] [--scores indexer]
    python3 bench/bench_trace.py --list        (the traces' calls; no GPU, no torch)

Prefill (the paper's section 6.3 procedure): a request of T tokens (245 x 1024
and 430 x 1024) is scheduled in steps of 65536 query tokens; the indexer cuts
each step again so that one call's FP32 score matrix fits a fixed workspace of
6 GiB (1.5 x 2^30 scores), so a call holds floor(budget / N) consecutive query
rows, N being the step's prefix width (its last token + 1), and row t (token t)
is valid up to t + 1. That gives 4 steps and 26 calls at 245K, 7 steps and
71 calls at 430K, as the paper counts. Decode: batches of 1, 4, 16 and 64
requests at contexts growing from 4K to 1M (one call per batch and context;
each request's context uniform in N/2..N).

Each call is one configuration of bench_select.py (its own plan, generated
scores, exactness checked on every row, CUDA-graph replays timed, the floor
measured in the same run). A trace reports the sum of the per-call medians,
and the sum over steps of one CUDA graph per step holding all the step's
calls back to back (each call on its own plan; one score buffer shared by the
step's calls, sized for the largest, each row generated valid up to the
longest length a call gives it). Writes DIR/trace-<name>-<date>-<commit>.json
and .md.
"""

import argparse
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

STEP_TOKENS = 65536
WORKSPACE_SCORES = 3 << 29          # 6 GiB of FP32 scores per call
K = 2048
PREFILL = {"prefill-245k": 245 * 1024, "prefill-430k": 430 * 1024}
DECODE_BATCHES = (1, 4, 16, 64)
DECODE_CONTEXTS = (4096, 16384, 65536, 262144, 1048576)


def prefill_calls(tokens):
    """The calls of one request: dicts M, N, K, lengths='causal-from', first_len, step."""
    calls = []
    for step, s0 in enumerate(range(0, tokens, STEP_TOKENS)):
        s1 = min(tokens, s0 + STEP_TOKENS)
        width = s1
        rows_per_call = WORKSPACE_SCORES // width
        for r0 in range(s0, s1, rows_per_call):
            r1 = min(s1, r0 + rows_per_call)
            calls.append(dict(M=r1 - r0, N=width, K=K, lengths="causal-from", first_len=r0 + 1, step=step))
    return calls


def decode_calls():
    calls = []
    for step, (b, n) in enumerate((b, n) for n in DECODE_CONTEXTS for b in DECODE_BATCHES):
        calls.append(dict(M=b, N=n, K=K, lengths="random-half", step=step))
    return calls


def trace_calls(name):
    if name in PREFILL:
        return prefill_calls(PREFILL[name])
    if name == "decode":
        return decode_calls()
    raise ValueError("unknown trace %r (%s)" % (name, ", ".join(list(PREFILL) + ["decode"])))


def list_traces():
    """Prints every trace's calls; checks the prefill counts against the paper's."""
    expected = {"prefill-245k": (4, 26), "prefill-430k": (7, 71)}
    ok = True
    for name in list(PREFILL) + ["decode"]:
        calls = trace_calls(name)
        steps = len({c["step"] for c in calls})
        scores = sum(sum(range(c["first_len"], c["first_len"] + c["M"])) if "first_len" in c else c["M"] * c["N"]
                     for c in calls)
        print("%s: %d steps, %d calls, %.1f G valid scores (at most)" % (name, steps, len(calls), scores / 1e9))
        for c in calls:
            print("  step %d: M=%d N=%d%s" % (c["step"], c["M"], c["N"],
                                              (" rows valid %d..%d" % (c["first_len"], c["first_len"] + c["M"] - 1))
                                              if "first_len" in c else " (lengths N/2..N)"))
            ok &= c["M"] * c["N"] <= WORKSPACE_SCORES
        if name in expected and (steps, len(calls)) != expected[name]:
            print("  expected %d steps and %d calls" % expected[name])
            ok = False
    return 0 if ok else 1


def time_steps(ctx, calls, kind):
    """Per step: one CUDA graph holding all its calls; returns [(step, ms)]."""
    import torch
    import bench_select as bs
    sg = bs.sg
    out = []
    stream = ctx.stream
    h = stream.cuda_stream
    dev = torch.device("cuda")
    for step in sorted({c["step"] for c in calls}):
        group = [c for c in calls if c["step"] == step]
        widest = max(group, key=lambda c: c["M"] * c["N"])
        plans, graph = [], None
        try:
            with torch.cuda.stream(stream):
                lengths = [bs.make_lengths(c, dev) for c in group]
                # Buffer row i serves row i of every call: generated valid up to the longest
                # length any call gives it, so no call's valid part holds the poisoned suffix.
                longest = torch.zeros(widest["M"], dtype=torch.int32, device=dev)
                for L in lengths:
                    longest[: L.numel()] = torch.maximum(longest[: L.numel()], L)
                buf = torch.empty(widest["M"] * widest["N"], dtype=torch.float32, device=dev)
                bs.generate_scores(buf.view(widest["M"], widest["N"]), longest, kind, bs.seed_for(widest, kind, 0), K)
                idx = torch.empty(max(c["M"] for c in group) * K, dtype=torch.int32, device=dev)
            args = []
            for c, L in zip(group, lengths):
                plans.append(ctx.lib.compile(k=K, rows=c["M"], width=c["N"], device=0, own_workspace=True))
                args.append(sg.select_args(scores=buf[: c["M"] * c["N"]].view(c["M"], c["N"]), lengths=L,
                                           indices=idx[: c["M"] * K].view(c["M"], K)))
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                for p, a in zip(plans, args):
                    p.select(a, h)
            med, _, _ = bs.time_calls([graph.replay], stream, ctx.args.rounds, 5, 50, ctx.args.target_round_ms)
            out.append((step, med))
        finally:
            del graph
            for p in plans:
                p.close()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="sgtopk framework traces (BENCH.md)")
    ap.add_argument("--list", action="store_true", help="print the traces' calls and exit (no GPU)")
    ap.add_argument("--out", help="output folder (bench/results to keep the run)")
    ap.add_argument("--trace", default="prefill-245k,prefill-430k,decode")
    ap.add_argument("--scores", default="indexer", help="one score kind of bench_select.py")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build", "release"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--target-round-ms", type=float, default=25.0)
    args = ap.parse_args(argv)
    if args.list:
        return list_traces()
    if not args.out:
        ap.error("--out is required (or --list)")
    import bench_select as bs
    import make_results_readme as mrr
    sg = bs.sg
    import torch
    names = [t.strip() for t in args.trace.split(",") if t.strip()]
    for n in names:
        trace_calls(n)  # unknown names fail before any GPU work
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    lib = sg.Library(args.build)
    stream = torch.cuda.Stream()
    bw, bw_detail = bs.measure_read_bandwidth(stream, args.rounds, 2.0)
    # bench_select's per-configuration options, as its own command line would set them.
    sel_args = argparse.Namespace(no_torch=True, family=None, policy_toml=None, rounds=max(args.rounds, 5),
                                     min_reps=5, max_reps=100, target_round_ms=args.target_round_ms, max_gib=40.0)
    ctx = bs.Context(sel_args, lib, stream, bw)
    commit, dirty = bs.git_commit()
    props = torch.cuda.get_device_properties(0)
    date = datetime.date.today().isoformat()
    os.makedirs(args.out, exist_ok=True)
    status = 0
    for name in names:
        calls = trace_calls(name)
        doc = {"workload": "trace-" + name, "date": date, "commit": commit, "dirty": dirty, "device": props.name,
               "cuda": torch.version.cuda, "sm_count": props.multi_processor_count, "read_bandwidth_GBps": bw,
               "read_bandwidth_detail": bw_detail, "scores_kinds": [args.scores], "tag": None,
               "protocol": {"rounds": sel_args.rounds, "timing": "CUDA events around graph replays, median of rounds",
                            "trace": "sum of per-call medians; and sum over steps of one graph per step",
                            "workspace_scores": WORKSPACE_SCORES, "step_tokens": STEP_TOKENS},
               "started": datetime.datetime.now().isoformat(timespec="seconds"), "runs": []}
        base = os.path.join(args.out, "trace-%s-%s-%s" % (name, date, commit))
        t0 = time.perf_counter()
        for i, c in enumerate(calls, 1):
            run = bs.run_config(ctx, c, args.scores)
            run["step"] = c["step"]
            doc["runs"].append(run)
            doc["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
            bs.write_outputs(doc, base)  # after every call: a killed run keeps what it measured
            print(bs.fmt_line(i, len(calls), run), flush=True)
            if run.get("error") or run.get("exact") is not True:
                status = 1
        timed = [r for r in doc["runs"] if r.get("time_ms") is not None]
        steps = time_steps(ctx, calls, args.scores) if len(timed) == len(calls) else []
        doc["trace"] = {
            "calls": len(calls), "steps": len({c["step"] for c in calls}),
            "exact": all(r.get("exact") is True for r in doc["runs"]),
            "sum_of_call_medians_ms": sum(r["time_ms"] for r in timed) if len(timed) == len(calls) else None,
            "sum_of_floors_ms": sum(r["floor_ms"] for r in timed) if len(timed) == len(calls) else None,
            "graph_per_step_ms": sum(ms for _, ms in steps) if steps else None,
            "per_step_graph_ms": [ms for _, ms in steps],
        }
        doc["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        bs.write_outputs(doc, base)
        t = doc["trace"]
        line = "TRACE %s: %d calls in %d steps, exact %s, sum of call medians %s ms, floor %s ms, one graph per step %s ms (%.0f s)" % (
            name, t["calls"], t["steps"], "yes" if t["exact"] else "NO",
            "%.3f" % t["sum_of_call_medians_ms"] if t["sum_of_call_medians_ms"] is not None else "-",
            "%.3f" % t["sum_of_floors_ms"] if t["sum_of_floors_ms"] is not None else "-",
            "%.3f" % t["graph_per_step_ms"] if t["graph_per_step_ms"] is not None else "-", time.perf_counter() - t0)
        print(line, flush=True)
        print(mrr.summary_line(doc), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

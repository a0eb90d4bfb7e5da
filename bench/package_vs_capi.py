#!/usr/bin/env python3
"""Does a call through the Python package cost what the same call costs through the C API?

    python3 bench/package_vs_capi.py --build build/release --out DIR [--shapes MxN[xK],...] [--runs 3]

For each shape, one matrix of iid scores (torch.rand, seeded) with ragged
lengths in N/2..N is saved as .npy. Through the package: sgtopk.select on the
tensors, checked exact (bench_select.verify_select), one call captured in a
torch CUDA graph and replayed 50 times between two events after 5 warm-up
replays. Through the C API: `sgtopk replay` on the saved files, which plans,
checks every row against the CPU reference and times 50 sgtopk_graph
replays between two events after 5 warm-up replays, the same protocol. Each
side runs --runs times (median). The JSON record (date, commit, device) goes
to DIR with a Markdown table; the last column is package / C API.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_SHAPES = "1x262144,16x1048576,512x131072,4096x16384,4096x4096"
REPS, WARMUP = 50, 5


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) not in (2, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError("bad shape %r: want MxN or MxNxK with positive integers" % item)
        m, n = int(parts[0]), int(parts[1])
        shapes.append((m, n, int(parts[2]) if len(parts) == 3 else 2048))
    return shapes


def package_ms(torch, sgtopk, scores, lengths, k):
    out = torch.empty(scores.shape[0], k, dtype=torch.int32, device=scores.device)
    sgtopk.select(scores, k, lengths=lengths, out=out)  # plans and compiles outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sgtopk.select(scores, k, lengths=lengths, out=out)
    for _ in range(WARMUP):
        graph.replay()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPS):
        graph.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / REPS, out


def capi_ms(cli, scores_npy, lengths_npy, k):
    done = subprocess.run([cli, "replay", scores_npy, "--lengths", lengths_npy, "--k", str(k)], capture_output=True,
                          text=True, check=False)
    text = done.stdout + done.stderr
    found = re.search(r": (\S+) K=\d+ rows=\d+ width=\d+ on \S+: (exact|WRONG), ([0-9.]+) ms per call", text)
    if done.returncode != 0 or not found:
        raise RuntimeError("sgtopk replay failed (exit %d):\n%s" % (done.returncode, text))
    return float(found.group(3)), found.group(1), found.group(2) == "exact"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build", "release"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError as e:
        ap.error(str(e))
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    cli = os.path.join(args.build, "sgtopk")
    if not os.access(cli, os.X_OK):
        ap.error("no sgtopk CLI at %s (build the release preset first)" % cli)
    import numpy as np
    import torch

    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.path.insert(0, HERE)
    import sgtopk
    from bench_select import git_commit, verify_select

    if not torch.cuda.is_available():
        print("package_vs_capi: skipped: no CUDA device")
        return 0
    os.makedirs(args.out, exist_ok=True)
    commit, _ = git_commit()  # SGTOPK_COMMIT where the tree is a copy
    record = {"workload": "package-vs-capi", "date": datetime.date.today().isoformat(), "commit": commit, "device": torch.cuda.get_device_name(0),
              "protocol": "one call per CUDA graph, %d warm-up then %d timed replays between events; median of %d runs"
                          % (WARMUP, REPS, args.runs), "runs": []}
    for m, n, k in shapes:
        gen = torch.Generator(device="cuda").manual_seed(m * 1000003 + n)
        scores = torch.rand(m, n, device="cuda", generator=gen)
        lengths = torch.randint(n // 2, n + 1, (m,), device="cuda", generator=gen, dtype=torch.int32)
        base = os.path.join(args.out, "m%d_n%d" % (m, n))
        np.save(base + "_scores.npy", scores.cpu().numpy())
        np.save(base + "_lengths.npy", lengths.cpu().numpy())
        pkg, capi, family, capi_exact = [], [], "", True
        pkg_exact, message = True, ""
        for _ in range(args.runs):
            ms, idx = package_ms(torch, sgtopk, scores, lengths, k)
            ok, message, _ = verify_select(scores, lengths, idx, k)
            pkg_exact = pkg_exact and ok
            pkg.append(ms)
            ms, family, exact = capi_ms(cli, base + "_scores.npy", base + "_lengths.npy", k)
            capi.append(ms)
            capi_exact = capi_exact and exact
        os.remove(base + "_scores.npy")
        os.remove(base + "_lengths.npy")
        run = {"M": m, "N": n, "K": k, "family": family, "package_ms": statistics.median(pkg),
               "capi_ms": statistics.median(capi), "package_runs_ms": pkg, "capi_runs_ms": capi,
               "package_exact": pkg_exact, "capi_exact": capi_exact, "verify": message}
        run["ratio"] = run["package_ms"] / run["capi_ms"]
        run["exact"] = pkg_exact and capi_exact
        record["runs"].append(run)
        print("%5d x %8d K=%d %-12s package %.4f ms  C API %.4f ms  ratio %.3f  %s" % (
            m, n, k, family, run["package_ms"], run["capi_ms"], run["ratio"],
            "exact" if pkg_exact and capi_exact else "NOT EXACT"), flush=True)
    name = "package-vs-capi-%s-%s" % (record["date"], commit)
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(record, f, indent=1)
    with open(os.path.join(args.out, name + ".md"), "w") as f:
        f.write("## package vs C API\n\n%s, commit %s, %s; %s\n\n" % (record["date"], commit, record["device"],
                                                                    record["protocol"]))
        f.write("| M | N | K | family | package ms | C API ms | package / C API | exact |\n")
        f.write("|---:|---:|---:|---|---:|---:|---:|---|\n")
        for r in record["runs"]:
            f.write("| %d | %d | %d | %s | %.4f | %.4f | %.3f | %s |\n" % (
                r["M"], r["N"], r["K"], r["family"], r["package_ms"], r["capi_ms"], r["ratio"],
                "yes" if r["package_exact"] and r["capi_exact"] else "no"))
    return 0 if all(r["package_exact"] and r["capi_exact"] for r in record["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())

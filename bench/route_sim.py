#!/usr/bin/env python3
"""The sampled family's route decisions on the benchmark's score rows, on the CPU.

    python3 bench/route_sim.py [--shapes 2048x262144,...] [--rows 192] [--scores indexer]
                               [--policy NAME=stride_wide,stride_narrow,wide_row_threshold,view_block,rho0,rho1[,fine] ...]

For each causal shape (row r has N - M + 1 + r scores) and each policy it
draws `--rows` rows spread over the M rows of the shape, with the score
generator of bench_select.py re-implemented in numpy (the same model and
constants, not the same random stream), and decides each row's route the way
reference::decide_sampled_route does: the view (stride, row phase, view_block),
the coarse-key histogram of the samples, tau0 / tau1 at ranks
ceil(rho * K / s), the primary lowered to ceil(K/s + z_max sqrt(K/s)) and
the secondary by as much (select.sampled.primary_excess_sigmas, --excess-sigmas),
the primary raised to ceil(K/s + z sqrt(K/s)) and the secondary by as much
(select.sampled.primary_confidence, --confidence), the
primary's admitted count, then the band's. It prints
the share of rows per route and the mean candidates of the certified rows.

Why: whether a view policy makes rows underfill is a property of the scores,
not of the GPU, and `sgtopk simulate`'s row families do not model the
benchmark's sink and recency ramp. Checked against the H200's route
statistics at 2048 x 262144: band + exact 0% / 3.6% / 11% measured for
view_block 1 / 8 / 16, 0% / 4.2% / 13.6% simulated (96 rows; see
docs/decisions/2026-11-30-sampled-blocked-view.md).
Needs numpy (pip); imports bench_select.py for the generator's constants.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_select as bench  # noqa: E402  (constants only; torch is not needed)

K = 2048
# name: (stride_wide, stride_narrow, wide_row_threshold, view_block, rho0, rho1[, fine])
# fine = 1: a proposal the library does not have (ALGORITHM.md defines it by
# coarse bins): admit x >= the q0-th largest sample itself, the band
# x >= the q1-th, to size the candidate sets such a proposal would give.
POLICIES = {
    "default": (32, 32, 131072, 16, 1.5, 1.75),
    "default-fine": (32, 32, 131072, 16, 1.5, 1.75, 1),
    "paper": (128, 64, 131072, 1, 1.5, 1.75),
    "view-block-8": (128, 64, 131072, 8, 1.5, 1.75),
    "wide-threshold-64k": (128, 64, 65536, 1, 1.5, 1.75),
    "s64-view-block-8": (64, 64, 131072, 8, 1.5, 1.75),
}


def coarse_key(x):
    """templates/sgtopk/keys.cuh coarse_key: the FP16 rounding's ordered 11 bits."""
    h = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    mag = h & 0x7FFF
    key16 = np.where(((h & 0x8000) != 0) & (mag != 0), (~h) & 0xFFFF, mag | 0x8000)
    return np.where(mag > 0x7C00, 0, key16 >> 5)


def score_rows(M, N, kind, rng, picked):
    """bench_select.generate_scores for the picked rows of a causal M x N matrix."""
    lengths = np.arange(M) + (N - M + 1)
    keys = rng.standard_normal((len(bench.HEAD_WEIGHTS), N)).astype(np.float32) * bench.KEY_SHARE
    qscale = rng.random((M, len(bench.HEAD_WEIGHTS))).astype(np.float32) * 0.5 + 0.75
    ramp = (np.arange(bench.RECENT_POSITIONS) + 1).astype(np.float32) * (bench.RECENT_BOOST / bench.RECENT_POSITIONS)
    for r in picked:
        n = int(lengths[r])
        if kind == "iid":
            yield r, rng.random(n).astype(np.float32)
            continue
        x = np.zeros(n, np.float32)
        for h, weight in enumerate(bench.HEAD_WEIGHTS):
            z = rng.standard_normal(n).astype(np.float32) * bench.NOISE_SHARE + keys[h, :n]
            x += np.maximum(z * qscale[r, h] + bench.HEAD_BIAS, 0) * weight
        x[: bench.SINK_POSITIONS] += bench.SINK_BOOST
        start = max(0, n - bench.RECENT_POSITIONS)
        x[start:] += ramp[bench.RECENT_POSITIONS - (n - start):]
        yield r, x


def sample_phase(row, stride):
    return ((row * 0x9E3779B97F4A7C15) % (1 << 64) >> 40) % stride if stride > 1 else 0


def rank_bin(histogram, rank):
    """The highest bin with at least `rank` samples at or above it (-inf's bin when none)."""
    at_or_above = np.cumsum(histogram[::-1])
    i = int(np.searchsorted(at_or_above, rank))
    return len(histogram) - 1 - i if i < len(histogram) else 31


def sample_ranks(rho0, rho1, s, confidence, excess_sigmas=4.0):
    """runtime/sampled_view.cpp sample_ranks: the margins' ranks, the primary
    lowered to the excess cap's, then raised to the confidence's, the secondary
    by as much each time."""
    q0, q1 = math.ceil(rho0 * K / s - 1e-9), math.ceil(rho1 * K / s - 1e-9)
    if excess_sigmas > 0:
        cap = math.ceil(K / s + excess_sigmas * math.sqrt(K / s) - 1e-9)
        if q0 > cap:
            q0, q1 = cap, q1 - (q0 - cap)
    if confidence > 0:
        wanted = math.ceil(K / s + confidence * math.sqrt(K / s) - 1e-9)
        if wanted > q0:
            q0, q1 = wanted, q1 + wanted - q0
    return q0, q1


def decide(x, row, policy, confidence, excess_sigmas):
    stride_wide, stride_narrow, threshold, block, rho0, rho1 = policy[:6]
    fine = len(policy) > 6 and policy[6] == 1
    n = len(x)
    s = stride_wide if n >= threshold else stride_narrow
    q0, q1 = sample_ranks(rho0, rho1, s, confidence, excess_sigmas)
    first = sample_phase(row, s) * block
    positions = (np.arange(first, n, s * block)[:, None] + np.arange(block)[None, :]).ravel()
    positions = positions[positions < n]
    if len(positions) < max(q0, q1):
        return "no_view", 0
    if fine:
        view = np.sort(x[positions])[::-1]
        primary = int((x >= view[q0 - 1]).sum())
        if primary >= K:
            return "primary", primary
        band = int((x >= view[q1 - 1]).sum())
        return ("band", band) if band >= K else ("exact", 0)
    keys = coarse_key(x)
    histogram = np.bincount(keys[positions], minlength=2048)
    histogram[0] = 0  # NaN samples are not counted
    primary = int((keys >= rank_bin(histogram, q0)).sum())
    if primary >= K:
        return "primary", primary
    band = int((keys >= rank_bin(histogram, q1)).sum())
    return ("band", band) if band >= K else ("exact", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="512x131072,2048x131072,2048x262144,4096x524288,2048x1048576")
    ap.add_argument("--rows", type=int, default=192, help="rows drawn per shape")
    ap.add_argument("--scores", default="indexer", help="indexer or iid")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--confidence", type=float, default=3.0,
                    help="select.sampled.primary_confidence z (0: the margins' ranks alone)")
    ap.add_argument("--excess-sigmas", type=float, default=4.0,
                    help="select.sampled.primary_excess_sigmas z_max (0: no cap on the margins' ranks)")
    ap.add_argument("--policy", action="append", default=[],
                    help="NAME=stride_wide,stride_narrow,wide_row_threshold,view_block,rho0,rho1 (or a known NAME)")
    args = ap.parse_args()
    policies = {}
    for spec in args.policy or list(POLICIES):
        name, _, values = spec.partition("=")
        policies[name] = tuple(float(v) if "." in v else int(v) for v in values.split(",")) if values else POLICIES[name]
    for shape in args.shapes.split(","):
        M, N = (int(v) for v in shape.split("x"))
        for name, policy in policies.items():
            rng = np.random.default_rng(args.seed)  # the same rows for every policy
            picked = np.linspace(0, M - 1, args.rows).astype(int)
            routes, candidates = {}, []
            for r, x in score_rows(M, N, args.scores, rng, picked):
                route, admitted = decide(x, int(r), policy, args.confidence, args.excess_sigmas)
                routes[route] = routes.get(route, 0) + 1
                if admitted:
                    candidates.append(admitted)
            shares = " ".join("%s %.1f%%" % (k, 100.0 * v / args.rows) for k, v in sorted(routes.items()))
            print("%5d x %-8d %-6s %-20s %s  candidates/row %d" % (
                M, N, args.scores, name, shares, round(np.mean(candidates)) if candidates else 0), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How often filter_row's top-p-alone window holds the row's boundary, on the CPU.

    python3 bench/filter_window_sim.py [--vocabs 128256,262208] [--ps 0.9,0.99] [--rows 150]

Rows are the filter benchmark's logits (`randn * 3`, float32). For each row
the window is chosen as filter_row's choose_window does: the sample's 1024
logits at a fixed stride, the sample's own top-p boundary (softmax over the
sample), that key's first digit (the top 11 bits of the ordered key) and its
upper, then lower, neighbour while the row's keys there, predicted from the
sample with one standard deviation of margin, fit the 16384-key window.
`--with-max` also weighs the row's largest logit (known after the kernel's
first pass) at weight 1 and the sample at len / n. A row misses where the
row's true top-p boundary (a stable sort, masses in double) lies outside the
window; it then takes the histogram fallback. Prints the share of rows that
miss or overflow the window.

Why: the miss rate is a property of the logits and the sample, not of the
GPU, and it decides whether the sample's window or a histogram of the row
(the split's window) is the cheaper route
(docs/decisions/2026-12-06-filter-row-passes.md). Needs numpy.
"""
import argparse
import math

import numpy as np

WINDOW_KEYS = 16384
SAMPLE = 1024


def ordered_keys(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return np.where((b >> 31) == 1, (~b) & 0xFFFFFFFF, b | 0x80000000)


def first_digit(value):
    return int(ordered_keys(np.array([value], np.float32))[0] >> 21)


def boundary_digit(x, p):
    xs = np.sort(x)[::-1].astype(np.float64)
    c = np.cumsum(np.exp(xs - xs[0]))
    return first_digit(xs[int(np.searchsorted(c, p * c[-1]))])


def choose_window(sample, p, length, row_max=None):
    s = np.sort(sample)[::-1].astype(np.float64)
    if row_max is None:
        c = np.cumsum(np.exp(s - s[0]))
    else:
        c = 1.0 + np.cumsum(np.exp(s - row_max) * length / len(sample))
    at = s[min(int(np.searchsorted(c, p * c[-1])), len(s) - 1)]
    digits = ordered_keys(sample) >> 21
    centre = first_digit(at)
    count = lambda d: int((digits == d).sum())
    fits = lambda k: (k + math.sqrt(k + 1) + 1) * length / len(sample) <= WINDOW_KEYS
    low = high = centre
    k = count(centre)
    if fits(k + count(centre + 1)):
        high = centre + 1
        k += count(centre + 1)
    if fits(k + count(centre - 1)):
        low = centre - 1
    return low, high


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocabs", default="128256,262208")
    ap.add_argument("--ps", default="0.9,0.99")
    ap.add_argument("--rows", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--with-max", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for vocab in (int(v) for v in a.vocabs.split(",")):
        points = (np.arange(SAMPLE) * (vocab / SAMPLE)).astype(int)
        for p in (float(v) for v in a.ps.split(",")):
            miss = overflow = 0
            for _ in range(a.rows):
                x = (rng.standard_normal(vocab) * 3).astype(np.float32)
                low, high = choose_window(x[points], p, vocab, float(x.max()) if a.with_max else None)
                digits = ordered_keys(x) >> 21
                if int(((digits >= low) & (digits <= high)).sum()) > WINDOW_KEYS:
                    overflow += 1
                elif not low <= boundary_digit(x, p) <= high:
                    miss += 1
            print(f"vocab {vocab} p {p}: miss {100 * miss / a.rows:.1f} %, overflow {100 * overflow / a.rows:.1f} % "
                  f"({a.rows} rows)", flush=True)


if __name__ == "__main__":
    main()

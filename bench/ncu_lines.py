#!/usr/bin/env python3
"""Warp stall samples by CUDA source line, from scripts/profile-call's NAME.source.csv.

    python3 bench/ncu_lines.py OUT/NAME.source.csv [--top 40] [--sources DIR ...]

The CSV is `ncu --page source --csv --print-source cuda,sass` of a kernel
compiled with -lineinfo: one block per source file, a row per line with its
totals, then that line's SASS rows. Prints each file's share of the samples
and the top lines with their three largest stall reasons and the line's text
(from templates/sgtopk, so run it at the commit the profile was made at, or
from the kept sources of --sources for the generated entry file). ncu also credits an inlined line's samples to its callers' lines,
so the shares overcount a little.
"""

import argparse
import collections
import csv
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_lines(path):
    rows, header, current = [], None, None
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if not r or r[0] == "Function Name":
                continue
            if r[0] == "File Path":
                current = r[1]
            elif r[0] == "Line No":
                header = r
            elif r[0]:  # a source line's totals (SASS rows have no line number)
                rows.append((current, int(r[0]), r))
    return header, rows


def line_text(path, number, source_dirs):
    name = os.path.basename(path)
    for d in [os.path.join(REPO, "templates", "sgtopk")] + source_dirs:
        candidate = os.path.join(d, name)
        if os.path.exists(candidate):
            with open(candidate) as f:
                lines = f.read().split("\n")
            return lines[number - 1].strip()[:90] if number <= len(lines) else ""
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--sources", nargs="*", default=[], help="folders with the generated entry source")
    a = ap.parse_args()
    header, rows = read_lines(a.csv)
    samples = header.index("Warp Stall Sampling (All Samples)")
    executed = header.index("Instructions Executed")
    reasons = [i for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    value = lambda r, i: float(r[i] or 0)
    total = sum(value(r, samples) for _, _, r in rows) or 1.0
    by_file = collections.Counter()
    for path, _, r in rows:
        by_file[os.path.basename(path)] += value(r, samples)
    print("samples %d; by file: %s" % (total, ", ".join("%s %.1f%%" % (k, 100 * v / total) for k, v in by_file.most_common())))
    for path, number, r in sorted(rows, key=lambda x: -value(x[2], samples))[: a.top]:
        s = value(r, samples)
        top = sorted(((value(r, i), header[i][len("stall_"):]) for i in reasons), reverse=True)[:3]
        why = " ".join("%s %.0f%%" % (n, 100 * v / max(s, 1.0)) for v, n in top)
        print("%5.1f%% %11s %s:%d [%s] %s" % (100 * s / total, r[executed], os.path.basename(path), number, why,
                                              line_text(path, number, a.sources)))


if __name__ == "__main__":
    main()

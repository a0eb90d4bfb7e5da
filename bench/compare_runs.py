#!/usr/bin/env python3
"""Side-by-side time/floor of several bench_select.py runs of the same shapes.

    python3 bench/compare_runs.py RUN.json [RUN.json ...]

One column per file (its tag), one row per configuration (M, N, scores), then
the geometric mean of each column and its change against the first column.
A configuration that was not exact prints its ratio with a '!'.
"""
import json
import math
import sys


def load(path):
    doc = json.load(open(path))
    runs = {}
    for r in doc["runs"]:
        if r.get("ratio"):
            runs[(r["M"], r["N"], r.get("scores"))] = (r["ratio"], bool(r.get("exact")))
    return doc.get("tag") or path, runs


def main(paths):
    if not paths:
        sys.exit(__doc__)
    columns = [load(p) for p in paths]
    keys = sorted({k for _, runs in columns for k in runs})
    width = max(9, max(len(tag) for tag, _ in columns))
    print("%-26s" % "M x N scores" + "".join("%*s" % (width + 2, tag) for tag, _ in columns))
    for k in keys:
        cells = []
        for _, runs in columns:
            ratio, exact = runs.get(k, (None, True))
            cells.append("-" if ratio is None else "%.3f%s" % (ratio, "" if exact else "!"))
        print("%-26s" % ("%d x %d %s" % k) + "".join("%*s" % (width + 2, c) for c in cells))
    # Geometric means over the configurations every column has.
    common = [k for k in keys if all(k in runs for _, runs in columns)]
    means = [math.exp(sum(math.log(runs[k][0]) for k in common) / len(common)) if common else float("nan")
             for _, runs in columns]
    print("%-26s" % ("geomean (%d)" % len(common)) + "".join("%*.3f" % (width + 2, m) for m in means))
    print("%-26s" % "vs first" + "".join("%*s" % (width + 2, "%+.1f%%" % (100 * (m / means[0] - 1))) for m in means))


if __name__ == "__main__":
    main(sys.argv[1:])

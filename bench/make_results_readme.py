#!/usr/bin/env python3
"""Write bench/results/README.md from the benchmark JSON files beside it.

    python3 bench/make_results_readme.py [--dir bench/results] [--out bench/results/README.md]

bench/results/ keeps one record (a .json and its .md) per workload: the
operator matrix with the planner's choice and with `--family direct_exact`
(tag direct-ablation), few-long-rows, many-short-rows, k-sweep, margin-sweep,
stride-sweep, robustness, and the framework traces of bench_trace.py. Older records live in git history. For every (workload, tag)
the latest file (by its date, then the time its run finished, then
modification time) gives the table; a group with more than one file is
reported on stderr, so the older one can be deleted. Also the Markdown
renderer bench_select.py uses for its per-run .md file, and latest_records()
for bench/make_performance_doc.py (no torch needed here).
"""

import argparse
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crossover  # noqa: E402


def _fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        if abs(x) >= 100:
            return "%.1f" % x
        return ("%%.%df" % digits) % x
    return str(x)


def geomean(values):
    v = [float(x) for x in values if x is not None and x > 0 and math.isfinite(float(x))]
    if not v:
        return None
    return math.exp(sum(math.log(x) for x in v) / len(v))


def summarize(doc):
    """Counts and means of one result document (select runs, or bench_filter.py's filter runs:
    their time is `ms`, their baseline the torch sort chain's `torch_sort_ms`)."""
    runs = [r for r in doc.get("runs", []) if r.get("op", "select") in ("select", "filter")]
    considered = [r for r in runs if not r.get("skipped")]
    timed = [r for r in considered if r.get("exact") and (r.get("time_ms") if "time_ms" in r else r.get("ms")) is not None]
    errors = [r for r in considered if r.get("error")]
    inexact = [r for r in considered if r.get("exact") is False]
    ratios = [r.get("ratio") for r in timed]
    speedups = [r.get("speedup_vs_torch") or (r["torch_sort_ms"] / r["ms"] if r.get("torch_sort_ms") else None)
                for r in timed]
    speedups = [x for x in speedups if x]
    by_scores = {}
    for r in timed:
        by_scores.setdefault(r.get("scores", "?"), []).append(r.get("ratio"))
    return {
        "configs": len(runs),
        "considered": len(considered),
        "skipped": len(runs) - len(considered),
        "timed": len(timed),
        "exact": sum(1 for r in considered if r.get("exact") is True),
        "inexact": len(inexact),
        "errors": len(errors),
        "all_exact": len(considered) > 0 and all(r.get("exact") is True for r in considered),
        "geomean_ratio": geomean(ratios),
        "max_ratio": max([x for x in ratios if x is not None], default=None),
        "geomean_ratio_by_scores": {k: geomean(v) for k, v in sorted(by_scores.items())},
        "geomean_speedup_vs_torch": geomean(speedups),
        "min_speedup_vs_torch": min(speedups, default=None),
    }


def summary_line(doc):
    s = summarize(doc)
    parts = ["SUMMARY", "workload=%s" % doc.get("workload")]
    if doc.get("tag"):
        parts.append("tag=%s" % doc["tag"])
    parts += [
        "configs=%d" % s["configs"], "timed=%d" % s["timed"], "exact=%d/%d" % (s["exact"], s["considered"]),
        "errors=%d" % s["errors"], "skipped=%d" % s["skipped"],
        "all_exact=%s" % ("yes" if s["all_exact"] else "no"),
        "geomean_ratio=%s" % _fmt(s["geomean_ratio"]), "max_ratio=%s" % _fmt(s["max_ratio"]),
        "geomean_speedup_vs_torch=%s" % _fmt(s["geomean_speedup_vs_torch"], 2),
    ]
    return " ".join(parts)


def render_filter_table(doc, heading_level=2):
    """A filter record (bench_filter.py) as Markdown."""
    h = "#" * heading_level
    bw = doc.get("read_bandwidth_GBps")
    title = "filter" + (" [%s]" % doc["tag"] if doc.get("tag") else "")
    out = ["%s %s" % (h, title), "", "%s, commit %s, %s, read bandwidth %s GB/s; mask mode, out of place" % (
        doc.get("date", "?"), doc.get("commit", "?"), doc.get("device", "?"),
        ("%.0f" % bw) if isinstance(bw, (int, float)) else "?"), "",
        "| batch | vocab | k | p | dtype | time ms | floor ms | ratio | torch sort ms | exact |",
        "|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in doc.get("runs", []):
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("batch"), r.get("vocab"), r.get("k"), r.get("p"), r.get("dtype"), _fmt(r.get("ms"), 4),
            _fmt(r.get("floor_ms"), 4), _fmt(r.get("ratio"), 2), _fmt(r.get("torch_sort_ms"), 4),
            "yes" if r.get("exact") else "**NO** (%s rows)" % r.get("bad_rows")))
    return "\n".join(out) + "\n"


def render_package_vs_capi_table(doc, heading_level=2):
    """bench/package_vs_capi.py's record: the same calls timed through the package and the C API."""
    out = ["%s package-vs-capi" % ("#" * heading_level), "",
           "%s, commit %s, %s; %s" % (doc.get("date", "?"), doc.get("commit", "?"), doc.get("device", "?"),
                                      doc.get("protocol", "?")), "",
           "| M | N | K | family | package ms | C API ms | package / C API | exact |",
           "|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in doc.get("runs", []):
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("M"), r.get("N"), r.get("K"), r.get("family"), _fmt(r.get("package_ms"), 4), _fmt(r.get("capi_ms"), 4),
            _fmt(r.get("ratio"), 3), "yes" if r.get("package_exact") and r.get("capi_exact") else "**NO**"))
    return "\n".join(out) + "\n"


def render_table(doc, heading_level=2):
    """One result document as Markdown: a header line, the table, the means."""
    if doc.get("workload") == "filter":
        return render_filter_table(doc, heading_level)
    if doc.get("workload") == "package-vs-capi":
        return render_package_vs_capi_table(doc, heading_level)
    h = "#" * heading_level
    title = doc.get("workload", "?") + (" [%s]" % doc["tag"] if doc.get("tag") else "")
    out = []
    out.append("%s %s" % (h, title))
    out.append("")
    bw = doc.get("read_bandwidth_GBps")
    meta = "%s, commit %s, %s, CUDA %s, read bandwidth %s GB/s" % (
        doc.get("date", "?"), doc.get("commit", "?"), doc.get("device", "?"), doc.get("cuda", "?"),
        ("%.0f" % bw) if isinstance(bw, (int, float)) else "?")
    if doc.get("policy_toml") or doc.get("family_forced"):
        meta += "; policy %r, family %r" % (doc.get("policy_toml"), doc.get("family_forced"))
    if doc.get("quick"):
        meta += "; quick subset"
    out.append(meta)
    out.append("")
    variants = any(r.get("variant") for r in doc.get("runs", []))
    if variants:
        out.append("| M | N | K | variant | scores | family | time ms | floor ms | ratio | torch ms | x faster than torch | exact |")
        out.append("|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---|")
    else:
        out.append("| M | N | K | scores | family | time ms | floor ms | ratio | torch ms | x faster than torch | exact |")
        out.append("|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|")
    for r in doc.get("runs", []):
        if r.get("op", "select") != "select":
            continue
        if r.get("skipped"):
            exact = "skipped: %s" % r["skipped"]
        elif r.get("error"):
            exact = "ERROR: %s" % str(r["error"]).replace("|", "/").replace("\n", " ")[:120]
        elif r.get("exact") is True:
            exact = "yes"
        elif r.get("exact") is False:
            exact = "**NO**: %s" % str(r.get("verify", "")).replace("|", "/").replace("\n", " ")[:120]
        else:
            exact = "?"
        torch_ms = (r.get("baselines") or {}).get("torch_topk_ms")
        sp = r.get("speedup_vs_torch")
        variant = ("%s | " % (r.get("variant") or "-")) if variants else ""
        out.append("| %s | %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("M"), r.get("N"), r.get("K"), variant, r.get("scores", "-"), r.get("family") or "-",
            _fmt(r.get("time_ms"), 4), _fmt(r.get("floor_ms"), 4), _fmt(r.get("ratio"), 2),
            _fmt(torch_ms, 3), _fmt(sp, 2), exact))
    s = summarize(doc)
    out.append("")
    line = "Geometric mean of time/floor: **%s** over %d timed configurations (max %s)" % (
        _fmt(s["geomean_ratio"]), s["timed"], _fmt(s["max_ratio"]))
    if len(s["geomean_ratio_by_scores"]) > 1:
        line += "; by scores: " + ", ".join("%s %s" % (k, _fmt(v)) for k, v in s["geomean_ratio_by_scores"].items())
    out.append(line + ".")
    out.append("Exact: %d of %d; errors: %d; skipped: %d. Geometric mean speedup over torch.topk: %s (min %s)." % (
        s["exact"], s["considered"], s["errors"], s["skipped"], _fmt(s["geomean_speedup_vs_torch"], 2),
        _fmt(s["min_speedup_vs_torch"], 2)))
    t = doc.get("trace")
    if t:  # bench_trace.py: what the trace costs as a whole
        out.append("Trace: %s calls in %s steps, sum of call medians **%s ms** (floor %s ms, %s x); one CUDA graph per "
                   "step: %s." % (t.get("calls"), t.get("steps"), _fmt(t.get("sum_of_call_medians_ms"), 3),
                                  _fmt(t.get("sum_of_floors_ms"), 3),
                                  _fmt(t["sum_of_call_medians_ms"] / t["sum_of_floors_ms"], 2)
                                  if t.get("sum_of_call_medians_ms") and t.get("sum_of_floors_ms") else "-",
                                  ("%s ms" % _fmt(t["graph_per_step_ms"], 3)) if t.get("graph_per_step_ms") is not None
                                  else "not measured (%s)" % t.get("graph_per_step_note", "-")))
    return "\n".join(out) + "\n"


def _run_key(r):
    return (r.get("M"), r.get("N"), r.get("K"), r.get("scores"), r.get("variant"))


def render_comparison(doc, baseline, heading_level=3):
    """`doc` against `baseline` (two result documents): time/floor per
    configuration both timed, the change, and the geometric mean of the
    time ratios. What a kernel change did, in one table."""
    h = "#" * heading_level
    base_runs = {_run_key(r): r for r in baseline.get("runs", []) if r.get("ratio") is not None}
    out = ["%s %s vs %s (commit %s, %s)" % (h, doc.get("workload", "?") + (" [%s]" % doc["tag"] if doc.get("tag") else ""),
                                              baseline.get("workload", "?") + (" [%s]" % baseline["tag"] if baseline.get("tag") else ""),
                                              baseline.get("commit", "?"), baseline.get("date", "?")),
           "",
           "| M | N | K | scores | baseline ratio | ratio | change |",
           "|---:|---:|---:|---|---:|---:|---:|"]
    changes = []
    for r in doc.get("runs", []):
        b = base_runs.get(_run_key(r))
        if b is None or r.get("ratio") is None or not r.get("exact"):
            continue
        change = r["ratio"] / b["ratio"] if b["ratio"] else None
        if change:
            changes.append(change)
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("M"), r.get("N"), r.get("K"), r.get("scores", "-"), _fmt(b["ratio"], 2), _fmt(r["ratio"], 2),
            ("%+.1f%%" % (100 * (change - 1))) if change else "-"))
    out.append("")
    g = geomean(changes)
    out.append("%d configurations in both; geometric mean of time ratios %s%s." % (
        len(changes), _fmt(g), (" (%+.1f%%)" % (100 * (g - 1))) if g else ""))
    return "\n".join(out) + "\n"


def _sort_key(path_doc):
    path, doc = path_doc
    return (str(doc.get("date", "")), str(doc.get("finished", "")), os.path.getmtime(path))


def load_groups(directory):
    """{(workload, tag): [(path, doc), ...] oldest first} of the result files in directory."""
    groups = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("skipping %s: %s" % (path, e), file=sys.stderr)
            continue
        if not isinstance(doc, dict) or "workload" not in doc or "runs" not in doc:
            continue
        groups.setdefault((doc["workload"], doc.get("tag") or ""), []).append((path, doc))
    return {k: sorted(v, key=_sort_key) for k, v in groups.items()}


def latest_records(directory):
    """{(workload, tag): (path, doc)}: the latest record of each workload."""
    return {k: v[-1] for k, v in load_groups(directory).items()}


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(here, "results"))
    ap.add_argument("--out", default=None, help="default: DIR/README.md")
    a = ap.parse_args(argv)
    out_path = a.out or os.path.join(a.dir, "README.md")
    groups = load_groups(a.dir)
    order = ["operator-matrix", "few-long-rows", "many-short-rows", "k-sweep", "margin-sweep", "stride-sweep"]
    keys = sorted(groups, key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k[0], k[1]))
    lines = [
        "# Benchmark results",
        "",
        "Generated by `bench/make_results_readme.py` from the JSON files in this folder "
        "(`bench/bench_select.py` writes them; the protocol is `/work/shared/design/BENCH.md`: "
        "CUDA-graph replays, every configuration verified exact first, floor = bytes that must move / "
        "read bandwidth measured in the same run). One record per workload is kept here; older "
        "records are in git history. A summary with the figures side by side is "
        "`docs/performance.md` (`bench/make_performance_doc.py`).",
        "",
    ]
    if not keys:
        lines.append("No results yet.")
        lines.append("")
    for key in keys:
        items = groups[key]
        path, doc = items[-1]
        lines.append(render_table(doc, heading_level=2).rstrip("\n"))
        lines.append("")
        lines.append("Source: `%s`." % os.path.basename(path))
        older = [os.path.basename(p) for p, _ in items[:-1]]
        if older:
            print("%s [%s]: older records %s (keep one per workload: delete them, git keeps the history)"
                  % (key[0], key[1] or "-", ", ".join(older)), file=sys.stderr)
        lines.append("")
    cross = crossover.latest_map(a.dir)
    if cross:
        path, doc = cross
        lines += ["## crossover", "",
                  "%s, commit %s, %s: the fastest family per (rows, width), K = 2048, ms per call (lengths "
                  "uniform in N/2..N, %s scores); where the planner chose another family, its time over the "
                  "fastest. Picture: `%s`." % (doc.get("date"), doc.get("commit"), doc.get("device"), doc.get("scores"),
                                                os.path.basename(os.path.splitext(path)[0] + ".svg")),
                  "", crossover.markdown_table(doc).rstrip("\n"), "", "Source: `%s`." % os.path.basename(path), ""]
    text = "\n".join(lines)
    with open(out_path + ".tmp", "w") as f:
        f.write(text)
    os.replace(out_path + ".tmp", out_path)
    print("wrote %s (%d workloads)" % (out_path, len(keys)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Write docs/performance.md and the README's performance summary from bench/results/.

    python3 bench/make_performance_doc.py [--dir bench/results] [--doc docs/performance.md]
                                          [--readme README.md] [--print]

Reads the latest record of each workload (bench/make_results_readme.py's
latest_records) and writes:
  - docs/performance.md: the protocol, a summary table, the operator matrix
    (the planner's choice and the direct-family ablation) as M x N grids with
    route statistics, the K, margin and stride sweeps, few long rows and many
    short rows, JIT timings, and how to reproduce them;
  - the block of README.md between `<!-- performance:begin -->` and
    `<!-- performance:end -->`: a few lines and one table.
--print writes the README block to stdout instead of into README.md. Every
figure comes from the JSON files; the history of how each default got there
is in docs/decisions/. No torch needed.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crossover  # noqa: E402
import make_results_readme as results  # noqa: E402

BEGIN = "<!-- performance:begin -->"
END = "<!-- performance:end -->"


def _f(x, digits=2):
    return results._fmt(x, digits)


def _rel(path, start):
    return os.path.relpath(path, start)


def _records(directory):
    latest = results.latest_records(directory)
    planner = direct = None
    other = {}
    for (workload, tag), (path, doc) in latest.items():
        if workload == "operator-matrix":
            if doc.get("family_forced") == "direct_exact" or tag == "direct-ablation":
                direct = (path, doc)
            elif not doc.get("policy_toml") and not doc.get("family_forced"):
                planner = (path, doc)
        elif workload == "filter" and not doc.get("policy_toml"):
            other["filter" + (" (%s)" % tag if tag else "")] = (path, doc)  # one row per record: fp32, 16-bit
        elif not doc.get("policy_toml") and not doc.get("family_forced"):
            if tag and workload in other and not other[workload][1].get("tag"):
                continue  # the untagged record stands for its workload
            other[workload] = (path, doc)
    return planner, direct, other


def _ratio_cell(doc, s):
    """Time / floor for the summary tables: a trace's whole (sum of call medians over the sum of
    floors, bench_trace.py), else the geometric mean over configurations."""
    t = doc.get("trace") or {}
    if t.get("sum_of_call_medians_ms") and t.get("sum_of_floors_ms"):
        return "%s (trace: %s ms)" % (_f(t["sum_of_call_medians_ms"] / t["sum_of_floors_ms"], 3),
                                      _f(t["sum_of_call_medians_ms"], 3))
    return _f(s["geomean_ratio"], 3)


def _timed(doc):
    return [r for r in doc.get("runs", []) if r.get("op", "select") == "select" and r.get("exact")
            and r.get("ratio") is not None]


def _grid(doc):
    """M x N table of time / floor, 'indexer / iid' per cell."""
    runs = _timed(doc)
    ms = sorted({r["M"] for r in runs})
    ns = sorted({r["N"] for r in runs})
    cell = {(r["M"], r["N"], r.get("scores")): r["ratio"] for r in runs}
    out = ["| M \\ N | " + " | ".join(str(n) for n in ns) + " |",
           "|---:|" + "---:|" * len(ns)]
    for m in ms:
        out.append("| %d | " % m + " | ".join(
            "%s / %s" % (_f(cell.get((m, n, "indexer"))), _f(cell.get((m, n, "iid")))) for n in ns) + " |")
    return out


def _routes(doc):
    """Per kind of scores: rows, band rows, exact rows, candidates per certified row."""
    out = {}
    for r in _timed(doc):
        rt = r.get("routes")
        if not rt:
            continue
        o = out.setdefault(r.get("scores", "?"), dict(rows=0, band=0, exact=0, primary=0, candidates=0))
        o["rows"] += sum(rt.get(k, 0) for k in ("short", "no_view", "primary", "band", "exact"))
        for k in ("band", "exact", "primary", "candidates"):
            o[k] += rt.get(k, 0)
    return out


def _speedups(runs):
    v = [r["speedup_vs_torch"] for r in runs if r.get("speedup_vs_torch")]
    return (results.geomean(v), min(v, default=None), max(v, default=None), v)


def _matrix_facts(doc):
    s = results.summarize(doc)
    runs = _timed(doc)
    big = [r["ratio"] for r in runs if r["M"] >= 2048]
    g, lo, hi, v = _speedups(runs)
    return dict(s=s, max_big=max(big, default=None), torch=(g, lo, hi), at5=sum(1 for x in v if x >= 5.0),
                n=len(runs), ws=max((r.get("workspace_bytes") or 0 for r in runs), default=0))


def _name(path):
    return os.path.basename(path)


def _crossover_lines(cross, repo):
    """The crossover map's summary: where it is, and how often the planner picks the fastest family."""
    if not cross:
        return []
    path, doc = cross
    sm = crossover.summary(doc)
    svg = os.path.splitext(path)[0] + ".svg"
    worst = sm["worst"]
    return ["", "Crossover map (`bench/crossover.py`, K = %s, %s): every family timed at %d (rows, width) points; "
            "the planner's choice is within %d%% of the fastest at %d of them (worst: %s, %s at %sx %s). "
            "Picture: [`%s`](%s); table: [`bench/results/README.md`](%s)."
            % ("/".join(str(k) for k in sorted({p["K"] for p in doc["points"].values()})), doc.get("date"),
               sm["points"], round((sm["tolerance"] - 1) * 100), sm["planner_ok"], worst[0] if worst else "-",
               worst[2] if worst else "-", _f(worst[1]) if worst else "-", ("over " + worst[3]) if worst else "",
               os.path.basename(svg), _rel(svg, repo), _rel(os.path.join(os.path.dirname(path), "README.md"), repo))]


def readme_block(planner, direct, other, repo, cross=None):
    lines = [BEGIN,
             "<!-- generated by bench/make_performance_doc.py from bench/results/: do not edit here -->"]
    if planner:
        p = _matrix_facts(planner[1])
        by = p["s"]["geomean_ratio_by_scores"]
        lines += [
            "H200, K = 2048, CUDA-graph replays, every configuration verified exact first; floor = valid",
            "scores read once plus the index writes. Operator matrix at %s (%d configurations), the"
            % (planner[1].get("commit"), p["n"]),
            "planner's choice: **%sx the floor** on geometric mean (indexer %s, iid %s), at most %sx"
            % (_f(p["s"]["geomean_ratio"], 3), _f(by.get("indexer"), 3), _f(by.get("iid"), 3), _f(p["max_big"], 3)),
            "for M >= 2048; %sx faster than `torch.topk` (%s to %s)."
            % (_f(p["torch"][0]), _f(p["torch"][1]), _f(p["torch"][2])),
        ]
    if direct:
        d = _matrix_facts(direct[1])
        by = d["s"]["geomean_ratio_by_scores"]
        lines += [
            "The `direct_exact` family alone (the ablation; it reads each row twice): %sx"
            % _f(d["s"]["geomean_ratio"], 3),
            "(indexer %s, iid %s), %sx faster than `torch.topk`, at least %sx on every configuration."
            % (_f(by.get("indexer"), 3), _f(by.get("iid"), 3), _f(d["torch"][0]), _f(d["torch"][1])),
        ]
    lines += ["", "| workload | record | time / floor (geomean) | x faster than `torch.topk` (filter: the torch sort chain; geomean, min) | exact |",
              "| --- | --- | ---: | ---: | ---: |"]
    for label, rec in _summary_rows(planner, direct, other):
        s = results.summarize(rec[1])
        lines.append("| %s | [`%s`](%s) | %s | %s | %d / %d |" % (
            label, _name(rec[0]), _rel(rec[0], repo), _ratio_cell(rec[1], s),
            ("%s, %s" % (_f(s["geomean_speedup_vs_torch"]), _f(s["min_speedup_vs_torch"])))
            if s["geomean_speedup_vs_torch"] else "-", s["exact"], s["considered"]))
    lines += _crossover_lines(cross, repo)
    lines += ["",
              "Grids, sweeps, routes, JIT timings and how to reproduce them: "
              "[`docs/performance.md`](docs/performance.md).",
              END]
    return "\n".join(lines) + "\n"


def _summary_rows(planner, direct, other):
    rows = []
    if planner:
        rows.append(("operator matrix (planner)", planner))
    if direct:
        rows.append(("operator matrix, `--family direct_exact`", direct))
    for w in ("few-long-rows", "many-short-rows", "k-sweep", "margin-sweep", "stride-sweep"):
        if w in other:
            rows.append((w, other[w]))
    for w in sorted(other):
        if w not in ("few-long-rows", "many-short-rows", "k-sweep", "margin-sweep", "stride-sweep"):
            rows.append((w, other[w]))
    return rows


def _meta(doc):
    return "%s, commit %s, %s, CUDA %s, read bandwidth %.0f GB/s%s" % (
        doc.get("date"), doc.get("commit"), doc.get("device"), doc.get("cuda"),
        doc.get("read_bandwidth_GBps") or 0, "; quick subset" if doc.get("quick") else "")


def _sweep_table(doc, key_name):
    runs = _timed(doc)
    shapes = sorted({(r["M"], r["N"]) for r in runs})
    variants = []
    for r in runs:
        if r.get("variant") not in variants:
            variants.append(r.get("variant"))
    cell = {(r["M"], r["N"], r.get("variant"), r.get("scores")): r for r in runs}
    head = "| %s | " % key_name + " | ".join("%dx%d indexer | routes p / b / x | iid" % s for s in shapes) + " |"
    out = [head, "|---" + "|---:|---|---:" * len(shapes) + "|"]
    for v in variants:
        parts = []
        for m, n in shapes:
            a = cell.get((m, n, v, "indexer"))
            b = cell.get((m, n, v, "iid"))
            rt = (a or {}).get("routes") or {}
            parts += [_f(a and a["ratio"]), "%s / %s / %s" % (rt.get("primary", "-"), rt.get("band", "-"),
                                                              rt.get("exact", "-")), _f(b and b["ratio"])]
        out.append("| %s | " % (v or "-") + " | ".join(parts) + " |")
    return out


def _plain_table(doc):
    out = ["| M | N | K | scores | family | time ms | time / floor | x faster than `torch.topk` |",
           "|---:|---:|---:|---|---|---:|---:|---:|"]
    for r in _timed(doc):
        out.append("| %d | %d | %d | %s | %s | %s | %s | %s |" % (
            r["M"], r["N"], r["K"], r.get("scores", "-"), r.get("family") or "-", _f(r.get("time_ms"), 4),
            _f(r["ratio"]), _f(r.get("speedup_vs_torch"))))
    return out


def performance_doc(planner, direct, other, docdir):
    L = ["# Performance", "",
         "Generated by `bench/make_performance_doc.py` from the latest record of each workload in",
         "[`bench/results/`](%s) (older records are in git history; the history of each default, with"
         % _rel(os.path.join(os.path.dirname(docdir), "bench", "results", "README.md"), docdir),
         "its figures and commits, is in [`decisions/`](decisions/README.md)). Do not edit by hand.", "",
         "## How it is measured", "",
         "`bench/bench_select.py` (its module docstring has the details): per configuration it compiles a",
         "plan, generates the scores on the GPU, verifies every row exact (the contract's rules, ties to",
         "the lower index, -1 padding), then times CUDA-graph replays of the library's graph object, and",
         "`torch.topk` on the same tensors. The floor is measured in the same run: valid scores read once",
         "plus the index writes, at the streaming-read bandwidth. The direct family reads each row twice,",
         "so its own floor is about 2x. `indexer` rows model the sparse-attention indexer's ReLU-weighted",
         "sums over a few heads, with an attention sink and a recency ramp that crowd the top-K at both",
         "ends of a row; `iid` rows are uniform in [0, 1). Lengths are causal unless stated.", "",
         "## Summary", "",
         "| workload | record | time / floor (geomean) | max | x faster than `torch.topk` (filter: the torch sort chain; geomean, min) | exact |",
         "| --- | --- | ---: | ---: | ---: | ---: |"]
    for label, rec in _summary_rows(planner, direct, other):
        s = results.summarize(rec[1])
        L.append("| %s | [`%s`](%s) | %s | %s | %s | %d / %d |" % (
            label, _name(rec[0]), _rel(rec[0], docdir), _ratio_cell(rec[1], s), _f(s["max_ratio"]),
            ("%s, %s" % (_f(s["geomean_speedup_vs_torch"]), _f(s["min_speedup_vs_torch"])))
            if s["geomean_speedup_vs_torch"] else "-", s["exact"], s["considered"]))
    L.append("")
    for label, rec in (("Operator matrix: the planner's choice", planner),
                       ("Operator matrix: the direct-exact family alone (`--family direct_exact`)", direct)):
        if not rec:
            continue
        doc = rec[1]
        f = _matrix_facts(doc)
        by = f["s"]["geomean_ratio_by_scores"]
        fams = sorted({r.get("family") for r in _timed(doc)})
        L += ["## " + label, "", "%s (`%s`). K = 2048, causal lengths; family: %s." % (
            _meta(doc), _name(rec[0]), ", ".join("`%s`" % x for x in fams)), "",
            "Geometric mean **%sx** the floor over %d configurations (indexer %s, iid %s; max %s; M >= 2048 "
            "at most %s). %sx faster than `torch.topk` on geometric mean (%s to %s); %d of %d at 5x or more. "
            "Workspace at the largest shape: %.1f MB." % (
                _f(f["s"]["geomean_ratio"], 3), f["n"], _f(by.get("indexer"), 3), _f(by.get("iid"), 3),
                _f(f["s"]["max_ratio"], 3), _f(f["max_big"], 3), _f(f["torch"][0]), _f(f["torch"][1]),
                _f(f["torch"][2]), f["at5"], f["n"], f["ws"] / 1e6), "",
            "Time / floor, indexer / iid rows:", ""]
        L += _grid(doc)
        rt = _routes(doc)
        if rt and any(v["primary"] for v in rt.values()):
            L += ["", "Routes (sampled family, summed over the matrix): " + "; ".join(
                "%s rows: %d, %d recovered by the band, %d by the exact route, %.0f candidates per certified row"
                % (k, v["rows"], v["band"], v["exact"], v["candidates"] / max(1, v["primary"] + v["band"]))
                for k, v in sorted(rt.items())) + "."]
        L.append("")
    if "k-sweep" in other:
        path, doc = other["k-sweep"]
        runs = _timed(doc)
        L += ["## K sweep", "", "%s (`%s`)." % (_meta(doc), _name(path)), "",
              "| K | indexer | iid | candidates per row (indexer / iid) |", "|---:|---:|---:|---:|"]
        for k in sorted({r["K"] for r in runs}):
            a = [r for r in runs if r["K"] == k and r.get("scores") == "indexer"]
            b = [r for r in runs if r["K"] == k and r.get("scores") == "iid"]
            cand = lambda rs: _f(rs[0]["routes"].get("candidates_per_row"), 0) if rs and rs[0].get("routes") else "-"
            L.append("| %d | %s | %s | %s / %s |" % (k, _f(a and a[0]["ratio"]), _f(b and b[0]["ratio"]),
                                                     cand(a), cand(b)))
        L.append("")
    for w, key in (("margin-sweep", "rho0 (rho1 = rho0 + 0.25)"), ("stride-sweep", "stride s (blocks of 16)")):
        if w in other:
            path, doc = other[w]
            L += ["## " + w.replace("-", " ").capitalize(), "", "%s (`%s`). Time / floor; routes are rows "
                  "certified by the primary / recovered by the band / by the exact route." % (_meta(doc), _name(path)), ""]
            L += _sweep_table(doc, key)
            L.append("")
    for w, title in (("few-long-rows", "Few long rows"), ("many-short-rows", "Many short rows")):
        if w in other:
            path, doc = other[w]
            L += ["## " + title, "", "%s (`%s`)." % (_meta(doc), _name(path)), ""]
            L += _plain_table(doc)
            L.append("")
    jit = [r["plan"] for rec in (planner, direct) if rec for r in _timed(rec[1])
           if r.get("plan") and not r["plan"].get("from_cache") and r["plan"].get("compile_ms")]
    if jit:
        by_family = {}
        for p in jit:
            by_family.setdefault(p.get("family"), []).append(p)
        L += ["## JIT", "", "Cold NVRTC compiles and module loads on the benchmark machine, from the plans of the "
              "operator-matrix records (medians, and the range over the configurations compiled cold; each "
              "plan's figures are in the record): " + "; ".join(
                  "`%s` compile median %s ms (%s to %s), load median %s ms (%s to %s)" % (
                      fam, _f(statistics.median(p["compile_ms"] for p in ps), 0),
                      _f(min(p["compile_ms"] for p in ps), 0), _f(max(p["compile_ms"] for p in ps), 0),
                      _f(statistics.median(p.get("load_ms") or 0 for p in ps), 2),
                      _f(min(p.get("load_ms") or 0 for p in ps), 2), _f(max(p.get("load_ms") or 0 for p in ps), 2))
                  for fam, ps in sorted(by_family.items())) + ".", ""]
    base = _rel(planner[0], os.path.dirname(docdir)) if planner else "bench/results/operator-matrix-DATE-COMMIT.json"
    L += ["## Reproduce", "",
          "On a GPU machine, from a build made elsewhere:", "", "```sh",
          "scripts/device-check build/release OUT --bench operator-matrix [--bundle]   # GPU tests, selftest, JIT timings, benchmark",
          "python3 bench/bench_select.py --build build/release --workload all --out bench/results",
          "python3 bench/bench_select.py --build build/release --workload operator-matrix --family direct_exact \\",
          "  --tag direct-ablation --out bench/results                                # the ablation",
          "python3 bench/bench_select.py --build build/release --workload operator-matrix --quick --out OUT \\",
          "  --baseline %s   # what a change did, per configuration" % base,
          "scripts/ab-bench build/main build/release OUT                              # two builds timed in one run",
          "scripts/experiment-call build/main build/release OUT [POLICY.toml ...]     # a branch: smoke, GPU tests, A/B, policies",
          "scripts/policy-sweep build/release OUT configs/experiments/direct-*.toml    # quick direct matrix per policy, one table",
          "python3 bench/compare_runs.py RUN.json ...                                  # runs side by side (any machine)",
          "python3 bench/make_results_readme.py && python3 bench/make_performance_doc.py  # after replacing a record",
          "```", "",
          "Workloads: `operator-matrix`, `few-long-rows`, `many-short-rows`, `k-sweep`, and the sampled",
          "family's `margin-sweep` / `stride-sweep`; `--quick` runs a subset, `--policy-toml` and `--family`",
          "try a policy or force a family, and every line reports the routes rows took and where a",
          "worker's cycles went. Keep one record per workload in `bench/results/` (delete the older pair).", "",
          "Without a GPU, `python3 bench/sass_lines.py --build build/release --baseline build/main` counts a",
          "plan's static SASS instructions per source line before and after a change (registers and spills",
          "too); it needs nvcc and nvdisasm (`pip install nvidia-cuda-nvdisasm`, a development tool only).",
          "`bench/route_sim.py` replays the sampled family's route decisions on the benchmark's rows on the CPU.", ""]
    return "\n".join(L)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(here, "results"))
    ap.add_argument("--doc", default=os.path.join(repo, "docs", "performance.md"))
    ap.add_argument("--readme", default=os.path.join(repo, "README.md"))
    ap.add_argument("--print", action="store_true", help="print the README block instead of writing README.md")
    a = ap.parse_args(argv)
    planner, direct, other = _records(a.dir)
    block = readme_block(planner, direct, other, os.path.dirname(os.path.abspath(a.readme)), crossover.latest_map(a.dir))
    doc = performance_doc(planner, direct, other, os.path.dirname(os.path.abspath(a.doc)))
    os.makedirs(os.path.dirname(os.path.abspath(a.doc)), exist_ok=True)
    with open(a.doc + ".tmp", "w") as f:
        f.write(doc)
    os.replace(a.doc + ".tmp", a.doc)
    print("wrote %s" % a.doc, file=sys.stderr)
    if a.print:
        sys.stdout.write(block)
        return 0
    text = open(a.readme).read()
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        print("%s has no %s ... %s block; --print shows it" % (a.readme, BEGIN, END), file=sys.stderr)
        return 1
    text = text[:i] + block.rstrip("\n") + text[j + len(END):]
    with open(a.readme + ".tmp", "w") as f:
        f.write(text)
    os.replace(a.readme + ".tmp", a.readme)
    print("updated %s" % a.readme, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

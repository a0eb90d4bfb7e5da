#!/usr/bin/env python3
"""The crossover sweep (issue "decode and short rows", item 4): every select
family timed over a grid of (rows, width, K), the winner per point, the
planner's choice beside it, and a picture of which family wins where.

    python3 bench/crossover.py --out DIR [--ks 2048] [--scores indexer] [--stop-after-s S] [--resume MAP.json]
    python3 bench/crossover.py --out DIR --resume MAP.json --remeasure --families short_row --widths 16384
    python3 bench/crossover.py --render MAP.json [--svg OUT.svg]   (no GPU)
    python3 bench/crossover.py --selftest                          (no GPU: renders a made-up map)

Each point is one bench_select.py configuration per family (forced with
options.family; lengths uniform in N/2..N as the many-short-rows workload;
exactness checked on every row, CUDA-graph replays timed), plus the
planner's own plan (no family forced): the map says for each point which
family was fastest, by how much, and whether the planner chose it. A family
that refuses a shape (short_row past its widest row) is recorded as refused.
Points whose score matrix exceeds --max-gib are skipped. The map is written
after every point, so a run stopped by --stop-after-s is continued with
--resume MAP.json. --rows, --widths and --families narrow the sweep; with
--remeasure, the points of a resumed map inside that narrower grid are
measured again for those families and the planner (after a family or the
policy changed), the rest kept.
Writes DIR/crossover-<date>-<commit>.json and .svg.
"""

import argparse
import datetime
import html
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FAMILIES = ("short_row", "direct_exact", "sampled", "split", "cluster")
ROWS = (1, 4, 16, 64, 132, 264, 1024, 4096, 16384)
WIDTHS = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576)
COLORS = {"short_row": "#4e79a7", "direct_exact": "#f28e2b", "sampled": "#59a14f", "split": "#e15759", "cluster": "#b07aa1", None: "#dddddd"}


def grid(ks, rows=ROWS, widths=WIDTHS):
    return [(k, m, n) for k in ks for n in widths for m in rows if n > k]


def point_key(k, m, n):
    return "K%d_M%d_N%d" % (k, m, n)


def winner(point):
    """(family, time) of the fastest exact family at a point, or (None, None)."""
    best = (None, None)
    for fam, r in point.get("families", {}).items():
        t = r.get("time_ms")
        if r.get("exact") and t is not None and (best[1] is None or t < best[1]):
            best = (fam, t)
    return best


def latest_map(directory):
    """(path, doc) of the newest crossover-*.json in directory (by date, then name), or None."""
    import glob
    found = []
    for path in glob.glob(os.path.join(directory, "crossover-*.json")):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("points"), dict):
            found.append((doc.get("date") or "", path, doc))
    if not found:
        return None
    found.sort(key=lambda e: (e[0], e[1]))
    return found[-1][1], found[-1][2]


def summary(doc, tolerance=1.05):
    """Measured points, the planner within `tolerance` x the fastest family at how many, and its
    worst point: {"points", "planner_ok", "worst": (key, planner/fastest, planner family, fastest family)}."""
    points, ok, worst = 0, 0, None
    for key, p in sorted(doc["points"].items()):
        fam, t = winner(p)
        planned = p.get("planner", {})
        if not fam or not planned.get("time_ms"):
            continue
        points += 1
        ratio = planned["time_ms"] / t
        ok += ratio <= tolerance
        if worst is None or ratio > worst[1]:
            worst = (key, ratio, planned.get("family"), fam)
    return {"points": points, "planner_ok": ok, "worst": worst, "tolerance": tolerance}


def markdown_table(doc, k=2048):
    """Rows down, widths across: the fastest family's time (ms) and name, and the planner's time
    over it where it chose another family."""
    short = {"short_row": "short", "direct_exact": "direct", "sampled": "sampled", "split": "split"}
    out = ["| rows \\ width | " + " | ".join("%dK" % (n // 1024) for n in WIDTHS) + " |",
           "| ---: | " + " | ".join("---" for _ in WIDTHS) + " |"]
    for m in ROWS:
        cells = []
        for n in WIDTHS:
            p = doc["points"].get(point_key(k, m, n))
            fam, t = winner(p) if p else (None, None)
            if not fam:
                cells.append("-")
                continue
            cell = "%s %.3g" % (short.get(fam, fam), t)
            planned = p.get("planner", {})
            if planned.get("family") and planned["family"] != fam and planned.get("time_ms"):
                cell += " (planner %.2fx)" % (planned["time_ms"] / t)
            cells.append(cell)
        out.append("| %d | %s |" % (m, " | ".join(cells)))
    return "\n".join(out) + "\n"


def render_svg(doc):
    """One panel per K: rows down, widths across; a cell's colour is the winning family,
    its text the winner's time and, where the planner chose another family, the
    planner's time over the winner's."""
    ks = sorted({p["K"] for p in doc["points"].values()})
    cell_w, cell_h, left, top = 92, 34, 70, 40
    panel_h = top + cell_h * len(ROWS) + 30
    width = left + cell_w * len(WIDTHS) + 20
    height = panel_h * len(ks) + 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
           % (width, height)]
    for pi, k in enumerate(ks):
        y0 = pi * panel_h
        out.append('<text x="%d" y="%d" font-size="13">K = %d: fastest family per (rows, width); '
                   'planner / fastest where the planner differs</text>' % (left, y0 + 18, k))
        for j, n in enumerate(WIDTHS):
            out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
                       % (left + cell_w * j + cell_w // 2, y0 + top - 6, "%dK" % (n // 1024)))
        for i, m in enumerate(ROWS):
            y = y0 + top + cell_h * i
            out.append('<text x="%d" y="%d" text-anchor="end">%d</text>' % (left - 6, y + cell_h // 2 + 4, m))
            for j, n in enumerate(WIDTHS):
                x = left + cell_w * j
                p = doc["points"].get(point_key(k, m, n))
                fam, t = winner(p) if p else (None, None)
                out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="white"/>'
                           % (x, y, cell_w, cell_h, COLORS.get(fam, COLORS[None])))
                if fam:
                    label = "%.3g ms" % t
                    planned = p.get("planner", {})
                    if planned.get("family") and planned["family"] != fam and planned.get("time_ms"):
                        label += " (%.2fx)" % (planned["time_ms"] / t)
                    out.append('<text x="%d" y="%d" text-anchor="middle" fill="white">%s</text>'
                               % (x + cell_w // 2, y + cell_h // 2 + 4, html.escape(label)))
        ly = y0 + top + cell_h * len(ROWS) + 18
        for li, fam in enumerate(FAMILIES):
            out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>'
                       % (left + 110 * li, ly - 10, COLORS[fam], left + 110 * li + 16, ly, fam))
    out.append('<text x="%d" y="%d">%s, commit %s, %s</text>'
               % (left, height - 12, html.escape(str(doc.get("device"))), doc.get("commit"), doc.get("date")))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def selftest():
    """Renders a made-up map (no GPU) and checks the picture's cells."""
    doc = {"device": "test", "commit": "0000000", "date": "2026-12-01", "points": {}}
    for k, m, n in grid((2048,)):
        fams = {"direct_exact": {"exact": True, "time_ms": 2.0}, "sampled": {"exact": True, "time_ms": 1.0 if n >= 32768 else 3.0},
                "short_row": {"refused": "too wide"} if n > 8192 else {"exact": True, "time_ms": 0.5}}
        doc["points"][point_key(k, m, n)] = {"K": k, "M": m, "N": n, "families": fams,
                                              "planner": {"family": "direct_exact", "time_ms": 2.0}}
    svg = render_svg(doc)
    cells = svg.count("<rect ") - len(FAMILIES)
    ok = cells == len(ROWS) * len(WIDTHS) and COLORS["short_row"] in svg and COLORS["sampled"] in svg and "(4.00x)" in svg
    assert winner(doc["points"][point_key(2048, 1, 4096)]) == ("short_row", 0.5)
    assert winner(doc["points"][point_key(2048, 1, 65536)]) == ("sampled", 1.0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "map.svg")
        with open(path, "w") as f:
            f.write(svg)
    table = markdown_table(doc)
    ok = ok and table.count("\n") == len(ROWS) + 2 and "short 0.5" in table and "(planner 4.00x)" in table
    sm = summary(doc)
    ok = ok and sm["points"] == len(grid((2048,))) and sm["worst"][1] == 4.0
    with tempfile.TemporaryDirectory() as d:
        for date in ("2026-11-30", "2026-12-01"):
            with open(os.path.join(d, "crossover-%s-x.json" % date), "w") as f:
                json.dump(dict(doc, date=date), f)
        ok = ok and latest_map(d)[1]["date"] == "2026-12-01"
    print("crossover selftest: %d cells, %s" % (cells, "ok" if ok else "WRONG"))
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description="sgtopk crossover sweep")
    ap.add_argument("--out")
    ap.add_argument("--ks", default="2048")
    ap.add_argument("--scores", default="indexer")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build", "release"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-gib", type=float, default=8.0)
    ap.add_argument("--stop-after-s", type=float, default=0.0)
    ap.add_argument("--resume", help="a map JSON to continue (its points are not measured again)")
    ap.add_argument("--rows", help="comma-separated row counts (default: the whole grid)")
    ap.add_argument("--widths", help="comma-separated widths (default: the whole grid)")
    ap.add_argument("--families", help="comma-separated families to measure besides the planner's choice "
                                       "(default: all; 'planner': the planner's choice only)")
    ap.add_argument("--remeasure", action="store_true",
                    help="with --resume: measure the chosen families again at resumed points of the grid")
    ap.add_argument("--render", help="write the picture of a map JSON and exit (no GPU)")
    ap.add_argument("--svg", help="with --render: the picture's path (default: beside the JSON)")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()
    if args.render:
        with open(args.render) as f:
            doc = json.load(f)
        path = args.svg or os.path.splitext(args.render)[0] + ".svg"
        with open(path, "w") as f:
            f.write(render_svg(doc))
        print("wrote %s" % path)
        return 0
    if not args.out:
        ap.error("--out is required (or --render / --selftest)")
    import bench_select as bs
    sg = bs.sg
    import torch
    ks = [int(k) for k in args.ks.split(",")]
    ints = lambda text, default: tuple(int(v) for v in text.split(",")) if text else default
    families = () if args.families == "planner" else tuple(args.families.split(",")) if args.families else FAMILIES
    unknown = set(families) - set(FAMILIES)
    if unknown:
        ap.error("unknown families: %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(FAMILIES)))
    if args.remeasure and not args.resume:
        ap.error("--remeasure needs --resume")
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    lib = sg.Library(args.build)
    stream = torch.cuda.Stream()
    bw, _ = bs.measure_read_bandwidth(stream, args.rounds, 2.0)
    sel = argparse.Namespace(no_torch=True, family=None, policy_toml=None, rounds=max(args.rounds, 5), min_reps=5,
                             max_reps=100, target_round_ms=25.0, max_gib=args.max_gib)
    ctx = bs.Context(sel, lib, stream, bw)
    commit, dirty = bs.git_commit()
    doc = {"workload": "crossover", "date": datetime.date.today().isoformat(), "commit": commit, "dirty": dirty,
           "device": torch.cuda.get_device_properties(0).name, "read_bandwidth_GBps": bw, "scores": args.scores,
           "lengths": "random-half", "families": list(FAMILIES), "points": {}}
    if args.resume:
        with open(args.resume) as f:
            resumed = json.load(f)
        doc["points"] = resumed["points"]
        for point in doc["points"].values():  # the commit each point was measured at
            point.setdefault("commit", resumed.get("commit"))
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "crossover-%s-%s" % (doc["date"], commit))
    t0 = time.perf_counter()
    status = 0
    for k, m, n in grid(ks, ints(args.rows, ROWS), ints(args.widths, WIDTHS)):
        key = point_key(k, m, n)
        old = doc["points"].get(key)
        if old and not args.remeasure:
            continue
        if args.stop_after_s and time.perf_counter() - t0 > args.stop_after_s:
            print("stopped after %.0f s; continue with --resume %s.json" % (args.stop_after_s, base))
            break
        cfg = dict(M=m, N=n, K=k, lengths="random-half")
        point = old if old and not old.get("skipped") else {"K": k, "M": m, "N": n, "families": {}, "planner": {}}
        point["commit"] = commit
        if m * n * 4 > args.max_gib * bs.GIB:
            point["skipped"] = "score matrix over %g GiB" % args.max_gib
        else:
            for fam in (None,) + families:
                sel.family = fam
                run = bs.run_config(ctx, cfg, args.scores)
                entry = {"time_ms": run.get("time_ms"), "exact": run.get("exact"), "floor_ms": run.get("floor_ms"),
                         "family": run.get("family")}
                if run.get("error"):
                    refused = "SGTOPK_ERROR_INVALID_ARGUMENT" in run["error"] or "too wide" in run["error"]
                    entry["refused" if refused else "error"] = run["error"].splitlines()[0][:300]
                    status |= 0 if refused else 1
                if run.get("exact") is False:
                    status = 1
                if fam is None:
                    point["planner"] = entry
                else:
                    point["families"][fam] = entry
        doc["points"][key] = point
        fam, t = winner(point)
        print("K=%d M=%d N=%d: fastest %s %s ms; planner %s %s ms" % (
            k, m, n, fam, ("%.4f" % t) if t else "-", point["planner"].get("family"),
            ("%.4f" % point["planner"]["time_ms"]) if point["planner"].get("time_ms") else "-"), flush=True)
        bs.write_atomic(base + ".json", json.dumps(bs._clean(doc), indent=1) + "\n")
        bs.write_atomic(base + ".svg", render_svg(doc))
    return status


if __name__ == "__main__":
    sys.exit(main())

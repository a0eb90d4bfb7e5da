#!/usr/bin/env python3
"""sgtopk filter benchmark: the filter grid of BENCH.md (batch x vocab, k, p, dtype, mask mode).

    python3 bench/bench_filter.py --build build/release --out DIR [--shapes BxV,...] [--k 50] [--p 0.9]
        [--modes k50:p0.9,k0:p0.99,...] [--rounds 7] [--no-torch] [--dtypes f32,bf16,f16]
        [--policy-toml TEXT] [--temperature T] [--outputs mask|sample|mask+sample|candidates:C]

Per shape: compile a filter plan (mask output, out of place: every entry of
`out` written), run once and check each row's kept set against the
sort-based reference on the GPU (torch: stable sort descending, top-k, softmax
over the survivors in float64, the shortest prefix with mass >= p; rows whose
mass at the boundary is within 1e-6 relative of p may keep either neighbour),
then time graph replays of the library's graph (buffers rotated so L2 does not
hold them) and the sort-based torch chain on the same tensors. Floor = (read +
write of every logit, at the logits' width) / read bandwidth, measured in the
same run. With bf16 / fp16 logits the reference runs on the same 2-byte values
widened to fp32 (exact: the kernel keeps the same set of the same values).
--outputs picks what a call writes (default mask): `sample` is one sampled
token a row without the mask (the logits only read: floor = one read),
`mask+sample` both, `candidates:C` the first C kept tokens with their logits
and probabilities (no mask). Exactness is checked on the mask where there is
one, on the candidates' sets where asked, and on the token's membership in
the kept set for `sample`.
--modes runs several (k, p) pairs over each shape's plan and tensors (k and p
are launch arguments, not compiled in): `kK:pP` each (k 0 is top-p alone, p 1
top-k alone), e.g. BENCH.md's grid `k50:p1,k1000:p1,k0:p0.9,k0:p0.99,k50:p0.9,
k50:p0.99,k1000:p0.9,k1000:p0.99`; without it the one pair --k / --p.
--against B1,B2 times other builds of the library on the same tensors, each
a build folder or `FOLDER@POLICY.toml` (that build compiled with the policy
file's text instead of --policy-toml, so that two policies of one build can
be timed against each other): each configuration is compiled and checked exact by every build (the outputs
poisoned before each), then timed round by round in turn (A, B1, B2, A, ...),
so that the builds share the inputs, the clocks and the L2 state; the runs
carry their build's name, and a table of every build's time and its ratio
to the first ends the output.
Writes DIR/filter-<date>-<commit>[-<tag>].json and .md; prints the table last.
Exit status: 0 all exact, 1 otherwise, 2 setup failure.
"""

import argparse
import datetime
import json
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))

import bench_select as bs  # noqa: E402  (timing, bandwidth, commit and device helpers)
from sgtopk import _capi as sg  # noqa: E402

DEFAULT_SHAPES = "1x128256,1x262208,64x128256,256x128256,1024x128256"


def reference_keep(x, k, p):
    """Kept mask of the stable-sort reference (CONTRACT section 2) and the rows where the mass is ambiguous."""
    torch = bs.torch
    rows, vocab = x.shape  # finite logits (the benchmark's rows)
    order = torch.sort(x, dim=1, descending=True, stable=True).indices
    vals = torch.gather(x, 1, order).double()
    rank = torch.arange(vocab, device=x.device).expand(rows, vocab)
    alive = rank < (k if 0 < k < vocab else vocab)
    if p < 1.0:
        m = torch.where(alive, vals, torch.full_like(vals, float("-inf")))
        prob = torch.softmax(m, dim=1)
        cum = torch.cumsum(prob, dim=1)
        before = cum - prob
        keep_sorted = alive & (before < p)
        keep_sorted[:, 0] = True
        near = ((cum - p).abs() <= 1e-6 * p) & keep_sorted
        ambiguous = near.any(dim=1)
    else:
        keep_sorted = alive
        ambiguous = torch.zeros(rows, dtype=torch.bool, device=x.device)
    keep = torch.zeros_like(keep_sorted)
    keep.scatter_(1, order, keep_sorted)
    return keep, ambiguous


def torch_chain(x, out, k, p):
    """The sort-based top-k / top-p mask engines fall back to (vLLM's apply_top_k_top_p shape)."""
    torch = bs.torch
    s, idx = torch.sort(x, dim=1, descending=False)
    if 0 < k < x.shape[1]:
        thresh = s.gather(1, (x.shape[1] - k) * torch.ones(x.shape[0], 1, dtype=torch.long, device=x.device))
        s = s.masked_fill(s < thresh, float("-inf"))
    probs = s.softmax(dim=1)
    cum = probs.cumsum(dim=1)
    s = s.masked_fill(cum <= 1 - p, float("-inf"))
    out.scatter_(1, idx, s)


def split_build(entry):
    """(build folder, policy file or None) of an --against entry `DIR` or `DIR@POLICY.toml`."""
    folder, _, policy = entry.partition("@")
    return folder, (policy or None)


def build_names(builds):
    """A short name per build entry: its folder's last path part, `@` and the policy file's stem where it names
    one, with a number where two are the same."""
    names = []
    for b in builds:
        folder, policy = split_build(b)
        name = os.path.basename(os.path.normpath(folder)) or folder
        if policy:
            name += "@" + os.path.splitext(os.path.basename(policy))[0]
        names.append(name if name not in names else f"{name}#{len(names)}")
    return names


def comparison_table(results, names):
    """Markdown lines: one row per configuration, each build's ms (a '!' where not exact) and its ratio to the first."""
    rows, order = {}, []
    for r in results:
        key = (r["dtype"], r["batch"], r["vocab"], r["k"], r["p"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][r["build"]] = r
    head = "| dtype | batch x vocab | k | p | " + " | ".join(f"{n} ms" for n in names) + " | " + \
        " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " |"
    lines = [head, "|" + "---|" * 4 + "---:|" * (2 * len(names) - 1)]
    for key in order:
        got = rows[key]
        cells = [f"{got[n]['ms']:.4f}{'' if got[n]['exact'] else '!'}" if n in got else "-" for n in names]
        base = got.get(names[0])
        ratios = [f"{got[n]['ms'] / base['ms']:.3f}" if base and n in got else "-" for n in names[1:]]
        lines.append(f"| {key[0]} | {key[1]} x {key[2]} | {key[3]} | {key[4]:g} | " + " | ".join(cells + ratios) + " |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--p", type=float, default=0.9)
    ap.add_argument("--modes", default=None, help="(k, p) pairs kK:pP, comma-separated (default: --k and --p)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-torch", action="store_true", help="skip timing the torch chain")
    ap.add_argument("--policy-toml", default=None, help="policy TOML text every plan is compiled with")
    ap.add_argument("--dtypes", default="f32", help="logits' types, read natively: f32, bf16, f16 (comma list)")
    ap.add_argument("--temperature", type=float, default=1.0, help="temperature applied before top-p (one value for every row)")
    ap.add_argument("--outputs", default="mask", help="mask, sample, mask+sample or candidates:C")
    ap.add_argument("--tag", default=None, help="the record's tag (file-name suffix and the JSON's tag), e.g. 16-bit")
    ap.add_argument("--against", default=None,
                    help="other build folders (comma list), each FOLDER or FOLDER@POLICY.toml, timed against --build on "
                         "the same tensors, round by round")
    args = ap.parse_args()
    modes = [(args.k, args.p)]
    if args.modes:
        try:
            modes = [(int(m.split(":")[0][1:]), float(m.split(":")[1][1:])) for m in args.modes.split(",")]
            assert all(m.split(":")[0][0] == "k" and m.split(":")[1][0] == "p" for m in args.modes.split(","))
        except (ValueError, IndexError, AssertionError):
            print(f"bench_filter: --modes {args.modes!r}: expected kK:pP pairs, e.g. k50:p0.9,k0:p0.99", file=sys.stderr)
            return 2
    torch = bs.torch
    if torch is None or not torch.cuda.is_available():
        print("bench_filter: no CUDA device", file=sys.stderr)
        return 2
    builds = [args.build] + (args.against.split(",") if args.against else [])
    names = build_names(builds)
    libs, policies = [], []
    for b in builds:
        folder, policy = split_build(b)
        if policy:
            try:
                with open(policy) as f:
                    policies.append(f.read())
            except OSError as e:
                print(f"bench_filter: --against {b!r}: {e}", file=sys.stderr)
                return 2
        else:
            policies.append(args.policy_toml)
        libs.append(sg.Library(folder))
    stream = torch.cuda.Stream()
    bw, _ = bs.measure_read_bandwidth(stream, args.rounds)
    commit, _ = bs.git_commit()
    results, all_exact = [], True
    dtypes = args.dtypes.split(",")
    outputs = args.outputs
    capacity = 0
    if outputs.startswith("candidates:"):
        capacity = int(outputs.split(":")[1])
        outputs = "candidates"
    if outputs not in ("mask", "sample", "mask+sample", "candidates"):
        print(f"bench_filter: unknown --outputs {args.outputs!r}", file=sys.stderr)
        return 2
    with_mask = outputs in ("mask", "mask+sample")
    flags = (sg.SGTOPK_FILTER_MASK if with_mask else 0) | (sg.SGTOPK_FILTER_SAMPLE if "sample" in outputs else 0) | \
        (sg.SGTOPK_FILTER_CANDIDATES if outputs == "candidates" else 0)
    for dt in dtypes:
        if dt not in ("f32", "bf16", "f16"):
            print(f"bench_filter: unknown dtype {dt!r} (f32, bf16, f16)", file=sys.stderr)
            return 2
    for dt, spec in [(dt, spec) for dt in dtypes for spec in args.shapes.split(",")]:
        tdtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dt]
        sgdtype = {"f32": sg.F32, "bf16": sg.BF16, "f16": sg.F16}[dt]
        esize = torch.tensor([], dtype=tdtype).element_size()
        rows, vocab = (int(v) for v in spec.split("x"))
        plans = [lib.compile(k=capacity, rows=rows, width=vocab, op=sg.OP_FILTER, flags=flags, device=0,
                             dtype=sgdtype, policy_toml=policy, own_workspace=True)
                 for lib, policy in zip(libs, policies)]
        nbuf = max(2, min(8, (400 << 20) // (rows * vocab * 2 * esize) + 1))
        gen = torch.Generator(device="cuda").manual_seed(rows * 7919 + vocab)
        xs = [torch.randn(rows, vocab, device="cuda", generator=gen).mul_(3.0).to(tdtype) for _ in range(nbuf)]
        outs = [torch.full_like(x, float("nan")) if with_mask else None for x in xs]
        extra = [{} for _ in xs]
        for e in extra:
            if "sample" in outputs:
                e["sampled_tokens"] = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
                e["seed_value"] = 1234
            if outputs == "candidates":
                e["candidate_indices"] = torch.full((rows, capacity), -7, dtype=torch.int32, device="cuda")
                e["candidate_logits"] = torch.full((rows, capacity), float("nan"), device="cuda")
                e["candidate_probs"] = torch.full((rows, capacity), float("nan"), device="cuda")
                e["candidate_counts"] = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
        torch.cuda.synchronize()
        for k, p in modes:
            args_list = [sg.filter_args(logits=x, out=o if with_mask else 0, top_k_value=k, top_p_value=p,
                                        temperature_value=args.temperature, **e) for x, o, e in zip(xs, outs, extra)]
            t32 = torch.tensor(args.temperature, dtype=torch.float32).item()  # the args hold the temperature as a float
            scaled = (xs[0].double() / t32).float() if args.temperature != 1.0 else xs[0].float()  # = IEEE float x / T
            keep, ambiguous = reference_keep(scaled, k, p)

            def exactness(plan):
                """(exact, bad rows) of one call of `plan` on the first buffers, the outputs it is checked on
                poisoned first (as allocated): a build that writes nothing fails."""
                if with_mask:
                    outs[0].fill_(float("nan"))
                for name in ("sampled_tokens", "candidate_indices", "candidate_counts"):
                    if name in extra[0]:
                        extra[0][name].fill_(-7)
                torch.cuda.synchronize()
                plan.filter(args_list[0], stream=stream.cuda_stream)
                stream.synchronize()
                bad = torch.zeros(rows, dtype=torch.bool, device="cuda")
                if with_mask:
                    got = outs[0] == xs[0]  # kept: the logit itself; excluded: -inf
                    bad |= (got != keep).any(dim=1)
                if "sample" in outputs:
                    tok = extra[0]["sampled_tokens"].long()
                    inside = (tok >= 0) & (tok < vocab)
                    bad |= ~inside | ~keep.gather(1, tok.clamp(0, vocab - 1).unsqueeze(1)).squeeze(1)
                if outputs == "candidates":
                    cnt = extra[0]["candidate_counts"].long()
                    bad |= cnt != keep.sum(dim=1)
                    idx = extra[0]["candidate_indices"].long()
                    col = torch.arange(capacity, device="cuda").expand(rows, capacity)
                    written = col < cnt.clamp(max=capacity).unsqueeze(1)
                    got_kept = keep.gather(1, idx.clamp(0, vocab - 1))
                    bad |= (written & ~got_kept).any(dim=1) | (written & ((idx < 0) | (idx >= vocab))).any(dim=1)
                bad &= ~ambiguous
                return not bool(bad.any()), int(bad.sum())

            checked = [exactness(plan) for plan in plans]
            graphs = [[plan.graph(a) for a in args_list] for plan in plans]
            times = [[] for _ in plans]
            for _ in range(args.rounds):  # the builds in turn, a round each
                for b, gs in enumerate(graphs):
                    _, t, _ = bs.time_calls([lambda g=g: g.launch(stream.cuda_stream) for g in gs], stream, 1)
                    times[b] += t
            torch_ms = None
            if not args.no_torch:
                touts = outs if with_mask else [torch.empty_like(x) for x in xs]
                ms_t, _, _ = bs.time_calls([lambda x=x, o=o: torch_chain(x, o, k, p) for x, o in zip(xs, touts)],
                                           stream, max(3, args.rounds // 2), max_reps=20)
                torch_ms = ms_t
            floor_ms = rows * vocab * (2 if with_mask else 1) * esize / (bw * 1e9) * 1e3
            for b, plan in enumerate(plans):
                exact, bad_rows = checked[b]
                all_exact &= exact
                ms = statistics.median(times[b])
                r = {"op": "filter", "batch": rows, "vocab": vocab, "k": k, "p": p, "temperature": args.temperature,
                     "dtype": dt, "mode": args.outputs,
                     "family": plan.info["family"], "ms": ms, "floor_ms": floor_ms, "ratio": ms / floor_ms,
                     "torch_sort_ms": torch_ms, "exact": exact, "bad_rows": bad_rows,
                     "ambiguous_rows": int(ambiguous.sum()), "round_ms": times[b]}
                if args.against:
                    r["build"] = names[b]
                results.append(r)
                print(f"filter{'[' + names[b] + ']' if args.against else ''} {dt} {rows}x{vocab} k {k} p {p:g}: "
                      f"{ms:.4f} ms, floor {floor_ms:.4f} ({ms / floor_ms:.2f}x), "
                      f"torch sort {torch_ms if torch_ms is None else round(torch_ms, 4)}, exact {exact}", flush=True)
            del graphs
        del xs, outs, extra
        for plan in plans:
            plan.close()
        torch.cuda.empty_cache()
    date = datetime.date.today().isoformat()
    doc = {"workload": "filter", "date": date, "commit": commit, "device": torch.cuda.get_device_name(0),
           "read_bandwidth_GBps": bw, "policy_toml": args.policy_toml, "tag": args.tag, "runs": results}
    if args.against:
        doc["builds"] = dict(zip(names, builds))
    os.makedirs(args.out, exist_ok=True)
    suffix = "" if args.outputs == "mask" and args.temperature == 1.0 else \
        "-" + args.outputs.replace(":", "").replace("+", "-") + ("" if args.temperature == 1.0 else f"-t{args.temperature:g}")
    base = os.path.join(args.out, f"filter{suffix}-{date}-{commit}" + (f"-{args.tag}" if args.tag else ""))
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    lines = [f"## filter\n\n{date}, commit {commit}, {doc['device']}, read bandwidth {bw:.0f} GB/s, "
             f"k, p as listed, temperature {args.temperature}, outputs {args.outputs}"
             f"{' (mask out of place)' if with_mask else ''}\n"]
    if args.against:
        lines += comparison_table(results, names)
    else:
        lines += ["| dtype | batch | vocab | k | p | ms | floor ms | ratio | torch sort ms | exact |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in results:
            t = "-" if r["torch_sort_ms"] is None else f"{r['torch_sort_ms']:.4f}"
            lines.append(f"| {r['dtype']} | {r['batch']} | {r['vocab']} | {r['k']} | {r['p']:g} | {r['ms']:.4f} | "
                         f"{r['floor_ms']:.4f} | {r['ratio']:.2f} | {t} | "
                         f"{'yes' if r['exact'] else 'NO (%d rows)' % r['bad_rows']} |")
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all_exact else 1


if __name__ == "__main__":
    sys.exit(main())

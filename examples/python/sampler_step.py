#!/usr/bin/env python3
"""A sampling step in the style of vLLM's sampler: per-request temperature,
top-k and top-p, then one token per request, the step captured once in a
CUDA graph and replayed over new logits and new sampling parameters.

Each step: sgtopk filters the logits in place (the kept set is decided on
logits / temperature, as a stable sort of them would; excluded logits become
-inf), then the token is drawn from softmax(kept / temperature) by the
exponential race (argmax of p / q with q ~ Exp(1), vLLM's sampler). Requests
mix greedy (temperature 0), top-k only, top-p only, both and neither. The
script checks every step: each row's kept set against a stable-sort reference
and the sampled token inside it (greedy: the first token of the order), and
exits 0 when all hold, 77 (skipped) without PyTorch or a GPU.

    PYTHONPATH=python python3 examples/python/sampler_step.py [--steps N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def reference_kept(logits, k, p, t):
    """The stable-sort reference's kept mask, on the CPU in float64 (scaled in float32 as the engine does)."""
    import torch

    x = logits.cpu()
    keep = torch.zeros(x.shape, dtype=torch.bool)
    for r in range(x.shape[0]):
        tr, kr, pr = float(t[r]), int(k[r]), float(p[r])
        greedy = not (0.0 < tr < float("inf"))
        # IEEE float32 division by a tensor (a scalar divisor may become a reciprocal multiply).
        row = (x[r] if greedy or tr == 1.0 else x[r] / torch.full_like(x[r], tr)).double()
        order = torch.sort(row, descending=True, stable=True).indices
        if greedy:
            keep[r, order[0]] = True
            continue
        n = kr if 0 < kr < row.numel() else row.numel()
        if pr < 1.0:
            prob = torch.softmax(row[order][:n], 0)
            n = 1 if pr <= 0.0 else max(1, int((torch.cumsum(prob, 0) - prob < pr).sum()))
        keep[r, order[:n]] = True
    return keep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    import sgtopk

    torch.manual_seed(0)
    dev = "cuda"
    B, V = args.batch, args.vocab
    logits = torch.empty(B, V, device=dev)
    temperature = torch.empty(B, device=dev)
    top_k = torch.empty(B, dtype=torch.int32, device=dev)
    top_p = torch.empty(B, device=dev)
    tokens = torch.empty(B, dtype=torch.int64, device=dev)
    noise = torch.empty(B, V, device=dev)

    def new_inputs(step):
        g = torch.Generator(device="cpu").manual_seed(100 + step)
        logits.copy_(torch.randn(B, V, generator=g) * 4)
        kinds = torch.arange(B) % 5  # greedy, top-k only, top-p only, both, neither
        temperature.copy_(torch.where(kinds == 0, 0.0, 0.5 + torch.rand(B, generator=g)))
        top_k.copy_(torch.where((kinds == 1) | (kinds == 3), torch.randint(1, 200, (B,), generator=g), 0).int())
        top_p.copy_(torch.where((kinds == 2) | (kinds == 3), 0.5 + 0.5 * torch.rand(B, generator=g), 1.0))
        noise.exponential_()

    def step():
        sgtopk.filter_(logits, k=top_k, p=top_p, temperature=temperature)
        greedy = temperature <= 0
        scaled = logits / torch.where(greedy, 1.0, temperature)[:, None]
        sampled = (torch.softmax(scaled, dim=-1) / noise).argmax(dim=-1)
        tokens.copy_(torch.where(greedy, logits.argmax(dim=-1), sampled))

    new_inputs(0)
    step()  # plans compiled before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    bad = 0
    for s in range(args.steps):
        new_inputs(s + 1)
        original = logits.clone()
        graph.replay()
        torch.cuda.synchronize()
        keep = reference_kept(original, top_k.cpu(), top_p.cpu(), temperature.cpu())
        got = (logits == original).cpu()
        rows_bad = [r for r in range(B) if not torch.equal(got[r], keep[r]) or not bool(keep[r, tokens[r].item()])]
        bad += len(rows_bad)
        print("step %d: kept %d tokens in all, %d rows wrong%s" % (s, int(keep.sum()), len(rows_bad),
                                                                    (": %s" % rows_bad[:8]) if rows_bad else ""))
    print("all steps exact" if bad == 0 else "NOT EXACT")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

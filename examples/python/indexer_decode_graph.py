#!/usr/bin/env python3
"""A sparse-attention indexer's per-step top-K in a decode loop, the whole
step captured once in a CUDA graph and replayed as the contexts grow.

Each step: the indexer scores every cached key of each sequence
(scores = q @ K^T, [batch, max_context]); sgtopk keeps the 2048 best
positions of each row up to its context length (lengths on the device, so
the graph replays unchanged as they grow); attention would then read only
those positions. The script checks every step's selection against a stable
sort and exits 0 when all are exact, 77 (skipped) without PyTorch or a GPU.

    PYTHONPATH=python python3 examples/python/indexer_decode_graph.py [--steps N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-context", type=int, default=65536)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=16)
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
    dev = torch.device("cuda")
    keys = torch.randn(args.batch, args.max_context, args.head_dim, device=dev, dtype=torch.bfloat16)
    query = torch.randn(args.batch, args.head_dim, 1, device=dev, dtype=torch.bfloat16)
    lengths = torch.randint(args.max_context // 4, args.max_context // 2, (args.batch,), device=dev, dtype=torch.int32)
    scores = torch.empty(args.batch, args.max_context, device=dev)

    def step():
        scores.copy_(torch.bmm(keys, query).squeeze(-1).float())
        return torch.ops.sgtopk.select(scores, args.k, lengths)

    step()  # compiles the plan before the capture: the capture only launches
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        selected = step()

    bad = 0
    for s in range(args.steps):
        query.copy_(torch.randn_like(query))
        lengths.add_(torch.randint(1, 64, lengths.shape, device=dev, dtype=torch.int32)).clamp_(max=args.max_context)
        graph.replay()
        torch.cuda.synchronize()
        for r in range(args.batch):
            n = int(lengths[r])
            # A stable descending sort keeps equal scores in index order.
            order = torch.sort(scores[r, :n], descending=True, stable=True).indices[:args.k]
            got = sorted(v for v in selected[r].tolist() if v >= 0)
            if got != sorted(order.tolist()):
                bad += 1
                print("step %d row %d: the selection differs from a stable sort" % (s, r))
    print("indexer decode loop: %d steps x %d rows, K = %d, one CUDA graph: %s"
          % (args.steps, args.batch, args.k, "all exact" if bad == 0 else "%d rows wrong" % bad))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

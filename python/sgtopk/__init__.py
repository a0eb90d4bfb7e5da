"""sgtopk: exact top-K selection on NVIDIA GPUs, from Python and PyTorch.

    import torch, sgtopk
    scores = torch.randn(64, 100000, device="cuda")
    indices = sgtopk.select(scores, 2048)                      # int32 [64, 2048]
    indices, values = sgtopk.select(scores, 2048, values=True, sorted=True)
    torch.ops.sgtopk.select(scores, 2048, None, None, False)   # the custom op (torch.compile, graphs)
    logits = torch.randn(8, 128256, device="cuda")
    sgtopk.filter_(logits, k=50, p=0.9)                         # in place: excluded logits -> -inf
    masked = torch.ops.sgtopk.filter(logits, None, None, None, 50, 0.9)  # a new tensor

select() and filter_() run on the current CUDA stream of the scores' device. Plans are
compiled once per (k, rows, width, pitch, flags, device, policy) and kept for
the process (plan() returns them); call select() once before capturing it in a
CUDA graph, so the capture only launches. Errors from the library raise
SgtopkError with its message; bad Python arguments raise TypeError or
ValueError. The library is found by _capi.find_library(): $SGTOPK_LIBRARY, the
copy a wheel carries, or the checkout's build/release.
"""

import os
import threading

from ._capi import (  # noqa: F401
    BF16,
    F16,
    F32,
    OP_FILTER,
    OP_SELECT,
    SGTOPK_INDEX_OFFSETS,
    SGTOPK_PAGE_TABLE,
    SGTOPK_FILTER_CANDIDATES,
    SGTOPK_FILTER_MASK,
    SGTOPK_FILTER_SAMPLE,
    SGTOPK_ROUTE_STATS,
    SGTOPK_SORTED,
    SGTOPK_STARTS,
    SGTOPK_VALUES,
    Graph,
    Library,
    Plan,
    SgtopkError,
    filter_args,
    find_library,
    select_args,
)

__all__ = ["SgtopkError", "LibraryNotFound", "library", "version", "plan", "select", "filter_plan", "filter_", "filter_outputs",
           "Plan",
           "Graph", "Library", "select_args", "filter_args", "find_library"]

_lock = threading.Lock()
_library = None
_plans = {}


class LibraryNotFound(OSError):
    """libsgtopk.so was not found (see _capi.find_library)."""


def library():
    """The loaded libsgtopk.so (one per process)."""
    global _library
    with _lock:
        if _library is None:
            path = find_library()
            if path is None or not os.path.isfile(path):
                raise LibraryNotFound("libsgtopk.so not found%s: build it (scripts/setup release), set SGTOPK_LIBRARY "
                                      "to the .so or its folder, or install a wheel that carries it"
                                      % (" at %s (SGTOPK_LIBRARY)" % path if path else ""))
            try:
                _library = Library(path)
            except OSError as e:
                raise LibraryNotFound("libsgtopk.so at %s cannot be loaded: %s" % (path, e)) from e
        return _library


def version():
    """The library's version string."""
    return library().version()


def plan(k, rows, width, *, pitch=0, out_pitch=0, values=False, sorted=False, starts=False, route_stats=False,
         index_offsets=False, page_size=0, page_table_pitch=0, device=0, arch=None, policy=None, policy_file=None,
         family=None):
    """The select plan for these shapes, compiled on first use and kept for the process.

    device >= 0 loads it on that CUDA device (it can launch); device=-1 compiles for `arch`
    only (no GPU needed: prewarming the disk cache). policy is TOML text, policy_file a path;
    family forces a kernel family. Raises SgtopkError with the library's message."""
    flags = ((SGTOPK_VALUES if values else 0) | (SGTOPK_SORTED if sorted else 0) | (SGTOPK_STARTS if starts else 0)
             | (SGTOPK_ROUTE_STATS if route_stats else 0) | (SGTOPK_INDEX_OFFSETS if index_offsets else 0)
             | (SGTOPK_PAGE_TABLE if page_size else 0))
    key = (int(k), int(rows), int(width), int(pitch), int(out_pitch), flags, int(page_size), int(page_table_pitch),
           int(device), arch, policy, policy_file, family)
    lib = library()
    with _lock:
        found = _plans.get(key)
        if found is None:
            found = lib.compile(k=k, rows=rows, width=width, pitch=pitch, out_pitch=out_pitch, flags=flags,
                                device=device, arch=arch, policy_toml=policy, policy_file=policy_file, family=family,
                                own_workspace=device >= 0, page_size=page_size, page_table_pitch=page_table_pitch)
            _plans[key] = found
        return found


def filter_plan(rows, vocab, *, pitch=0, device=0, arch=None, policy=None, policy_file=None, dtype=F32,
                flags=SGTOPK_FILTER_MASK, capacity=0):
    """The filter plan for a batch capacity and vocabulary, with logits of `dtype` (F32, BF16 or F16),
    compiled on first use and kept for the process; device=-1 compiles for `arch` only (prewarming).
    flags: its outputs (SGTOPK_FILTER_MASK, SGTOPK_FILTER_CANDIDATES with `capacity` a row,
    SGTOPK_FILTER_SAMPLE)."""
    key = ("filter", int(rows), int(vocab), int(pitch), int(device), arch, policy, policy_file, int(dtype), int(flags),
           int(capacity))
    lib = library()
    with _lock:
        found = _plans.get(key)
        if found is None:
            found = lib.compile(k=capacity, rows=rows, width=vocab, pitch=pitch, flags=flags, device=device,
                                arch=arch, policy_toml=policy, policy_file=policy_file, own_workspace=device >= 0,
                                op=OP_FILTER, dtype=dtype)
            _plans[key] = found
        return found


def filter_(logits, k=None, p=None, temperature=None, *, out=None, mask_value=float("-inf"), policy=None):
    """Top-k / top-p filtering of each row of a CUDA float32, bfloat16 or float16 [rows, vocab] matrix
    (read natively; a finite mask_value is rounded to the logits' type), exactly as a stable
    sort would (CONTRACT section 2): excluded logits set to mask_value, kept ones untouched, in place
    (or written to out, same shape and row stride). k: an int or an int32 [rows] tensor (k <= 0 or
    k >= vocab: no top-k); p: a float or a float32 [rows] tensor (p >= 1: no top-p; p <= 0: the top
    token only); temperature: a float or float32 [rows] tensor dividing the logits for the decision
    (<= 0, NaN, inf: greedy). None: off. Returns the filtered tensor."""
    from . import _torch

    return _torch.filter_(logits, k, p, temperature, out=out, mask_value=mask_value, policy=policy)


def filter_outputs(logits, k=None, p=None, temperature=None, *, candidates=0, sample=False, seeds=None, seed=0,
                   policy=None):
    """The filter's candidate and sample outputs for a CUDA float32, bfloat16 or float16 [rows, vocab]
    matrix (only read), with k, p and temperature as filter_(). candidates=C (1..8192): the kept tokens
    in filter order (logit / T descending, ties to the lower index), at most C a row: int32 indices
    [rows, C], their float32 logits / T and probabilities over the kept set [rows, C], and the int32
    kept counts [rows] (which may exceed C; entries past the count are -1, 0.0 and 0.0). sample=True:
    one int32 token [rows] drawn from the kept set, from seeds (a uint64 / int64 [rows] tensor: the
    token depends on the row's seed, logits and values only) or one int seed (row r its stream r).
    Returns a dict with "indices", "logits", "probs", "counts" and / or "tokens"."""
    from . import _torch

    return _torch.filter_outputs(logits, k, p, temperature, candidates=candidates, sample=sample, seeds=seeds,
                                 seed=seed, policy=policy)


def select(scores, k, lengths=None, starts=None, values=False, sorted=False, out=None, *, policy=None, family=None,
           index_offsets=None, page_table=None, page_size=0):
    """Exact top-k of each row of a CUDA float32 matrix: int32 indices [rows, k] (with values=True,
    also float32 values). Ties go to the lower index; a row shorter than k pads with -1 (values:
    -inf); sorted=True orders each row by value descending. lengths: int32 [rows] valid lengths
    (default: every row is scores.shape[1] long); starts: int32 [rows] window starts. out: the
    indices tensor, or (indices, values), to write instead of allocating. The fused index
    transform (sparse attention's addressing; -1 stays -1): index_offsets, int32 [rows], writes
    index + index_offsets[row]; page_table, int32 [rows, pages] with page_size, writes
    page_table[row][index // page_size] * page_size + index % page_size."""
    from . import _torch

    return _torch.select(scores, k, lengths=lengths, starts=starts, values=values, sorted=sorted, out=out,
                         policy=policy, family=family, index_offsets=index_offsets, page_table=page_table,
                         page_size=page_size)


def _register_ops():
    """torch.ops.sgtopk.* when PyTorch is importable; absent otherwise."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    from . import _torch

    _torch.register_ops()
    return True


HAS_TORCH_OPS = _register_ops()

"""The PyTorch side: select() and filter_() on CUDA tensors, and the custom
ops torch.ops.sgtopk.select / select_with_values / filter (torch.library, no
C++ build), whose fake implementations give torch.compile and meta tensors
their shapes."""

from typing import Optional, Tuple

import torch

from . import _capi

K_MAX = 8192  # the library's largest K (sgtopk.h)


def _check_matrix(name, t, dtype, rows=None, width=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.device.type != "cuda":
        raise ValueError("%s must be a CUDA tensor (got device %s)" % (name, t.device))
    if t.dtype != dtype:
        raise ValueError("%s must be %s (got %s)" % (name, dtype, t.dtype))
    if t.dim() != 2:
        raise ValueError("%s must be 2-D [rows, columns] (got %d dimensions)" % (name, t.dim()))
    if t.shape[1] > 1 and t.stride(1) != 1:
        raise ValueError("%s must have contiguous rows (stride(1) == 1, got %d)" % (name, t.stride(1)))
    if rows is not None and t.shape[0] != rows:
        raise ValueError("%s has %d rows, scores has %d" % (name, t.shape[0], rows))
    if width is not None and t.shape[1] != width:
        raise ValueError("%s has %d columns, expected %d" % (name, t.shape[1], width))


def _check_vector(name, t, rows, device):
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor or None, got %s" % (name, type(t).__name__))
    if t.device != device:
        raise ValueError("%s must be on the scores' device %s (got %s)" % (name, device, t.device))
    if t.dtype != torch.int32:
        raise ValueError("%s must be int32 (got %s)" % (name, t.dtype))
    if t.dim() != 1 or t.shape[0] != rows or (rows > 1 and t.stride(0) != 1):
        raise ValueError("%s must be a contiguous vector of %d (rows) elements (got shape %s)"
                         % (name, rows, tuple(t.shape)))


def _pitch(t):
    return t.stride(0) if t.shape[0] > 1 else t.shape[1]


def select(scores, k, lengths=None, starts=None, values=False, sorted=False, out=None, policy=None, family=None,
           index_offsets=None, page_table=None, page_size=0):
    _check_matrix("scores", scores, torch.float32)
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError("k must be an int, got %s" % type(k).__name__)
    if not 1 <= k <= K_MAX:
        raise ValueError("k=%d is invalid: k must be in 1..%d" % (k, K_MAX))
    rows, width = scores.shape
    device = scores.device
    if lengths is not None:
        _check_vector("lengths", lengths, rows, device)
    if starts is not None:
        _check_vector("starts", starts, rows, device)
    if index_offsets is not None and page_table is not None:
        raise ValueError("index_offsets and page_table are two index transforms: pass at most one")
    if index_offsets is not None:
        _check_vector("index_offsets", index_offsets, rows, device)
    if page_table is not None:
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError("page_table needs page_size, a positive int (got %r)" % (page_size,))
        _check_matrix("page_table", page_table, torch.int32, rows)
        if page_table.device != device:
            raise ValueError("page_table must be on the scores' device %s (got %s)" % (device, page_table.device))
        if page_table.shape[1] * page_size < width:
            raise ValueError("page_table has %d pages of %d tokens a row: fewer than the %d scores of a row"
                             % (page_table.shape[1], page_size, width))
    elif page_size:
        raise ValueError("page_size is given without a page_table")
    if out is None:
        indices = torch.empty((rows, k), dtype=torch.int32, device=device)
        vals = torch.empty((rows, k), dtype=torch.float32, device=device) if values else None
    else:
        indices, vals = (out if isinstance(out, (tuple, list)) else (out, None))
        if values and vals is None:
            raise ValueError("values=True needs out=(indices, values)")
        _check_matrix("out indices", indices, torch.int32, rows, k)
        if indices.device != device:
            raise ValueError("out indices must be on the scores' device %s (got %s)" % (device, indices.device))
        if vals is not None:
            _check_matrix("out values", vals, torch.float32, rows, k)
            if vals.device != device or _pitch(vals) != _pitch(indices):
                raise ValueError("out values must be on %s with the indices' row stride %d" % (device, _pitch(indices)))
    if rows == 0:
        return (indices, vals) if values else indices
    from . import plan

    p = plan(k, rows, width, pitch=_pitch(scores), out_pitch=_pitch(indices), values=values, sorted=sorted,
             starts=starts is not None, index_offsets=index_offsets is not None,
             page_size=page_size if page_table is not None else 0,
             page_table_pitch=_pitch(page_table) if page_table is not None else 0,
             device=device.index if device.index is not None else torch.cuda.current_device(), policy=policy,
             family=family)
    args = _capi.select_args(scores=scores, lengths=lengths, starts=starts, indices=indices, values=vals,
                             index_offsets=index_offsets, page_table=page_table)
    with torch.cuda.device(device):
        p.select(args, torch.cuda.current_stream(device).cuda_stream)
    return (indices, vals) if values else indices


def _per_row(name, value, rows, device, dtype, scalar_type):
    """(tensor or None, scalar): a per-row vector, or one value for every row."""
    if value is None:
        return None, None
    if isinstance(value, torch.Tensor):
        if value.device != device:
            raise ValueError("%s must be on the logits' device %s (got %s)" % (name, device, value.device))
        if value.dtype != dtype:
            raise ValueError("%s must be %s (got %s)" % (name, dtype, value.dtype))
        if value.dim() != 1 or value.shape[0] != rows or (rows > 1 and value.stride(0) != 1):
            raise ValueError("%s must be a contiguous vector of %d (rows) elements (got shape %s)"
                             % (name, rows, tuple(value.shape)))
        return value, None
    if isinstance(value, bool) or not isinstance(value, scalar_type):
        raise TypeError("%s must be a %s, a %s tensor or None, got %s"
                        % (name, scalar_type[0].__name__ if isinstance(scalar_type, tuple) else scalar_type.__name__,
                           dtype, type(value).__name__))
    return None, value


_FILTER_DTYPES = {torch.float32: _capi.F32, torch.bfloat16: _capi.BF16, torch.float16: _capi.F16}


def _filter_logits(logits):
    """The logits' dtype (checked: a CUDA matrix of a filter type), rows, vocabulary and device."""
    if isinstance(logits, torch.Tensor) and logits.dtype in _FILTER_DTYPES:
        dtype = logits.dtype
    else:
        dtype = torch.float32  # names the accepted type in _check_matrix's message
    _check_matrix("logits", logits, dtype)
    rows, vocab = logits.shape
    return dtype, rows, vocab, logits.device


def _filter_row_values(k, p, temperature, rows, device):
    """filter_args' k, p and temperature keywords: per-row tensors or one value each (checked)."""
    k_t, k_v = _per_row("k", k, rows, device, torch.int32, int)
    p_t, p_v = _per_row("p", p, rows, device, torch.float32, (float, int))
    t_t, t_v = _per_row("temperature", temperature, rows, device, torch.float32, (float, int))
    return dict(top_k=k_t, top_p=p_t, temperature=t_t, top_k_value=0 if k_v is None else int(k_v),
                top_p_value=1.0 if p_v is None else float(p_v),
                temperature_value=1.0 if t_v is None else float(t_v))


def filter_(logits, k=None, p=None, temperature=None, *, out=None, mask_value=float("-inf"), policy=None):
    dtype, rows, vocab, device = _filter_logits(logits)
    values = _filter_row_values(k, p, temperature, rows, device)
    if out is None:
        out = logits
    else:
        _check_matrix("out", out, dtype, rows, vocab)
        if out.device != device:
            raise ValueError("out must be on the logits' device %s (got %s)" % (device, out.device))
        if _pitch(out) != _pitch(logits):
            raise ValueError("out must have the logits' row stride %d (got %d)" % (_pitch(logits), _pitch(out)))
    if rows == 0:
        return out
    from . import filter_plan

    plan = filter_plan(rows, vocab, pitch=_pitch(logits),
                       device=device.index if device.index is not None else torch.cuda.current_device(), policy=policy,
                       dtype=_FILTER_DTYPES[dtype])
    args = _capi.filter_args(logits=logits, out=out, mask_value=float(mask_value), **values)
    with torch.cuda.device(device):
        plan.filter(args, torch.cuda.current_stream(device).cuda_stream)
    return out


def filter_outputs(logits, k=None, p=None, temperature=None, *, candidates=0, sample=False, seeds=None, seed=0,
                   policy=None):
    dtype, rows, vocab, device = _filter_logits(logits)
    candidates = int(candidates)
    if candidates == 0 and not sample:
        raise ValueError("filter_outputs needs candidates=C (1..8192) and / or sample=True (for the mask: filter_)")
    values = _filter_row_values(k, p, temperature, rows, device)
    seeds_t = None
    if seeds is not None:
        if not isinstance(seeds, torch.Tensor) or seeds.dtype not in (torch.int64, torch.uint64):
            raise TypeError("seeds must be an int64 or uint64 [rows] tensor (or None: seed)")
        seeds_t, _ = _per_row("seeds", seeds, rows, device, seeds.dtype, int)
    result = {}
    if candidates:
        result["indices"] = torch.full((rows, candidates), -1, dtype=torch.int32, device=device)
        result["logits"] = torch.zeros((rows, candidates), dtype=torch.float32, device=device)
        result["probs"] = torch.zeros((rows, candidates), dtype=torch.float32, device=device)
        result["counts"] = torch.zeros((rows,), dtype=torch.int32, device=device)
    if sample:
        result["tokens"] = torch.empty((rows,), dtype=torch.int32, device=device)
    if rows == 0:
        return result
    from . import filter_plan

    flags = (_capi.SGTOPK_FILTER_CANDIDATES if candidates else 0) | (_capi.SGTOPK_FILTER_SAMPLE if sample else 0)
    plan = filter_plan(rows, vocab, pitch=_pitch(logits),
                       device=device.index if device.index is not None else torch.cuda.current_device(), policy=policy,
                       dtype=_FILTER_DTYPES[dtype], flags=flags, capacity=candidates)
    args = _capi.filter_args(logits=logits, out=0, **values, candidate_indices=result.get("indices"), candidate_logits=result.get("logits"),
                             candidate_probs=result.get("probs"), candidate_counts=result.get("counts"),
                             sampled_tokens=result.get("tokens"), seeds=seeds_t, seed_value=int(seed))
    with torch.cuda.device(device):
        plan.filter(args, torch.cuda.current_stream(device).cuda_stream)
    return result


def register_ops():
    """torch.ops.sgtopk.select -> indices and torch.ops.sgtopk.select_with_values -> (indices, values)."""
    if hasattr(torch.ops, "sgtopk") and hasattr(torch.ops.sgtopk, "select"):
        return

    @torch.library.custom_op("sgtopk::select", mutates_args=())
    def select_op(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor] = None,
                  starts: Optional[torch.Tensor] = None, sorted: bool = False) -> torch.Tensor:
        return select(scores, k, lengths=lengths, starts=starts, sorted=sorted)

    @select_op.register_fake
    def _(scores, k, lengths=None, starts=None, sorted=False):
        return scores.new_empty((scores.shape[0], k), dtype=torch.int32)

    @torch.library.custom_op("sgtopk::select_with_values", mutates_args=())
    def select_with_values_op(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor] = None,
                              starts: Optional[torch.Tensor] = None,
                              sorted: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
        return select(scores, k, lengths=lengths, starts=starts, values=True, sorted=sorted)

    @torch.library.custom_op("sgtopk::filter", mutates_args=())
    def filter_op(logits: torch.Tensor, top_k: Optional[torch.Tensor] = None, top_p: Optional[torch.Tensor] = None,
                  temperature: Optional[torch.Tensor] = None, top_k_value: int = 0, top_p_value: float = 1.0,
                  temperature_value: float = 1.0, mask_value: Optional[float] = None) -> torch.Tensor:
        # mask_value None: -inf (a schema default cannot spell it).
        out = torch.empty_like(logits)
        return filter_(logits, top_k if top_k is not None else top_k_value,
                       top_p if top_p is not None else top_p_value,
                       temperature if temperature is not None else temperature_value, out=out,
                       mask_value=float("-inf") if mask_value is None else mask_value)

    @filter_op.register_fake
    def _(logits, top_k=None, top_p=None, temperature=None, top_k_value=0, top_p_value=1.0, temperature_value=1.0,
          mask_value=None):
        return torch.empty_like(logits)

    @select_with_values_op.register_fake
    def _(scores, k, lengths=None, starts=None, sorted=False):
        shape = (scores.shape[0], k)
        return scores.new_empty(shape, dtype=torch.int32), scores.new_empty(shape, dtype=torch.float32)

"""The ctypes binding of sgtopk's C API (include/sgtopk/sgtopk.h): the structs
field by field (struct_size is ctypes.sizeof), the library, plans and graphs.
Every non-zero status raises SgtopkError with sgtopk_last_error().

Device pointers are ints or anything with data_ptr() (a torch tensor); streams
are ints, torch.cuda.Stream objects or None (the legacy default stream).
sgtopk launches in the device's primary context, the one PyTorch uses, so a
PyTorch caller must have initialized CUDA first. The package's front door is
sgtopk/__init__.py; the benchmarks use this layer directly.
"""

import ctypes
import os

__all__ = [
    "SgtopkError", "Library", "Plan", "Graph", "find_library", "select_args", "filter_args",
    "SGTOPK_VALUES", "SGTOPK_SORTED", "SGTOPK_STARTS", "SGTOPK_ROUTE_STATS", "SGTOPK_INDEX_OFFSETS",
    "SGTOPK_PAGE_TABLE", "SGTOPK_FILTER_MASK", "SGTOPK_FILTER_CANDIDATES", "SGTOPK_FILTER_SAMPLE", "OP_SELECT", "OP_FILTER", "F32", "BF16", "F16",
]

# --- constants (sgtopk.h) ---------------------------------------------------
SGTOPK_OK = 0
STATUS_NAMES = {
    0: "SGTOPK_OK", 1: "SGTOPK_ERROR_INVALID_ARGUMENT", 2: "SGTOPK_ERROR_POLICY",
    3: "SGTOPK_ERROR_COMPILE", 4: "SGTOPK_ERROR_NO_DRIVER", 5: "SGTOPK_ERROR_CUDA",
    6: "SGTOPK_ERROR_UNSUPPORTED", 7: "SGTOPK_ERROR_INTERNAL",
}
OP_SELECT = 1
OP_FILTER = 2
F32 = 0
BF16 = 1
F16 = 2
SGTOPK_VALUES = 1 << 0
SGTOPK_SORTED = 1 << 1
SGTOPK_STARTS = 1 << 2
SGTOPK_ROUTE_STATS = 1 << 3
SGTOPK_INDEX_OFFSETS = 1 << 4
SGTOPK_PAGE_TABLE = 1 << 5
SGTOPK_FILTER_MASK = 1 << 8
SGTOPK_FILTER_CANDIDATES = 1 << 9
SGTOPK_FILTER_SAMPLE = 1 << 10
FROM_CACHE_NAMES = {0: "compiled now", 1: "memory cache", 2: "disk cache"}


# --- structs (field order and types exactly as in sgtopk.h) ------------------
class Problem(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("op", ctypes.c_int),          # enum sgtopk_operator
        ("dtype", ctypes.c_int),       # enum sgtopk_dtype
        ("k", ctypes.c_int32),
        ("rows", ctypes.c_int64),
        ("width", ctypes.c_int64),
        ("pitch", ctypes.c_int64),
        ("out_pitch", ctypes.c_int64),
        ("flags", ctypes.c_uint32),
        ("page_size", ctypes.c_int32),
        ("page_table_pitch", ctypes.c_int64),
    ]


class CompileOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("device", ctypes.c_int32),
        ("arch", ctypes.c_char_p),
        ("policy_file", ctypes.c_char_p),
        ("policy_toml", ctypes.c_char_p),
        ("family", ctypes.c_char_p),
        ("own_workspace", ctypes.c_int32),
    ]


class SelectArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("scores", ctypes.c_uint64),
        ("lengths", ctypes.c_uint64),
        ("starts", ctypes.c_uint64),
        ("live_rows", ctypes.c_uint64),
        ("indices", ctypes.c_uint64),
        ("values", ctypes.c_uint64),
        ("workspace", ctypes.c_uint64),
        ("route_stats", ctypes.c_uint64),
        ("index_offsets", ctypes.c_uint64),
        ("page_table", ctypes.c_uint64),
    ]


class FilterArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("logits", ctypes.c_uint64),
        ("out", ctypes.c_uint64),
        ("top_k", ctypes.c_uint64),
        ("top_p", ctypes.c_uint64),
        ("temperature", ctypes.c_uint64),
        ("live_rows", ctypes.c_uint64),
        ("top_k_value", ctypes.c_int32),
        ("top_p_value", ctypes.c_float),
        ("temperature_value", ctypes.c_float),
        ("mask_value", ctypes.c_float),
        ("candidate_indices", ctypes.c_uint64),
        ("candidate_logits", ctypes.c_uint64),
        ("candidate_probs", ctypes.c_uint64),
        ("candidate_counts", ctypes.c_uint64),
        ("sampled_tokens", ctypes.c_uint64),
        ("seeds", ctypes.c_uint64),
        ("seed_value", ctypes.c_uint64),
        ("workspace", ctypes.c_uint64),
    ]


class PlanInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("family", ctypes.c_char_p),
        ("parameters", ctypes.c_char_p),
        ("cache_key", ctypes.c_char_p),
        ("arch", ctypes.c_char_p),
        ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3),
        ("dynamic_smem_bytes", ctypes.c_uint32),
        ("workspace_bytes", ctypes.c_uint64),
        ("from_cache", ctypes.c_int32),
        ("compile_ms", ctypes.c_double),
        ("load_ms", ctypes.c_double),
        ("on_disk", ctypes.c_int32),
    ]


class SgtopkError(RuntimeError):
    def __init__(self, function, status, message):
        self.function = function
        self.status = status
        self.message = message
        super().__init__("%s: %s: %s" % (function, STATUS_NAMES.get(status, "status %d" % status), message))


def _ptr(x):
    """A device address from an int, None, or anything with data_ptr() (a torch tensor)."""
    if x is None:
        return 0
    if hasattr(x, "data_ptr"):
        return int(x.data_ptr())
    return int(x)


def _stream(s):
    """A CUstream from an int handle, None, a torch.cuda.Stream, or a c_void_p."""
    if s is None:
        return ctypes.c_void_p(0)
    if isinstance(s, ctypes.c_void_p):
        return s
    if hasattr(s, "cuda_stream"):
        return ctypes.c_void_p(int(s.cuda_stream) or None)
    return ctypes.c_void_p(int(s) or None)


def _bytes(s):
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8")


def _str(b):
    return b.decode("utf-8", "replace") if b is not None else None


def select_args(scores=None, lengths=None, indices=None, values=None, starts=None, live_rows=None, workspace=None,
                route_stats=None, index_offsets=None, page_table=None):
    """A SelectArgs from tensors or device addresses (0 / None for absent)."""
    a = SelectArgs()
    a.struct_size = ctypes.sizeof(SelectArgs)
    a.scores = _ptr(scores)
    a.lengths = _ptr(lengths)
    a.starts = _ptr(starts)
    a.live_rows = _ptr(live_rows)
    a.indices = _ptr(indices)
    a.values = _ptr(values)
    a.workspace = _ptr(workspace)
    a.route_stats = _ptr(route_stats)
    a.index_offsets = _ptr(index_offsets)
    a.page_table = _ptr(page_table)
    return a


def filter_args(logits=None, out=None, top_k=None, top_p=None, temperature=None, live_rows=None, top_k_value=0,
                top_p_value=1.0, temperature_value=1.0, mask_value=float("-inf"), candidate_indices=None,
                candidate_logits=None, candidate_probs=None, candidate_counts=None, sampled_tokens=None, seeds=None,
                seed_value=0, workspace=None):
    """A FilterArgs from tensors or device addresses (0 / None for absent) and the scalar values
    used where a per-row pointer is absent (the defaults of SGTOPK_FILTER_ARGS_INIT: no filtering).
    out defaults to logits (in place); out=0 for a plan without SGTOPK_FILTER_MASK. workspace: a
    zero-filled buffer of the plan's workspace_bytes, or None for the plan's own."""
    a = FilterArgs()
    a.struct_size = ctypes.sizeof(FilterArgs)
    a.logits = _ptr(logits)
    a.out = _ptr(out) if out is not None else a.logits
    a.top_k = _ptr(top_k)
    a.top_p = _ptr(top_p)
    a.temperature = _ptr(temperature)
    a.live_rows = _ptr(live_rows)
    a.top_k_value = int(top_k_value)
    a.top_p_value = float(top_p_value)
    a.temperature_value = float(temperature_value)
    a.mask_value = float(mask_value)
    a.candidate_indices = _ptr(candidate_indices)
    a.candidate_logits = _ptr(candidate_logits)
    a.candidate_probs = _ptr(candidate_probs)
    a.candidate_counts = _ptr(candidate_counts)
    a.sampled_tokens = _ptr(sampled_tokens)
    a.seeds = _ptr(seeds)
    a.seed_value = int(seed_value) & 0xFFFFFFFFFFFFFFFF
    a.workspace = _ptr(workspace)
    return a


def _as_args(args):
    if isinstance(args, SelectArgs):
        return args
    if isinstance(args, dict):
        return select_args(**args)
    raise TypeError("select args must be a SelectArgs or a dict of tensors / device addresses")


def _as_filter_args(args):
    if isinstance(args, FilterArgs):
        return args
    if isinstance(args, dict):
        return filter_args(**args)
    raise TypeError("filter args must be a FilterArgs or a dict of tensors / device addresses and values")


def find_library():
    """The path of libsgtopk.so: $SGTOPK_LIBRARY (the .so or its folder), else the copy a wheel
    carries (sgtopk/_lib/), else the build of the checkout this package sits in (build/release,
    build/ci); None when there is none."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("SGTOPK_LIBRARY")
    if env:
        return os.path.join(env, "libsgtopk.so") if os.path.isdir(env) else env
    repo = os.path.dirname(os.path.dirname(here))
    for candidate in (os.path.join(here, "_lib", "libsgtopk.so"),
                      os.path.join(repo, "build", "release", "libsgtopk.so"),
                      os.path.join(repo, "build", "ci", "libsgtopk.so")):
        if os.path.exists(candidate):
            return candidate
    return None


class Library:
    """libsgtopk.so, loaded from a build folder (or a path to the .so itself)."""

    def __init__(self, build_dir_or_path):
        path = build_dir_or_path
        if os.path.isdir(path):
            path = os.path.join(path, "libsgtopk.so")
        self.path = os.path.abspath(path)
        self.dll = ctypes.CDLL(self.path)
        d = self.dll
        P = ctypes.c_void_p
        st = ctypes.c_int
        d.sgtopk_version_string.argtypes = []
        d.sgtopk_version_string.restype = ctypes.c_char_p
        d.sgtopk_status_string.argtypes = [ctypes.c_int]
        d.sgtopk_status_string.restype = ctypes.c_char_p
        if hasattr(d, "sgtopk_route_stat_name"):
            d.sgtopk_route_stat_name.argtypes = [ctypes.c_int]
            d.sgtopk_route_stat_name.restype = ctypes.c_char_p
        d.sgtopk_last_error.argtypes = []
        d.sgtopk_last_error.restype = ctypes.c_char_p
        d.sgtopk_compile.argtypes = [ctypes.POINTER(Problem), ctypes.POINTER(CompileOptions), ctypes.POINTER(P)]
        d.sgtopk_compile.restype = st
        d.sgtopk_plan_destroy.argtypes = [P]
        d.sgtopk_plan_destroy.restype = st
        d.sgtopk_workspace_size.argtypes = [P, ctypes.POINTER(ctypes.c_size_t)]
        d.sgtopk_workspace_size.restype = st
        d.sgtopk_plan_describe.argtypes = [P, ctypes.POINTER(PlanInfo)]
        d.sgtopk_plan_describe.restype = st
        d.sgtopk_plan_text.argtypes = [P]
        d.sgtopk_plan_text.restype = ctypes.c_char_p
        d.sgtopk_select.argtypes = [P, ctypes.POINTER(SelectArgs), P]
        d.sgtopk_select.restype = st
        d.sgtopk_graph_create.argtypes = [P, ctypes.POINTER(SelectArgs), ctypes.POINTER(P)]
        d.sgtopk_graph_create.restype = st
        d.sgtopk_graph_update.argtypes = [P, ctypes.POINTER(SelectArgs)]
        d.sgtopk_graph_update.restype = st
        d.sgtopk_filter.argtypes = [P, ctypes.POINTER(FilterArgs), P]
        d.sgtopk_filter.restype = st
        d.sgtopk_filter_graph_create.argtypes = [P, ctypes.POINTER(FilterArgs), ctypes.POINTER(P)]
        d.sgtopk_filter_graph_create.restype = st
        d.sgtopk_filter_graph_update.argtypes = [P, ctypes.POINTER(FilterArgs)]
        d.sgtopk_filter_graph_update.restype = st
        d.sgtopk_graph_launch.argtypes = [P, P]
        d.sgtopk_graph_launch.restype = st
        d.sgtopk_graph_destroy.argtypes = [P]
        d.sgtopk_graph_destroy.restype = st

    def version(self):
        return _str(self.dll.sgtopk_version_string())

    def route_stat_names(self):
        """The slots of the route statistics buffer (uint64 each), as the library names them."""
        if not hasattr(self.dll, "sgtopk_route_stat_name"):  # a library from before the function (A/B runs)
            return ["short", "no_view", "primary", "band", "exact", "candidates",
                    "cycles_proposal", "cycles_certification", "cycles_recovery", "cycles_refinement"]
        names = []
        while (name := self.dll.sgtopk_route_stat_name(len(names))) is not None:
            names.append(_str(name))
        return names

    def last_error(self):
        return _str(self.dll.sgtopk_last_error()) or ""

    def check(self, function, status):
        if status != SGTOPK_OK:
            raise SgtopkError(function, status, self.last_error())

    def compile(self, k, rows, width, pitch=0, flags=0, device=0, policy_toml=None, family=None,
                own_workspace=True, out_pitch=0, arch=None, policy_file=None, op=OP_SELECT, page_size=0,
                page_table_pitch=0, dtype=F32):
        return Plan(self, k=k, rows=rows, width=width, pitch=pitch, flags=flags, device=device,
                    policy_toml=policy_toml, family=family, own_workspace=own_workspace,
                    out_pitch=out_pitch, arch=arch, policy_file=policy_file, op=op, page_size=page_size,
                    page_table_pitch=page_table_pitch, dtype=dtype)


class Plan:
    """A compiled plan (sgtopk_plan). Destroy with close() or by dropping it."""

    def __init__(self, lib, k, rows, width, pitch=0, flags=0, device=0, policy_toml=None, family=None,
                 own_workspace=True, out_pitch=0, arch=None, policy_file=None, op=OP_SELECT, page_size=0,
                 page_table_pitch=0, dtype=F32):
        self.lib = lib
        self.handle = None
        self._graphs = []
        p = Problem()
        p.struct_size = ctypes.sizeof(Problem)
        p.op = int(op)
        p.dtype = int(dtype)  # F32; the filter also BF16, F16
        p.k = int(k)
        p.rows = int(rows)
        p.width = int(width)
        p.pitch = int(pitch)
        p.out_pitch = int(out_pitch)
        p.flags = int(flags)
        p.page_size = int(page_size)
        p.page_table_pitch = int(page_table_pitch)
        # Keep the encoded strings alive as long as the plan (the library copies
        # them, but this costs nothing and guards against a change there).
        self._strings = [_bytes(arch), _bytes(policy_file), _bytes(policy_toml), _bytes(family)]
        o = CompileOptions()
        o.struct_size = ctypes.sizeof(CompileOptions)
        o.device = int(device) if device is not None else -1
        o.arch, o.policy_file, o.policy_toml, o.family = self._strings
        o.own_workspace = 1 if own_workspace else 0
        self.problem = p
        self.options = o
        h = ctypes.c_void_p()
        lib.check("sgtopk_compile", lib.dll.sgtopk_compile(ctypes.byref(p), ctypes.byref(o), ctypes.byref(h)))
        self.handle = h

    # -- description --
    @property
    def info(self):
        i = PlanInfo()
        i.struct_size = ctypes.sizeof(PlanInfo)
        self.lib.check("sgtopk_plan_describe", self.lib.dll.sgtopk_plan_describe(self.handle, ctypes.byref(i)))
        return {
            "family": _str(i.family),
            "parameters": _str(i.parameters),
            "cache_key": _str(i.cache_key),
            "arch": _str(i.arch),
            "grid": list(i.grid),
            "block": list(i.block),
            "dynamic_smem_bytes": int(i.dynamic_smem_bytes),
            "workspace_bytes": int(i.workspace_bytes),
            "from_cache": int(i.from_cache),
            "from_cache_text": FROM_CACHE_NAMES.get(int(i.from_cache), str(i.from_cache)),
            "compile_ms": float(i.compile_ms),
            "load_ms": float(i.load_ms),
            "on_disk": bool(i.on_disk),
        }

    @property
    def workspace_size(self):
        n = ctypes.c_size_t()
        self.lib.check("sgtopk_workspace_size", self.lib.dll.sgtopk_workspace_size(self.handle, ctypes.byref(n)))
        return int(n.value)

    @property
    def text(self):
        return _str(self.lib.dll.sgtopk_plan_text(self.handle)) or ""

    # -- launch --
    def select(self, args, stream=None):
        a = _as_args(args)
        self.lib.check("sgtopk_select", self.lib.dll.sgtopk_select(self.handle, ctypes.byref(a), _stream(stream)))

    def filter(self, args, stream=None):
        """Launch a filter plan (op=OP_FILTER) with a FilterArgs or a dict for filter_args()."""
        a = _as_filter_args(args)
        self.lib.check("sgtopk_filter", self.lib.dll.sgtopk_filter(self.handle, ctypes.byref(a), _stream(stream)))

    def graph(self, args):
        """A Graph of this plan's launch: SelectArgs (or a dict) for a select plan, FilterArgs for a filter plan."""
        g = Graph(self, args if isinstance(args, FilterArgs) else _as_args(args))
        self._graphs.append(g)
        return g

    def close(self):
        for g in self._graphs:
            g.close()
        self._graphs = []
        if self.handle is not None and self.handle.value:
            self.lib.dll.sgtopk_plan_destroy(self.handle)
        self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Graph:
    """sgtopk_graph: the launch captured once, replayed with launch(stream)."""

    def __init__(self, plan, args):
        self.plan = plan
        self.lib = plan.lib
        self.handle = None
        self._args = args
        h = ctypes.c_void_p()
        self._filter = isinstance(args, FilterArgs)
        if self._filter:
            self.lib.check("sgtopk_filter_graph_create",
                           self.lib.dll.sgtopk_filter_graph_create(plan.handle, ctypes.byref(args), ctypes.byref(h)))
        else:
            self.lib.check("sgtopk_graph_create",
                           self.lib.dll.sgtopk_graph_create(plan.handle, ctypes.byref(args), ctypes.byref(h)))
        self.handle = h
        self._launch = self.lib.dll.sgtopk_graph_launch

    def launch(self, stream=None):
        status = self._launch(self.handle, _stream(stream))
        if status != SGTOPK_OK:
            self.lib.check("sgtopk_graph_launch", status)

    def update(self, args):
        if self._filter:
            a = _as_filter_args(args)
            self.lib.check("sgtopk_filter_graph_update",
                           self.lib.dll.sgtopk_filter_graph_update(self.handle, ctypes.byref(a)))
        else:
            a = _as_args(args)
            self.lib.check("sgtopk_graph_update", self.lib.dll.sgtopk_graph_update(self.handle, ctypes.byref(a)))
        self._args = a

    def close(self):
        if self.handle is not None and self.handle.value:
            self.lib.dll.sgtopk_graph_destroy(self.handle)
        self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

"""The Python package (python/sgtopk): what needs no GPU runs everywhere
(loading the library, planning, compile-only prewarming, error messages, the
argument checks, the custom ops' schemas and fake implementations where
PyTorch is installed); the rest (exactness on CUDA tensors, out=, CUDA graph
capture, torch.compile without graph breaks) on a GPU, and two devices from
one process where there are two, skipped elsewhere with the reason. Run: SGTOPK_LIBRARY=build/release PYTHONPATH=python python3 -m unittest discover -s tests/python
"""

import os
import random
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import sgtopk  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

NO_TORCH = "PyTorch is not installed"
NO_GPU = "no CUDA device (PyTorch sees none)"
HAS_GPU = torch is not None and torch.cuda.is_available()
GPUS = torch.cuda.device_count() if HAS_GPU else 0


class Library(unittest.TestCase):
    def test_loads_and_reports_its_version(self):
        self.assertRegex(sgtopk.version(), r"^\d+\.\d+\.\d+")
        self.assertTrue(os.path.isfile(sgtopk.library().path))

    def test_a_missing_library_is_named(self):
        env = dict(os.environ, SGTOPK_LIBRARY=os.path.join(tempfile.gettempdir(), "no-such-dir", "libsgtopk.so"),
                   PYTHONPATH=os.path.join(REPO, "python"))
        code = "import sgtopk\ntry:\n    sgtopk.version()\nexcept sgtopk.LibraryNotFound as e:\n    print('missing:', e)\n"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("missing: libsgtopk.so not found", out.stdout)
        self.assertIn("SGTOPK_LIBRARY", out.stdout)


class Binding(unittest.TestCase):
    """The ctypes structs mirror sgtopk.h field by field (a field the header gains and the
    binding lacks would be silently zero in every call)."""

    @staticmethod
    def header_fields(name):
        import re
        with open(os.path.join(REPO, "include", "sgtopk", "sgtopk.h")) as f:
            text = f.read()
        body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), text, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        return [re.match(r".*?([A-Za-z_][A-Za-z0-9_]*)\s*(\[\d+\])?$", d.strip(), re.S).group(1)
                for d in body.split(";") if d.strip()]

    def test_structs_mirror_the_header(self):
        from sgtopk import _capi
        for struct, name in ((_capi.Problem, "sgtopk_problem"), (_capi.CompileOptions, "sgtopk_compile_options"),
                             (_capi.SelectArgs, "sgtopk_select_args"), (_capi.FilterArgs, "sgtopk_filter_args"),
                             (_capi.PlanInfo, "sgtopk_plan_info")):
            self.assertEqual([f[0] for f in struct._fields_], self.header_fields(name), name)


class Planning(unittest.TestCase):
    """Compile-only plans (device=-1): no GPU needed."""

    def test_plans_are_compiled_once_and_name_their_family(self):
        a = sgtopk.plan(2048, 4096, 4096, device=-1, arch="sm_90")
        b = sgtopk.plan(2048, 4096, 4096, device=-1, arch="sm_90")
        self.assertIs(a, b)
        self.assertEqual(a.info["family"], "short_row")
        self.assertEqual(a.info["arch"], "sm_90")
        self.assertEqual(sgtopk.plan(2048, 512, 262144, device=-1, arch="sm_90").info["family"], "sampled")
        self.assertEqual(sgtopk.plan(2048, 4, 1 << 20, device=-1, arch="sm_90").info["family"], "split")
        self.assertIn("short_row", a.text)

    def test_flags_policy_and_family_reach_the_plan(self):
        p = sgtopk.plan(64, 100, 30000, device=-1, arch="sm_90", values=True, sorted=True,
                        policy="[select.short_row]\nmax_width = 0\n", family="direct_exact")
        self.assertEqual(p.info["family"], "direct_exact")
        self.assertNotEqual(p.info["cache_key"], sgtopk.plan(64, 100, 30000, device=-1, arch="sm_90").info["cache_key"])

    def test_prewarm_writes_the_disk_cache(self):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, SGTOPK_CACHE_DIR=cache, PYTHONPATH=os.path.join(REPO, "python"))
            code = ("import sgtopk\np = sgtopk.plan(2048, 1000, 8192, device=-1, arch='sm_90')\n"
                    "print(p.info['family'], p.info['on_disk'])\n")
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.split(), ["short_row", "True"])
            self.assertTrue(any(f.endswith(".sgtopkbin") for _, _, files in os.walk(cache) for f in files))

    def test_index_transforms_reach_the_plan(self):
        plain = sgtopk.plan(2048, 64, 4096, device=-1, arch="sm_90")
        offsets = sgtopk.plan(2048, 64, 4096, device=-1, arch="sm_90", index_offsets=True)
        pages = sgtopk.plan(2048, 64, 4096, device=-1, arch="sm_90", page_size=64)
        keys = {plain.info["cache_key"], offsets.info["cache_key"], pages.info["cache_key"]}
        self.assertEqual(len(keys), 3)
        self.assertIn("kPageSize=64", pages.info["parameters"])
        with self.assertRaises(sgtopk.SgtopkError):  # a page table needs a page size the library accepts
            sgtopk.plan(2048, 64, 4096, device=-1, arch="sm_90", page_size=-1)

    def test_bad_problems_raise_the_library_message(self):
        with self.assertRaises(sgtopk.SgtopkError) as e:
            sgtopk.plan(0, 10, 1000, device=-1, arch="sm_90")
        self.assertEqual(e.exception.status, 1)  # SGTOPK_ERROR_INVALID_ARGUMENT
        self.assertIn("K=0", str(e.exception))
        with self.assertRaises(sgtopk.SgtopkError) as e:
            sgtopk.plan(16, 10, 1000, pitch=999, device=-1, arch="sm_90")
        self.assertIn("pitch 999", str(e.exception))

    def test_filter_plans_compile_and_refuse_to_launch_without_a_device(self):
        from sgtopk import _capi
        lib = sgtopk.library()
        plan = lib.compile(0, 8, 32000, op=_capi.OP_FILTER, device=-1, arch="sm_90", own_workspace=False)
        self.assertEqual(plan.info["family"], "filter_split")  # a few rows: several CTAs a row
        many = lib.compile(0, 4096, 32000, op=_capi.OP_FILTER, device=-1, arch="sm_90", own_workspace=False)
        self.assertEqual(many.info["family"], "filter_row")
        many.close()
        self.assertIn("filter rows=8 width=32000", plan.text)
        with self.assertRaises(sgtopk.SgtopkError) as e:
            plan.filter({"logits": 0x10000, "top_k_value": 50, "top_p_value": 0.9})
        self.assertEqual(e.exception.status, 1)
        self.assertIn("without a device", str(e.exception))
        with self.assertRaises(sgtopk.SgtopkError) as e:
            plan.select({"scores": 0x10000, "indices": 0x20000})
        self.assertIn("sgtopk_select takes a select plan", str(e.exception))
        with self.assertRaises(sgtopk.SgtopkError) as e:
            lib.compile(50, 8, 32000, op=_capi.OP_FILTER, device=-1, arch="sm_90", own_workspace=False)
        self.assertEqual(e.exception.status, 1)  # SGTOPK_ERROR_INVALID_ARGUMENT: K without the candidate output
        self.assertIn("without SGTOPK_FILTER_CANDIDATES", str(e.exception))
        outputs = lib.compile(50, 8, 32000, op=_capi.OP_FILTER, flags=_capi.SGTOPK_FILTER_CANDIDATES | _capi.SGTOPK_FILTER_SAMPLE,
                              device=-1, arch="sm_90", own_workspace=False)
        self.assertIn("+candidates(K=50 out_pitch=50) +sample", outputs.text)
        outputs.close()
        plan.close()

    def test_filter_plans_are_kept_per_shape(self):
        a = sgtopk.filter_plan(8, 32000, device=-1, arch="sm_90")
        self.assertIs(a, sgtopk.filter_plan(8, 32000, device=-1, arch="sm_90"))
        self.assertIsNot(a, sgtopk.filter_plan(8, 32001, device=-1, arch="sm_90"))
        self.assertEqual(a.info["family"], "filter_split")  # a few rows: several CTAs a row

    def test_filter_plans_are_kept_per_dtype(self):
        a = sgtopk.filter_plan(8, 32000, device=-1, arch="sm_90")
        b = sgtopk.filter_plan(8, 32000, device=-1, arch="sm_90", dtype=sgtopk.BF16)
        h = sgtopk.filter_plan(8, 32000, device=-1, arch="sm_90", dtype=sgtopk.F16)
        self.assertIs(b, sgtopk.filter_plan(8, 32000, device=-1, arch="sm_90", dtype=sgtopk.BF16))
        self.assertEqual(len({a.info["cache_key"], b.info["cache_key"], h.info["cache_key"]}), 3)
        self.assertIn("dtype=bf16", b.text)
        self.assertIn("dtype=f16", h.text)
        self.assertIn("kDtype=1", b.info["parameters"])

    def test_policy_errors_name_the_key(self):
        with self.assertRaises(sgtopk.SgtopkError) as e:
            sgtopk.plan(16, 10, 1000, device=-1, arch="sm_90", policy="[select.short_row]\nmax_width = -1\n")
        self.assertEqual(e.exception.status, 2)  # SGTOPK_ERROR_POLICY
        self.assertIn("select.short_row.max_width", str(e.exception))
        with self.assertRaises(sgtopk.SgtopkError) as e:
            sgtopk.plan(16, 10, 1000, device=-1, arch="sm_90", family="no_such_family")
        self.assertIn("no_such_family", str(e.exception))


@unittest.skipIf(torch is None, NO_TORCH)
class TorchWithoutGpu(unittest.TestCase):
    def test_ops_are_registered_with_their_schemas(self):
        self.assertTrue(sgtopk.HAS_TORCH_OPS)
        schema = str(torch.ops.sgtopk.select.default._schema)
        self.assertRegex(schema, r"^sgtopk::select\(Tensor scores, (Sym)?[Ii]nt k, Tensor\? lengths=None, "
                                 r"Tensor\? starts=None, bool sorted=False\)")
        self.assertIn("-> Tensor", schema)
        schema = str(torch.ops.sgtopk.select_with_values.default._schema)
        self.assertIn("-> (Tensor, Tensor)", schema)

    def test_fake_implementations_give_the_shapes(self):
        scores = torch.empty(8, 5000, device="meta")
        idx = torch.ops.sgtopk.select(scores, 16)
        self.assertEqual((tuple(idx.shape), idx.dtype), ((8, 16), torch.int32))
        idx, val = torch.ops.sgtopk.select_with_values(scores, 16, None, None, True)
        self.assertEqual((tuple(val.shape), val.dtype), ((8, 16), torch.float32))

    def test_the_filter_op_has_its_schema_and_fake(self):
        schema = str(torch.ops.sgtopk.filter.default._schema)
        self.assertRegex(schema, r"^sgtopk::filter\(Tensor logits, Tensor\? top_k=None, Tensor\? top_p=None, "
                                 r"Tensor\? temperature=None, (Sym)?[Ii]nt top_k_value=0, float top_p_value=1\.")
        masked = torch.ops.sgtopk.filter(torch.empty(4, 1000, device="meta"), None, None, None, 50, 0.9)
        self.assertEqual((tuple(masked.shape), masked.dtype), ((4, 1000), torch.float32))

    def test_bad_filter_arguments_raise_in_the_callers_terms(self):
        with self.assertRaisesRegex(ValueError, "logits must be a CUDA tensor"):
            sgtopk.filter_(torch.zeros(4, 100), k=5)
        with self.assertRaisesRegex(TypeError, "logits must be a torch.Tensor"):
            sgtopk.filter_([[1.0, 2.0]], k=1)

    def test_bad_arguments_raise_in_the_callers_terms(self):
        cpu = torch.zeros(4, 100)
        with self.assertRaisesRegex(ValueError, "scores must be a CUDA tensor"):
            sgtopk.select(cpu, 8)
        with self.assertRaisesRegex(TypeError, "scores must be a torch.Tensor"):
            sgtopk.select([[1.0, 2.0]], 1)


@unittest.skipIf(not HAS_GPU, NO_TORCH if torch is None else NO_GPU)
class OnGpu(unittest.TestCase):
    @staticmethod
    def reference(scores, k, lengths=None):
        """Indices of a stable descending sort (ties to the lower index), -1 past a short row."""
        rows, width = scores.shape
        out = torch.full((rows, k), -1, dtype=torch.int64)
        for r in range(rows):
            n = width if lengths is None else int(lengths[r])
            row = scores[r, :n].double().cpu()
            order = sorted(range(n), key=lambda i: (-row[i].item(), i))[:k]
            out[r, :len(order)] = torch.tensor(order, dtype=torch.int64)
        return out

    def check_rows(self, got, want):
        self.assertEqual(got.shape, want.shape)
        for r in range(got.shape[0]):
            self.assertEqual(sorted(got[r].tolist()), sorted(want[r].tolist()), "row %d" % r)

    def test_select_is_exact_with_ties_lengths_and_values(self):
        gen = torch.Generator(device="cpu").manual_seed(7)
        for rows, width, k in ((3, 5000, 64), (40, 20000, 2048), (5, 300000, 100)):
            scores = torch.randint(0, 50, (rows, width), generator=gen).float().cuda()  # many ties
            lengths = torch.tensor([random.Random(r).randint(1, width) for r in range(rows)], dtype=torch.int32).cuda()
            idx, val = sgtopk.select(scores, k, lengths=lengths, values=True, sorted=True)
            self.check_rows(idx.cpu().long(), self.reference(scores, k, lengths.cpu()))
            live = idx >= 0
            self.assertTrue(torch.equal(val[live], scores.gather(1, idx.clamp(min=0).long())[live]))
            self.assertTrue(bool((val[:, :-1] >= val[:, 1:]).all()))

    def test_out_and_strided_rows(self):
        base = torch.randn(16, 9000, device="cuda")
        scores = base[:, :8000]  # pitch 9000
        out = torch.full((16, 32), 12345, dtype=torch.int32, device="cuda")
        res = sgtopk.select(scores, 32, out=out)
        self.assertIs(res, out)
        self.check_rows(out.cpu().long(), self.reference(scores.cpu(), 32))

    def test_fused_index_transforms(self):
        rows, width, k, page = 6, 3000, 40, 16
        scores = torch.randn(rows, width, device="cuda")
        plain = sgtopk.select(scores, k).long().cpu()
        offsets = torch.arange(rows, dtype=torch.int32, device="cuda") * 100000
        got = sgtopk.select(scores, k, index_offsets=offsets).long().cpu()
        self.assertTrue(torch.equal(got, plain + offsets.long().cpu()[:, None]))
        pages = (width + page - 1) // page
        table = torch.stack([torch.randperm(pages, dtype=torch.int32) for _ in range(rows)]).cuda()
        got = sgtopk.select(scores, k, page_table=table, page_size=page).long().cpu()
        want = table.long().cpu().gather(1, plain // page) * page + plain % page
        self.assertTrue(torch.equal(got, want))
        with self.assertRaisesRegex(ValueError, "at most one"):
            sgtopk.select(scores, k, index_offsets=offsets, page_table=table, page_size=page)
        with self.assertRaisesRegex(ValueError, "page_size"):
            sgtopk.select(scores, k, page_table=table)
        with self.assertRaisesRegex(ValueError, "fewer than"):
            sgtopk.select(scores, k, page_table=table[:, :2].contiguous(), page_size=page)

    def test_graph_capture_replays(self):
        scores = torch.randn(64, 16384, device="cuda")
        sgtopk.select(scores, 2048)  # plan compiled outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            idx = torch.ops.sgtopk.select(scores, 2048)
        scores.copy_(torch.randn(64, 16384, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        self.check_rows(idx.cpu().long(), self.reference(scores.cpu(), 2048))

    def test_torch_compile_without_graph_breaks(self):
        def step(scores):
            return torch.ops.sgtopk.select(scores * 2.0, 16)

        compiled = torch.compile(step, fullgraph=True)
        scores = torch.randn(8, 5000, device="cuda")
        self.check_rows(compiled(scores).cpu().long(), self.reference(scores.cpu(), 16))


@unittest.skipIf(not HAS_GPU, NO_TORCH if torch is None else NO_GPU)
class FilterOnGpu(unittest.TestCase):
    @staticmethod
    def kept(logits, k, p, temperature=None):
        """The stable-sort reference's kept mask (CONTRACT section 2), row by row, in float64 on the CPU."""
        x = logits.double().cpu()
        rows, vocab = x.shape
        keep = torch.zeros(rows, vocab, dtype=torch.bool)
        for r in range(rows):
            kr = int(k[r]) if isinstance(k, torch.Tensor) else (k or 0)
            pr = float(p[r]) if isinstance(p, torch.Tensor) else (1.0 if p is None else p)
            tr = float(temperature[r]) if isinstance(temperature, torch.Tensor) else (temperature or 1.0)
            row = (x[r].float() / tr).double() if tr != 1.0 else x[r]
            order = torch.sort(row, descending=True, stable=True).indices
            n = kr if 0 < kr < vocab else vocab
            vals = row[order][:n]
            if pr < 1.0:
                prob = torch.softmax(vals, 0)
                before = torch.cumsum(prob, 0) - prob
                n = max(1, int((before < pr).sum()))
            keep[r, order[:n]] = True
        return keep

    def check(self, masked, logits, keep):
        got = (masked == logits).cpu()
        self.assertTrue(bool(torch.isinf(masked.cpu()[~keep]).all()))
        for r in range(keep.shape[0]):
            self.assertTrue(torch.equal(got[r], keep[r]), "row %d" % r)

    def test_filter_is_exact_in_place_and_out_of_place(self):
        gen = torch.Generator(device="cpu").manual_seed(3)
        logits = (torch.randn(6, 32000, generator=gen) * 3).cuda()
        keep = self.kept(logits, 50, 0.9)
        out = torch.full_like(logits, float("nan"))
        self.assertIs(sgtopk.filter_(logits, k=50, p=0.9, out=out), out)
        self.check(out, logits, keep)
        work = logits.clone()
        sgtopk.filter_(work, k=50, p=0.9)
        self.check(work, logits, keep)

    def test_per_row_k_p_and_temperature(self):
        rows = 5
        logits = torch.randn(rows, 5000, device="cuda") * 2
        k = torch.tensor([0, 1, 40, 5000, 300], dtype=torch.int32, device="cuda")
        p = torch.tensor([0.5, 1.0, 0.95, 0.2, 1.0], dtype=torch.float32, device="cuda")
        t = torch.tensor([1.0, 0.7, 1.5, 1.0, 2.0], dtype=torch.float32, device="cuda")
        out = torch.empty_like(logits)
        sgtopk.filter_(logits, k=k, p=p, temperature=t, out=out)
        self.check(out, logits, self.kept(logits, k.cpu(), p.cpu(), t.cpu()))
        with self.assertRaisesRegex(ValueError, "k must be torch.int32"):
            sgtopk.filter_(logits, k=k.long())

    def test_bf16_and_fp16_logits_are_read_natively(self):
        gen = torch.Generator(device="cpu").manual_seed(5)
        for dtype in (torch.bfloat16, torch.float16):
            logits = (torch.randn(4, 32000, generator=gen) * 3).to(dtype).cuda()
            wide = logits.float()  # exact: the reference sees the same values
            out = torch.full_like(logits, float("nan"))
            sgtopk.filter_(logits, k=50, p=0.9, out=out)
            self.assertEqual(out.dtype, dtype)
            self.check(out.float(), wide, self.kept(wide, 50, 0.9))
            work = logits.clone()
            sgtopk.filter_(work, p=0.9)
            self.check(work.float(), wide, self.kept(wide, None, 0.9))
            masked = torch.ops.sgtopk.filter(logits, None, None, None, 20, 1.0)
            self.assertEqual(masked.dtype, dtype)
            self.check(masked.float(), wide, self.kept(wide, 20, None))

    def test_the_op_in_a_graph_and_under_torch_compile(self):
        logits = torch.randn(16, 8000, device="cuda")
        torch.ops.sgtopk.filter(logits, None, None, None, 20, 0.8)  # plan compiled outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            masked = torch.ops.sgtopk.filter(logits, None, None, None, 20, 0.8)
        logits.copy_(torch.randn(16, 8000, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        self.check(masked, logits, self.kept(logits, 20, 0.8))
        compiled = torch.compile(lambda x: torch.ops.sgtopk.filter(x * 0.5, None, None, None, 10, 1.0), fullgraph=True)
        self.check(compiled(logits), logits * 0.5, self.kept(logits * 0.5, 10, None))


@unittest.skipIf(GPUS < 2, NO_TORCH if torch is None else "needs two CUDA devices (PyTorch sees %d)" % GPUS)
class TwoGpus(unittest.TestCase):
    """Several GPUs from one process: per-device plans from one compile, each
    device selecting and filtering on its own thread at the same time, and a
    plan refused on another device's stream."""

    def test_each_device_selects_at_once_from_one_compile(self):
        rows, k = 32, 2048
        width = 200000 + random.randrange(50000)  # a shape no earlier test compiled
        plans = [sgtopk.plan(k, rows, width, device=d) for d in (0, 1)]
        info = [p.info for p in plans]
        self.assertEqual(info[0]["cache_key"], info[1]["cache_key"])
        self.assertNotEqual(info[1]["from_cache"], 0, "the second device reuses the first's compile")
        gen = torch.Generator(device="cpu").manual_seed(13)
        cpu_scores = torch.randint(0, 5000, (rows, width), generator=gen).float()  # ties at the boundary
        want = torch.sort(cpu_scores.double(), dim=1, descending=True, stable=True).indices[:, :k].sort(dim=1).values
        logits = (torch.randn(4, 32000, generator=gen) * 3)
        keep = FilterOnGpu.kept(logits, 50, 0.9)
        failures = []

        def work(d):
            try:
                dev = torch.device("cuda", d)
                scores = cpu_scores.to(dev)
                with torch.cuda.device(dev):
                    for iteration in range(20):
                        out = torch.full((rows, k), -7, dtype=torch.int32, device=dev)  # poisoned
                        sgtopk.select(scores, k, out=out)
                        got = out.cpu().long().sort(dim=1).values
                        if not torch.equal(got, want):
                            failures.append("device %d, iteration %d: select differs" % (d, iteration))
                            return
                        masked = torch.full((4, 32000), float("nan"), device=dev)
                        sgtopk.filter_(logits.to(dev), k=50, p=0.9, out=masked)
                        if not torch.equal((masked.cpu() == logits), keep):
                            failures.append("device %d, iteration %d: filter differs" % (d, iteration))
                            return
            except Exception as e:  # reported below, with the device
                failures.append("device %d: %r" % (d, e))

        second = threading.Thread(target=work, args=(1,))
        second.start()
        work(0)
        second.join()
        self.assertEqual(failures, [])

        # Device 0's plan on device 1's stream: refused, nothing written.
        scores1 = cpu_scores.to("cuda:1")
        out1 = torch.full((rows, k), -7, dtype=torch.int32, device="cuda:1")
        stream1 = torch.cuda.Stream(device=1)  # a stream of device 1's context (0 would mean the plan's own)
        with self.assertRaisesRegex(sgtopk.SgtopkError, "another CUDA context"):
            plans[0].select(sgtopk.select_args(scores=scores1, indices=out1), stream1.cuda_stream)
        torch.cuda.synchronize(1)
        self.assertTrue(bool((out1 == -7).all()))


if __name__ == "__main__":
    unittest.main()

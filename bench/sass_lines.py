#!/usr/bin/env python3
"""Static SASS instructions per CUDA source line of one plan's kernel, without a GPU.

    python3 bench/sass_lines.py --build build/release [--baseline build/main]
        [--family direct_exact] [--k 2048] [--shape 2048x131072] [--policy FILE]
        [--lines frontier.cuh:150-190 ...]

Plans the kernel with the build's `sgtopk plan` (the generated source kept,
SGTOPK_KEEP_SOURCES), compiles that source with nvcc -lineinfo into a cubin
for the plan's architecture, disassembles it with nvdisasm -g and counts the
instructions attributed to each source line. Prints the registers and spills
(ptxas), the count per header file and, with --lines, per line of those
ranges; with --baseline, the same for a second build and the differences.

Static counts are not executed instructions (a loop body counts once, every
inlined copy counts), but within one loop they move with the per-element
cost, which is what the full-row passes are bound by (docs/decisions/
2026-11-30-full-row-passes-by-block-chunks.md). nvdisasm is not in the Debian CUDA packages here: `pip install
nvidia-cuda-nvdisasm` provides it (set NVDISASM to its path, or put it on
PATH); nvcc from the CUDA toolkit.
"""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def find_tool(name, env):
    if os.environ.get(env):
        return os.environ[env]
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/local/cuda*/bin/{name}"))
    try:
        import nvidia  # the PyPI wheels install under nvidia/cu*/bin
        for root in nvidia.__path__:
            candidates += sorted(glob.glob(os.path.join(root, "cu*", "bin", name)))
    except ImportError:
        pass
    if candidates:
        return candidates[-1]
    sys.exit(f"sass_lines: no {name} (set {env})")


def dump_source(build, args, work):
    env = dict(os.environ, SGTOPK_CACHE_DIR=os.path.join(work, "cache"), SGTOPK_KEEP_SOURCES="1",
               SGTOPK_DUMP_DIR=os.path.join(work, "dump"))
    rows, width = args.shape.split("x")
    cmd = [os.path.join(build, "sgtopk"), "plan", "--k", str(args.k), "--rows", rows, "--width", width,
           "--arch", args.arch]
    if args.family:
        cmd += ["--family", args.family]
    if args.policy:
        cmd += ["--policy", args.policy]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    found = glob.glob(os.path.join(work, "dump", "source-*"))
    if len(found) != 1:
        sys.exit(f"sass_lines: expected one dumped source under {work}/dump, found {found}")
    return found[0]


def compile_and_count(source_dir, args, work):
    cu = glob.glob(os.path.join(source_dir, "*.cu"))[0]
    options = open(os.path.join(source_dir, "options.txt")).read().split()
    # NVRTC-only options have no nvcc spelling; the include folder is relative.
    options = [o for o in options if o != "-default-device" and not o.startswith("--gpu-architecture")]
    cubin = os.path.join(work, "kernel.cubin")
    ptxas = subprocess.run([find_tool("nvcc", "NVCC"), f"-arch={args.arch}", "-lineinfo", "-cubin", "-o", cubin, cu,
                            "-Xptxas", "-v"] + options, cwd=source_dir, capture_output=True, text=True)
    if ptxas.returncode != 0:
        sys.exit(f"sass_lines: nvcc failed:\n{ptxas.stderr}")
    resources = [l.split(":", 1)[-1].strip() for l in ptxas.stderr.splitlines() if "registers" in l or "spill" in l]
    sass = subprocess.run([find_tool("nvdisasm", "NVDISASM"), "-g", "-c", cubin], capture_output=True, text=True,
                          check=True).stdout
    per_line = collections.Counter()
    where = None
    for line in sass.splitlines():
        marker = re.search(r'//## File ".*/([^/"]+)", line (\d+)', line)
        if marker:
            where = (marker.group(1), int(marker.group(2)))
        elif where and re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+\S", line):
            per_line[where] += 1
    return resources, per_line


def by_file(per_line):
    files = collections.Counter()
    for (name, _), count in per_line.items():
        files[name] += count
    return files


def in_ranges(key, ranges):
    name, line = key
    return any(name == f and lo <= line <= hi for f, lo, hi in ranges)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--baseline", help="a second build folder to compare with")
    p.add_argument("--family", default="direct_exact")
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--shape", default="2048x131072", help="ROWSxWIDTH")
    p.add_argument("--policy", help="policy TOML file")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--lines", nargs="*", default=[], help="FILE:FROM-TO, e.g. frontier.cuh:150-190")
    args = p.parse_args()
    ranges = []
    for spec in args.lines:
        name, span = spec.split(":")
        lo, hi = (int(x) for x in span.split("-"))
        ranges.append((name, lo, hi))

    builds = [("new", args.build)] + ([("baseline", args.baseline)] if args.baseline else [])
    results = {}
    for label, build in builds:
        with tempfile.TemporaryDirectory() as work:
            results[label] = compile_and_count(dump_source(build, args, work), args, work)
    for label, (resources, per_line) in results.items():
        print(f"== {label}: {sum(per_line.values())} instructions; {'; '.join(resources)}")
        for name, count in by_file(per_line).most_common():
            print(f"   {count:6d}  {name}")
        for key in sorted(k for k in per_line if in_ranges(k, ranges)):
            print(f"   {per_line[key]:6d}  {key[0]}:{key[1]}")
    if args.baseline:
        new, old = by_file(results["new"][1]), by_file(results["baseline"][1])
        print("== new - baseline, by file")
        for name in sorted(set(new) | set(old), key=lambda n: -abs(new[n] - old[n])):
            if new[name] != old[name]:
                print(f"   {new[name] - old[name]:+6d}  {name}")


if __name__ == "__main__":
    main()

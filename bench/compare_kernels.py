#!/usr/bin/env python3
"""Do two builds emit the same machine code for the default kernels?

    python3 bench/compare_kernels.py BUILD_A BUILD_B [--arch sm_90]

Each build's CLI compiles the same set of plans (both families, register and
streamed rows, values / sorted / starts / route statistics) into a private
cache; the cubin of each entry is read back and its executable sections
(.text.*) compared byte for byte. Symbol tables, constant banks and kernel
info may differ (renamed constants, reordered headers); the instructions may
not. No GPU and no disassembler needed: a restructuring that leaves every
line of SASS as it was needs no timing run to show it changed nothing.
Exit 0 when every plan's code is identical.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

PLANS = [
    "--k 2048 --rows 4096 --width 262144",
    "--k 2048 --rows 4096 --width 262144 --values --starts",
    "--k 2048 --rows 64 --width 1048576",
    "--k 2048 --rows 4096 --width 16384",
    "--k 2048 --rows 4096 --width 4096 --values --sorted",
    "--k 2048 --rows 8192 --width 1048576 --route-stats",
    "--k 2048 --rows 4096 --width 262144 --family direct_exact --values",
    "--k 7 --rows 1000 --width 100000 --family sampled --sorted --values",
    "--k 256 --rows 512 --width 131072 --family direct_exact",
]


def elf_sections(blob):
    """{name: bytes} of an ELF64 little-endian image (cubins are)."""
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    entsize, count, names_index = struct.unpack_from("<HHH", blob, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * entsize) for i in range(count)]
    names_at = headers[names_index][4]
    out = {}
    for h in headers:
        name = blob[names_at + h[0]:blob.index(b"\0", names_at + h[0])].decode()
        out[name] = blob[h[4]:h[4] + h[5]] if h[1] != 8 else b""  # 8: NOBITS
    return out


def kernel_code(build, args, arch, cache):
    env = dict(os.environ, SGTOPK_CACHE_DIR=cache, SGTOPK_VERBOSE="0")
    text = subprocess.run([os.path.join(build, "sgtopk"), "plan", *args.split(), "--arch", arch], env=env,
                          check=True, capture_output=True, text=True).stdout
    key = next(line.split()[2] for line in text.splitlines() if line.startswith("cache key:"))
    entry = os.path.join(cache, key[:2], key + ".sgtopkbin")
    blob = open(entry, "rb").read()
    cubin = blob[blob.index(b"\x7fELF"):]
    return {n: v for n, v in elf_sections(cubin).items() if n.startswith(".text")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_a")
    parser.add_argument("build_b")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory() as work:
        for i, plan in enumerate(PLANS):
            a = kernel_code(args.build_a, plan, args.arch, os.path.join(work, "a"))
            b = kernel_code(args.build_b, plan, args.arch, os.path.join(work, "b"))
            same = a == b
            differ += not same
            size = sum(len(v) for v in a.values())
            print(f"{'same' if same else 'DIFFERENT'}  {size:7d} B of code  {plan}")
    print(f"{len(PLANS) - differ} of {len(PLANS)} plans compile to identical machine code")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

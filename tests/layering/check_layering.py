#!/usr/bin/env python3
"""The project's layering, checked from the sources and the built library.

    check_layering.py SOURCE_DIR LIBSGTOPK_SO

- Folder-level includes form no cycle. Nodes are the top folders (include,
  cache, runtime, reference, templates, tools, tests); runtime/error.h and
  runtime/log.h are the helpers every layer may use, a node of their own.
- cache/ includes nothing from runtime/ beyond those helpers; runtime/ and
  cache/ include nothing from reference/ (the oracle stays out of the
  product); templates/ include only templates/ and the route-slot list.
- libsgtopk.so defines no symbol of the oracle (sgtopk::reference,
  sgtopk::rows).
Prints every violation; exit 1 if any, 77 (skipped) without `nm`.
"""
import os
import re
import shutil
import subprocess
import sys

FOLDERS = ["include", "cache", "runtime", "reference", "templates", "tools", "tests"]
HELPERS = {"runtime/error.h", "runtime/log.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def node_of(path):
    if path in HELPERS:
        return "helpers"
    top = path.split("/", 1)[0]
    return top if top in FOLDERS else None


def resolve(include, including_dir, source):
    """The repository path an include names, or None (system and generated headers)."""
    for base in (including_dir, source, os.path.join(source, "include"), os.path.join(source, "templates"),
                 os.path.join(source, "tests")):
        candidate = os.path.normpath(os.path.join(base, include))
        if os.path.isfile(candidate) and candidate.startswith(source + os.sep):
            return os.path.relpath(candidate, source)
    return None


def main():
    source, library = os.path.abspath(sys.argv[1]), sys.argv[2]
    problems = []
    edges = {}
    for top in FOLDERS:
        for root, _, files in os.walk(os.path.join(source, top)):
            for name in files:
                if not name.endswith((".h", ".hpp", ".cpp", ".c", ".cuh", ".def")):
                    continue
                path = os.path.relpath(os.path.join(root, name), source)
                text = open(os.path.join(source, path), encoding="utf-8", errors="replace").read()
                for include in INCLUDE.findall(text):
                    target = resolve(include, os.path.dirname(os.path.join(source, path)), source)
                    if target is None:
                        continue
                    a, b = node_of(path), node_of(target)
                    if a and b and a != b:
                        edges.setdefault(a, {}).setdefault(b, []).append(f"{path} -> {target}")
                    if top == "cache" and target.startswith("runtime/") and target not in HELPERS:
                        problems.append(f"cache/ includes {target} ({path})")
                    if top in ("cache", "runtime") and target.startswith("reference/"):
                        problems.append(f"the shipped library includes the oracle: {path} -> {target}")
                    if top == "templates" and not (target.startswith("templates/") or
                                                   target == "include/sgtopk/route_stats.def"):
                        problems.append(f"a kernel template includes {target} ({path})")

    # A cycle among folders: depth-first search for a back edge.
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in edges.get(node, {}):
            if state.get(nxt) == "open":
                loop = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                problems.append("folder include cycle: " + " -> ".join(loop) + " (e.g. " +
                                edges[node][nxt][0] + ")")
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])

    nm = shutil.which("nm")
    if nm is None:
        print("check_layering: skipped: no nm on PATH")
        return 77
    symbols = subprocess.run([nm, "-C", library], check=True, capture_output=True, text=True).stdout
    oracle = [line for line in symbols.splitlines() if re.search(r"sgtopk::(reference|rows)::", line)]
    problems += [f"libsgtopk.so defines an oracle symbol: {line.strip()}" for line in oracle[:10]]

    for p in problems:
        print(p)
    print(f"check_layering: {len(problems)} problem(s); folder edges: " +
          ", ".join(f"{a}->{b}" for a in sorted(edges) for b in sorted(edges[a])))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

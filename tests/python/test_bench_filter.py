"""bench/bench_filter.py's A/B output without a GPU: the builds' names and the
table that compares them (`--against`). Run: python3 -m unittest discover -s tests/python
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))

import bench_filter  # noqa: E402


def run(build, ms, exact=True, k=50, p=0.9, batch=1, vocab=128256):
    return {"dtype": "f32", "batch": batch, "vocab": vocab, "k": k, "p": p, "ms": ms, "exact": exact, "build": build}


class BenchFilterComparison(unittest.TestCase):
    def test_builds_are_named_by_their_folders_and_never_twice(self):
        self.assertEqual(bench_filter.build_names(["out/libs/main", "out/libs/new/", "/x/main"]),
                         ["main", "new", "main#2"])

    def test_a_policy_file_names_the_build_with_its_stem(self):
        self.assertEqual(bench_filter.split_build("out/libs/main@configs/x/cta-256.toml"),
                         ("out/libs/main", "configs/x/cta-256.toml"))
        self.assertEqual(bench_filter.split_build("out/libs/main"), ("out/libs/main", None))
        self.assertEqual(bench_filter.build_names(["build/release", "build/release@configs/x/cta-256.toml"]),
                         ["release", "release@cta-256"])

    def test_one_row_a_configuration_each_build_against_the_first(self):
        lines = bench_filter.comparison_table(
            [run("a", 0.0200), run("b", 0.0150), run("a", 0.0400, k=0, batch=64), run("b", 0.0500, False, k=0, batch=64)],
            ["a", "b"])
        self.assertEqual(lines[0], "| dtype | batch x vocab | k | p | a ms | b ms | b / a |")
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[2], "| f32 | 1 x 128256 | 50 | 0.9 | 0.0200 | 0.0150 | 0.750 |")
        self.assertEqual(lines[3], "| f32 | 64 x 128256 | 0 | 0.9 | 0.0400 | 0.0500! | 1.250 |")  # '!': not exact

    def test_a_build_without_the_configuration_shows_a_dash(self):
        lines = bench_filter.comparison_table([run("b", 0.0150)], ["a", "b"])
        self.assertEqual(lines[2], "| f32 | 1 x 128256 | 50 | 0.9 | - | 0.0150 | - |")


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env bash
# The CLI's GPU commands end to end: selftest, and capture then replay (with
# lengths and route statistics); each must report every row exact. Without a
# CUDA driver they say so and this test is skipped (exit 77).
set -u
CLI=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sgtopk-cli-gpu.XXXXXX") || exit 2
trap 'rm -rf -- "$WORK"' EXIT
out=$("$CLI" selftest --rows 64 --width 20000 --k 256 --values --route-stats 2>&1) || { echo "$out"; exit 1; }
echo "$out"
if echo "$out" | grep -q "skipped: no CUDA driver"; then exit 77; fi
echo "$out" | grep -q ": exact, " || exit 1
"$CLI" capture --rows 40 --width 30000 --k 512 --family indexer_like --causal --out "$WORK/s.npy" --lengths-out "$WORK/l.npy" || exit 1
out=$("$CLI" replay "$WORK/s.npy" --lengths "$WORK/l.npy" --k 512 --sorted --route-stats 2>&1) || { echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -q "^replay: plan " || exit 1
echo "$out" | grep -q ": exact, " || exit 1

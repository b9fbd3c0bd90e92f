#!/bin/sh
# gen_corpus.sh [BUILD] - regenerate the committed seed corpus of the
# checkpoint fuzzer (tests/fuzz/corpus) from checkpoints gpuopt writes.
# Needs BUILD/tests/ckpt_helper (tests/ckpt/run.sh builds it).
set -e
build=${1:-build}
helper=$build/tests/ckpt_helper
[ -x "$helper" ] || { echo "gen_corpus.sh: no $helper (run tests/ckpt/run.sh $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in sgd adam adamw rmsprop adagrad lamb lion; do
	"$helper" save "$tmp/$k.st" -L -k "$k" -s 1
done
/usr/bin/python3 tests/fuzz/gen_corpus.py "$tmp" tests/fuzz/corpus

#!/bin/sh
# inspect.sh BUILD - gpuopt-ckpt lists, verifies, and exits non-zero on
# any fault: a flipped data byte, a truncated file, a foreign file
# without -f
build=$1
helper=$build/tests/ckpt_helper
tool=$build/bin/gpuopt-ckpt
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
set -e
"$tool" --help | grep -q usage
rc=0; "$tool" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || { echo "no arguments: exit $rc, want 2"; exit 1; }
"$helper" save "$dir/a.st" -k adamw
"$tool" "$dir/a.st" >"$dir/out"
grep -q 'param/a.weight' "$dir/out"
grep -q 'gpuopt.optimizer: adamw' "$dir/out"
grep -q 'OK' "$dir/out"
[ "$(grep -c ' ok$' "$dir/out")" -eq 16 ] || { cat "$dir/out"; exit 1; }

expect_fault() {	# FILE FLAGS WHAT
	rc=0
	"$tool" $2 "$1" >"$dir/out" 2>&1 || rc=$?
	[ $rc -eq 1 ] || { echo "$3: exit $rc, want 1"; cat "$dir/out"; exit 1; }
}
cp "$dir/a.st" "$dir/flip.st"
size=$(stat -c %s "$dir/a.st")
printf '\377' | dd of="$dir/flip.st" bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
expect_fault "$dir/flip.st" "" "flipped data byte"
grep -q 'BAD' "$dir/out"
head -c $((size - 1)) "$dir/a.st" >"$dir/short.st"
expect_fault "$dir/short.st" "" "truncated"
grep -q 'INVALID' "$dir/out"
expect_fault "$dir/short.st" "-n" "truncated, header only"
expect_fault "$dir/missing.st" "" "no such file"
expect_fault tests/fuzz/corpus/foreign_params.st "" "foreign without -f"
"$tool" -f tests/fuzz/corpus/foreign_params.st >/dev/null
"$tool" -q -b "$dir/a.st" >/dev/null
echo "inspector: ok"

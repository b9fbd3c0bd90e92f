#!/bin/sh
# External model: params and gradients written through the files give,
# read back, the same bytes as the library's own steps on the same data on
# the cpu device.
. "$(dirname "$0")/lib.sh"
fs_start

seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
settings="lr=0.01 weight_decay=0.1 betas=0.8,0.99 amsgrad=1 clip_norm=5"
new_job ext "optimizer=adamw $settings model=external:w:16x8,b:8,g:2x3x4"
n=$((16 * 8 + 8 + 2 * 3 * 4))
"$EXTSTEP" rand $n "$seed" >"$T/p0"
for i in 1 2 3; do
	"$EXTSTEP" rand $n $((seed + i)) >"$T/g$i"
done
expect "index" "$(cat "$M/jobs/ext/params/index")" "w float32 16x8 512
b float32 8 32
g float32 2x3x4 96"

# params go in by tensor, as three files
dd if="$T/p0" of="$M/jobs/ext/params/w" bs=512 count=1 2>/dev/null ||
	fail "write params/w"
dd if="$T/p0" of="$M/jobs/ext/params/b" bs=32 skip=16 count=1 2>/dev/null ||
	fail "write params/b"
dd if="$T/p0" of="$M/jobs/ext/params/g" bs=1 skip=544 count=96 \
	iflag=fullblock 2>/dev/null || true
# one byte per write: the last one completes the tensor
cat "$M/jobs/ext/params/w" "$M/jobs/ext/params/b" "$M/jobs/ext/params/g" \
	>"$T/p0.back"
cmp -s "$T/p0" "$T/p0.back" || fail "params do not read back as written"

# one step per whole gradient, created state: no start needed
for i in 1 2 3; do
	cat "$T/g$i" >"$M/jobs/ext/grad" || fail "write grad $i"
	expect "step after grad $i" "$(stat_of ext step)" $i
done
expect state "$(cat "$M/jobs/ext/state")" running
cat "$M/jobs/ext/params/w" "$M/jobs/ext/params/b" "$M/jobs/ext/params/g" \
	>"$T/p3.fs"
"$EXTSTEP" step "w:16x8,b:8,g:2x3x4" adamw "$settings" "$T/p0" \
	"$T/g1" "$T/g2" "$T/g3" >"$T/p3.lib" || fail "extstep"
cmp "$T/p3.fs" "$T/p3.lib" || fail "params differ from the library's step"
cmp -s "$T/p0" "$T/p3.fs" && fail "params did not change"
fs_finish

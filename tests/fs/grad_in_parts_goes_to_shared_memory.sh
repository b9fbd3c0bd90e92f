#!/bin/sh
# Gradients written in parts once the job's worker runs go straight into
# its shared memory, one writer owning it at a time: reads of params (the
# commands' own bytes in that memory) between the parts, a second writer
# in parts at the same time (it stages on its own) and a model change in
# between (ESTALE, nothing applied) leave every step the library's own.
. "$(dirname "$0")/lib.sh"
need_root
fs_start

seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
settings="lr=0.01 betas=0.8,0.99"
spec="w:301x97,b:1013"
n=$((301 * 97 + 1013))
new_job ext "optimizer=adam $settings model=external:$spec"
"$EXTSTEP" rand $n "$seed" >"$T/p0"
for i in 1 2 3 4 5; do
	"$EXTSTEP" rand $n $((seed + i)) >"$T/g$i"
done
dd if="$T/p0" of="$M/jobs/ext/params/w" bs=$((301 * 97 * 4)) count=1 \
	2>/dev/null || fail "write params/w"
dd if="$T/p0" of="$M/jobs/ext/params/b" bs=4052 skip=$((301 * 97 * 4)) \
	iflag=skip_bytes 2>/dev/null || fail "write params/b"
# the first gradient whole: it starts the worker
cat "$T/g1" >"$M/jobs/ext/grad" || fail "write grad 1"
expect "step 1" "$(stat_of ext step)" 1

# g2 by one writer in parts, g3 by another interleaved with it, params read
# between the parts (the commands' bytes must not land on a gradient)
/usr/bin/python3 - "$M/jobs/ext" "$T" <<'PY' || fail "writes in parts"
import os, sys
d, t = sys.argv[1], sys.argv[2]
g2 = open(t + "/g2", "rb").read()
g3 = open(t + "/g3", "rb").read()
a = os.open(d + "/grad", os.O_WRONLY)
b = os.open(d + "/grad", os.O_WRONLY)
cut = [0, 4096, 50000, 77777 * 4 // 4 * 4, len(g2)]
for i in range(len(cut) - 1):
    os.pwrite(a, g2[cut[i]:cut[i + 1]], cut[i])
    if i < len(cut) - 2:
        os.pwrite(b, g3[cut[i]:cut[i + 1]], cut[i])
    with open(d + "/params/w", "rb") as f:
        f.read()
os.pwrite(b, g3[cut[-2]:], cut[-2])
os.close(a)
os.close(b)
PY
expect "steps 2 and 3" "$(stat_of ext step)" 3

# and one alone, in the kernel's parts of a big write
dd if="$T/g4" of="$M/jobs/ext/grad" bs=$((n * 4)) 2>/dev/null ||
	fail "write grad 4"
expect "step 4" "$(stat_of ext step)" 4
cat "$M/jobs/ext/params/w" "$M/jobs/ext/params/b" >"$T/p4.fs"
"$EXTSTEP" step "$spec" adam "$settings" "$T/p0" "$T/g1" "$T/g2" "$T/g3" \
	"$T/g4" >"$T/p4.lib" || fail "extstep"
cmp "$T/p4.fs" "$T/p4.lib" || fail "params differ from the library's steps"

# a pause, reset and model change between the parts: ESTALE; the space is
# free again after
cfg=$M/jobs/ext/config
expect "part, other model, rest" "$("$FSIO" seq "$M/jobs/ext/grad" w \
	"p:0:12345678" "o:$M/jobs/ext/ctl:pause" "o:$M/jobs/ext/ctl:reset" "o:$cfg:model=external:w:5" \
	"p:8:12345678" c)" "OK
OK
OK
OK
ESTALE
OK"
cat "$M/version" >/dev/null || fail "the daemon died"
step=$(stat_of ext step)
cat "$T/g5" | head -c 20 >"$M/jobs/ext/grad" || fail "a whole gradient"
expect "in parts after" "$("$FSIO" seq "$M/jobs/ext/grad" w \
	"p:0:12345678" "p:8:123456789012" c)" "OK
OK
OK"
expect "two steps" "$(stat_of ext step)" $((step + 2))
fs_finish

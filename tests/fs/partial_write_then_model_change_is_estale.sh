#!/bin/sh
# A write to grad or params/<t> in parts, a model change in between, then
# the rest: the staged bytes belong to the old model, so the next write
# fails with ESTALE and nothing is applied (it once overflowed the staging
# buffer and killed the daemon). As nobody, the way an attacker would.
. "$(dirname "$0")/lib.sh"
need_root
fs_start
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
expect "mkdir" "$(as_nobody "$FSIO" mkdir "$M/jobs/s")" OK
expect "config" "$(as_nobody "$FSIO" write "$M/jobs/s/config" \
	"optimizer=sgd lr=0.1 model=external:w:10")" OK
big=$(head -c 3992 /dev/zero | tr '\0' 'x')
cfg=$M/jobs/s/config

# a bigger model: the rest of the write would have gone past the buffer
for f in grad params/w; do
	expect "$f: part, bigger model, rest" "$(as_nobody "$FSIO" seq \
		"$M/jobs/s/$f" w "p:0:12345678" \
		"o:$cfg:model=external:w:1000" "p:8:$big" c)" "OK
OK
ESTALE
OK"
	grep -q 'model changed' "$M/jobs/s/error" || fail "$f: error says why"
	expect "back to 10" "$(as_nobody "$FSIO" write "$cfg" \
		model=external:w:10)" OK
done
cat "$M/version" >/dev/null || fail "the daemon died"

# the same size, other tensors: stale too
expect "same size, other model" "$(as_nobody "$FSIO" seq "$M/jobs/s/grad" w \
	"p:0:12345678" "o:$cfg:model=external:a:5,b:5" "p:8:12345678" c)" "OK
OK
ESTALE
OK"
expect "no step" "$(stat_of s step)" 0
expect "back to w" "$(as_nobody "$FSIO" write "$cfg" model=external:w:10)" OK

# whole gradients still step
"$EXTSTEP" rand 10 3 >"$T/g"
expect "a whole gradient" "$(as_nobody "$FSIO" writefile "$M/jobs/s/grad" \
	"$T/g" 16)" "write=OK close=OK"
expect "one step" "$(stat_of s step)" 1
fs_finish

#!/bin/sh
# "restore NAME foreign" restores a safetensors file another writer made
# (here the safetensors package, no gpuopt metadata), put in the job's
# checkpoints directory under the state directory by the daemon's admin;
# plain "restore NAME" still refuses it with the reader's error. A
# foreign file holds no settings: the configured ones stay; gpuopt's own
# file brings its saved ones back, foreign or not.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
build=$(cd "$(dirname "$GPUOPTFS")/.." && pwd)
deps=$build/pydeps
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -x $py ] || skip "no $py"
$py -c 'import numpy' 2>/dev/null || skip "no numpy for $py"
if ! PYTHONPATH=$deps $py -c 'import safetensors' 2>/dev/null; then
	$py -m pip install --quiet --disable-pip-version-check --no-deps \
		--target "$deps" -r "$top/tests/ckpt/requirements.txt" \
		>/dev/null 2>&1 || skip "cannot install safetensors from PyPI"
fi

fs_start
J=$M/jobs/f
new_job f "optimizer=adam model=quadratic:64 max_steps=1000"
expect "step 5" "$(w "$J/ctl" "step 5")" OK
expect "checkpoint" "$(w "$J/ctl" "checkpoint own")" OK
D=$S/0/f/checkpoints
[ -f "$D/own.safetensors" ] || fail "no $D/own.safetensors"
# fresh arrays with gpuopt's names and shapes, saved without metadata
PYTHONPATH=$deps $py - "$D/own.safetensors" "$D/ext.safetensors" \
	"$T/x.bin" <<'PYEOF' || fail "python"
import sys
import numpy as np
from safetensors.numpy import load_file, save_file
own = load_file(sys.argv[1])
rng = np.random.default_rng()
fresh = {n: np.abs(rng.standard_normal(t.shape)).astype(np.float32)
         for n, t in own.items()}
save_file(fresh, sys.argv[2])
params = [n for n in fresh if n.split("/")[0] in ("param", "params")]
if len(params) != 1:
    sys.exit("which is the param? %s" % sorted(fresh))
fresh[params[0]].tofile(sys.argv[3])
PYEOF
cat "$J/params/x" >"$T/before"
grep -qx 'lr=0.001' "$J/config" || fail "adam's lr: $(cat "$J/config")"
expect "configured since" "$(w "$J/config" "lr=0.123 betas=0.8,0.9")" OK
cat "$J/config" >"$T/config"
ls "$J/checkpoints" | grep -qx ext.safetensors || fail "ext not listed"

expect "strict" "$(w "$J/ctl" "restore ext")" ENODATA
grep -q "no gpuopt metadata.*'restore ext foreign'" "$J/error" ||
	fail "error: $(cat "$J/error")"
cmp -s "$T/before" "$J/params/x" || fail "a refused restore changed params"
expect "not a flag" "$(w "$J/ctl" "restore ext foreign2")" EINVAL
expect "too many" "$(w "$J/ctl" "restore ext foreign x")" EINVAL
expect "other verbs" "$(w "$J/ctl" "checkpoint a foreign")" EINVAL

expect "foreign" "$(w "$J/ctl" "restore ext foreign")" OK
cmp "$T/x.bin" "$J/params/x" || fail "params are not the file's"
diff "$T/config" "$J/config" >"$T/diff" ||
	fail "a foreign restore changed config: $(cat "$T/diff")"
grep -q 'restored ext.safetensors (foreign)' "$J/events" ||
	fail "no event for the foreign restore"
# gpuopt's own files restore with foreign too
expect "own foreign" "$(w "$J/ctl" "restore own foreign")" OK
expect "step" "$(stat_of f step)" 5
cmp -s "$T/x.bin" "$J/params/x" && fail "own restore left the foreign params"
grep -qx 'lr=0.001' "$J/config" || fail "own: the saved lr is not back"
grep -qx 'betas=0.9,0.999' "$J/config" || fail "own: the saved betas are not back"
fs_finish

#!/bin/sh
# gpuopt-ckpt --json on several files: each has its verdict. A flipped
# data byte makes that file "valid": false with the reason in "error" and
# its tensor "mismatch"; a missing file has only path, valid and error
# (a name that is not UTF-8 still makes JSON, with '?' for its bytes);
# the reasons also go to stderr, and the exit status is 1.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"
tool=$BUILD/bin/gpuopt-ckpt

ckpt_helper_build "$T/ckpt_helper"
"$T/ckpt_helper" save "$T/good.st" -k sgd >"$T/helper.log" 2>&1 ||
	fail "save: $(cat "$T/helper.log")"
cp "$T/good.st" "$T/flip.st"
size=$(stat -c %s "$T/flip.st")
printf '\377' | dd of="$T/flip.st" bs=1 seek=$((size - 3)) conv=notrunc \
	2>/dev/null

rc=0
"$tool" "$T/good.st" --json "$T/flip.st" "$T/missing.st" >"$T/out.json" \
	2>"$T/err" || rc=$?
[ $rc -eq 1 ] || fail "exit $rc, want 1"
python3 -m json.tool "$T/out.json" >/dev/null || fail "not JSON"
grep -q "^$T/flip.st: INVALID: .*checksum" "$T/err" || fail "stderr: $(cat "$T/err")"
grep -q "^$T/missing.st: INVALID: " "$T/err" || fail "stderr: $(cat "$T/err")"
python3 - "$T/out.json" "$T" <<'PY' || fail "verdicts"
import json, sys
files = json.load(open(sys.argv[1]))["files"]
d = sys.argv[2]
assert [f["path"] for f in files] == [d + "/good.st", d + "/flip.st",
                                      d + "/missing.st"]
good, flip, missing = files
assert good["valid"] is True and good["error"] is None
assert flip["valid"] is False and "checksum" in flip["error"], flip["error"]
st = [t["status"] for t in flip["tensors"]]
assert st[-1] == "mismatch" and set(st[:-1]) == {"ok"}, st
assert list(missing) == ["path", "valid", "error"], list(missing)
assert missing["valid"] is False and missing["error"], missing
PY
rc=0
"$tool" --json "$T/$(printf 'bad\377').st" >"$T/odd.json" 2>/dev/null || rc=$?
[ $rc -eq 1 ] || fail "a missing odd name: exit $rc, want 1"
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
assert f["path"].endswith("/bad?.st") and f["valid"] is False, f
' "$T/odd.json" || fail "odd name: $(cat "$T/odd.json")"
echo "ok"

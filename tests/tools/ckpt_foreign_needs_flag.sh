#!/bin/sh
# gpuopt-ckpt on a safetensors file another writer made (the safetensors
# package when python3 has it, else the same bytes by hand: no gpuopt
# metadata, no checksums, an F64 tensor) fails without --foreign, with a
# reason on stderr that names --foreign (not the C flag), and nothing on
# stdout; with --foreign (or -f) it lists the tensors and exits 0.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
tool=$BUILD/bin/gpuopt-ckpt
f=$T/model.safetensors

PYTHONPATH=$BUILD/pydeps python3 - "$f" <<'PY' || fail "cannot write $f"
import json, struct, sys
try:
    import numpy as np
    from safetensors.numpy import save_file
    save_file({"w": np.arange(6, dtype=np.float32).reshape(2, 3),
               "b": np.zeros(3, dtype=np.float64)}, sys.argv[1])
    print("written by the safetensors package")
except ImportError:
    w = struct.pack("<6f", *range(6))
    b = struct.pack("<3d", 0, 0, 0)
    hdr = json.dumps({
        "b": {"dtype": "F64", "shape": [3], "data_offsets": [0, 24]},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 48]},
    }, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(sys.argv[1], "wb") as out:
        out.write(struct.pack("<Q", len(hdr)) + hdr + b + w)
    print("written by hand")
PY

rc=0
"$tool" "$f" >"$T/out" 2>"$T/err" || rc=$?
[ $rc -eq 1 ] || fail "without --foreign: exit $rc, want 1"
[ ! -s "$T/out" ] || fail "without --foreign: stdout $(cat "$T/out")"
grep -q "^$f: INVALID: .*--foreign" "$T/err" ||
	fail "the reason does not name --foreign: $(cat "$T/err")"
! grep -q GPO_CKPT_FOREIGN "$T/err" || fail "names the C flag: $(cat "$T/err")"
rc=0
"$tool" --json "$f" >"$T/out" 2>"$T/err" || rc=$?
[ $rc -eq 1 ] || fail "--json without --foreign: exit $rc, want 1"
grep -q -- '--foreign' "$T/out" || fail "the JSON error lacks --foreign"

for o in --foreign -f; do
	"$tool" "$f" $o >"$T/out" 2>"$T/err" ||
		fail "$o: exit $?: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "$o: stderr $(cat "$T/err")"
	grep -q "^$f: OK (0 checksums verified, 2 tensors without one)" \
		"$T/out" || fail "$o: $(cat "$T/out")"
	grep -q "^  w  *F32  *2,3 .* no-checksum$" "$T/out" || fail "$o: no w"
	grep -q "^  b  *F64  *3 .* no-checksum$" "$T/out" || fail "$o: no b"
done
"$tool" --json --foreign "$f" >"$T/out.json" || fail "--json --foreign: exit $?"
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
assert f["valid"] is True and f["gpuopt"] is False and f["metadata"] == {}
assert sorted((t["name"], t["dtype"], t["xxh64"], t["status"])
              for t in f["tensors"]) == [("b", "F64", None, "no-checksum"),
                                         ("w", "F32", None, "no-checksum")]
' "$T/out.json" || fail "--json --foreign: $(cat "$T/out.json")"
echo "ok"

#!/bin/sh
# gpuopt-ckpt --json on a checkpoint gpuopt saved (tests/ckpt's helper)
# is one JSON object that python3 -m json.tool reads: "files", one object
# per FILE with the header's sizes, the metadata map, and every tensor
# with dtype, shape, offsets, its XXH64 and status "ok"; the same facts
# as the table.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"
tool=$BUILD/bin/gpuopt-ckpt

# the checkpoint tests' helper, built against this build's library
ckpt_helper_build "$T/ckpt_helper"
"$T/ckpt_helper" save "$T/a.st" -k adamw -n 64 >"$T/helper.log" 2>&1 ||
	fail "save: $(cat "$T/helper.log")"

"$tool" --json "$T/a.st" >"$T/out.json" 2>"$T/err" ||
	fail "exit $?: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "stderr: $(cat "$T/err")"
python3 -m json.tool "$T/out.json" >/dev/null || fail "not JSON"
"$tool" "$T/a.st" >"$T/table" || fail "the table: exit $?"

python3 - "$T/out.json" "$T/a.st" "$T/table" <<'PY' || fail "schema"
import json, os, sys
doc = json.load(open(sys.argv[1]))
path = sys.argv[2]
table = open(sys.argv[3]).read().split("\n")
assert list(doc) == ["files"], list(doc)
assert len(doc["files"]) == 1
f = doc["files"][0]
assert list(f) == ["path", "valid", "error", "data_checked", "file_bytes",
                   "header_bytes", "data_offset", "gpuopt", "metadata",
                   "tensors"], list(f)
assert f["path"] == path and f["valid"] is True and f["error"] is None
assert f["data_checked"] is True and f["gpuopt"] is True
assert f["file_bytes"] == os.path.getsize(path)
assert f["data_offset"] == 8 + f["header_bytes"]
meta = f["metadata"]
assert meta["format"] == "pt" and meta["gpuopt.optimizer"] == "adamw", meta
assert all(isinstance(v, str) for v in meta.values())
sums = json.loads(meta["gpuopt.xxh64"])
ts = f["tensors"]
assert len(ts) == len(sums) == 16, (len(ts), len(sums))
end = f["data_offset"]
for t in ts:
    assert list(t) == ["name", "dtype", "shape", "offset", "bytes",
                       "data_offsets", "xxh64", "status"], list(t)
    assert t["dtype"] == "F32" and t["status"] == "ok", t
    n = 1
    for d in t["shape"]:
        assert type(d) is int
        n *= d
    assert t["bytes"] == 4 * n, t
    assert t["offset"] == end, (t, end)
    assert t["data_offsets"] == [t["offset"] - f["data_offset"],
                                 t["offset"] - f["data_offset"] + t["bytes"]]
    end += t["bytes"]
    assert t["xxh64"] == sums[t["name"]], t
    row = [l.split() for l in table if l.split()[:1] == [t["name"]]]
    assert row and row[0][1:] == [t["dtype"],
            ",".join(map(str, t["shape"])) or "scalar", str(t["offset"]),
            str(t["bytes"]), t["xxh64"], "ok"], (row, t)
assert end == f["file_bytes"]
assert "param/a.weight" in [t["name"] for t in ts]
PY

# --no-verify: the header only, nothing checked
"$tool" -n --json "$T/a.st" >"$T/n.json" || fail "-n --json: exit $?"
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
assert f["valid"] is True and f["data_checked"] is False
assert {t["status"] for t in f["tensors"]} == {"unchecked"}
' "$T/n.json" || fail "-n --json"
echo "ok"

#!/bin/sh
# gpuopt-devices --json is one JSON object that python3 -m json.tool
# reads: "devices", one object per row of the table, in its order, with
# every field the table prints (numbers as numbers, uuid null when
# unknown), and "skipped", an array of strings.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"
tool=$BUILD/bin/gpuopt-devices

"$tool" --json >"$T/out.json" 2>"$T/err" || fail "exit $?: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "stderr: $(cat "$T/err")"
python3 -m json.tool "$T/out.json" >/dev/null || fail "not JSON: $(cat "$T/out.json")"
"$tool" >"$T/table" || fail "the table: exit $?"
# the table's rows (up to the blank line before "best:") as the JSON
# would print them: idx id type CUs MiB best
awk 'NR > 1 && !NF { exit } NR > 1 { print $1, $2, $3, $4, $5, $6, $NF }' \
	"$T/table" >"$T/rows"
# "best:" lists every device again, in index order, with its reason
awk '/^best:$/ { on = 1; next } on && NF { print $1, $2 }' "$T/table" \
	>"$T/best"

python3 - "$T/out.json" "$T/rows" "$T/best" <<'PY' || fail "schema"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2])]
best = [l.split() for l in open(sys.argv[3])]
assert sorted(doc) == ["devices", "skipped"], sorted(doc)
assert isinstance(doc["skipped"], list)
assert all(isinstance(s, str) for s in doc["skipped"])
devs = doc["devices"]
assert len(devs) == len(rows) >= 1, (len(devs), len(rows))
keys = ["index", "id", "backend", "type", "compute_units",
        "mem_total_bytes", "mem_used_bytes", "name", "vendor", "driver",
        "uuid", "coopmat", "enabled", "present", "best_rank", "best_why"]
for d, r in zip(devs, rows):
    assert list(d) == keys, list(d)
    for k in ("index", "compute_units", "mem_total_bytes", "mem_used_bytes"):
        assert type(d[k]) is int and d[k] >= 0, (k, d[k])
    for k in ("id", "backend", "type", "name", "vendor", "driver"):
        assert isinstance(d[k], str), (k, d[k])
    assert d["uuid"] is None or (len(d["uuid"]) == 32 and
                                 int(d["uuid"], 16) >= 0), d["uuid"]
    # tensor cores: "none", or "khr:" or "nv:", "f16*f16+f32:" and MxNxK
    cm = d["coopmat"]
    kind, _, sizes = cm.partition("f16*f16+f32:")
    assert cm == "none" or (kind in ("khr:", "nv:") and all(
        len(s.split("x")) == 3 and all(x.isdigit() for x in s.split("x"))
        for s in sizes.split(","))), cm
    assert cm == "none" or d["backend"] == "vulkan", d
    assert type(d["enabled"]) is bool and type(d["present"]) is bool
    assert d["id"].split(":")[0] == d["backend"], d
    assert d["best_rank"] is None or type(d["best_rank"]) is int, d
    assert isinstance(d["best_why"], str) and d["best_why"], d
    place = "-" if d["best_rank"] is None else str(d["best_rank"])
    got = [str(d["index"]), d["id"], d["type"], str(d["compute_units"]),
           str(d["mem_total_bytes"] >> 20), place, cm]
    assert got == r, (got, r)
assert best == [[r[5], r[1]] for r in rows], (best, rows)
assert any(d["id"] == "cpu:0" and d["type"] == "cpu" for d in devs)
# places 1..n once each, in the order "best" tries: GPUs, cpu, cpu-impl
ranked = sorted((d for d in devs if d["best_rank"]), key=lambda d: d["best_rank"])
assert [d["best_rank"] for d in ranked] == list(range(1, len(ranked) + 1))
order = {"discrete": 0, "integrated": 1, "virtual": 1, "other": 1,
         "cpu": 2, "cpu-impl": 3}
kinds = [order[d["type"]] for d in ranked]
assert kinds == sorted(kinds), [d["id"] for d in ranked]
# without a GPU the cpu backend comes first, ahead of PoCL and lavapipe
if not any(order[d["type"]] < 2 for d in ranked):
    assert ranked[0]["id"] == "cpu:0", ranked[0]
PY
# -v changes nothing in JSON
"$tool" -v --json >"$T/v.json" || fail "-v --json: exit $?"
cmp -s "$T/out.json" "$T/v.json" || fail "-v changed the JSON"
echo "ok: $(grep -c '"id"' "$T/out.json") devices"

#!/bin/sh
# --json: every listing (devices, pools, jobs, status, sweep) is JSON that
# python3 -m json.tool reads, with numbers as numbers, before and after
# there are jobs.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v python3 >/dev/null || skip "no python3"
fs_start

json_ok()
{
	ok "$@"
	echo "$out" >"$T/j.json"
	python3 -m json.tool "$T/j.json" >/dev/null ||
		fail "gpuoptctl $*: not JSON: $out"
}

# py EXPR: EXPR over the last output, parsed, as d
py()
{
	python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($1)" \
		"$T/j.json"
}

json_ok jobs --json
expect "no jobs" "$(py 'd["jobs"]')" "[]"
json_ok devices --json
expect "devices" "$(py 'len(d["devices"])')" "$(ls "$M/devices" | wc -l)"
expect "cpu:0 id" "$(py '[x["id"] for x in d["devices"] if x["idx"] == 0][0]')" \
	"$(cat "$M/devices/0/id")"
expect "memory in bytes" "$(py 'd["devices"][0]["memory"]')" \
	"$(cat "$M/devices/0/mem_total_bytes")"
json_ok pools -J
expect "pools" "$(py 'len(d["pools"])')" "$(ls "$M/pools" | wc -l)"

ok create "a-rather-long-job-name-$$" model=quadratic:16 max_steps=20
ok create base model=quadratic:16 max_steps=20 log_every=5
ok step base 20
json_ok jobs -J
expect "jobs" "$(py '" ".join(x["job"] + ":" + x["state"] for x in d["jobs"])')" \
	"a-rather-long-job-name-$$:created base:done"
expect "step is a number" "$(py '[x["step"] + 0 for x in d["jobs"]][1]')" 20
expect "loss is a number" "$(py 'd["jobs"][1]["loss"] > 0')" True
json_ok jobs -J -o job,model,uid
expect "columns" "$(py '" ".join(sorted(d["jobs"][0]))')" "job model uid"
json_ok status --json base
expect "status" "$(py '"%s %d %s" % (d["state"], d["step"] + 0, d["checkpoints"])')" \
	"done 20 []"
json_ok sweep lr=0.1,0.01 --template base --parallel 2 --json -q
expect "sweep rows" "$(py 'len(d["sweep"])')" 2
expect "sweep lr" "$(py 'sorted(x["lr"] for x in d["sweep"])')" "[0.01, 0.1]"
fs_finish

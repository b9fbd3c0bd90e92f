#!/bin/sh
# metrics.prom is Prometheus text: HELP and TYPE once per family before
# its samples, well-formed samples with device and job labels.
. "$(dirname "$0")/lib.sh"
fs_start
new_job m1 "model=quadratic:100 max_steps=5"
new_job m2 "model=external:w:4"
expect start "$(w "$M/jobs/m1/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/m1/state" || fail "not done"
cat "$M/pools/0/stat" >/dev/null
cat "$M/metrics.prom" >"$T/m"
awk '
/^# HELP / { help[$3]++; next }
/^# TYPE / {
	if (!($3 in help)) { print "TYPE before HELP: " $3; bad = 1 }
	if ($4 !~ /^(gauge|counter)$/) { print "type: " $0; bad = 1 }
	type[$3]++; next
}
/^#/ { print "comment: " $0; bad = 1; next }
{
	if ($0 !~ /^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [-+0-9.eE]+$|^[^ ]+ (NaN|\+Inf)$/) {
		print "sample: " $0; bad = 1
	}
	name = $0; sub(/[{ ].*/, "", name)
	if (!(name in type)) { print "no TYPE for " name; bad = 1 }
}
END {
	for (n in help) if (help[n] != 1 || type[n] != 1) {
		print "HELP/TYPE twice: " n; bad = 1
	}
	exit bad
}' "$T/m" || fail "malformed metrics.prom"
grep -q '^gpuopt_job_step{job="m1",uid="0",device="cpu:0"} 5$' "$T/m" ||
	fail "job m1 step"
grep -q '^gpuopt_job_state{job="m2",state="created"} 1$' "$T/m" ||
	fail "job m2 state"
grep -q '^gpuopt_device_info{device="cpu:0",' "$T/m" || fail "device info"
grep -q '^gpuopt_pool_used_bytes{device="cpu:0"} ' "$T/m" || fail "pool"
grep -q '^gpuopt_steps_total 5$' "$T/m" || fail "steps_total"
fs_finish

#!/bin/sh
# metrics.prom is Prometheus text: HELP and TYPE once per family before
# its samples, well-formed samples with device and gpuopt_job labels (not
# job, which Prometheus sets on every scraped sample); promtool and the
# Python client accept it when they are installed.
. "$(dirname "$0")/lib.sh"
fs_start
new_job m1 "model=quadratic:100 max_steps=5"
new_job m2 "model=external:w:4"
expect "grad_scale" "$(w "$M/jobs/m2/config" grad_scale=256)" OK
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
grep -q '^gpuopt_job_step{gpuopt_job="m1",uid="0",device="cpu:0"} 5$' "$T/m" ||
	fail "job m1 step"
grep -q '^gpuopt_job_state{gpuopt_job="m2",uid="0",device="-",state="created"} 1$' "$T/m" ||
	fail "job m2 state"
awk '$1 == "gpuopt_device_busy_ratio{device=\"cpu:0\"}" {
	n++; if (!($2 >= 0 && $2 <= 1)) exit 1 } END { exit n != 1 }' "$T/m" ||
	fail "busy ratio: $(grep busy_ratio "$T/m")"
grep -q '^gpuopt_job_grad_scale{gpuopt_job="m2",uid="0",device="-"} 256$' "$T/m" ||
	fail "job m2 grad_scale"
! grep -q '[{,]job=' "$T/m" || fail "a job label"
! grep -q 'percent' "$T/m" || fail "a percent"
grep -q '^gpuopt_device_info{device="cpu:0",' "$T/m" || fail "device info"
grep -q '^gpuopt_pool_used_bytes{device="cpu:0"} ' "$T/m" || fail "pool"
grep -q '^gpuopt_steps_total 5$' "$T/m" || fail "steps_total"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/m" >"$T/promtool" 2>&1 ||
		fail "promtool: $(cat "$T/promtool")"
	[ ! -s "$T/promtool" ] || fail "promtool: $(cat "$T/promtool")"
else
	echo "no promtool: that check skipped"
fi
if /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null; then
	/usr/bin/python3 - "$T/m" <<'EOF' || fail "prometheus_client"
import sys
from prometheus_client.parser import text_string_to_metric_families
n = 0
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        n += 1
        if "job" in s.labels:
            sys.exit("job label: %s %s" % (s.name, s.labels))
        if s.name.startswith("gpuopt_job_") and \
                not {"gpuopt_job", "uid", "device"} <= set(s.labels):
            sys.exit("job labels: %s %s" % (s.name, s.labels))
if n < 50:
    sys.exit("%d samples" % n)
EOF
else
	echo "no prometheus_client: that check skipped"
fi
fs_finish

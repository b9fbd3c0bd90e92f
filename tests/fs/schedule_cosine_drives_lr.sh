#!/bin/sh
# schedule=cosine (with warmup) drives the lr each step, as the library's
# schedule says; skipped where the library has no schedules yet.
. "$(dirname "$0")/lib.sh"
fs_start
mkdir "$M/jobs/sc" || fail mkdir
r=$(w "$M/jobs/sc/config" "schedule=cosine t_max=10 eta_min=0")
[ "$r" = ENOSYS ] && skip "libgpuopt has no schedules yet"
expect "schedule" "$r" OK
expect "config" "$(w "$M/jobs/sc/config" \
	"optimizer=sgd lr=0.1 model=quadratic:100 max_steps=10 log_every=1")" OK
grep -qx 'schedule=cosine' "$M/jobs/sc/config" || fail "config schedule"
grep -qx 't_max=10' "$M/jobs/sc/config" || fail "config t_max"
expect "bad key" "$(w "$M/jobs/sc/config" "t_max=0")" EINVAL
expect "step 10" "$(w "$M/jobs/sc/ctl" "step 10")" OK
# CosineAnnealingLR: lr_t = eta_min + (lr - eta_min)(1 + cos(pi t/T))/2
awk -F, 'NR > 1 {
	want = 0.05 * (1 + cos(3.141592653589793 * ($1 - 1) / 10))
	d = $3 - want; if (d < 0) d = -d
	if (d > 1e-6) { print "step " $1 ": lr " $3 ", want " want; bad = 1 }
} END { exit bad }' "$M/jobs/sc/history.csv" || fail "lr is not cosine"
expect "schedule after start" "$(w "$M/jobs/sc/config" "t_max=20")" EBUSY
fs_finish

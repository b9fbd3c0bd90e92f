#!/bin/sh
# plot: tick labels are clean numbers (no 0.30000000000000004, no nan);
# a constant lr gets a real axis around its value; grad_norm is drawn in
# a lower panel when history.csv has it.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v xmllint >/dev/null || skip "no xmllint"
fs_start

# clip_norm makes the step compute grad_norm; lr stays 0.003 throughout
ok create k optimizer=sgd lr=0.003 model=quadratic:100 max_steps=300 \
	log_every=10 clip_norm=100
ok step k 300
ok plot k
echo "$out" >"$T/k.svg"
xmllint --noout "$T/k.svg" || fail "not valid XML"
labels=$(grep '<text' "$T/k.svg" | grep -v 'rotate\|font-size="16"' |
	sed 's/.*">//; s/<.*//' | grep -v '^[a-z_]*$')
[ -n "$labels" ] || fail "no tick labels"
echo "$labels" | grep -vqE '^-?[0-9]+(\.[0-9]{1,6})?(e[-+][0-9]+)?$' &&
	fail "unclean labels: $(echo "$labels" | tr '\n' ' ')"
echo "$labels" | grep -qE '[0-9]{7}|nan|inf' &&
	fail "labels: $(echo "$labels" | tr '\n' ' ')"

# the lr axis: ticks on the right (text-anchor start), several, distinct,
# around 0.003
lr=$(grep 'text-anchor="start" fill="#d62728"' "$T/k.svg" | sed 's/.*">//; s/<.*//')
[ "$(echo "$lr" | wc -l)" -ge 3 ] || fail "lr ticks: $lr"
expect "distinct lr ticks" "$(echo "$lr" | sort -u | wc -l)" "$(echo "$lr" | wc -l)"
echo "$lr" | awk '{ if ($1 < lo || NR == 1) lo = $1; if ($1 > hi) hi = $1 }
	END { exit !(lo < 0.003 && hi > 0.003) }' || fail "lr axis $lr"
# the lr line lies flat, in the plot area
pts=$(grep '<polyline class="lr"' "$T/k.svg" | sed 's/.*points="//; s/".*//')
expect "flat lr" "$(echo "$pts" | tr ' ' '\n' | cut -d, -f2 | sort -u | wc -l)" 1
y=$(echo "$pts" | cut -d' ' -f1 | cut -d, -f2)
awk -v y="$y" 'BEGIN { exit !(y > 60 && y < 380) }' || fail "lr at y $y"

# loss, lr and grad_norm; grad_norm below the top panel
for c in loss lr grad_norm; do
	expect "$c line" "$(grep -c "<polyline class=\"$c\"" "$T/k.svg")" 1
done
grep '<polyline class="grad_norm"' "$T/k.svg" | sed 's/.*points="//; s/".*//' |
	tr ' ' '\n' | awk -F, '$2 < 440 || $2 > 600 { print; exit 1 }' ||
	fail "grad_norm outside its panel"
grep -q '>grad_norm</text>' "$T/k.svg" || fail "no grad_norm label"
fs_finish

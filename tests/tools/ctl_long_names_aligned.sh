#!/bin/sh
# A long job name widens its column: every row's state, step and loss
# start where their headers do (libsmartcols aligns the table).
. "$(dirname "$0")/lib.sh"
need_fuse
fs_start
long=a-job-name-of-sixty-characters-which-is-near-the-limit-of-63
ok create "$long" model=quadratic:16 max_steps=20
ok create s model=quadratic:16 max_steps=20
ok step s 20
ok jobs
echo "$out" >"$T/jobs.txt"
expect "rows" "$(awk 'NR > 1 { print $1, $3 }' "$T/jobs.txt")" "$long created
s done"
# the column of each header word, and the rows' words at that column
for h in OWNER STATE DEVICE; do
	col=$(awk -v h="$h" 'NR == 1 { print index($0, h) }' "$T/jobs.txt")
	[ "$col" -gt ${#long} ] || fail "$h at $col, inside the name"
	awk -v c="$col" 'NR > 1 && (substr($0, c - 1, 1) != " " ||
			  substr($0, c, 1) == " ") { print; exit 1 }' \
		"$T/jobs.txt" || fail "$h not aligned: $(cat "$T/jobs.txt")"
done
# right-aligned numbers end where their header ends
for h in STEP LOSS; do
	end=$(awk -v h="$h" 'NR == 1 { print index($0, h) + length(h) - 1 }' "$T/jobs.txt")
	awk -v e="$end" 'NR > 1 && (substr($0, e, 1) == " " ||
			  substr($0, e + 1, 1) != " ") { print; exit 1 }' \
		"$T/jobs.txt" || fail "$h not aligned: $(cat "$T/jobs.txt")"
done
fs_finish

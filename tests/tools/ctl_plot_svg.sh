#!/bin/sh
# plot: valid SVG (xmllint) with two polylines, loss and lr, inside the
# plot area from the first step to the last; -o writes a file whole; a
# job without history is an error; an external model has no loss line.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v xmllint >/dev/null || skip "no xmllint"
fs_start

ok create rb optimizer=adam lr=0.01 model=rosenbrock:1000 max_steps=600 \
	log_every=5 schedule=cosine t_max=600
refused 1 "plot rb: history.csv has no rows yet" plot rb
[ -z "$out" ] || fail "output without history"
ok start rb
ok wait -q rb
ok plot rb
echo "$out" >"$T/rb.svg"
xmllint --noout "$T/rb.svg" || fail "not valid XML"
expect "root" "$(xmllint --xpath 'name(/*)' "$T/rb.svg")" svg
expect "polylines" "$(grep -c '<polyline' "$T/rb.svg")" 2
grep -q '<title>rb: loss and lr over steps</title>' "$T/rb.svg" || fail "title"
grep -q '>loss (log scale)</text>' "$T/rb.svg" || fail "loss axis label"
grep -q '>lr</text>' "$T/rb.svg" || fail "lr axis label"
grep -q '>step</text>' "$T/rb.svg" || fail "step axis label"
# every point inside the plot area (x 90..710, y 50..390); each line runs
# from the first row's step to the last's; cosine makes lr fall
grep '<polyline' "$T/rb.svg" | sed 's/.*points="//; s/".*//' >"$T/lines"
awk '{
	n = split($0, p, " ")
	split(p[1], a, ","); split(p[n], b, ",")
	if (n != 120) { print "points " n; exit 1 }
	if (a[1] != 90 || b[1] != 710) { print "x range " a[1] " " b[1]; exit 1 }
	for (i = 1; i <= n; i++) {
		split(p[i], c, ",")
		if (c[1] < 90 || c[1] > 710 || c[2] < 50 || c[2] > 390) {
			print "outside " p[i]; exit 1
		}
	}
	first[NR] = a[2]; last[NR] = b[2]
}
END { if (last[2] <= first[2]) { print "lr does not fall"; exit 1 } }' \
	"$T/lines" || fail "polylines"

ok plot -o "$T/out.svg" rb
cmp -s "$T/out.svg" "$T/rb.svg" || fail "-o differs from stdout"
[ -z "$(ls "$T" | grep '\.tmp')" ] || fail "temporary file left"
refused 1 "plot: $T/nodir/x.svg.tmp" plot -o "$T/nodir/x.svg" rb

# an external model: loss is nan, only lr is drawn
ok create ext model=external:w:4 log_every=1
for i in 1 2 3; do
	printf '\000\000\200\077\000\000\200\077\000\000\200\077\000\000\200\077' \
		>"$M/jobs/ext/grad" || fail "grad"
done
ok plot ext
echo "$out" >"$T/ext.svg"
xmllint --noout "$T/ext.svg" || fail "ext: not valid XML"
expect "ext polylines" "$(grep -c '<polyline' "$T/ext.svg")" 1
grep -q 'stroke="#d62728"' "$T/ext.svg" || fail "ext: no lr line"
fs_finish

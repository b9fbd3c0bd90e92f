#!/bin/sh
# Every man page of the tree (library, daemon, tools) formats without a
# warning, alias pages (".so man3/PAGE.3") through the page they name.
. "$(dirname "$0")/lib.sh"
command -v groff >/dev/null || skip "no groff"
mkdir -p "$T/man" && ln -s "$TOP/libgpuopt/man" "$T/man/man3" ||
	fail "cannot lay out man3"
n=0
for page in "$TOP"/libgpuopt/man/*.3 "$TOP"/tools/*.1 "$TOP"/fsd/*.8; do
	(cd "$T/man" && groff -man -Tutf8 -ww -z "$page") >"$T/groff" 2>&1 ||
		fail "$(basename "$page"): groff failed: $(cat "$T/groff")"
	[ ! -s "$T/groff" ] || fail "$(basename "$page"): $(cat "$T/groff")"
	n=$((n + 1))
done
[ "$n" -gt 60 ] || fail "only $n pages"
echo "ok: $n pages"

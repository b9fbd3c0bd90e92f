#!/bin/sh
# tools/gpuopt-ckpt.1 and tools/gpuopt-devices.1 format without a
# warning (groff -man -ww -z), carry the sections a page needs, and
# document every long option the program's --help lists.
. "$(dirname "$0")/lib.sh"
command -v groff >/dev/null || skip "no groff"
for t in gpuopt-ckpt gpuopt-devices; do
	page=$TOP/tools/$t.1
	[ -e "$page" ] || fail "no $page"
	groff -man -Tutf8 -ww -z "$page" 2>"$T/groff" || fail "$t.1: groff failed"
	[ ! -s "$T/groff" ] || fail "$t.1: $(cat "$T/groff")"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES \
		 "SEE ALSO"; do
		grep -q "^\.SH \"\{0,1\}$s\"\{0,1\}$" "$page" ||
			fail "$t.1: no $s section"
	done
	"$BUILD/bin/$t" --help | grep -o -- '--[a-z][a-z-]*' | sort -u |
	while read -r o; do
		grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$page" ||
			{ echo "$t.1 lacks $o"; exit 1; }
	done || fail "undocumented options"
done
echo "ok"

#!/bin/sh
# tools/gpuoptctl.1 renders without a groff warning, and documents every
# command and every long option that gpuoptctl --help and each command's
# --help list, and its exit statuses.
. "$(dirname "$0")/lib.sh"
command -v groff >/dev/null || skip "no groff"
page=$TOP/tools/gpuoptctl.1

w=$(groff -man -ww -z "$page" 2>&1)
[ -z "$w" ] || fail "groff warnings: $w"
if command -v man >/dev/null; then
	w=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "man -l: $w"
fi
text=$(groff -man -Tutf8 -P -cbou "$page" 2>/dev/null | sed 's/\xe2\x80\x90/-/g')

cmds=$("$C" --help | awk '/^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || fail "no commands in --help"
for c in $cmds; do
	echo "$text" | grep -qE "(^       |, )$c( |,|\$)" || fail "no command '$c' in the page"
	for o in $("$C" "$c" --help | grep -oE -- '--[a-z][-a-z]*' | sort -u); do
		echo "$text" | grep -q -- "$o" ||
			fail "$c's option $o is not in the page"
	done
done
for o in $("$C" --help | grep -oE -- '--[a-z][-a-z]*' | sort -u); do
	echo "$text" | grep -q -- "$o" || fail "option $o is not in the page"
done
for s in 0 1 2 124; do
	echo "$text" | sed -n '/^EXIT STATUS/,/^[A-Z]/p' | grep -qE "^       $s( |\$)" ||
		fail "exit status $s is not in EXIT STATUS"
done
echo "$text" | sed -n '/^EXAMPLES/,/^SEE ALSO/p' | grep -q 'gpuoptctl sweep' ||
	fail "no sweep example"
echo "$text" | sed -n '/^EXAMPLES/,/^SEE ALSO/p' | grep -q -- '--json' ||
	fail "no --json example"
exit 0

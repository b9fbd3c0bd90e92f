#!/bin/sh
# tools/install.sh puts gpuopt-ckpt, gpuopt-devices and their man pages
# into PREFIX (bin/, share/man/man1/, the pages naming the release),
# and the installed pages format without a warning.
. "$(dirname "$0")/lib.sh"
dest=$T/dest
prefix=/opt/gpuopt-test
root=$dest$prefix
hdr=$TOP/libgpuopt/include/gpuopt.h
part() { sed -n "s/^#define GPUOPT_VERSION_$1  *\([0-9][0-9]*\)$/\1/p" "$hdr"; }
v=$(part MAJOR).$(part MINOR).$(part PATCH)
(cd "$TOP" && sh tools/install.sh "$BUILD" "$dest" "$prefix" "$v" 0) \
	>"$T/install.log" 2>&1 || fail "install.sh: $(tail -n 20 "$T/install.log")"
for t in gpuopt-ckpt gpuopt-devices; do
	[ -x "$root/bin/$t" ] || fail "not installed: bin/$t"
	page=$root/share/man/man1/$t.1
	[ -e "$page" ] || fail "not installed: share/man/man1/$t.1"
	head -n 1 "$page" | grep -q '"gpuopt '"$v"'"' ||
		fail "$t.1: not this release's: $(head -n 1 "$page")"
	if command -v groff >/dev/null; then
		groff -man -Tutf8 -ww -z "$page" 2>"$T/groff" &&
			[ ! -s "$T/groff" ] || fail "$t.1: $(cat "$T/groff")"
	fi
done
echo "ok"

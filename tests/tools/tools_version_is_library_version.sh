#!/bin/sh
# gpuopt-devices --version and gpuopt-ckpt --version (and -V) print
# "NAME VERSION" with the library's version (gpuopt.h's
# GPUOPT_VERSION_*, what gpo_version() returns), exit 0, nothing else.
. "$(dirname "$0")/lib.sh"
hdr=$TOP/libgpuopt/include/gpuopt.h
part() { sed -n "s/^#define GPUOPT_VERSION_$1  *\([0-9][0-9]*\)$/\1/p" "$hdr"; }
v=$(part MAJOR).$(part MINOR).$(part PATCH)
case $v in
*[0-9].*[0-9].*[0-9]) ;;
*) fail "cannot read the version from gpuopt.h: '$v'" ;;
esac
for t in gpuopt-devices gpuopt-ckpt; do
	for o in --version -V; do
		out=$("$BUILD/bin/$t" $o 2>"$T/err") || fail "$t $o: exit $?"
		expect "$t $o" "$out" "$t $v"
		[ ! -s "$T/err" ] || fail "$t $o: stderr $(cat "$T/err")"
	done
done
# before other options and operands too: it wins and does nothing else
out=$("$BUILD/bin/gpuopt-ckpt" /nonexistent --version 2>&1) ||
	fail "gpuopt-ckpt FILE --version: exit $?"
expect "gpuopt-ckpt FILE --version" "$out" "gpuopt-ckpt $v"
echo "ok: $v"

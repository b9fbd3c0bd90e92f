#!/bin/sh
# `make` (the build) only checks dependencies: with a package missing
# (GPUOPT_DEPS_EXTRA names one that does not exist) it prints the one
# apt-get line, fails before compiling anything, and never runs apt-get,
# even as root; tools/deps.sh build alike. A fake apt-get on PATH records
# any call.
. "$(dirname "$0")/lib.sh"
command -v dpkg-query >/dev/null || skip "no dpkg-query"
pkg=gpuopt-test-no-such-package
fake_apt_get "$pkg"

rc=0
make -C "$TOP" --no-print-directory BUILD="$T/build" >"$T/out" 2>"$T/err" ||
	rc=$?
[ $rc -ne 0 ] || fail "make succeeded with $pkg missing"
grep -q "^  apt-get install -y.* $pkg\$" "$T/err" ||
	fail "no apt-get line on stderr: $(cat "$T/out" "$T/err")"
[ ! -e "$T/apt.log" ] || fail "make ran: $(cat "$T/apt.log")"
[ -z "$(find "$T/build" -name '*.o' -o -name '*.a' | head -n 1)" ] ||
	fail "make compiled before the check passed"
[ ! -e "$T/build/.deps-build" ] || fail "stamped though it failed"

rc=0
"$TOP/tools/deps.sh" build >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "deps.sh build: exit $rc, want 1"
grep -q "apt-get install -y.* $pkg\$" "$T/out" || fail "deps.sh build: $(cat "$T/out")"
[ ! -e "$T/apt.log" ] || fail "deps.sh build ran: $(cat "$T/apt.log")"

# GPUOPT_NO_INSTALL keeps run and check from installing too
for m in run check; do
	rc=0
	GPUOPT_NO_INSTALL=1 "$TOP/tools/deps.sh" $m >"$T/out" 2>&1 || rc=$?
	[ $rc -eq 1 ] || fail "deps.sh $m, GPUOPT_NO_INSTALL=1: exit $rc"
	grep -q "apt-get install -y.* $pkg\$" "$T/out" || fail "deps.sh $m: $(cat "$T/out")"
	[ ! -e "$T/apt.log" ] || fail "deps.sh $m ran: $(cat "$T/apt.log")"
done
echo "ok"

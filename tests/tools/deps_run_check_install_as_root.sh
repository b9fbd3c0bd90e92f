#!/bin/sh
# As root, tools/deps.sh run and check (what make run and make check
# call) install what is missing with apt-get: a fake apt-get on PATH
# records the call, which must name the missing package
# (GPUOPT_DEPS_EXTRA). Check's set holds the tests' tools, run's does
# not: valgrind, clang and systemd are no running needs.
. "$(dirname "$0")/lib.sh"
need_root
command -v dpkg-query >/dev/null || skip "no dpkg-query"
pkg=gpuopt-test-no-such-package
fake_apt_get "$pkg"

for m in run check; do
	rm -f "$T/apt.log"
	"$TOP/tools/deps.sh" $m >"$T/out" 2>&1 ||
		fail "deps.sh $m: exit $?: $(cat "$T/out")"
	grep -q "^apt-get install .* $pkg\$" "$T/apt.log" ||
		fail "deps.sh $m did not install $pkg: $(cat "$T/apt.log" "$T/out")"
done

# which packages each mode wants: everything missing (no dpkg-query)
cat >"$T/bin/dpkg-query" <<'EOS'
#!/bin/sh
exit 1
EOS
chmod +x "$T/bin/dpkg-query"
for m in build run check; do
	GPUOPT_NO_INSTALL=1 "$TOP/tools/deps.sh" $m 2>&1 |
		sed -n 's/^  apt-get install -y//p' | tr ' ' '\n' | sort >"$T/$m"
	grep -qx libjansson-dev "$T/$m" || fail "$m lacks libjansson-dev"
done
for p in valgrind clang systemd; do
	grep -qx $p "$T/check" || fail "check lacks $p"
	! grep -qx $p "$T/run" || fail "run needs $p"
	! grep -qx $p "$T/build" || fail "build needs $p"
done
grep -qx fuse3 "$T/run" && grep -qx fuse3 "$T/check" || fail "fuse3 for run"
[ -z "$(comm -23 "$T/build" "$T/run")" ] || fail "run lacks some of build's"
[ -z "$(comm -23 "$T/run" "$T/check")" ] || fail "check lacks some of run's"
# BACKENDS without opencl: none of its packages
BACKENDS="cpu vulkan" GPUOPT_NO_INSTALL=1 "$TOP/tools/deps.sh" check 2>&1 |
	grep "apt-get install" >"$T/nocl"
! grep -q -e ocl-icd -e pocl -e clinfo "$T/nocl" || fail "opencl left out: $(cat "$T/nocl")"
grep -q mesa-vulkan-drivers "$T/nocl" || fail "vulkan kept: $(cat "$T/nocl")"
echo "ok"

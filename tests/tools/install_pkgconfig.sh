#!/bin/sh
# make install into a temporary DESTDIR puts every piece where it belongs
# with PREFIX in the paths; a program compiled with
# `pkg-config --cflags --libs gpuopt` against it links the installed
# shared library and runs.
. "$(dirname "$0")/lib.sh"
command -v pkg-config >/dev/null || skip "no pkg-config"
dest=$T/dest
prefix=/opt/gpuopt-test
root=$dest$prefix

# the same flags the build was made with, or make relinks it differently
san=
grep -q fsanitize "$BUILD/build.conf" 2>/dev/null && san=SANITIZE=1
make -C "$TOP" --no-print-directory BUILD="$BUILD" DESTDIR="$dest" \
	PREFIX="$prefix" $san install >"$T/install.log" 2>&1 ||
	fail "make install: $(tail -n 20 "$T/install.log")"
for f in lib/libgpuopt.so.0.1.0 lib/libgpuopt.so.0 lib/libgpuopt.so \
	 lib/libgpuopt.a include/gpuopt.h include/gpuopt/data.h \
	 lib/pkgconfig/gpuopt.pc \
	 bin/gpuoptfs bin/gpuoptctl bin/gpuopt-ckpt bin/gpuopt-torch \
	 share/man/man1/gpuoptctl.1 share/man/man1/gpuopt-torch.1 \
	 share/man/man3/gpo_ctx_new.3 \
	 share/man/man3/gpo_optim_step.3 share/man/man3/gpo_version.3 \
	 share/man/man8/gpuoptfs.8 \
	 share/bash-completion/completions/gpuoptctl \
	 share/gpuopt/examples/sweep.sh share/gpuopt/examples/resume.sh \
	 lib/udev/rules.d/70-gpuopt.rules lib/udev/gpuopt-rescan \
	 lib/systemd/system/gpuoptfs.service; do
	[ -e "$root/$f" ] || fail "not installed: $f"
done
for f in bin/gpuoptfs bin/gpuoptctl lib/udev/gpuopt-rescan; do
	[ -x "$root/$f" ] || fail "not executable: $f"
done
expect soname "$(readlink "$root/lib/libgpuopt.so.0")" libgpuopt.so.0.1.0
nm "$root/lib/libgpuopt.a" 2>/dev/null | grep -q " T gpo_ctx_rescan$" ||
	fail "libgpuopt.a lacks gpo_ctx_rescan"
# the rules and the unit name the programs under PREFIX
grep -q "^ExecStart=$prefix/bin/gpuoptfs " \
	"$root/lib/systemd/system/gpuoptfs.service" || fail "unit ExecStart"
# (all but the ACL grant, which runs the system's /bin/setfacl wherever
# gpuopt is installed)
expect "rules RUN" "$(grep -o 'RUN+="[^"]*"' "$root/lib/udev/rules.d/70-gpuopt.rules" |
	grep -v '^RUN+="/bin/setfacl ' | sort -u)" \
	"RUN+=\"$prefix/lib/udev/gpuopt-rescan\""
! grep -q /usr/local/ "$root/lib/udev/rules.d/70-gpuopt.rules" \
	"$root/lib/systemd/system/gpuoptfs.service" || fail "/usr/local/ left"

# pkg-config, as a package build would call it against a sysroot
export PKG_CONFIG_PATH="$root/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
expect "modversion" "$(pkg-config --modversion gpuopt)" 0.1.0
flags=$(pkg-config --cflags --libs gpuopt) || fail "pkg-config"
expect "flags" "$(echo $flags)" "-I$root/include -L$root/lib -lgpuopt"
# a sanitizer build's library needs its runtime first in the program
san=
if readelf -d "$root/lib/libgpuopt.so" 2>/dev/null | grep -q asan; then
	san="-fsanitize=address,undefined $BUILD/tests/unit/keep_drivers.o"
	export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"
fi
# shellcheck disable=SC2086
cc -std=gnu11 -O2 -Wall -Werror $san -o "$T/rosenbrock" \
	"$TOP/libgpuopt/examples/rosenbrock.c" $flags ||
	fail "cannot build the example against the install"
LD_LIBRARY_PATH=$root/lib ldd "$T/rosenbrock" |
	grep -q "libgpuopt.so.0 => $root/lib/libgpuopt.so.0" ||
	fail "not linked to the installed library"
LD_LIBRARY_PATH=$root/lib "$T/rosenbrock" -d cpu -n 1000 -s 50 \
	>"$T/run.log" 2>&1 || fail "the example: $(cat "$T/run.log")"

# the installed tools run
expect "gpuoptctl" "$("$root/bin/gpuoptctl" --version)" "gpuoptctl 0.1.0"
"$root/bin/gpuoptfs" --version | grep -q "^gpuoptfs 0.1.0" ||
	fail "gpuoptfs --version"
bash -n "$root/share/bash-completion/completions/gpuoptctl" ||
	fail "completion syntax"
# every alias page points at a page that is installed
for f in "$root"/share/man/man3/*.3; do
	t=$(sed -n 's|^\.so \(man3/.*\)$|\1|p' "$f")
	[ -z "$t" ] || [ -e "$root/share/man/$t" ] || fail "$f: no $t"
done
if command -v groff >/dev/null; then
	for p in man1/gpuoptctl.1 man8/gpuoptfs.8; do
		groff -man -Tutf8 -ww -z "$root/share/man/$p" 2>"$T/groff" &&
			[ ! -s "$T/groff" ] || fail "$p: $(cat "$T/groff")"
	done
fi

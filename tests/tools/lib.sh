# lib.sh - sourced by tests/tools/*.sh: tests/fs/lib.sh (a daemon on a
# temporary mount: fs_start, fs_finish, w, expect, fail, skip, wait_for),
# plus gpuoptctl helpers. GPUOPT_MNT points at the test's mount.
#
#   ctl ARG...            run gpuoptctl: $rc, $out (stdout), $err (stderr)
#   ok ARG...             it must exit 0 with nothing on stderr
#   refused RC TEXT ARG...  it must exit RC with TEXT in its stderr
#   need_fuse             skip without /dev/fuse and fusermount3
# run-tools.sh exports GPUOPTFS, GPUOPTCTL, FSIO, TOP and BUILD.
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TOP/tests/fs/lib.sh"
export GPUOPT_MNT="$M"
C=$GPUOPTCTL

ctl()
{
	"$GPUOPTCTL" "$@" >"$T/ctl.out" 2>"$T/ctl.err"
	rc=$?
	out=$(cat "$T/ctl.out")
	err=$(cat "$T/ctl.err")
}

ok()
{
	ctl "$@"
	[ $rc -eq 0 ] && [ -z "$err" ] ||
		fail "gpuoptctl $*: exit $rc, stderr '$err'"
}

refused()
{
	want_rc=$1 want_text=$2
	shift 2
	ctl "$@"
	[ $rc -eq "$want_rc" ] ||
		fail "gpuoptctl $*: exit $rc, want $want_rc (stderr '$err')"
	case $err in
	*"$want_text"*) ;;
	*) fail "gpuoptctl $*: stderr '$err' lacks '$want_text'" ;;
	esac
}

# built BACKEND: was this build's libgpuopt made with BACKEND (BACKENDS=)?
built()
{
	BACKENDS="cpu opencl vulkan"
	[ -r "$BUILD/build.conf" ] && . "$BUILD/build.conf"
	case " $BACKENDS " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

need_fuse()
{
	[ -e /dev/fuse ] && command -v fusermount3 >/dev/null ||
		skip "no /dev/fuse or fusermount3"
}

# state_is JOB STATE
state_is()
{
	[ "$(cat "$M/jobs/$1/state" 2>/dev/null)" = "$2" ]
}

# stepped JOB N: the job is past step N
stepped()
{
	[ "$(stat_of "$1" step)" -gt "$2" ]
}

# no_escapes FILE: plain text, as a pipe should get
no_escapes()
{
	! grep -q "$(printf '\033')" "$1" && ! grep -q "$(printf '\r')" "$1"
}

# ckpt_helper_build OUT - tests/ckpt's helper program against this build's
# library; a sanitizer build's keeps the CPU drivers resident, so that
# tests/lsan.supp (exported here) names their own leaks
ckpt_helper_build()
{
	LIB_LIBS="-luring -ljansson -lz -lm -lpthread" LDSAN=
	. "$BUILD/build.conf"
	keep=
	[ -n "$LDSAN" ] && keep=$BUILD/tests/unit/keep_drivers.o
	export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"
	# shellcheck disable=SC2086
	cc -std=gnu11 -O1 -pthread -D_GNU_SOURCE -I"$TOP" \
		-I"$TOP/libgpuopt/include" -I"$TOP/libgpuopt/src" \
		-I"$TOP/kernels" -o "$1" "$TOP/tests/ckpt/ckpt_helper.c" \
		"$BUILD/lib/libgpuopt.a" $LIB_LIBS $LDSAN $keep 2>"$T/cc.log" ||
		fail "ckpt_helper: $(head -n 20 "$T/cc.log")"
}

# fake_apt_get PKG - an apt-get on PATH that records each call in
# $T/apt.log, and PKG (which does not exist) added to deps.sh's lists
fake_apt_get()
{
	mkdir -p "$T/bin"
	cat >"$T/bin/apt-get" <<EOS
#!/bin/sh
echo "apt-get \$*" >>"$T/apt.log"
exit 0
EOS
	chmod +x "$T/bin/apt-get"
	export PATH="$T/bin:$PATH" GPUOPT_DEPS_EXTRA=$1
	unset GPUOPT_NO_INSTALL
}

#!/bin/sh
# deps.sh [build|run|check]... - check gpuopt's dependencies for what
# make is about to do; several modes check the union of their packages.
#
#   build  what `make` needs to compile everything (the default): only
#          checks, never installs; when something is missing it prints
#          the one apt-get line to run and fails
#   run    build's, plus what `make run` needs: the OpenCL and Vulkan
#          implementations for CPUs, FUSE's mount helper
#   check  run's, plus what `make check` (and valgrind, fuzz) needs
#
# run and check, as root on a machine with apt-get, install whatever is
# missing; otherwise they too print the line and fail. GPUOPT_NO_INSTALL=1
# only checks. BACKENDS (the Makefile's, e.g. "cpu vulkan") leaves out
# what a left-out API needs. GPUOPT_DEPS_EXTRA adds package names to
# every mode (the tests use one that does not exist).

BUILD_PKGS="build-essential pkg-config
ocl-icd-opencl-dev opencl-c-headers
libvulkan-dev glslc
libfuse3-dev
liburing-dev libcap-dev libxxhash-dev libjansson-dev zlib1g-dev
check libsystemd-dev libsmartcols-dev"
RUN_PKGS="pocl-opencl-icd
mesa-vulkan-drivers
fuse3 util-linux dataset-fashion-mnist"
CHECK_PKGS="clinfo vulkan-tools
valgrind libxml2-utils bsdutils systemd groff-base
clang libclang-rt-14-dev python3-numpy python3-pip locales
prometheus python3-prometheus-client
acl udev python3-torch
libopenmpi-dev openmpi-bin"
PCS="OpenCL vulkan fuse3 liburing libcap check libxxhash jansson zlib libsystemd smartcols"
# what each API brings, for BACKENDS without it
OPENCL_PKGS="ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo"
VULKAN_PKGS="libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools"

[ $# -gt 0 ] || set -- build
run='' check=''
for mode; do
	case $mode in
	build) ;;
	run) run=1 ;;
	check) run=1 check=1 ;;
	*)	echo "usage: deps.sh [build|run|check]..." >&2
		exit 2 ;;
	esac
done
# MPI=1 (the Makefile's): libgpuopt-mpi builds against Open MPI
MPI_PKGS="libopenmpi-dev openmpi-bin"
[ "${MPI:-0}" = 1 ] || MPI_PKGS=
PKGS="$BUILD_PKGS $MPI_PKGS ${run:+$RUN_PKGS} ${check:+$CHECK_PKGS} $GPUOPT_DEPS_EXTRA"

# drop: the words of $PKGS that are not in $1
drop()
{
	out=
	for p in $PKGS; do
		case " $1 " in
		*" $p "*) ;;
		*) out="$out $p" ;;
		esac
	done
	PKGS=$out
}
case " ${BACKENDS:-opencl vulkan} " in
*" opencl "*) ;;
*)	drop "$OPENCL_PKGS"
	PCS=${PCS#OpenCL } ;;
esac
case " ${BACKENDS:-opencl vulkan} " in
*" vulkan "*) ;;
*)	drop "$VULKAN_PKGS"
	PCS=$(echo $PCS | sed 's/vulkan //') ;;
esac

# test_locale runs the library under de_DE.UTF-8 (a ',' decimal point):
# make that locale when it is missing and we may. Never fatal: the test
# skips without it.
ensure_locale() {
	locale -a 2>/dev/null | grep -qix 'de_DE\.utf-\?8' && return 0
	if [ "$(id -u)" = 0 ] && [ -z "$GPUOPT_NO_INSTALL" ] &&
	   command -v localedef >/dev/null 2>&1; then
		echo "deps.sh: making the de_DE.UTF-8 locale"
		localedef -i de_DE -c -f UTF-8 de_DE.UTF-8 && return 0
	fi
	echo "deps.sh: no de_DE.UTF-8 locale (test_locale will skip); as" \
	     "root: localedef -i de_DE -c -f UTF-8 de_DE.UTF-8" >&2
	return 0
}

# done: what is needed is there; the locale only matters to the tests
done_ok()
{
	[ -z "$check" ] || ensure_locale
	exit 0
}

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
# Debian's names are what we check, but the real test is pkg-config.
for pc in $PCS; do
	pkg-config --exists "$pc" 2>/dev/null || nopc="$nopc $pc"
done

[ -n "$missing" ] || [ -n "$nopc" ] || done_ok

line="apt-get install -y$missing"
if [ -z "$missing" ]; then
	echo "deps.sh: pkg-config cannot find:$nopc (packages are installed;" \
	     "check PKG_CONFIG_PATH)" >&2
	exit 1
fi
if [ -n "$run" ] && [ "$(id -u)" = 0 ] &&
   command -v apt-get >/dev/null 2>&1 && [ -z "$GPUOPT_NO_INSTALL" ]; then
	echo "deps.sh: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || { echo "deps.sh: apt-get update failed" >&2; exit 1; }
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing || {
		echo "deps.sh: apt-get install failed; run: $line" >&2
		exit 1
	}
	done_ok
fi
if [ -n "$run" ]; then
	echo "deps.sh: missing dependencies. Run as root:" >&2
else
	echo "deps.sh: missing build dependencies (make run and make check" \
	     "install them as root). Run as root:" >&2
fi
echo "  $line" >&2
exit 1

#!/bin/sh
# deps.sh - check every build and test dependency of gpuopt.
#
# As root on a machine with apt-get, installs whatever is missing.
# Otherwise prints the one apt-get line to run and fails.
# GPUOPT_NO_INSTALL=1 only checks. BACKENDS (the Makefile's, e.g.
# "cpu vulkan") leaves out what a left-out API needs.

PKGS="build-essential pkg-config
ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
libfuse3-dev fuse3
liburing-dev libcap-dev libxxhash-dev libjansson-dev libsmartcols-dev
check valgrind libxml2-utils util-linux bsdutils systemd
clang libclang-rt-14-dev python3-numpy python3-pip locales"
PCS="OpenCL vulkan fuse3 liburing libcap check libxxhash jansson"
case " ${BACKENDS:-opencl vulkan} " in
*" opencl "*) ;;
*)	PKGS=$(echo $PKGS | sed -e 's/ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo//')
	PCS=${PCS#OpenCL } ;;
esac
case " ${BACKENDS:-opencl vulkan} " in
*" vulkan "*) ;;
*)	PKGS=$(echo $PKGS | sed -e 's/libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools//')
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

if [ -z "$missing" ] && [ -z "$nopc" ]; then
	ensure_locale
	exit 0
fi

line="apt-get install -y$missing"
if [ -z "$missing" ]; then
	echo "deps.sh: pkg-config cannot find:$nopc (packages are installed;" \
	     "check PKG_CONFIG_PATH)" >&2
	exit 1
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 &&
   [ -z "$GPUOPT_NO_INSTALL" ]; then
	echo "deps.sh: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || { echo "deps.sh: apt-get update failed" >&2; exit 1; }
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing || {
		echo "deps.sh: apt-get install failed; run: $line" >&2
		exit 1
	}
	ensure_locale
	exit 0
fi
echo "deps.sh: missing build dependencies. Run as root:" >&2
echo "  $line" >&2
exit 1

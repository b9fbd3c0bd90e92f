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
liburing-dev libcap-dev libxxhash-dev libjansson-dev
check valgrind libxml2-utils util-linux bsdutils systemd
clang libclang-rt-14-dev python3-numpy python3-pip"
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

[ -z "$missing" ] && [ -z "$nopc" ] && exit 0

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
	exit 0
fi
echo "deps.sh: missing build dependencies. Run as root:" >&2
echo "  $line" >&2
exit 1

#!/bin/sh
# tools/gpuopt-torch against torch.optim and libgpuopt: checkpoints to torch
# files and back, one more step on either side agreeing (AdamW with two
# parameter groups, sgd, adam, rmsprop, adagrad), strict restores, lamb and
# lion round trips, the command line. tests/ckpt/torch_interop.py says
# what and why. Needs Debian's python3-torch (1.13): without it the test
# skips, or fails where CI or GPUOPT_TEST_REQUIRE is set. The safetensors
# package is used when BUILD/pydeps has it (tests/ckpt/interop.sh puts it
# there); the tool's own reader is tested either way.
top=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${BUILD:-$top/build}
py=/usr/bin/python3
lib=$build/lib/libgpuopt.so

skip()
{
	if [ -n "${CI:-}" ] || [ -n "${GPUOPT_TEST_REQUIRE:-}" ]; then
		echo "FAIL: $* (CI or GPUOPT_TEST_REQUIRE: required)"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

[ -x "$py" ] || skip "no $py"
"$py" -c 'import torch' 2>/dev/null ||
	skip "no torch for $py (apt-get install python3-torch)"
[ -e "$lib" ] || { echo "FAIL: no $lib"; exit 1; }
# a SANITIZE=1 library wants its runtime loaded first, which python is not
if readelf -d "$lib" 2>/dev/null | grep -q 'libasan'; then
	echo "SKIP: a sanitizer build's library does not load into python"
	exit 77
fi
# the cpu backend is the reference; no other device is probed for nothing
export GPUOPT_DEVICE=cpu
PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$build/pydeps \
	exec "$py" "$top/tests/ckpt/torch_interop.py" "$lib" \
	"$top/tools/gpuopt-torch"

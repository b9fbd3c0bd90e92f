#!/bin/sh
# interop.sh BUILD - the safetensors package (PyPI, pinned in
# requirements.txt, installed into BUILD/pydeps) against gpuopt's files
build=$1
py=/usr/bin/python3
deps=$build/pydeps
[ -x $py ] || { echo "no $py"; exit 77; }
$py -c 'import numpy' 2>/dev/null ||
	{ echo "no numpy for $py (apt-get install python3-numpy)"; exit 77; }
if ! PYTHONPATH=$deps $py -c 'import safetensors' 2>/dev/null; then
	$py -m pip install --quiet --disable-pip-version-check --no-deps \
		--target "$deps" -r tests/ckpt/requirements.txt ||
		{ echo "cannot install safetensors from PyPI"
		  [ -n "$CI" ] && exit 1; exit 77; }
fi
PYTHONPATH=$deps exec $py tests/ckpt/interop.py "$build/tests/ckpt_helper"

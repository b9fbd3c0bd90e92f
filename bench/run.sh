#!/bin/sh
# run.sh BUILD - the benchmark table: gpuopt beside PyTorch's AdamW.
#   BENCH_DEVICES   devices to measure (default: cpu and every GPU-API device)
#   BENCH_SIZES     default 1M,16M,64M
#   BENCH_PYTHON    a python with torch (default: /usr/bin/python3, Debian's)
set -e
build=${1:-build}
sizes=${BENCH_SIZES:-1M,16M,64M}
py=${BENCH_PYTHON:-/usr/bin/python3}
peers=$(mktemp)
trap 'rm -f "$peers"' EXIT
echo "# gpuopt bench_optim, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores"
if "$py" -c 'import torch' 2>/dev/null; then
	"$py" bench/peer_torch.py --device cpu --sizes "$sizes" >>"$peers" || true
	if "$py" -c 'import torch,sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
		"$py" bench/peer_torch.py --device cuda --sizes "$sizes" --many >>"$peers" || true
	fi
	cat "$peers"
else
	echo "# no torch for $py: no peer column (apt-get install python3-torch)"
fi
"$build/bin/bench_optim" -d "${BENCH_DEVICES:-cpu}" -s "$sizes" -p "$peers" $BENCH_FLAGS

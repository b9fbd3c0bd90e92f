#!/bin/sh
# xfer.sh BUILD - host<->device transfer throughput beside PyTorch's copies
#   BENCH_DEVICES      devices (default all), comma separated ids or backends
#   BENCH_XFER_SIZE    bytes per copy (default 1G)
#   BENCH_XFER_REPS    runs per figure, median (default 5)
#   BENCH_PYTHON       a python with torch (default: /usr/bin/python3)
#   BENCH_FLAGS        more bench_xfer flags, e.g. -x to skip PoCL/llvmpipe
set -e
build=${1:-build}
size=${BENCH_XFER_SIZE:-1G}
py=${BENCH_PYTHON:-/usr/bin/python3}
peers=$(mktemp)
trap 'rm -f "$peers"' EXIT
echo "# gpuopt bench_xfer, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores"
if "$py" -c 'import torch,sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	"$py" bench/peer_torch.py --copies "$size" >"$peers" || true
	cat "$peers"
else
	echo "# no CUDA torch for $py: limit is a host memcpy, no peer column"
fi
"$build/bin/bench_xfer" -d "${BENCH_DEVICES:-all}" -s "$size" \
	-r "${BENCH_XFER_REPS:-5}" -p "$peers" $BENCH_FLAGS

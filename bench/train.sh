#!/bin/sh
# train.sh BUILD - bench_train's table: SGEMM and MLP training steps beside
# PyTorch on the same device.
#   BENCH_DEVICES   devices to measure (default: cpu)
#   BENCH_SIZES     SGEMM sizes (default 1024,4096,8192; cpu: 256,512)
#   BENCH_HSIZES    HGEMM sizes, f16 operands (tensor cores through
#                   Vulkan where the device has them): default 4096,8192
#                   (cpu: 256)
#   BENCH_MLPS      default 784x256x10@128,784x1024x1024x10@4096
#                   (cpu: 784x256x10@128)
#   BENCH_GPTS      byte-level GPTs LxHxDxT@BATCH, default 6x6x384x256@64
#                   (cpu: 2x2x64x64@8)
#   BENCH_PRODUCTS  single products MxNxK[ta][tb][@BATCH] (bench_train -M),
#                   default none
#   BENCH_ATTNS     causal attentions BHxTxHD (bench_train -A), default
#                   384x256x64 (cpu: none)
#   BENCH_COLSUMS   column sums ROWSxCOLS (bench_train -R), default
#                   16384x1536,16384x384 (cpu: 4096x384)
#   BENCH_PYTHON    a python with torch (default: /usr/bin/python3, Debian's)
# The peer runs on CUDA when the devices are GPUs and torch has CUDA, else
# on the CPU with as many threads as the cpu backend uses.
set -e
build=${1:-build}
devs=${BENCH_DEVICES:-cpu}
if [ "$devs" = cpu ]; then
	sizes=${BENCH_SIZES:-256,512}
	hsizes=${BENCH_HSIZES:-256}
	mlps=${BENCH_MLPS:-784x256x10@128}
	gpts=${BENCH_GPTS:-2x2x64x64@8}
	attns=${BENCH_ATTNS:-0}
	colsums=${BENCH_COLSUMS:-4096x384}
else
	sizes=${BENCH_SIZES:-1024,4096,8192}
	hsizes=${BENCH_HSIZES:-4096,8192}
	mlps=${BENCH_MLPS:-784x256x10@128,784x1024x1024x10@4096}
	gpts=${BENCH_GPTS:-6x6x384x256@64}
	attns=${BENCH_ATTNS:-384x256x64}
	colsums=${BENCH_COLSUMS:-16384x1536,16384x384}
fi
prods=${BENCH_PRODUCTS:-0}
py=${BENCH_PYTHON:-/usr/bin/python3}
peers=$(mktemp)
trap 'rm -f "$peers"' EXIT
echo "# gpuopt bench_train, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores"
if "$py" -c 'import torch' 2>/dev/null; then
	pdev=cpu
	if [ "$devs" != cpu ] &&
		"$py" -c 'import torch,sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
		pdev=cuda
	fi
	"$py" bench/train_torch.py --device $pdev --sizes "$sizes" \
		--hsizes "$hsizes" --mlps "$mlps" --gpts "$gpts" --products "$prods" \
		--attns "$attns" --colsums "$colsums" >>"$peers" || true
	cat "$peers"
else
	echo "# no torch for $py: no peer column (apt-get install python3-torch)"
fi
"$build/bin/bench_train" -d "$devs" -s "$sizes" -H "$hsizes" -m "$mlps" -g "$gpts" \
	-M "$prods" -A "$attns" -R "$colsums" -p "$peers" $BENCH_FLAGS

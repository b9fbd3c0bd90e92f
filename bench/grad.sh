#!/bin/sh
# grad.sh GPUOPTFS [NUMEL...] - the external `grad` path's throughput:
# whole-gradient writes (one step each) per second to a model=external
# job of NUMEL floats on cpu:0, through a fresh mount of GPUOPTFS. For
# comparing daemons (the worker process's cost): run it on each.
#   BENCH_GRAD_SECONDS  seconds a size (default 3)
#   BENCH_GRAD_DEVICE   the job's device (default cpu:0)
set -u
fs=${1:?usage: grad.sh GPUOPTFS [NUMEL...]}
shift
[ $# -gt 0 ] || set -- 1024 262144 4194304
T=$(mktemp -d /tmp/gpuopt-bench-grad.XXXXXX) || exit 1
M=$T/mnt
mkdir "$M"
"$fs" -f --state-dir "$T/state" "$M" 2>>"$T/daemon.log" &
FS_PID=$!
trap 'kill -TERM $FS_PID 2>/dev/null; wait $FS_PID 2>/dev/null; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
i=0
until mountpoint -q "$M"; do
	i=$((i + 1))
	[ $i -lt 500 ] || { echo "no mount" >&2; exit 1; }
	sleep 0.02
done
for n in "$@"; do
	mkdir "$M/jobs/g$n"
	printf 'model=external:w:%s device=%s optimizer=adam max_steps=max\n' \
		"$n" "${BENCH_GRAD_DEVICE:-cpu:0}" >"$M/jobs/g$n/config"
	/usr/bin/python3 - "$M/jobs/g$n/grad" "$n" "${BENCH_GRAD_SECONDS:-3}" <<'PY'
import os, sys, time, array, random
path, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
buf = array.array("f", (random.uniform(-1, 1) for _ in range(min(n, 4096))))
data = (buf.tobytes() * (n // len(buf) + 1))[: n * 4]
fd = os.open(path, os.O_WRONLY)
os.pwrite(fd, data, 0)			# builds the optimizer
steps, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    os.pwrite(fd, data, 0)
    steps += 1
dt = time.monotonic() - t0
os.close(fd)
print(f"numel {n:>8}  steps/s {steps / dt:10.1f}  MB/s {steps * n * 4 / dt / 1e6:8.1f}")
PY
done

#!/bin/sh
# memory_limit_bytes bounds a job's worker: a model too big for it is
# refused with ENOMEM before anything runs, and a worker whose memory
# runs away (GPUOPTFS_WORKER_FAULT=oom) stops at the limit and fails its
# job alone. The daemon's own memory does not grow with either.
. "$(dirname "$0")/lib.sh"
ldd "$(dirname "$GPUOPTFS")/gpuoptfs-worker" | grep -q libasan &&
	skip "ASan reserves terabytes of address space: no RLIMIT_AS test"
export GPUOPTFS_WORKER_FAULT=oom:leak
fs_start
rss0=$(awk '/^VmRSS/ { print $2 }' /proc/$FS_PID/status)
new_job big "model=quadratic:200000000 memory_limit_bytes=536870912 max_steps=10"
expect "limit shown" "$(grep '^memory_limit_bytes=' "$M/jobs/big/config")" \
	memory_limit_bytes=536870912
expect "start big" "$(w "$M/jobs/big/ctl" start)" ENOMEM
grep -qi 'memory' "$M/jobs/big/error" || fail "error: $(cat "$M/jobs/big/error")"
expect "big not running" "$(cat "$M/jobs/big/state")" created

new_job leak "model=quadratic:16 memory_limit_bytes=1073741824 max_steps=10"
new_job fine "model=quadratic:16 max_steps=50"
expect "step leak" "$(w "$M/jobs/leak/ctl" "step 1")" EIO
expect "leak" "$(cat "$M/jobs/leak/state")" failed
grep -q 'worker killed by SIGABRT.*out of memory after' "$M/jobs/leak/error" ||
	fail "error: $(cat "$M/jobs/leak/error")"
mib=$(sed 's/.*out of memory after \([0-9]*\) MiB.*/\1/' "$M/jobs/leak/error")
[ "$mib" -le 1024 ] || fail "the worker got $mib MiB past a 1 GiB limit"
expect "step fine" "$(w "$M/jobs/fine/ctl" "step 50")" OK
rss1=$(awk '/^VmRSS/ { print $2 }' /proc/$FS_PID/status)
[ $((rss1 - rss0)) -lt 65536 ] || fail "the daemon grew by $((rss1 - rss0)) kB"
expect "bad limit" "$(w "$M/jobs/fine/config" memory_limit_bytes=12)" EINVAL
fs_finish
echo PASS

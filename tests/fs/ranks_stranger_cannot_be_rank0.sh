#!/bin/sh
# Rank 0 reaches the daemon through an abstract unix socket whose name
# anyone can read in mpiexec's arguments: a process of another user that
# connects first gets nothing (no memfd, no checkpoints directory, no
# command) and is dropped, and the job's own rank 0 still gets in and
# trains. The stranger is started by a wrapper run in place of mpiexec
# (GPUOPTFS_MPIEXEC) before the real one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_root
command -v setpriv >/dev/null || skip "no setpriv"
command -v python3 >/dev/null || skip "no python3"
need_data
cat >"$T/stranger.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(10)
s.connect("\0" + sys.argv[1][1:])
try:
    msg, anc, flags, addr = s.recvmsg(64, socket.CMSG_SPACE(8))
    n = sum(len(d) // 4 for l, t, d in anc
            if l == socket.SOL_SOCKET and t == socket.SCM_RIGHTS)
    print("fds", n, "bytes", len(msg))
except Exception as e:
    print("error", type(e).__name__)
PY
cat >"$T/wrap.sh" <<EOF2
#!/bin/sh
for a; do case \$a in @gpuoptfs-*) sock=\$a ;; esac; done
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	python3 "$T/stranger.py" "\$sock" >"$T/stranger.out" 2>&1
exec $(command -v mpiexec) "\$@"
EOF2
chmod 755 "$T/wrap.sh" "$T/stranger.py"
GPUOPTFS_MPIEXEC=$T/wrap.sh fs_start
new_job r "model=mlp:784x16x10 data=$data batch_size=32 max_steps=max ranks=2"
expect "step" "$(w "$M/jobs/r/ctl" "step 3")" OK
expect "stepped" "$(stat_of r step)" 3
expect "the stranger got" "$(cat "$T/stranger.out")" "fds 0 bytes 0"
grep -q "a stranger (uid $(id -u nobody)) connected in place of rank 0" \
	"$T/daemon.log" || fail "no note of the stranger in the daemon's log"
fs_finish
echo PASS

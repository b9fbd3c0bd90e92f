#!/bin/sh
# With NOTIFY_SOCKET set (Type=notify), gpuoptfs sends READY=1 once, only
# when the mount answers, and STOPPING=1 at SIGTERM, before it exits.
# The listener freezes the sender (SIGSTOP) on READY=1 and looks in
# mountinfo: a READY sent before the mount is caught, not raced.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
python3 - "$T/notify" "$M" >"$T/notify.log" 2>&1 <<'PYEOF' &
import os, signal, socket, struct, sys
path, mnt = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
s.settimeout(60)


def mounted():
    with open("/proc/self/mountinfo") as f:
        return any(l.split()[4] == mnt for l in f)


while True:
    data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    msg = data.decode().splitlines()
    for line in msg:
        print(line, flush=True)
    if "READY=1" in msg:
        pid = [struct.unpack("3i", d)[0] for lvl, typ, d in anc
               if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS][0]
        # freeze the sender: what holds now held when it said READY
        os.kill(pid, signal.SIGSTOP)
        m = mounted()
        os.kill(pid, signal.SIGCONT)
        ok = m and open(mnt + "/version").read()
        print("checked " + ("answers" if ok else "not-mounted"), flush=True)
    if "STOPPING=1" in msg:
        break
PYEOF
LISTENER=$!
wait_for 10 test -S "$T/notify" || fail "no listener"
NOTIFY_SOCKET=$T/notify fs_start
wait_for 10 grep -q '^checked' "$T/notify.log" || fail "no READY=1: $(cat "$T/notify.log")"
expect "ready" "$(grep '^checked' "$T/notify.log")" "checked answers"
new_job n1 "model=quadratic:10 max_steps=3"
expect start "$(w "$M/jobs/n1/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/n1/state" || fail "not done"
fs_finish
wait $LISTENER || fail "listener: $(cat "$T/notify.log")"
expect "READY=1 once" "$(grep -c '^READY=1$' "$T/notify.log")" 1
expect "STOPPING=1 once" "$(grep -c '^STOPPING=1$' "$T/notify.log")" 1
[ "$(grep -n '^READY=1$' "$T/notify.log" | cut -d: -f1)" -lt \
  "$(grep -n '^STOPPING=1$' "$T/notify.log" | cut -d: -f1)" ] ||
	fail "STOPPING before READY: $(cat "$T/notify.log")"

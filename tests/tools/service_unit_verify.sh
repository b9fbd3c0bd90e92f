#!/bin/sh
# udev/gpuoptfs.service passes systemd-analyze verify with nothing to say
# (its programs pointed at this build), keeps the daemon in the foreground
# so that systemd's SIGTERM unmounts, limits privileges to what mounting
# needs, and creates no mount namespace (which would hide the mount).
. "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null ||
	skip "no systemd-analyze (tools/deps.sh installs systemd)"
unit=$TOP/udev/gpuoptfs.service

mkdir -p "$T/root/bin"
ln -s "$GPUOPTFS" "$T/root/bin/gpuoptfs"
sed "s|/usr/local/|$T/root/|g" "$unit" >"$T/gpuoptfs.service"
systemd-analyze verify --man=no "$T/gpuoptfs.service" >"$T/verify" 2>&1 ||
	fail "verify: $(cat "$T/verify")"
[ ! -s "$T/verify" ] || fail "verify says: $(cat "$T/verify")"
# the checker notices a broken unit
sed 's/^NoNewPrivileges=/NoNewPrivilege=/' "$T/gpuoptfs.service" >"$T/bad.service"
systemd-analyze verify --man=no "$T/bad.service" >"$T/verify" 2>&1
[ -s "$T/verify" ] || fail "verify missed an unknown key"

key() { sed -n "s/^$1=//p" "$unit"; }
expect "ExecStart" "$(key ExecStart)" \
	"/usr/local/bin/gpuoptfs --foreground --state-dir /var/lib/gpuopt /gpuopt"
expect "Type" "$(key Type)" notify
expect "NotifyAccess" "$(key NotifyAccess)" main
expect "NoNewPrivileges" "$(key NoNewPrivileges)" yes
expect "CapabilityBoundingSet" "$(key CapabilityBoundingSet)" CAP_SYS_ADMIN
expect "KillSignal" "$(key KillSignal)" ""	# SIGTERM: unmount, exit 0
expect "WantedBy" "$(key WantedBy)" multi-user.target
for k in ProtectSystem ProtectHome PrivateTmp PrivateDevices PrivateMounts \
	 ReadOnlyPaths ReadWritePaths InaccessiblePaths ProtectKernelTunables \
	 ProtectKernelModules ProtectKernelLogs ProtectControlGroups \
	 ProtectHostname ProtectProc ProtectClock MountFlags TemporaryFileSystem \
	 BindPaths RootDirectory MemoryDenyWriteExecute; do
	! grep -q "^$k=" "$unit" || fail "$k= hides the mount or breaks drivers"
done
if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
	systemd-analyze security --offline=yes --no-pager "$T/gpuoptfs.service" \
		>"$T/security" 2>&1 || true
	grep "Overall exposure level" "$T/security" || true
fi

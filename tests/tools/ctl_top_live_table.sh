#!/bin/sh
# top: plain frames in a pipe (-n, --once); on a terminal the alternate
# screen, redrawn each second, left with q and restored.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v script >/dev/null || skip "no script(1)"
fs_start
ok create spin model=quadratic:64 max_steps=max
ok start spin

ok top -n 2 -d 0.2
echo "$out" >"$T/top.txt"
no_escapes "$T/top.txt" || fail "escapes in a pipe"
expect "frames" "$(grep -c '^gpuoptctl top - ' "$T/top.txt")" 2
expect "device rows" "$(grep -c "^0  *cpu:0 " "$T/top.txt")" 2
expect "job rows" "$(awk '$1 == "spin" { print $2, $3 }' "$T/top.txt" | sort -u)" \
	"root running"
grep -q "jobs 1 (1 running)" "$T/top.txt" || fail "summary: $(head -n 1 "$T/top.txt")"
ok top --once
expect "once" "$(echo "$out" | grep -c '^gpuoptctl top - ')" 1

# a terminal: q quits long before -n 100 frames would; -d 0.2 so a loaded
# machine still draws several frames before the q arrives
t0=$(date +%s)
(sleep 1.5; printf q) | timeout 20 script -qec "$C top -d 0.2 -n 100" /dev/null \
	>"$T/tty.txt" || fail "top on a tty: exit $?"
[ $(($(date +%s) - t0)) -lt 10 ] || fail "q did not quit"
esc=$(printf '\033')
grep -q "$esc\[?1049h" "$T/tty.txt" || fail "no alternate screen"
grep -q "$esc\[?1049l" "$T/tty.txt" ||
	fail "screen not restored"
grep -q "$esc\[?25h" "$T/tty.txt" || fail "cursor not shown again"
[ "$(grep -o "$esc\[H" "$T/tty.txt" | wc -l)" -ge 2 ] || fail "not redrawn"
grep -q "spin  *root  *running" "$T/tty.txt" || fail "no job row"
ok stop spin
fs_finish

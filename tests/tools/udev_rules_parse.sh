#!/bin/sh
# udev/70-gpuopt.rules parses: every line is comma-separated KEY[{ATTR}]OP"VALUE"
# tokens of keys udev knows, with operators those keys take (udev(7),
# systemd 252), modes in octal, group names, GOTOs to LABELs, and RUN
# programs that exist. `udevadm verify` came with systemd 253 and
# `udevadm test` needs a live udev, so this checker stands in; it is
# itself checked on lines it must refuse. The helper gpuopt-rescan writes
# rescan to a live tree and does nothing without one.
. "$(dirname "$0")/lib.sh"
rules=$TOP/udev/70-gpuopt.rules

cat >"$T/check.awk" <<'EOA'
# check.awk: one message per bad line, "FILE:LINE: why"; exit 1 if any
function bad(msg) { printf "%s:%d: %s\n", FILENAME, lineno, msg; errors++ }
function ops_ok(key, op,    m, a) {
	m = (op == "==" || op == "!=")
	a = (op == "=" || op == "+=" || op == "-=" || op == ":=")
	if (key ~ /^(ACTION|DEVPATH|KERNEL|KERNELS|SUBSYSTEM|SUBSYSTEMS|DRIVER|DRIVERS|ATTRS|TAGS|CONST|TEST|PROGRAM|RESULT)$/)
		return m
	if (key ~ /^(OWNER|GROUP|MODE)$/)
		return op == "=" || op == ":="
	if (key ~ /^(LABEL|GOTO)$/)
		return op == "="
	if (key ~ /^(RUN|OPTIONS|SECLABEL)$/)
		return op == "=" || op == "+=" || op == ":="
	if (key ~ /^(ATTR|SYSCTL)$/)
		return m || op == "="
	if (key == "ENV")
		return m || op == "=" || op == "+=" || op == ":="
	if (key == "NAME")
		return m || op == "=" || op == ":="
	if (key ~ /^(SYMLINK|TAG)$/)
		return m || a
	if (key == "IMPORT")
		return m || op == "="
	return -1
}
function attr_rule(key, attr) {
	if (key ~ /^(ATTR|ATTRS|SYSCTL|ENV|CONST|IMPORT|SECLABEL)$/ && attr == "")
		bad(key " needs {name}")
	if (key !~ /^(ATTR|ATTRS|SYSCTL|ENV|CONST|IMPORT|SECLABEL|TEST|RUN)$/ &&
	    attr != "")
		bad(key " takes no {" attr "}")
	if (key == "RUN" && attr != "" && attr !~ /^(program|builtin)$/)
		bad("RUN{" attr "}: program or builtin")
	if (key == "IMPORT" && attr !~ /^(program|builtin|file|db|cmdline|parent)$/)
		bad("IMPORT{" attr "}: no such type")
}
function value_rule(key, op, v) {
	if (key == "MODE" && v !~ /^0?[0-7][0-7][0-7]$/)
		bad("MODE \"" v "\" is not octal")
	if (key == "GROUP" && v !~ /^[a-z_][a-z0-9_-]*$/ && v !~ /^[0-9]+$/)
		bad("GROUP \"" v "\" is not a group name")
	if (key == "LABEL") labels[v] = 1
	if (key == "GOTO") { gotos[v] = lineno; if (v in labels) bad("GOTO backwards: " v) }
	if (key == "RUN") runs[v] = lineno
	if (key ~ /^(KERNEL|SUBSYSTEM|DRIVER|ACTION)$/ && v ~ /\[[^]]*$/)
		bad(key " pattern \"" v "\" has an open [")
	if (v == "" && key != "ENV")
		bad(key " with an empty value")
}
{ lineno = FNR }
/\\$/ { sub(/\\$/, ""); held = held $0; next }
{
	line = held $0; held = ""
	if (line ~ /^[ \t]*(#|$)/) next
	if (line ~ /[ \t]$/) bad("trailing white space")
	rest = line; n = 0
	while (rest != "") {
		if (!match(rest, /^[ \t]*[A-Z_]+([{][^}"]*[}])?[ \t]*(==|!=|\+=|-=|:=|=)[ \t]*"([^"\\]|\\.)*"[ \t]*/)) {
			bad("cannot parse at '" rest "'"); break
		}
		tok = substr(rest, 1, RLENGTH); rest = substr(rest, RLENGTH + 1)
		n++
		gsub(/^[ \t]+|[ \t]+$/, "", tok)
		match(tok, /^[A-Z_]+/); key = substr(tok, 1, RLENGTH); tok = substr(tok, RLENGTH + 1)
		attr = ""
		if (tok ~ /^[{]/) { match(tok, /^[{][^}]*[}]/); attr = substr(tok, 2, RLENGTH - 2); tok = substr(tok, RLENGTH + 1) }
		sub(/^[ \t]+/, "", tok)
		match(tok, /^(==|!=|\+=|-=|:=|=)/); op = substr(tok, 1, RLENGTH); tok = substr(tok, RLENGTH + 1)
		sub(/^[ \t]*"/, "", tok); sub(/"$/, "", tok)
		r = ops_ok(key, op)
		if (r < 0) bad("unknown key " key)
		else if (!r) bad(key " does not take " op)
		attr_rule(key, attr)
		value_rule(key, op, tok)
		if (rest == "") break
		if (rest !~ /^,/) { bad("no comma before '" rest "'"); break }
		rest = substr(rest, 2)
		if (rest ~ /^[ \t]*$/) { bad("a comma at the end"); break }
	}
	if (n && !assigns(line)) bad("a rule that assigns nothing")
}
function assigns(l) { return l ~ /[A-Z}][ \t]*(\+=|:=|-=|=)[ \t]*"/ }
END {
	for (g in gotos) if (!(g in labels)) { lineno = gotos[g]; bad("GOTO to no LABEL " g) }
	for (r in runs) print "RUN " r > "/dev/stderr"
	exit errors > 0
}
EOA

# the checker refuses what udev would
i=0
while IFS= read -r line; do
	i=$((i + 1))
	printf '%s\n' "$line" >"$T/bad$i.rules"
	awk -f "$T/check.awk" "$T/bad$i.rules" >/dev/null 2>&1 &&
		fail "the checker took: $line"
done <<'EOB'
KERNEL="fuse", MODE="0660"
GROUP=="gpuopt", MODE="0660"
KERNEL=="fuse", MODE="660x"
KERNEL=="fuse", GROUP="gpu opt"
FOO=="bar", MODE="0660"
ENV=="x", MODE="0660"
KERNEL{a}=="x", MODE="0660"
KERNEL=="x" GROUP="gpuopt"
KERNEL=="x", GROUP="gpuopt
KERNEL=="x", GOTO="nowhere"
KERNEL=="x", GROUP="gpuopt",
KERNEL=="renderD[0-9*", GROUP="gpuopt"
KERNEL=="x", RUN{shell}+="/bin/true"
SUBSYSTEM=="drm"
EOB
printf 'KERNEL=="x", GROUP="g", MODE="0660"\nGOTO="e"\nLABEL="e"\n' \
	>"$T/good.rules"
awk -f "$T/check.awk" "$T/good.rules" 2>/dev/null ||
	fail "the checker refused good rules"

# the rules
awk -f "$T/check.awk" "$rules" 2>"$T/runs" || fail "$rules does not parse"
# access is only added (udev_rules_only_add.sh checks it device by
# device): an ACL entry for the gpuopt group, never GROUP or MODE (these
# greps asserted GROUP="gpuopt", MODE="0660" before issue 15)
acl='RUN+="/bin/setfacl -m g:gpuopt:rw $env{DEVNAME}"'
grep -qF "SUBSYSTEM==\"drm\", KERNEL==\"renderD[0-9]*\", $acl" "$rules" ||
	fail "render nodes"
grep -qF "SUBSYSTEM==\"kfd\", KERNEL==\"kfd\", $acl" "$rules" || fail "kfd"
grep -qF "KERNEL==\"nvidia[0-9]*|nvidiactl|nvidia-uvm|nvidia-uvm-tools|nvidia-modeset\", $acl" \
	"$rules" || fail "nvidia"
! grep -q '^[^#]*KERNEL=="fuse"' "$rules" || fail "a rule for /dev/fuse"
! grep -q '^[^#]*\(OWNER\|GROUP\|MODE\)[:+-]\?="' "$rules" ||
	fail "OWNER, GROUP or MODE set"
grep -q 'ACTION=="add|remove", SUBSYSTEM=="drm", KERNEL=="renderD\[0-9\]\*", RUN+=' \
	"$rules" || fail "no rescan on render node add/remove"
# every RUN program is the helper (a shell script here) or setfacl
sed -n 's/^RUN //p' "$T/runs" >"$T/runlist"
[ -s "$T/runlist" ] || fail "no RUN"
while read -r r args; do
	case $r in
	/bin/setfacl)
		[ "$args" = '-m g:gpuopt:rw $env{DEVNAME}' ] ||
			fail "RUN $r $args: not the gpuopt grant"
		continue ;;
	/usr/local/lib/udev/*) h=$TOP/udev/${r##*/} ;;
	*) fail "RUN $r: neither setfacl nor under /usr/local/lib/udev" ;;
	esac
	[ -z "$args" ] || fail "RUN $r: arguments '$args'"
	[ -x "$h" ] || fail "RUN $r: no executable $h"
	sh -n "$h" || fail "$h: syntax"
done <"$T/runlist"

# the helper: nothing mounted is fine; a live tree rescans
GPUOPT_MNT=$T/nothing sh "$TOP/udev/gpuopt-rescan" || fail "helper without a tree"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || exit 0
fs_start
GPUOPT_MNT=$M sh "$TOP/udev/gpuopt-rescan" || fail "helper"
wait_for 5 grep -q "rescan: " "$T/daemon.log" || fail "no rescan"
fs_finish

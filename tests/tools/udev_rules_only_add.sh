#!/bin/sh
# udev/70-gpuopt.rules only adds access (issue 15): for every device node
# gpuopt cares about, Debian's 50-udev-default.rules followed by ours gives
# the same OWNER, GROUP and MODE as Debian's alone; no rule of ours
# assigns OWNER, GROUP or MODE to anything, nor runs a program that could
# change them (chmod, chown, chgrp, a setfacl that removes or replaces);
# render nodes, /dev/kfd and NVIDIA's nodes get the ACL grant
# group:gpuopt:rw and nothing else; /dev/fuse and card nodes get nothing.
#
# A small evaluator stands in for udev (systemd 252 has no `udevadm
# verify`, and `udevadm test` needs a live udev and the real devices):
# per device it walks the files' rules in order with udev's glob
# patterns, | alternatives, GOTO and LABEL, and prints what the matching
# rules assign. It is checked against Debian's file first: what it finds
# there is what Debian gives (render nodes and kfd 0660 root:render,
# fuse 0666). Debian's file comes from the udev package
# (/usr/lib/udev/rules.d or /lib/udev/rules.d); without it, the lines of
# Debian 12's file (udev 252.39) for these devices stand in. Where
# `udevadm verify` exists (systemd 253 and later) it checks the file too.
. "$(dirname "$0")/lib.sh"
rules=$TOP/udev/70-gpuopt.rules

debian=
for d in /usr/lib/udev/rules.d /lib/udev/rules.d; do
	[ -r "$d/50-udev-default.rules" ] && { debian=$d/50-udev-default.rules; break; }
done
if [ -z "$debian" ]; then
	echo "no 50-udev-default.rules (package udev): Debian 12's lines stand in"
	debian=$T/50-udev-default.rules
	cat >"$debian" <<'EOD'
ACTION=="remove", GOTO="default_end"
ACTION!="add", GOTO="default_end"
SUBSYSTEM=="drm", KERNEL!="renderD*", GROUP="video"
SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"
SUBSYSTEM=="kfd", GROUP="render", MODE="0660"
KERNEL=="fuse", MODE="0666", OPTIONS+="static_node=fuse"
LABEL="default_end"
EOD
fi

cat >"$T/eval.awk" <<'EOA'
# eval.awk -v action= -v subsystem= -v kernel= -v devname= FILE...: for
# each rule of FILE that matches the device, one line per assignment:
# "FILE:LINE KEY[{ATTR}] OP VALUE". Match keys it cannot evaluate (ATTR,
# TEST, PROGRAM, ...) count as matching, so nothing hides behind them.
function glob_re(g,    r, i, c, inclass) {
	r = ""; inclass = 0
	for (i = 1; i <= length(g); i++) {
		c = substr(g, i, 1)
		if (inclass) {
			if (c == "]") inclass = 0
			else if (c == "\\") c = "\\\\"
			r = r c; continue
		}
		if (c == "*") r = r ".*"
		else if (c == "?") r = r "."
		else if (c == "[") {
			inclass = 1; r = r c
			if (substr(g, i + 1, 1) == "!") { r = r "^"; i++ }
		} else if (c ~ /[.^$+(){}\\|\/]/) r = r "\\" c
		else r = r c
	}
	return "^" r "$"
}
function glob(v, pat,    n, alt, i) {
	n = split(pat, alt, "|")
	if (n == 0) return v == ""
	for (i = 1; i <= n; i++)
		if (v ~ glob_re(alt[i])) return 1
	return 0
}
function known(key, attr) {
	if (key == "ACTION") { val = action; return 1 }
	if (key == "SUBSYSTEM") { val = subsystem; return 1 }
	if (key == "KERNEL") { val = kernel; return 1 }
	if (key == "ENV" && attr == "DEVNAME") { val = devname; return 1 }
	if (key == "ENV" && attr == "SUBSYSTEM") { val = subsystem; return 1 }
	return 0
}
FNR == 1 { skipto = ""; held = "" }
/\\$/ { sub(/\\$/, ""); held = held $0; next }
{
	line = held $0; held = ""; where = FILENAME ":" FNR
	if (line ~ /^[ \t]*(#|$)/) next
	n = 0; ok = 1
	rest = line
	while (match(rest, /[A-Z_]+([{][^}]*[}])?[ \t]*(==|!=|\+=|-=|:=|=)[ \t]*"([^"\\]|\\.)*"/)) {
		tok = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
		match(tok, /^[A-Z_]+/); key = substr(tok, 1, RLENGTH); tok = substr(tok, RLENGTH + 1)
		attr = ""
		if (tok ~ /^[{]/) { match(tok, /^[{][^}]*[}]/); attr = substr(tok, 2, RLENGTH - 2); tok = substr(tok, RLENGTH + 1) }
		sub(/^[ \t]+/, "", tok)
		match(tok, /^(==|!=|\+=|-=|:=|=)/); op = substr(tok, 1, RLENGTH); tok = substr(tok, RLENGTH + 1)
		sub(/^[ \t]*"/, "", tok); sub(/"$/, "", tok)
		n++; k[n] = key; a[n] = attr; o[n] = op; v[n] = tok
	}
	if (skipto != "") {
		for (i = 1; i <= n; i++)
			if (k[i] == "LABEL" && v[i] == skipto) skipto = ""
		next
	}
	for (i = 1; i <= n && ok; i++) {
		if (o[i] != "==" && o[i] != "!=") continue
		if (!known(k[i], a[i])) continue
		m = glob(val, v[i])
		if ((o[i] == "==") != m) ok = 0
	}
	if (!ok) next
	for (i = 1; i <= n; i++) {
		if (o[i] == "==" || o[i] == "!=" || k[i] == "LABEL") continue
		if (k[i] == "GOTO") { skipto = v[i]; continue }
		printf "%s %s%s %s %s\n", where, k[i], (a[i] == "" ? "" : "{" a[i] "}"), o[i], v[i]
	}
}
EOA

# final PERMS: OWNER, GROUP and MODE as udev leaves them (the last "="
# wins, ":=" is final), from eval.awk's lines on stdin
cat >"$T/perms.awk" <<'EOA'
$2 ~ /^(OWNER|GROUP|MODE)$/ && !($2 in fin) {
	val[$2] = $4
	if ($3 == ":=") fin[$2] = 1
}
END { printf "OWNER=%s GROUP=%s MODE=%s\n", val["OWNER"], val["GROUP"], val["MODE"] }
EOA

# dev ACTION SUBSYSTEM KERNEL DEVNAME FILE...: eval.awk's lines
dev()
{
	a=$1 s=$2 k=$3 d=$4
	shift 4
	awk -v action="$a" -v subsystem="$s" -v kernel="$k" -v devname="$d" \
		-f "$T/eval.awk" "$@" 2>"$T/awk.err" || fail "eval.awk: $(cat "$T/awk.err")"
}

# the evaluator on rules it must read right
cat >"$T/self.rules" <<'EOS'
ACTION!="add", GOTO="end"
SUBSYSTEM=="drm", KERNEL!="renderD*", GROUP="video"
SUBSYSTEM=="drm|kfd", KERNEL=="renderD[0-9]*|kfd", GROUP="render", \
  MODE="0660"
KERNEL=="fus?", MODE:="0666"
KERNEL=="fuse", MODE="0600"
ATTR{x}=="y", KERNEL=="kfd", OWNER="nobody"
KERNEL=="renderD[!0-9]*", MODE="0600"
LABEL="end"
KERNEL=="renderD*", RUN+="/bin/true $env{DEVNAME}"
EOS
expect "self renderD128" "$(dev add drm renderD128 /dev/dri/renderD128 "$T/self.rules" | awk -f "$T/perms.awk")" \
	"OWNER= GROUP=render MODE=0660"
expect "self card0" "$(dev add drm card0 /dev/dri/card0 "$T/self.rules" | awk -f "$T/perms.awk")" \
	"OWNER= GROUP=video MODE="
expect "self kfd" "$(dev add kfd kfd /dev/kfd "$T/self.rules" | awk -f "$T/perms.awk")" \
	"OWNER=nobody GROUP=render MODE=0660"
expect "self fuse" "$(dev add misc fuse /dev/fuse "$T/self.rules" | awk -f "$T/perms.awk")" \
	"OWNER= GROUP= MODE=0666"
expect "self change" "$(dev change drm renderD128 /dev/dri/renderD128 "$T/self.rules" | cut -d' ' -f2-)" \
	'RUN += /bin/true $env{DEVNAME}'

# Debian's file, as the evaluator reads it
deb()
{
	dev add "$1" "$2" "$3" "$debian" | awk -f "$T/perms.awk"
}
expect "Debian renderD128" "$(deb drm renderD128 /dev/dri/renderD128)" \
	"OWNER= GROUP=render MODE=0660"
expect "Debian kfd" "$(deb kfd kfd /dev/kfd)" "OWNER= GROUP=render MODE=0660"
expect "Debian fuse" "$(deb misc fuse /dev/fuse)" "OWNER= GROUP= MODE=0666"
expect "Debian card0" "$(deb drm card0 /dev/dri/card0)" "OWNER= GROUP=video MODE="

# no assignment of OWNER, GROUP or MODE anywhere in ours, whatever matches
grep -n '^[^#]*\(OWNER\|GROUP\|MODE\)[ 	]*\(=\|+=\|-=\|:=\)[ 	]*"' "$rules" &&
	fail "our rules assign OWNER, GROUP or MODE (lines above)"
# no program that changes owners, modes or takes ACL entries away
grep -n '^[^#]*RUN[^=]*=[^,]*\(chmod\|chown\|chgrp\|setfacl[^"]* -[bkxX]\|setfacl[^"]* --\(set\|remove\)\)' \
	"$rules" && fail "our rules run a program that takes access away (lines above)"

# device by device, for the events that set permissions
for ev in add change; do
	while read -r s k d want; do
		base=$(dev "$ev" "$s" "$k" "$d" "$debian" | awk -f "$T/perms.awk")
		both=$(dev "$ev" "$s" "$k" "$d" "$debian" "$rules" | awk -f "$T/perms.awk")
		expect "$ev $d: Debian's then ours" "$both" "$base"
		dev "$ev" "$s" "$k" "$d" "$rules" >"$T/ours"
		grep ' \(OWNER\|GROUP\|MODE\) ' "$T/ours" && fail "$ev $d: ours set the above"
		acls=$(grep -c ' RUN += /bin/setfacl -m g:gpuopt:rw \$env{DEVNAME}$' "$T/ours")
		others=$(grep -v ' RUN += /bin/setfacl -m g:gpuopt:rw \$env{DEVNAME}$' "$T/ours" |
			grep -v ' RUN += /usr/local/lib/udev/gpuopt-rescan$')
		[ -z "$others" ] || fail "$ev $d: ours do more than grant: $others"
		expect "$ev $d: gpuopt ACL grants" "$acls" "$want"
	done <<'EOD'
drm renderD128 /dev/dri/renderD128 1
drm renderD129 /dev/dri/renderD129 1
kfd kfd /dev/kfd 1
- nvidia0 /dev/nvidia0 1
- nvidiactl /dev/nvidiactl 1
- nvidia-uvm /dev/nvidia-uvm 1
misc fuse /dev/fuse 0
drm card0 /dev/dri/card0 0
drm card1 /dev/dri/card1 0
EOD
done
# nothing at all for /dev/fuse, on any event
for ev in add change remove; do
	dev "$ev" misc fuse /dev/fuse "$rules" >"$T/ours"
	[ ! -s "$T/ours" ] || fail "$ev /dev/fuse: ours do $(cat "$T/ours")"
done
# and no grant on remove (the node is gone)
dev remove drm renderD128 /dev/dri/renderD128 "$rules" | grep setfacl &&
	fail "a grant on remove"

# udev's own parser, where it has one that reads a file
if command -v udevadm >/dev/null && udevadm verify --help >/dev/null 2>&1; then
	udevadm verify --resolve-names=never "$rules" >"$T/verify" 2>&1 ||
		fail "udevadm verify: $(cat "$T/verify")"
else
	echo "no udevadm verify (systemd < 253): udev_rules_parse.sh's checker only"
fi
exit 0

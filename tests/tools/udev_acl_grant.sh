#!/bin/sh
# The ACL grant of udev/70-gpuopt.rules, run as udev would run it (its RUN
# line split on blanks, $env{DEVNAME} the node) on stand-ins for the nodes
# in a tmpfs (what devtmpfs is), for a temporary group in place of gpuopt:
# owner, group and mode stay as they were, getfacl shows the one new entry
# group:GROUP:rw- with a mask that lets it work, every other entry is
# unchanged, and running it again (a change event) changes nothing. As
# root: a user in the group can open the node read-write, one outside it
# no more than the mode lets them (nothing on a 0660 node), one in the
# node's own group as before. Without setfacl (package acl) this skips,
# or fails under CI (GPUOPT_TEST_REQUIRE set).
. "$(dirname "$0")/lib.sh"
rules=$TOP/udev/70-gpuopt.rules

need()
{
	[ -z "${GPUOPT_TEST_REQUIRE-}" ] || fail "$1 (CI needs the package acl)"
	skip "$1"
}

# the grant as the rules write it: one command for every node
cmd=$(sed -n 's/^[^#]*RUN+="\([^"]*setfacl[^"]*\)".*/\1/p' "$rules" | sort -u)
[ -n "$cmd" ] || fail "no setfacl in $rules"
[ "$(printf '%s\n' "$cmd" | wc -l)" -eq 1 ] || fail "grants differ: $cmd"
set -f
# shellcheck disable=SC2086
set -- $cmd
set +f
expect "the grant" "$*" '/bin/setfacl -m g:gpuopt:rw $env{DEVNAME}'
prog=$1

if [ -x "$prog" ]; then
	setfacl=$prog
elif setfacl=$(command -v setfacl); then
	[ -z "${GPUOPT_TEST_REQUIRE-}" ] ||
		fail "setfacl is $setfacl, but the rules run $prog"
	echo "no $prog; $setfacl stands in"
else
	need "no $prog"
fi
command -v getfacl >/dev/null || need "no getfacl"
command -v stat >/dev/null || fail "no stat"

# a temporary group: a real one as root (named, as gpuopt is), else a
# gid that names no group
grp='' gid='' made=''
if [ "$(id -u)" = 0 ] && command -v groupadd >/dev/null; then
	grp=gpotest$$
	groupadd -r "$grp" 2>"$T/groupadd" || fail "groupadd: $(cat "$T/groupadd")"
	made=$grp
	gid=$(getent group "$grp" | cut -d: -f3)
	[ -n "$gid" ] || fail "no gid for $grp"
else
	gid=61000
	while getent group "$gid" >/dev/null; do gid=$((gid + 1)); done
	grp=$gid
fi

D=
finish()
{
	[ -z "$D" ] || rm -rf "$D"
	[ -z "$made" ] || groupdel "$made" 2>/dev/null
	cleanup
}
trap finish EXIT

D=$(mktemp -d /dev/shm/gpuopt-acl.XXXXXX 2>/dev/null) || D=$(mktemp -d "$T/nodes.XXXXXX") ||
	fail "mktemp"
chmod 755 "$D"
root=0
[ "$(id -u)" = 0 ] && root=1
# the node's own group: video where there is one (Debian's for card*),
# else the caller's
owngid=$(id -g)
if [ $root = 1 ]; then
	owngid=$(getent group video | cut -d: -f3)
	[ -n "$owngid" ] || owngid=44
fi

# grant NODE: the rules' command with gpuopt and $env{DEVNAME} replaced
grant()
{
	"$setfacl" "$2" "$(printf '%s' "$3" | sed "s/^g:gpuopt:/g:$grp:/")" "$NODE" \
		2>"$T/setfacl" || {
		case $(cat "$T/setfacl") in
		*"Operation not supported"*) need "no ACLs on $(df -P "$D" | tail -n 1)" ;;
		esac
		fail "setfacl on $NODE: $(cat "$T/setfacl")"
	}
}

# as UID with GROUPS (a comma list, or "" for none): can NODE be opened
# read-write?
opens()
{
	if [ -n "$2" ]; then
		setpriv --reuid="$1" --regid="$1" --groups="$2" \
			sh -c ': <>"$1"' sh "$NODE" 2>/dev/null
	else
		setpriv --reuid="$1" --regid="$1" --clear-groups \
			sh -c ': <>"$1"' sh "$NODE" 2>/dev/null
	fi
}

# render nodes and kfd as Debian makes them, NVIDIA's as the driver does
for node in renderD128:0660 kfd:0660 nvidia0:0666; do
	NODE=$D/${node%:*}
	mode=${node#*:}
	: >"$NODE"
	chmod "$mode" "$NODE"
	[ $root = 0 ] || chgrp "$owngid" "$NODE" || fail "chgrp"
	before=$(stat -c '%a %u %g' "$NODE")
	getfacl -cpn "$NODE" 2>/dev/null >"$T/acl.before" || fail "getfacl"

	grant "$@"	# add
	after=$(stat -c '%a %u %g' "$NODE")
	expect "${NODE##*/}: mode, owner, group after the grant" "$after" "$before"
	getfacl -cpn "$NODE" 2>/dev/null >"$T/acl.after" || fail "getfacl"
	expect "${NODE##*/}: entries for the group" \
		"$(grep -c "^group:$gid:" "$T/acl.after")" 1
	grep -q "^group:$gid:rw-\$" "$T/acl.after" ||
		fail "${NODE##*/}: no group:$gid:rw- in $(cat "$T/acl.after")"
	grep -q '^mask::rw-$' "$T/acl.after" ||
		fail "${NODE##*/}: the mask hides the grant: $(cat "$T/acl.after")"
	expect "${NODE##*/}: the other entries" \
		"$(grep -v -e "^group:$gid:" -e '^mask::' "$T/acl.after")" \
		"$(cat "$T/acl.before")"
	if [ -n "$made" ]; then
		getfacl -cp "$NODE" 2>/dev/null | grep -q "^group:$grp:rw-\$" ||
			fail "${NODE##*/}: getfacl does not name group:$grp"
	fi

	grant "$@"	# change: the same again
	expect "${NODE##*/}: mode, owner, group after a second grant" \
		"$(stat -c '%a %u %g' "$NODE")" "$before"
	getfacl -cpn "$NODE" 2>/dev/null >"$T/acl.again"
	cmp -s "$T/acl.after" "$T/acl.again" ||
		fail "${NODE##*/}: a second grant changed $(cat "$T/acl.again")"

	# who may open it
	[ $root = 1 ] && command -v setpriv >/dev/null || continue
	opens 65534 "$gid" || fail "${NODE##*/}: a member of $grp cannot open it"
	opens 65534 "$owngid" ||
		fail "${NODE##*/}: a member of its own group cannot open it"
	if [ "$mode" = 0666 ]; then
		opens 65534 "" || fail "${NODE##*/}: others lost access"
	else
		! opens 65534 "" || fail "${NODE##*/}: others gained access"
	fi
done
[ $root = 1 ] && command -v setpriv >/dev/null ||
	echo "not root or no setpriv: who may open the nodes is not checked"
exit 0

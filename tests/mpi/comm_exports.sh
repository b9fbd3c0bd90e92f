#!/bin/sh
# libgpuopt-mpi.a defines every function gpuopt/comm.h declares, and only
# gpo_/gpo__ globals; each has a man page that names it; the plain
# library (libgpuopt.a, libgpuopt.so) neither calls nor links MPI.
. "$(dirname "$0")/lib.sh"
command -v nm >/dev/null || skip "no nm (binutils)"
a=$MPI_BUILD/lib/libgpuopt-mpi.a
[ -e "$a" ] || fail "no $a"
grep -hEo '^[a-z][a-z0-9_ *]*[ *]gpo_[a-z0-9_]+\(' \
	"$TOP/libgpuopt/include/gpuopt/comm.h" | grep -Eo 'gpo_[a-z0-9_]+\($' |
	tr -d '(' | sort -u >"$T/hdr"
[ "$(wc -l <"$T/hdr")" -ge 7 ] || fail "comm.h: $(cat "$T/hdr")"
nm -g --defined-only "$a" | awk '$2 == "T" { print $3 }' | sort -u >"$T/def"
missing=$(comm -23 "$T/hdr" "$T/def" | tr '\n' ' ')
[ -z "$missing" ] || fail "declared, not defined: $missing"
bad=$(nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | grep -v '^gpo_' |
	grep -v '^__odr_asan' | tr '\n' ' ')
[ -z "$bad" ] || fail "globals without gpo_: $bad"
man=$TOP/libgpuopt/man
for f in $(cat "$T/hdr"); do
	page=$man/$f.3
	[ -e "$page" ] || fail "no man page $f.3"
	t=$(sed -n 's|^\.so man3/\(.*\)$|\1|p' "$page")
	[ -z "$t" ] || page=$man/$t
	awk '/^\.SH NAME/ { n = 1; next } /^\.SH/ { n = 0 } n' "$page" |
		grep -qw "$f" || fail "$f not in $(basename "$page")'s NAME"
done
for lib in "$PLAIN_BUILD/lib/libgpuopt.a" "$MPI_BUILD/lib/libgpuopt.a"; do
	[ -e "$lib" ] || continue
	u=$(nm -u "$lib" 2>/dev/null | grep -c 'MPI_\|ompi_')
	[ "$u" -eq 0 ] || fail "$lib refers to MPI"
done
so=$PLAIN_BUILD/lib/libgpuopt.so
if [ -e "$so" ]; then
	! objdump -p "$so" 2>/dev/null | grep -q 'NEEDED.*libmpi' ||
		fail "$so links libmpi"
fi
echo "ok: $(wc -l <"$T/hdr") functions"

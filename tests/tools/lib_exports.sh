#!/bin/sh
# The library exports exactly what libgpuopt.map names: (a) the shared
# library's dynamic symbols are the map's names, no more, no fewer; (b)
# every function gpuopt.h declares is in the map; (c) every global that
# libgpuopt.a defines is gpo_* (public, in the map) or gpo__* (private);
# (d) every exported function has a man page or an alias page under
# libgpuopt/man; (e) a program with its own parse_double, pool_alloc,
# kv_next and device_open links beside the whole of libgpuopt.a and runs.
. "$(dirname "$0")/lib.sh"
so=$BUILD/lib/libgpuopt.so
a=$BUILD/lib/libgpuopt.a
map=$TOP/libgpuopt/libgpuopt.map
hdr=$TOP/libgpuopt/include/gpuopt.h
hdrs=$TOP/libgpuopt/include/gpuopt	# the sub-headers gpuopt.h includes
man=$TOP/libgpuopt/man
[ -e "$so" ] && [ -e "$a" ] || fail "no $so or $a"
command -v nm >/dev/null || skip "no nm (binutils)"

# the names between "global:" and "local:", comments removed
sed -e 's|/\*.*\*/||g' -e 's|^ *\*.*||' -e 's|^/\*.*||' "$map" |
	awk '/global:/ { g = 1; next } /local:/ { g = 0 } g' |
	tr -d ' \t;' | grep -v '^$' | sort -u >"$T/map"
# (the function's name is the last gpo_ word: "struct gpo_tensor *gpo_add(")
# (gpuopt/comm.h is libgpuopt-mpi's: tests/mpi/comm_exports.sh)
grep -hEo '^[a-z][a-z0-9_ *]*[ *]gpo_[a-z0-9_]+\(' "$hdr" \
	$(ls "$hdrs"/*.h | grep -v '/comm\.h$') |
	grep -Eo 'gpo_[a-z0-9_]+\($' | tr -d '(' | sort -u >"$T/hdr"
nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	sort -u >"$T/so"
[ -s "$T/map" ] && [ -s "$T/hdr" ] && [ -s "$T/so" ] || fail "empty lists"

errs=0
report()
{
	if [ -s "$2" ]; then
		echo "$1: $(tr '\n' ' ' <"$2")"
		errs=$((errs + 1))
	fi
}

# (a) Names the map holds for functions no header declares yet (added
# ahead of a branch that brings them) are only noted; once gpuopt.h
# declares one, the library must define it.
comm -23 "$T/so" "$T/map" >"$T/extra"
comm -13 "$T/so" "$T/map" >"$T/unbuilt"
comm -12 "$T/unbuilt" "$T/hdr" >"$T/missing"
comm -23 "$T/unbuilt" "$T/hdr" >"$T/pending"
report "exported but not in libgpuopt.map" "$T/extra"
report "in libgpuopt.map and gpuopt.h but not exported" "$T/missing"
[ -s "$T/pending" ] &&
	echo "note: in libgpuopt.map, not yet declared or defined: $(tr '\n' ' ' <"$T/pending")"

# (b)
comm -23 "$T/hdr" "$T/map" >"$T/unmapped"
report "declared in gpuopt.h but not in libgpuopt.map" "$T/unmapped"

# (c) defined globals: text, data, bss, read-only, weak, common
nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | sort -u >"$T/a"
# (the sanitizers' per-global __odr_asan.* symbols are the compiler's)
grep -v '^gpo_' "$T/a" | grep -v '^__odr_asan\.gpo_' >"$T/unprefixed"
report "libgpuopt.a defines globals without gpo_/gpo__" "$T/unprefixed"
# common/ alone, for gpuoptctl: private names only
nm -g --defined-only "$BUILD/lib/libgpocommon.a" | awk 'NF == 3 { print $3 }' |
	sort -u | grep -v '^gpo__' | grep -v '^__odr_asan\.gpo__' \
	>"$T/common_unprefixed"
report "libgpocommon.a defines globals without gpo__" "$T/common_unprefixed"
grep '^gpo_' "$T/a" | grep -v '^gpo__' | comm -23 - "$T/map" >"$T/public"
report "libgpuopt.a: gpo_ (public) names not in the map; private is gpo__" \
	"$T/public"

# (d) a page, or an alias (".so man3/PAGE.3") to a page that lists it
: >"$T/noman"
for f in $(comm -12 "$T/map" "$T/hdr"); do
	page=$man/$f.3
	if [ ! -e "$page" ]; then
		echo "$f" >>"$T/noman"
		continue
	fi
	target=$(sed -n 's|^\.so man3/\(.*\)$|\1|p' "$page")
	if [ -n "$target" ]; then
		page=$man/$target
		[ -e "$page" ] || { echo "$f(->$target)" >>"$T/noman"; continue; }
	fi
	awk '/^\.SH NAME/ { n = 1; next } /^\.SH/ { n = 0 } n' "$page" |
		grep -qw "$f" || echo "$f(not in $(basename "$page")'s NAME)" >>"$T/noman"
done
report "exported without a man page" "$T/noman"

# (e) the whole archive, so any object's global would clash
cat >"$T/own.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <gpuopt.h>

/* names a library could have used for its internals */
double parse_double(const char *s);
void *pool_alloc(size_t n);
int kv_next(const char **pos);
int device_open(int i);
int fmt_double(char *buf, size_t len, double v);
unsigned long now_ns(void);

double parse_double(const char *s) { return s ? 42.0 : 0.0; }
void *pool_alloc(size_t n) { static char b[64]; return n <= 64 ? b : NULL; }
int kv_next(const char **pos) { return *pos ? 7 : 0; }
int device_open(int i) { return i + 1; }
int fmt_double(char *buf, size_t len, double v) { return snprintf(buf, len, "%g", v); }
unsigned long now_ns(void) { return 7; }

int main(void)
{
	const char *p = "x";

	char b[16];

	if (parse_double("1") != 42.0 || !pool_alloc(8) || kv_next(&p) != 7 ||
	    device_open(1) != 2 || fmt_double(b, sizeof(b), 0.5) != 3 ||
	    now_ns() != 7)
		return 1;
	printf("%s\n", gpo_version());
	return strcmp(gpo_version(), "") ? 0 : 1;
}
EOF
BACKENDS= LIB_LIBS="-luring -ljansson -lz -lm -lpthread" LDSAN=
. "$BUILD/build.conf"
# a sanitizer build: the drivers stay resident, their leaks suppressed
keep=
if [ -n "$LDSAN" ]; then
	keep=$BUILD/tests/unit/keep_drivers.o
	export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"
fi
# shellcheck disable=SC2086
cc -std=gnu11 -Wall -Werror -I"$TOP/libgpuopt/include" -o "$T/own" \
	"$T/own.c" -Wl,--whole-archive "$a" -Wl,--no-whole-archive \
	$LIB_LIBS $LDSAN $keep -pthread 2>"$T/own.log" ||
	fail "own symbols beside libgpuopt.a: $(head -n 20 "$T/own.log")"
"$T/own" >"$T/own.out" 2>&1 || fail "the program: $(cat "$T/own.out")"

[ $errs -eq 0 ] || fail "$errs export checks failed"
echo "ok: $(wc -l <"$T/so") exported, $(wc -l <"$T/a") globals in the archive"

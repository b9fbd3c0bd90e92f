#!/bin/sh
# Every global that libgpuopt.a defines starts with gpo_ (public) or gpo__
# (private, common/ included), and every one of libgpocommon.a with gpo__,
# so a program with its own parse_double(), fmt_double() or now_ns() links
# beside the static library.
. "$(dirname "$0")/lib.sh"
command -v nm >/dev/null || skip "no nm"
for lib in libgpuopt.a libgpocommon.a; do
	[ -f "$BUILD/lib/$lib" ] || fail "no $BUILD/lib/$lib"
done
nm -g --defined-only "$BUILD/lib/libgpuopt.a" >"$T/lib.nm" ||
	fail "nm libgpuopt.a"
bad=$(awk 'NF == 3 { print $3 }' "$T/lib.nm" | grep -v '^gpo_')
[ -z "$bad" ] || fail "libgpuopt.a defines unprefixed globals: $bad"
nm -g --defined-only "$BUILD/lib/libgpocommon.a" >"$T/common.nm" ||
	fail "nm libgpocommon.a"
bad=$(awk 'NF == 3 { print $3 }' "$T/common.nm" | grep -v '^gpo__')
[ -z "$bad" ] || fail "libgpocommon.a defines globals without gpo__: $bad"
grep -q ' T gpo__fmt_double$' "$T/lib.nm" ||
	fail "libgpuopt.a lacks gpo__fmt_double"

cat >"$T/mine.c" <<'C'
#include <stdio.h>
#include <gpuopt.h>
int parse_double(const char *s, double *out);
int parse_double(const char *s, double *out) { (void)s; *out = 1; return 0; }
void fmt_double(char *buf, size_t len, double v);
void fmt_double(char *buf, size_t len, double v) { snprintf(buf, len, "%g", v); }
unsigned long now_ns(void);
unsigned long now_ns(void) { return 7; }
int kv_next(void);
int kv_next(void) { return 0; }
int main(void)
{
	double v;
	char b[16];

	parse_double("x", &v);
	fmt_double(b, sizeof(b), v);
	return now_ns() == 7 && !kv_next() && gpo_version()[0] ? 0 : 1;
}
C
cc -std=gnu11 -Wall -Werror -I"$TOP/libgpuopt/include" -o "$T/mine" \
	"$T/mine.c" "$BUILD/lib/libgpuopt.a" -lOpenCL -lvulkan -luring \
	-ljansson -lm -lpthread 2>"$T/cc.err" ||
	fail "a program with its own helpers does not link: $(cat "$T/cc.err")"
"$T/mine" || fail "it does not run"
echo "ok"

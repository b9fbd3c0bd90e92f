#!/bin/sh
# A shader's "// glslc: -O0" line (Makefile: spv_opt) reaches glslc: its
# modules, and only its, are the unoptimized ones. glslc -O strips the
# OpSourceExtension strings (GL_GOOGLE_include_directive, which every
# shader uses through #include); -O0 keeps them. matmul_big is built so
# (its comment says why): at least one shader must carry the line.
. "$(dirname "$0")/lib.sh"
spv="$BUILD/spv"
[ -d "$spv" ] || skip "no Vulkan modules in $BUILD"
marked=0
for src in "$TOP"/kernels/vulkan/*/*.comp; do
	op=$(basename "$src" .comp)
	opt=$(sed -n '1,5s|^// glslc: *\(-O[0s]*\) *$|\1|p' "$src")
	n=0
	for m in "$spv/$op".*.spv; do
		[ -f "$m" ] || continue
		n=$((n + 1))
		if grep -q -a GL_GOOGLE_include_directive "$m"; then
			[ "$opt" = "-O0" ] ||
				fail "$m: unoptimized, but $src asks for ${opt:--O}"
		else
			[ "$opt" != "-O0" ] ||
				fail "$m: optimized, but $src asks for -O0"
		fi
	done
	[ $n -gt 0 ] || fail "no module of $src in $spv"
	[ "$opt" != "-O0" ] || marked=$((marked + 1))
done
[ $marked -gt 0 ] || fail "no shader carries '// glslc: -O0' (matmul_big did)"
echo "ok"

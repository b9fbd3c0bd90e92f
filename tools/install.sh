#!/bin/sh
# install.sh BUILD DESTDIR PREFIX VERSION SOVER - what `make install` does
set -e
build=$1 destdir=$2 prefix=$3 version=$4 sover=$5
root=$destdir$prefix
install -d "$root/lib/pkgconfig" "$root/include" "$root/bin" \
	"$root/share/man/man3" "$root/share/man/man8"
install -m 0755 "$build/lib/libgpuopt.so.$version" "$root/lib/"
ln -sf "libgpuopt.so.$version" "$root/lib/libgpuopt.so.$sover"
ln -sf "libgpuopt.so.$sover" "$root/lib/libgpuopt.so"
install -m 0644 "$build/lib/libgpuopt.a" "$root/lib/"
install -m 0644 libgpuopt/include/gpuopt.h "$root/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" \
	libgpuopt/gpuopt.pc.in >"$root/lib/pkgconfig/gpuopt.pc"
install -m 0644 libgpuopt/man/*.3 "$root/share/man/man3/"
for b in gpuoptfs gpuopt-devices gpuopt-ckpt; do
	[ -x "$build/bin/$b" ] && install -m 0755 "$build/bin/$b" "$root/bin/"
done
[ -f fsd/gpuoptfs.8 ] && install -m 0644 fsd/gpuoptfs.8 "$root/share/man/man8/"
echo "installed into $root"

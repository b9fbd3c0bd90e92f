#!/bin/sh
# install.sh BUILD DESTDIR PREFIX VERSION SOVER [LIBS] - what `make install`
# does; LIBS is what the static library needs (gpuopt.pc's Libs.private)
#
# The udev rules and the service unit name their programs under
# /usr/local: they are installed with that rewritten to PREFIX.
set -e
build=$1 destdir=$2 prefix=$3 version=$4 sover=$5
libs=${6:--lOpenCL -lvulkan -luring -ljansson -lz -lm -lpthread}
root=$destdir$prefix
install -d "$root/lib/pkgconfig" "$root/include" "$root/bin" \
	"$root/share/man/man1" "$root/share/man/man3" "$root/share/man/man8" \
	"$root/share/bash-completion/completions" \
	"$root/share/gpuopt/examples" \
	"$root/lib/udev/rules.d" "$root/lib/systemd/system"
install -m 0755 "$build/lib/libgpuopt.so.$version" "$root/lib/"
ln -sf "libgpuopt.so.$version" "$root/lib/libgpuopt.so.$sover"
ln -sf "libgpuopt.so.$sover" "$root/lib/libgpuopt.so"
install -m 0644 "$build/lib/libgpuopt.a" "$root/lib/"
# libgpuopt-mpi (make MPI=1): with libgpuopt.a and Open MPI
if [ -e "$build/lib/libgpuopt-mpi.a" ]; then
	install -m 0644 "$build/lib/libgpuopt-mpi.a" "$root/lib/"
fi
install -m 0644 libgpuopt/include/gpuopt.h "$root/include/"
# the sub-headers gpuopt.h includes, under include/gpuopt/
install -d "$root/include/gpuopt"
install -m 0644 libgpuopt/include/gpuopt/*.h "$root/include/gpuopt/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" \
	-e "s|@LIBS_PRIVATE@|$libs|" \
	libgpuopt/gpuopt.pc.in >"$root/lib/pkgconfig/gpuopt.pc"
# the pages carry the version in .TH; the installed ones say this one's
man_page()
{
	sed "1,2s/\"gpuopt [0-9][0-9.]*\"/\"gpuopt $version\"/" "$1" >"$2/${1##*/}"
	chmod 0644 "$2/${1##*/}"
}
for p in libgpuopt/man/*.3; do
	man_page "$p" "$root/share/man/man3"
done
for b in gpuoptfs gpuoptfs-worker gpuoptfs-worker-mpi gpuoptctl gpuopt-devices gpuopt-ckpt \
	gpuopt-train; do
	if [ -x "$build/bin/$b" ]; then
		install -m 0755 "$build/bin/$b" "$root/bin/"
	fi
done
# gpuopt-torch: Python, needs torch only when run; the version stamped in
sed "s/^VERSION = .*/VERSION = \"$version\"/" tools/gpuopt-torch \
	>"$root/bin/gpuopt-torch"
chmod 0755 "$root/bin/gpuopt-torch"
for p in tools/gpuopt-ckpt.1 tools/gpuopt-devices.1 tools/gpuopt-torch.1 \
	tools/gpuopt-train.1; do
	man_page "$p" "$root/share/man/man1"
done
man_page fsd/gpuoptfs.8 "$root/share/man/man8"
man_page tools/gpuoptctl.1 "$root/share/man/man1"
install -m 0644 tools/gpuoptctl.bash-completion \
	"$root/share/bash-completion/completions/gpuoptctl"
install -m 0755 tools/examples/*.sh "$root/share/gpuopt/examples/"
sed "s|/usr/local/|$prefix/|g" udev/70-gpuopt.rules \
	>"$root/lib/udev/rules.d/70-gpuopt.rules"
install -m 0755 udev/gpuopt-rescan "$root/lib/udev/"
sed "s|/usr/local/|$prefix/|g" udev/gpuoptfs.service \
	>"$root/lib/systemd/system/gpuoptfs.service"
chmod 0644 "$root/lib/udev/rules.d/70-gpuopt.rules" \
	"$root/lib/systemd/system/gpuoptfs.service"
echo "installed into $root"
if [ -z "$destdir" ] && ! getent group gpuopt >/dev/null 2>&1; then
	echo "the udev rules grant devices to the group gpuopt through ACLs" \
	     "(package acl): groupadd -r gpuopt"
fi

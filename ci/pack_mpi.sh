#!/usr/bin/env bash
# Adds Open MPI (mpirun, its plugins and PMIx) to .device/ for a GPU machine
# that has none, relocated under .device/mpi/usr (OPAL_PREFIX and
# PMIX_INSTALL_PREFIX point there; ci/gpu_check.sh's mpi part sets them). Run
# after ci/pack_device.sh. About 15 MB of the 64 MiB that may travel.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .device ] || { echo "pack_mpi: run ci/pack_device.sh first" >&2; exit 1; }
root=.device/mpi/usr
rm -rf .device/mpi
mkdir -p "$root/bin" "$root/lib/x86_64-linux-gnu" "$root/share"
cp /usr/bin/orterun /usr/bin/orted "$root/bin/"
ln -s orterun "$root/bin/mpirun"
src=/usr/lib/x86_64-linux-gnu
cp -r "$src/openmpi" "$src/pmix2" "$root/lib/x86_64-linux-gnu/"
rm -rf "$root"/lib/x86_64-linux-gnu/*/include
find "$root/lib" \( -name '*.a' -o -name '*.la' -o -name '*java*' \) -delete
cp -r /usr/share/openmpi "$root/share/"
[ -d /usr/share/pmix ] && cp -r /usr/share/pmix "$root/share/"
# The libraries mpirun and the plugins load from outside Open MPI's own tree.
for f in "$root/bin/orterun" "$root"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so "$root"/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | grep -E 'libmpi|libopen-|libhwloc|libevent|libudev|libmunge|libpmix|libltdl' | while read -r lib; do
  cp -L "$lib" .device/lib/
done
du -sh .device/mpi .device

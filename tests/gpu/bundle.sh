#!/bin/sh
# Writes the device check's bundle (docs/gpu.md): the cases compiled for cuda:sm_90a with their
# inputs and CPU results (radix-gpu-prepare), radix-gpu-check, and the libraries it needs that a
# machine without Debian's packages lacks. Run here; carry OUT to the GPU machine; run
# tests/gpu/run.sh OUT there.
# usage: tests/gpu/bundle.sh BUILD OUT
set -eu
build=$1 out=$2
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
"$build/bin/radix-gpu-prepare" "$out"
cp "$build/bin/radix-gpu-check" "$out/bin/"
# Every library but the C library's own (libc, libm, ld.so, ...): the GPU machine's distribution
# may lack them (libomp) or have older ones (libstdc++).
ldd "$out/bin/radix-gpu-check" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libresolv.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
du -sh "$out"

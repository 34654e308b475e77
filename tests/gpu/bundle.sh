#!/bin/sh
# Writes the device check's bundle (docs/gpu.md): the cases compiled for cuda:sm_90a with their
# inputs and CPU results (radix-gpu-prepare), radix-gpu-check, and the libraries it needs that a
# machine without Debian's packages lacks. Run here; carry OUT to the GPU machine; run
# tests/gpu/run.sh OUT there.
# With --tar, OUT.tar.xz too (19 MB for 80 MB): what a device run carries, under its 64 MiB;
# tests/gpu/run.sh takes either.
# usage: tests/gpu/bundle.sh BUILD OUT [--tar]
set -eu
build=$1 out=$2 tar=${3:-}
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
# The oracle models' weights (tests/oracle's tiny GPT-2 and Llama), written by the test models' script.
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
/usr/bin/python3 "$(dirname "$0")/../../tools/make_test_models.py" "$models" --size tiny --only gpt2,llama > /dev/null
"$build/bin/radix-gpu-prepare" "$out" "$models"
cp "$build/bin/radix-gpu-check" "$out/bin/"
# Every library but the C library's own (libc, libm, ld.so, ...): the GPU machine's distribution
# may lack them (libomp) or have older ones (libstdc++).
ldd "$out/bin/radix-gpu-check" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libresolv.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
# Without their symbols (libradix_runtime: 12 MB -> 4 MB).
strip --strip-unneeded "$out"/bin/* "$out"/lib/* 2> /dev/null || true
du -sh "$out"
if [ "$tar" = --tar ]; then
  tar -C "$out" -cf - . | xz -T0 -6 > "$out.tar.xz"
  du -sh "$out.tar.xz"
fi

#!/bin/sh
# The runtime library, and a program linked against it alone, load neither LLVM nor MLIR nor the
# compiler library (ldd: every library they pull in), and run an entry that the compiler wrote.
# usage: without_compiler.sh LIBRADIX_RUNTIME RADIX_SERVE RADIX_MLP CACHE_DIR
set -eu
runtime=$1 serve=$2 mlp=$3 cache=$4
for f in "$runtime" "$serve"; do
  deps=$(ldd "$f")
  echo "$deps" | grep -q 'not found' && { echo "FAIL: $f has unresolved libraries:"; echo "$deps"; exit 1; }
  if echo "$deps" | grep -E 'libLLVM|libMLIR|libmlir|libradix\.so'; then
    echo "FAIL: $f depends on the compiler (above)"
    exit 1
  fi
done
ldd "$serve" | grep -q 'libradix_runtime\.so' || { echo "FAIL: $serve does not use libradix_runtime"; exit 1; }
rm -rf "$cache"
RADIX_CACHE_DIR="$cache" "$mlp" > /dev/null
out=$("$serve" "$cache")
echo "$out"
echo "$out" | grep -qx 'y = \[20, 0, 0\]  (expected \[20, 0, 0\])'
# Without an entry: a clear error, not a crash.
rm -rf "$cache"
if "$serve" "$cache" 2> "$cache.err"; then echo "FAIL: ran without an entry"; exit 1; fi
grep -q '\[runtime\] no loadable entry named "MLP"' "$cache.err" || { cat "$cache.err"; exit 1; }
echo "OK: the runtime alone ran the compiler's entry"

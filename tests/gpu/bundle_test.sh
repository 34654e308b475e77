#!/bin/sh
# The device check's plumbing without a GPU: the bundle is written, and radix-gpu-check, with only
# the bundle's libraries and the fake driver, loads and runs every case. Kernels do not run on the
# fake, so results mismatch; what must not happen is an error or a crash.
# Contractions take the generated kernels (no cuBLASLt), which the fake does not run: the bench
# rows then time the host side only.
# usage: bundle_test.sh BUILD OUT FAKE_LIBCUDA
set -u
build=$1 out=$2 fake=$3
# Compiling for sm_90a needs the CUDA toolkit's ptxas (as the compiler looks for it).
if ! command -v ptxas > /dev/null && [ ! -x "${RADIX_CUDA_PATH:-/nonexistent}/bin/ptxas" ] && [ ! -x /usr/local/cuda/bin/ptxas ]; then
  echo "SKIP: no ptxas (the CUDA toolkit) on PATH, in \$RADIX_CUDA_PATH/bin or /usr/local/cuda/bin"
  exit 77
fi
sh "$(dirname "$0")/bundle.sh" "$build" "$out" || exit 1
log=$(RADIX_LIBCUDA="$fake" RADIX_LIBCUBLASLT=/nonexistent/libcublasLt.so LD_LIBRARY_PATH="$out/lib" "$out/bin/radix-gpu-check" "$out" 2>&1)
echo "$log"
echo "$log" | grep -q '^device: cuda:sm_90a$' || { echo "FAIL: no device line"; exit 1; }
echo "$log" | grep -q ' ERROR ' && { echo "FAIL: a case did not load or run"; exit 1; }
# 9 cases of its own and one per group of the op tables (over 100).
total=$(echo "$log" | sed -n 's/^[0-9]* of \([0-9]*\) cases match the CPU$/\1/p')
[ "${total:-0}" -gt 100 ] || { echo "FAIL: ${total:-no} cases, expected the op tables' groups too"; exit 1; }
for model in llama-tiny gpt2-tiny; do
  echo "$log" | grep -Eq "^$model +(ok|MISMATCH) .* greedy ids [0-9]+ of 16 equal" || { echo "FAIL: no $model check"; exit 1; }
done
for model in llama-110m-f32 gpt2-124m-f32 llama-110m-bf16 gpt2-124m-bf16; do
  for test in pp512 tg128; do
    echo "$log" | grep -Eq "^radix $model +$test +[0-9.]+ tok/s" || { echo "FAIL: no $model $test row"; exit 1; }
  done
done
echo "$log" | grep -Eq '^radix gemm_bf16_4096 +[0-9.]+ ms' || { echo "FAIL: no GEMM row"; exit 1; }
echo "OK: every case loaded and ran (on the fake driver: results not compared)"

#!/bin/sh
# The device check, on the GPU machine (docs/gpu.md): the cases that tests/gpu/bundle.sh compiled
# for cuda:sm_90a on a CPU-only machine, run by the runtime library alone against the CPU's
# results (op cases, the GPT-2/Llama oracle models' steps), with contractions through cuBLASLt and
# attention through cuDNN, and again as generated kernels; Radix's pp512/tg128 rows and a bf16 GEMM; then PyTorch's matmul
# and PyTorch eager's pp512/tg128 on the same GPU as peers. A few minutes.
# usage: tests/gpu/run.sh BUNDLE (the folder, or BUNDLE.tar.xz from bundle.sh --tar)
set -u
bundle=$1
case "$bundle" in
  *.tar.xz)
    dir=$(mktemp -d)
    tar -C "$dir" -xJf "$bundle" || { echo "cannot unpack $bundle"; exit 1; }
    bundle=$dir ;;
esac
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"
# cuBLASLt for the contractions: the pip package's (PyTorch's) where the loader finds none.
if [ -z "${RADIX_LIBCUBLASLT:-}" ]; then
  lt=$(python3 -c 'import glob, nvidia.cublas as c; print((sorted(glob.glob(list(c.__path__)[0] + "/lib/libcublasLt.so.*")) or [""])[0])' 2>/dev/null)
  [ -n "$lt" ] && export RADIX_LIBCUBLASLT="$lt"
fi
# cuDNN for attention, likewise (nvidia-cudnn-cu*'s libcudnn.so.9, which finds its engines beside it).
if [ -z "${RADIX_LIBCUDNN:-}" ]; then
  dnn=$(python3 -c 'import glob, nvidia.cudnn as c; print((sorted(glob.glob(list(c.__path__)[0] + "/lib/libcudnn.so.9*")) or [""])[0])' 2>/dev/null)
  [ -n "$dnn" ] && export RADIX_LIBCUDNN="$dnn"
fi
echo "== contractions through cuBLASLt (${RADIX_LIBCUBLASLT:-libcublasLt.so.13 on the loader's path}), attention through cuDNN (${RADIX_LIBCUDNN:-libcudnn.so.9 on the loader's path})"
LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bundle/bin/radix-gpu-check" "$bundle"
status=$?
echo "== generated kernels only (no cuBLASLt, no cuDNN)"
RADIX_LIBCUBLASLT=/nonexistent/libcublasLt.so RADIX_LIBCUDNN=/nonexistent/libcudnn.so \
  LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bundle/bin/radix-gpu-check" "$bundle" || status=1
python3 - <<'PY' 2>&1 || true
import time
try:
    import torch
except Exception as e:
    print("torch peer: unavailable:", e); raise SystemExit
if not torch.cuda.is_available():
    print("torch peer: no CUDA device"); raise SystemExit
for (m, k, n, dt) in [(256, 384, 200, torch.float32), (4096, 4096, 4096, torch.bfloat16)]:
    a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(k, n, device="cuda", dtype=dt)
    for _ in range(3): a @ b
    torch.cuda.synchronize(); t = time.perf_counter(); reps = 20
    for _ in range(reps): a @ b
    torch.cuda.synchronize(); s = (time.perf_counter() - t) / reps
    print(f"torch.matmul {m}x{k}x{n} {dt}: {s*1e3:.3f} ms, {2*m*k*n/s/1e12:.1f} TFLOP/s")
PY
# PyTorch eager on the same GPU, the bench models' shapes: the peer of radix-gpu-check's rows.
for dtype in f32 bf16; do
  for arch in llama gpt2; do
    python3 "$(dirname "$0")/../../bench/torch_llm_peer.py" --arch $arch --dtype $dtype --device cuda -p 512 -n 128 \
      --no-header 2>&1 || true
  done
done
exit $status

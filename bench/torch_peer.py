#!/usr/bin/python3
"""radix-bench-cpu's PyTorch peer: a child process speaking bench/bench_worker.h's protocol.

    /usr/bin/python3 bench/torch_peer.py --threads T      (started by radix-bench-cpu)

Commands on stdin, one reply line each on stdout:
    setup <kind> <dtype> <dims...>  -> "ok" | "na <reason>"
    run <iters>                     -> "time <wall s/iter> <cpu s/iter>"
    dump <path>                     -> "ok"  (the last result as raw f32)
    info                            -> "info <text>"
    quit

Inputs are bench_worker.h's benchValue streams (same seeds and scales), so that the driver can
compare the outputs with Radix's. Uses Debian's python3-torch (1.13) and numpy.
"""
import argparse
import sys
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
args = parser.parse_args()

import torch  # noqa: E402  (after parsing, so that --help works without torch)
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)

# bench_worker.h's seeds and constants.
SEED_A, SEED_B, SEED_W, SEED_X, SEED_SOFTMAX, SEED_RMS, SEED_RMS_WEIGHT, SEED_TANH, SEED_GELU = 1, 2, 3, 4, 5, 6, 7, 8, 9
SEED_Q, SEED_K, SEED_V = 12, 13, 14
ACTIVATION_SCALE = 4.0
RMS_EPS = 1e-6


def bench_values(n, seed, scale=1.0, offset=0.0):
    """bench::benchValue(i, seed) for i < n: k/128 - 1 for an 8-bit hash k (exact in bf16)."""
    with np.errstate(over="ignore"):
        h = np.arange(n, dtype=np.uint64).astype(np.uint32)
        h = h * np.uint32(2654435761) + np.uint32((seed * 40503) & 0xFFFFFFFF)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x45D9F3B)
        h ^= h >> np.uint32(16)
    v = ((h >> np.uint32(24)).astype(np.int32) - 128).astype(np.float32) / np.float32(128)
    return np.float32(offset) + np.float32(scale) * v


def weight_copies(kind, dtype_name, dims):
    """bench::weightCopies: copies of the weight cycled through so that it streams from memory."""
    if not (kind == "gemv" or (kind == "gemm" and dims[0] <= 64)):
        return 1
    nbytes = (dims[0] * dims[1] if kind == "gemv" else dims[1] * dims[2]) * (2 if dtype_name == "bf16" else 4)
    return min(16, max(1, -(-(256 << 20) // nbytes)))


def tensor(dims, seed, dtype, scale=1.0, offset=0.0):
    n = int(np.prod(dims))
    return torch.from_numpy(bench_values(n, seed, scale, offset).reshape(dims)).to(dtype).contiguous()


DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, w, stride):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(cin, w, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.conv2 = nn.Conv2d(w, w, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(w)
        self.downsample = None
        if stride != 1 or cin != w:
            self.downsample = nn.Sequential(nn.Conv2d(cin, w, 1, stride, bias=False), nn.BatchNorm2d(w))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(torch.nn.Module):
    """torchvision's resnet18, as bench/resnet18.h (examples/resnet/resnet.h) builds it."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for s in range(4):
            w = 64 << s
            blocks = [BasicBlock(cin, w, 2 if s > 0 else 1), BasicBlock(w, w, 1)]
            setattr(self, f"layer{s + 1}", nn.Sequential(*blocks))
            cin = w
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def init_scale(name, shape):
    """bench/resnet18.h's initScale: (scale, offset) of a parameter's values."""
    if len(shape) >= 2:
        return float(np.sqrt(6.0 / int(np.prod(shape[1:])))), 0.0
    if name.endswith("running_var") or name.endswith(("bn1.weight", "bn2.weight", "downsample.1.weight")):
        return 0.25, 1.0
    return 0.1, 0.0


def resnet18():
    model = ResNet18().eval()
    state = model.state_dict()
    seed = 1000
    for name, t in state.items():
        if name.endswith("num_batches_tracked"):
            continue
        scale, offset = init_scale(name, tuple(t.shape))
        t.copy_(torch.from_numpy(bench_values(t.numel(), seed, scale, offset).reshape(tuple(t.shape))))
        seed += 1
    return model


class Peer:
    def __init__(self):
        self.fn = None
        self.out = None

    def setup(self, kind, dtype_name, dims):
        self.fn = None
        self.out = None
        if dtype_name not in DTYPES:
            return f"no {dtype_name} here"
        dt = DTYPES[dtype_name]
        copies = weight_copies(kind, dtype_name, dims)
        calls = iter(range(1 << 62))
        if kind == "gemm":
            m, n, k = dims
            a = tensor((m, k), SEED_A, dt)
            b = [tensor((k, n), SEED_B, dt) for _ in range(copies)]
            self.fn = lambda: torch.mm(a, b[next(calls) % copies])
        elif kind == "gemv":
            n, k = dims
            w, x = [tensor((n, k), SEED_W, dt) for _ in range(copies)], tensor((k,), SEED_X, dt)
            self.fn = lambda: torch.mv(w[next(calls) % copies], x)
        elif kind == "conv":
            b, cin, hw, cout, k, stride, pad = dims
            x = tensor((b, cin, hw, hw), SEED_A, dt)
            w = tensor((cout, cin, k, k), SEED_B, dt)
            self.fn = lambda: F.conv2d(x, w, stride=stride, padding=pad)
        elif kind == "resnet18" and dt == torch.float32:
            b, hw = dims
            model = resnet18()
            x = tensor((b, 3, hw, hw), SEED_A, dt)
            self.fn = lambda: model(x)
        elif kind == "softmax" and dt == torch.float32:
            x = tensor(tuple(dims), SEED_SOFTMAX, dt, ACTIVATION_SCALE)
            self.fn = lambda: torch.softmax(x, dim=1)
        elif kind == "rmsnorm" and dt == torch.float32:
            x = tensor(tuple(dims), SEED_RMS, dt, ACTIVATION_SCALE)
            w = tensor((dims[1],), SEED_RMS_WEIGHT, dt, 0.5, 1.0)
            # As Hugging Face's LlamaRMSNorm (torch 1.13 has no F.rms_norm).
            self.fn = lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w
        elif kind == "tanh" and dt == torch.float32:
            x = tensor(tuple(dims), SEED_TANH, dt, ACTIVATION_SCALE)
            self.fn = lambda: torch.tanh(x)
        elif kind == "attention":
            h, n, hd = dims[:3]
            q, k, v = (tensor((h, n, hd), seed, dt) for seed in (SEED_Q, SEED_K, SEED_V))
            if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
                self.fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # Debian's 1.13: matmul, masked softmax (in f32), matmul
                masked = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
                scale = 1.0 / float(hd) ** 0.5

                def attend():
                    s = torch.matmul(q, k.transpose(1, 2)).float() * scale
                    return torch.matmul(torch.softmax(s.masked_fill(masked, float("-inf")), dim=-1).to(dt), v)

                self.fn = attend
        elif kind == "gelu" and dt == torch.float32:
            x = tensor(tuple(dims), SEED_GELU, dt, ACTIVATION_SCALE)
            self.fn = lambda: F.gelu(x, approximate="tanh")
        else:
            return f"no {kind} {dtype_name} here"
        return ""

    def run(self):
        self.out = self.fn()

    def dump(self, path):
        self.out.float().contiguous().numpy().astype(np.float32).tofile(path)


def info():
    config = torch.__config__.show()
    capability = next((line.split(":", 1)[1].strip() for line in config.splitlines() if "CPU capability" in line), "?")
    with open("/proc/self/maps") as f:  # which BLAS the process really loaded (Debian's torch: BLAS_INFO=generic)
        blas = sorted({line.split()[-1].rsplit("/", 1)[-1] for line in f if "blas" in line.split()[-1]})
    return (f"torch {torch.__version__} set_num_threads={args.threads} get_num_threads={torch.get_num_threads()} "
            f"mkldnn={torch.backends.mkldnn.is_available()} cpu_capability={capability} blas={','.join(blas) or '?'}")


def main():
    peer = Peer()
    ready = False
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command, rest = words[0], words[1:]
        try:
            with torch.inference_mode():
                if command == "quit":
                    break
                elif command == "info":
                    reply = "info " + info()
                elif command == "setup":
                    ready = False
                    why = peer.setup(rest[0], rest[1], [int(d) for d in rest[2:]])
                    ready = not why
                    reply = "ok" if ready else "na " + why
                elif command == "run":
                    iters = int(rest[0]) if rest else 1
                    if not ready:
                        raise RuntimeError("run before a successful setup")
                    c0, t0 = time.process_time(), time.perf_counter()
                    for _ in range(iters):
                        peer.run()
                    t1, c1 = time.perf_counter(), time.process_time()
                    reply = f"time {(t1 - t0) / iters:.9g} {(c1 - c0) / iters:.9g}"
                elif command == "dump":
                    peer.dump(rest[0])
                    reply = "ok"
                else:
                    reply = "err unknown command " + command
        except Exception as e:  # noqa: BLE001 (any failure is a reply, not a dead worker)
            reply = ("na " if command == "setup" else "err ") + str(e).replace("\n", " ")
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Tensor-parallel scaling over MPI ranks (docs/sharding.md), in one run.

    /usr/bin/python3 bench/tp_scaling.py                       # Llama-110M F32 + Q8_0, MLP
    /usr/bin/python3 bench/tp_scaling.py --models A.gguf B/ --ranks 1,2,4 -p 512 -n 128

- Strong scaling of LLMs: `radix bench --model M -p P -n N -t 1` on 1 rank, then
  `mpirun -np R radix bench ...` (Megatron split, one all-reduce per attention and per MLP), one
  thread per rank; speedup = tokens/s on R ranks / on 1. Without --models: Llama-110M at F32 and
  Q8_0 (tools/make_test_models.py --size bench, written once into --gguf-dir).
- The all-reduces of a decode step (`radix-bench-mpi allreduce WIDTH 2*LAYERS`) and their share of
  the measured tg step at R ranks.
- Strong and weak scaling of a GEMM-bound MLP (`radix-bench-mpi B D H`; weak: H grows with R).
Ranks beyond the machine's cores are oversubscribed (marked in the table). Timings on a shared VM
are noisy: compare within one run.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def env():
    e = dict(os.environ, OMP_NUM_THREADS="1", RADIX_PROGRESS="off")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return e


def mpirun(ranks):
    return ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1", "-np", str(ranks)]


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip()[-400:]
    return p.stdout, ""


def bench_rows(text):
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.match(r"^(pp|tg)\d+$", cells[5]):
            rows[cells[5][:2]] = float(cells[6].split("±")[0])
    return rows


def model_dims(path):
    """(layers, width) from a GGUF's metadata or an HF config.json."""
    if os.path.isdir(path):
        c = json.load(open(os.path.join(path, "config.json")))
        return c.get("num_hidden_layers", c.get("n_layer")), c.get("hidden_size", c.get("n_embd"))
    with open(path, "rb") as f:
        data = f.read(1 << 20)
    vals = {}
    for key in ("block_count", "embedding_length"):
        m = re.search(rb"\.(" + key.encode() + rb")\x04\x00\x00\x00(....)", data, re.S)  # u32 value
        if m:
            vals[key] = struct.unpack("<I", m.group(2))[0]
    return vals.get("block_count"), vals.get("embedding_length")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", type=int, default=2, help="radix bench repetitions")
    ap.add_argument("--radix", default=os.path.join(ROOT, "build", "bin", "radix"))
    ap.add_argument("--bench-mpi", default=os.path.join(ROOT, "build", "bin", "radix-bench-mpi"))
    ap.add_argument("--gguf-dir", default="/tmp/radix-llm-bench-gguf")
    ap.add_argument("--mlp", default="256,1024,4096", help="B,D,H of the MLP (empty: skip)")
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args()
    ranks = [int(r) for r in a.ranks.split(",")]
    cores = os.cpu_count() or 1
    tag = lambda r: f"{r}" + (" (oversubscribed)" if r > cores else "")
    models = a.models
    if models is None:
        want = [os.path.join(a.gguf_dir, "llama-bench.gguf"), os.path.join(a.gguf_dir, "llama-bench-q8_0.gguf")]
        if not all(os.path.exists(m) for m in want):
            os.makedirs(a.gguf_dir, exist_ok=True)
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "make_test_models.py"), a.gguf_dir,
                            "--size", "bench", "--only", "llama-gguf", "--quant", "q8_0"], check=True,
                           stdout=subprocess.DEVNULL)
        models = want
    print(f"host: {cores} cores; one thread per rank (OMP_NUM_THREADS=1)\n")
    print("| model | ranks | pp t/s | pp speedup | tg t/s | tg speedup | all-reduces per tg step | share of tg step |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for m in models:
        base = {}
        layers, width = model_dims(m)
        for r in ranks:
            cmd = ([] if r == 1 else mpirun(r)) + [a.radix, "bench", "--model", m, "-p", str(a.p), "-n", str(a.n),
                                                    "-t", "1", "-r", str(a.r)]
            out, err = run(cmd, a.timeout)
            rows = bench_rows(out or "")
            if r == 1:
                base = rows
            share, reduce_ms = "-", "-"
            if r > 1 and layers and width and rows.get("tg"):
                o, _ = run(mpirun(r) + [a.bench_mpi, "allreduce", str(width), str(2 * layers)], a.timeout)
                mt = re.search(r"([\d.]+) ms/step", o or "")
                if mt:
                    ms = float(mt.group(1))
                    reduce_ms = f"{2 * layers} × {width} f32: {ms:.3f} ms"
                    share = f"{100 * ms / (1000 / rows['tg']):.1f}%"
            fmt = lambda k: f"{rows[k]:.2f}" if k in rows else f"n/a ({err[:60]})" if err else "n/a"
            sp = lambda k: f"{rows[k] / base[k]:.2f}x" if k in rows and base.get(k) else "-"
            print(f"| {os.path.basename(m.rstrip('/'))} | {tag(r)} | {fmt('pp')} | {sp('pp')} | {fmt('tg')} | {sp('tg')} | "
                  f"{reduce_ms} | {share} |", flush=True)
    if a.mlp:
        B, D, H = a.mlp.split(",")
        print("\n| MLP | ranks | ms/call | GFLOP/s | speedup | all-reduce share |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for mode in ("strong", "weak"):
            base = None
            for r in ranks:
                cmd = mpirun(r) + [a.bench_mpi, B, D, H, "10"] + (["weak"] if mode == "weak" else [])
                out, err = run(cmd, a.timeout)
                mt = re.search(r"([\d.]+) ms/call\s+([\d.]+) GFLOP/s\s+all-reduce [\d.]+ ms \(([\d.]+)%\)", out or "")
                if not mt:
                    print(f"| {mode} {B}x{D}x{H} | {tag(r)} | n/a ({err[:60]}) | | | |")
                    continue
                gf = float(mt.group(2))
                base = base or gf
                # Strong: same work, speedup = time ratio; weak: work grows with r, speedup = rate ratio.
                print(f"| {mode} {B}x{D}x{H if mode == 'strong' else f'{H}·R'} | {tag(r)} | {mt.group(1)} | {gf:.1f} | "
                      f"{gf / base:.2f}x | {mt.group(3)}% |", flush=True)


if __name__ == "__main__":
    sys.exit(main())

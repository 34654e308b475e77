#!/usr/bin/python3
"""LLM prefill/decode speed: Radix's `radix bench` against PyTorch and the decode roof, in one run.

    /usr/bin/python3 bench/llm_bench.py --models DIR [DIR ...]   # HF folders (config.json + model.safetensors)
    /usr/bin/python3 bench/llm_bench.py                          # no folders: PyTorch and the roof only
    /usr/bin/python3 bench/llm_bench.py --quick --threads 1 --models DIR

For every model folder (or, without --models, GPT-2 small and Llama-110M at f32, bf16 and f16) and
every thread count, in one run:
- a STREAM triad (radix-bench-cpu's triad worker, 16M floats, 12 B/elem), measured at the start, before
  each model and thread count, and at the end (a roof uses the better of the start's and the one
  just before its rows; the end shows the drift);
- the decode roof: triad bandwidth / weight bytes one decode step reads (every layer, the lm head;
  one row of each embedding table), from the model's config.json and dtype;
- PyTorch (bench/torch_llm_peer.py: same shapes, random weights, KV cache);
- Radix: `build/bin/radix bench --model DIR -p P -n N -t T --dtype D` (f16: f16 weights with
  `--compute f32`, as llama.cpp's F16 runs), whose llama-bench style rows
  `| model | size | params | dtype | threads | test | t/s |` are parsed; "n/a" when it fails.
With --quant TYPES (q8_0,q4_0,q4_k_m,..., and f16/bf16 for 16-bit GGUF matrices): GPT-2 small and Llama-110M GGUF files with random weights
(tools/make_test_models.py --size bench --quant, written once into --gguf-dir), F32 and each type,
run by `radix bench`, by llama.cpp's llama-bench where a build is found ($LLAMA_BENCH, else
/work/peers/llama.cpp/build/bin/llama-bench; skipped with a message otherwise), PyTorch at f32 (it
has no GGUF types) and the roof from the file's tensor bytes; plus radix/llama.cpp. Both engines
keep the KV cache in --kv-type (default f16, llama.cpp's default).
Each child runs with OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS = T set before it
starts (libgomp reads it at load time). Radix and PyTorch alternate per model and thread count.
Prints one line per (model, dtype, threads, test) with Radix / roof and Radix / PyTorch.
"""
import argparse
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_llm_peer  # noqa: E402  (config and byte counts only; torch is not imported here)

ROW = re.compile(r"^\|\s*(?P<model>[^|]+?)\s*\|\s*(?P<size>[^|]+?)\s*\|\s*(?P<params>[^|]+?)\s*\|\s*(?P<dtype>[^|]+?)\s*\|"
                 r"\s*(?P<threads>\d+)\s*\|\s*(?P<test>(pp|tg)\d+)\s*\|\s*(?P<tps>[0-9.]+)\s*(±\s*(?P<std>[0-9.]+))?\s*\|\s*$")
TRIAD_ELEMENTS = 16 * 1024 * 1024
SAFETENSORS_DTYPES = {"F32": "f32", "BF16": "bf16", "F16": "f16"}


def parse_table(text):
    """Markdown rows by their header's names (llama-bench -o md): {test: (t/s, std, row)}."""
    out, names = {}, None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.strip().startswith("|"):
            continue
        if names is None:
            names = cells
            continue
        row = dict(zip(names, cells))
        m = re.match(r"([0-9.]+)\s*(±\s*([0-9.]+))?", row.get("t/s", ""))
        if m and row.get("test"):
            out[row["test"]] = (float(m.group(1)), float(m.group(3) or 0), row)
    return out


def llama_bench_path(given):
    for path in (given, os.environ.get("LLAMA_BENCH"), "/work/peers/llama.cpp/build/bin/llama-bench"):
        if path and os.access(path, os.X_OK):
            return path
    return None


def gguf_decode_bytes(path):
    """Weight bytes one decode step reads from a GGUF: every tensor but the embedding tables, of
    which one row each; the token embedding whole when it is also the head (no output.weight)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "oracle"))
    import ggml_quants  # noqa: E402
    tensors = ggml_quants.read_gguf(path)
    total = 0
    for name, (_, dims, raw) in tensors.items():
        if name in ("token_embd.weight", "position_embd.weight") and not (name == "token_embd.weight" and "output.weight" not in tensors):
            total += len(raw) // dims[0]
        else:
            total += len(raw)
    return total


def make_ggufs(folder, quant, python):
    """tools/make_test_models.py --size bench GGUFs (F32 and each type) in `folder`, unless there:
    [(arch, type, path)]."""
    files = [(a, q, os.path.join(folder, f"{a}-bench{'' if q == 'f32' else '-' + q}.gguf"))
             for a in ("gpt2", "llama") for q in ["f32"] + quant]
    tool = os.path.join(os.path.dirname(HERE), "tools", "make_test_models.py")
    blocks = [q for q in quant if q not in ("f16", "bf16")]
    if not all(os.path.exists(path) for _, q, path in files if q not in ("f16", "bf16")):
        subprocess.run([python, tool, folder, "--size", "bench", "--only", "gpt2-gguf,llama-gguf"] +
                       (["--quant", ",".join(blocks)] if blocks else []), check=True, stdout=subprocess.DEVNULL)
    # F16 / BF16 files (llama.cpp's F16 and BF16): the same weights with 16-bit matrices.
    for q in ("f16", "bf16"):
        if q in quant and not all(os.path.exists(path) for _, t, path in files if t == q):
            sub = os.path.join(folder, q)
            subprocess.run([python, tool, sub, "--size", "bench", "--only", "gpt2-gguf,llama-gguf",
                            "--gguf-type", q.upper()], check=True, stdout=subprocess.DEVNULL)
            for arch in ("gpt2", "llama"):
                os.replace(os.path.join(sub, f"{arch}-bench.gguf"), os.path.join(folder, f"{arch}-bench-{q}.gguf"))
    return files


def parse_rows(text):
    """llama-bench rows -> {test: (t/s, std, row)}; the header and separator rows do not match."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line.strip())
        if m:
            out[m.group("test")] = (float(m.group("tps")), float(m.group("std") or 0), m.groupdict())
    return out


def env_for(threads):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    return env


def folder_dtype(folder):
    """The dtype of the first tensor of model.safetensors (or of the first shard), else config's torch_dtype."""
    for name in ("model.safetensors", "model-00001-of-00002.safetensors"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(min(n, 100_000_000)))
            for key, value in header.items():
                if key != "__metadata__":
                    return SAFETENSORS_DTYPES.get(value["dtype"], value["dtype"].lower())
    cfg = json.load(open(os.path.join(folder, "config.json")))
    return {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(cfg.get("torch_dtype"), "f32")


def expand(folders):
    """Model folders: each given folder with a config.json, or its subfolders that have one."""
    out = []
    for f in folders:
        if os.path.exists(os.path.join(f, "config.json")):
            out.append(f)
        elif os.path.isdir(f):
            out += sorted(os.path.join(f, s) for s in os.listdir(f) if os.path.exists(os.path.join(f, s, "config.json")))
        else:
            sys.exit(f"llm_bench: {f} is neither a model folder (config.json) nor a folder of them")
    return out


class Triad:
    """radix-bench-cpu's triad worker (bench/bench_worker.h's protocol): best GB/s of a few reps."""

    def __init__(self, bench_cpu):
        self.bench_cpu = bench_cpu

    def measure(self, threads, reps):
        if not os.access(self.bench_cpu, os.X_OK):
            return None
        p = subprocess.Popen([self.bench_cpu, "--worker", "triad", "--threads", str(threads)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env_for(threads))

        def ask(cmd):
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
            return p.stdout.readline().split()

        try:
            if ask(f"setup triad f32 {TRIAD_ELEMENTS}")[:1] != ["ok"]:
                return None
            ask("run 1")
            best = min(float(ask("run 4")[1]) for _ in range(reps))
            return 12 * TRIAD_ELEMENTS / best / 1e9
        finally:
            p.stdin.write("quit\n")
            p.stdin.flush()
            p.wait(timeout=30)


def run(cmd, threads, timeout):
    """(stdout, error or None)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env_for(threads), timeout=timeout)
    except subprocess.TimeoutExpired:
        return "", f"timed out after {timeout} s"
    except OSError as e:
        return "", str(e)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[0]
        return r.stdout, f"exit {r.returncode}: {tail[:160]}"
    return r.stdout, None


def main():
    root = os.path.dirname(HERE)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=[], help="HF model folders, or folders of them")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3, help="PyTorch reps per test")
    ap.add_argument("--quick", action="store_true", help="1 PyTorch rep, shorter timeouts")
    ap.add_argument("--radix", default=os.path.join(root, "build", "bin", "radix"))
    ap.add_argument("--bench-cpu", default=os.path.join(root, "build", "bin", "radix-bench-cpu"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--radix-args", default="", help="more arguments for `radix bench`, e.g. \"-r 1\"")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--dtypes", help="e.g. f32,bf16: run each folder at these dtypes (default: the folder's own; "
                                     "another dtype passes --dtype D to `radix bench`)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per child command")
    ap.add_argument("--quant", default="", help="GGUF types to run, e.g. q8_0,q4_0,q4_k_m (with F32): GPT-2 small "
                                                "and Llama-110M shapes, random weights")
    ap.add_argument("--gguf-dir", default="/tmp/radix-llm-bench-gguf", help="where --quant's files are written")
    ap.add_argument("--kv-type", default="f16", help="the KV cache's type in the GGUF runs, for Radix (--kv-type) and "
                                                     "llama-bench (-ctk/-ctv) alike (default f16, llama.cpp's default)")
    ap.add_argument("--llama-bench", default=None, help="llama.cpp's llama-bench (default: $LLAMA_BENCH, else "
                                                        "/work/peers/llama.cpp/build/bin/llama-bench)")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.timeout = 1, min(a.timeout, 600)
    threads = [int(t) for t in a.threads.split(",") if t]

    # (label, config, dtype, folder or None)
    models = []
    for folder in expand(a.models):
        cfg = torch_llm_peer.config_of(path=os.path.join(folder, "config.json"))
        own = folder_dtype(folder)
        for dtype in (a.dtypes.split(",") if a.dtypes else [own]):
            models.append((os.path.basename(os.path.normpath(folder)), cfg, dtype, folder, own))
    if a.quant:
        for arch, q, path in make_ggufs(a.gguf_dir, [q for q in a.quant.split(",") if q], a.python):
            cfg = torch_llm_peer.config_of(path=os.path.join(a.gguf_dir, f"{arch}-bench", "config.json"))
            models.append((f"{arch}-bench.gguf", cfg, q, path, "gguf"))
    elif not a.models:
        for arch in ("gpt2", "llama"):
            for dtype in ("f32", "bf16", "f16"):
                models.append((arch + " (built-in shape)", torch_llm_peer.config_of(arch), dtype, None, None))

    llama_bench = llama_bench_path(a.llama_bench) if a.quant else None
    if a.quant and not llama_bench:
        print("llm_bench: llama.cpp skipped: no llama-bench ($LLAMA_BENCH, --llama-bench, or a build in "
              "/work/peers/llama.cpp/build)")
    triad = Triad(a.bench_cpu)
    start_bw = {t: triad.measure(t, 5) for t in threads}
    print(f"llm_bench: -p {a.p} -n {a.n}; PyTorch {a.reps} rep(s) per test; load average {open('/proc/loadavg').read().split()[:3]}")
    for t in threads:
        print(f"  triad T={t}: {start_bw[t] and f'{start_bw[t]:.1f} GB/s' or 'n/a'} (start of run)")
    print("  roof = triad GB/s / weight bytes per decode token (pp has no roof: GEMM-bound); t/s are mean ± std")
    print("  the triad is measured again before each model and thread count; a roof uses the better of that one and"
          " the start's (a VM's 2-thread triad moves by 2x over a run)")
    header = f"{'model':<26} {'dtype':<6} {'T':>2} {'test':<6} {'radix t/s':>16} {'llama.cpp t/s':>16} {'torch t/s':>16} " \
             f"{'roof t/s':>9} {'radix/roof':>10} {'radix/llama':>11} {'radix/torch':>11} {'torch/roof':>10}"
    print(header)
    lines = []
    for label, cfg, dtype, folder, own in models:
        gguf = own == "gguf"
        bpp = {"f32": 4, "bf16": 2, "f16": 2}.get(dtype, 4)
        per_token = gguf_decode_bytes(folder) if gguf else torch_llm_peer.decode_bytes_per_token(cfg, bpp)
        for t in threads:
            now_bw = triad.measure(t, 5)
            bw = max(x for x in (start_bw[t], now_bw, 0) if x is not None) or None
            radix_rows, radix_err = {}, "no model folder (make one with the models engineer's tools/ script)"
            if folder:
                cmd = [a.radix, "bench", "--model", folder, "-p", str(a.p), "-n", str(a.n), "-t", str(t)]
                # Quantized GGUF files run as stored; else always explicit (radix bench defaults to
                # the file's dtype with f32 activations); f16 runs as llama.cpp's F16 does.
                if not gguf:
                    cmd += ["--dtype", dtype] + (["--compute", "f32"] if dtype == "f16" else [])
                else:
                    cmd += ["--kv-type", a.kv_type]
                cmd += shlex.split(a.radix_args)
                out, radix_err = run(cmd, t, a.timeout)
                radix_rows = parse_rows(out)
                if not radix_err and not radix_rows:
                    radix_err = "no llama-bench rows in its output"
            llama_rows, llama_err = {}, None
            if gguf and llama_bench:
                cmd = [llama_bench, "-m", folder, "-p", str(a.p), "-n", str(a.n), "-t", str(t), "-r", str(a.reps),
                       "-ctk", a.kv_type, "-ctv", a.kv_type, "-o", "md"]
                out, llama_err = run(cmd, t, a.timeout)
                llama_rows = parse_table(out)
                if not llama_err and not llama_rows:
                    llama_err = "no rows in llama-bench's output"
            torch_rows, torch_err = {}, "--no-torch"
            torch_dtype = "f32" if gguf else dtype
            if not a.no_torch and torch_dtype in ("f32", "bf16"):
                cmd = [a.python, os.path.join(HERE, "torch_llm_peer.py"), "--dtype", torch_dtype, "--threads", str(t),
                       "-p", str(a.p), "-n", str(a.n), "--reps", str(a.reps)]
                cmd += ["--config", os.path.join(folder, "config.json")] if folder and not gguf else ["--arch", cfg["arch"]]
                out, torch_err = run(cmd, t, a.timeout)
                torch_rows = parse_rows(out)
            elif not a.no_torch:
                torch_err = f"no {dtype} in the PyTorch peer"
            for test in (f"pp{a.p}", f"tg{a.n}"):
                r, p, ll = radix_rows.get(test), torch_rows.get(test), llama_rows.get(test)
                roof = bw * 1e9 / per_token if (test.startswith("tg") and bw) else None

                def fmt(x):
                    return f"{x[0]:.2f} ± {x[1]:.2f}" if x else "n/a"

                def ratio(x, y):
                    return f"{x / y:.3f}" if x and y else "-"

                line = f"{label:<26} {dtype:<6} {t:>2} {test:<6} {fmt(r):>16} {(fmt(ll) if gguf else '-'):>16} " \
                       f"{fmt(p):>16} {(f'{roof:.1f}' if roof else '-'):>9} {ratio(r and r[0], roof):>10} " \
                       f"{ratio(r and r[0], ll and ll[0]):>11} {ratio(r and r[0], p and p[0]):>11} " \
                       f"{ratio(p and p[0], roof):>10}"
                print(line, flush=True)
                lines.append(line)
            if radix_err and not radix_rows:
                print(f"    radix: n/a ({radix_err})")
            missing = [x for x in (f"pp{a.p}", f"tg{a.n}") if x not in radix_rows]
            if radix_rows and missing:
                print(f"    radix: no {', '.join(missing)} row (it printed {', '.join(radix_rows)})")
            if llama_err and not llama_rows:
                print(f"    llama.cpp: n/a ({llama_err})")
            for test, (_, _, fields) in radix_rows.items():
                if not gguf and fields["dtype"] != dtype or int(fields["threads"]) != t:
                    print(f"    warning: radix's {test} row says dtype {fields['dtype']}, threads {fields['threads']};"
                          f" asked for {dtype}, {t}")
            if torch_err and not torch_rows and not a.no_torch:
                print(f"    torch: n/a ({torch_err})")
    end_bw = {t: triad.measure(t, 5) for t in threads}
    for t in threads:
        print(f"  triad T={t}: {end_bw[t] and f'{end_bw[t]:.1f} GB/s' or 'n/a'} (end of run; start's"
              f" {start_bw[t] and f'{start_bw[t]:.1f}' or 'n/a'})")
    print(f"  load average at the end {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()

#pragma once
// The worker side of radix-bench-cpu: each implementation (Radix, oneDNN, OpenBLAS, the triad)
// runs in its own child process, started by the driver with the right environment
// (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS), and answers line commands on stdin:
//
//   setup <kind> <dtype> <dims...>  -> "ok <note>" | "na <reason>"   builds inputs and the kernel
//   run <iters>                     -> "time <wall s/iter> <cpu s/iter>" | "err <what>"
//   dump <path>                     -> "ok" (the last result as raw little-endian f32)
//   info                            -> "info <text>"
//   quit
//
// bench/torch_peer.py speaks the same protocol. Inputs come from `benchValue`, which every
// worker computes the same way (Python included), so outputs can be compared element by element.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

/// One figure: "gemm f32 M N K" (C[M,N] = A[M,K] B[K,N]), "gemv f32 N K" (y[N] = W[N,K] x[K]),
/// "softmax f32 R C" / "rmsnorm f32 R C" (over the last axis), "tanh f32 n", "gelu f32 n",
/// "triad f32 n" (a = b + 3 c).
struct Figure {
  std::string kind;
  std::string dtype;
  std::vector<int64_t> dims;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

inline Figure parseFigure(std::istream& in) {
  Figure f;
  in >> f.kind >> f.dtype;
  int64_t d;
  while (in >> d) f.dims.push_back(d);
  return f;
}

/// The i-th input value of stream `seed`: k/128 - 1 for an 8-bit hash k, so exact in bf16 and
/// f32 (a bf16 GEMM then differs from the f32 one only by accumulation and output rounding).
/// torch_peer.py's bench_values() computes the same numbers.
inline float benchValue(uint64_t i, uint32_t seed) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u + seed * 40503u;
  h ^= h >> 16;
  h *= 0x45d9f3bu;
  h ^= h >> 16;
  return static_cast<float>(static_cast<int>(h >> 24) - 128) / 128.0f;
}

/// The int8 figures' inputs, the same hash as integers: A as u8 (benchValue * 128 + 128), B as s8
/// (benchValue * 128).
inline int benchI8(uint64_t i, uint32_t seed) { return static_cast<int>(benchValue(i, seed) * 128.0f); }
inline int benchU8(uint64_t i, uint32_t seed) { return benchI8(i, seed) + 128; }

inline std::vector<float> benchValues(int64_t n, uint32_t seed, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = offset + scale * benchValue(static_cast<uint64_t>(i), seed);
  return v;
}

/// How many copies of the weight (gemv's W, gemm's B) a worker keeps and cycles through, one per
/// call, so that the weight streams from memory as in decoding instead of staying in the caches
/// (with 2 threads on 2 L3 slices, half a 64 MB matrix each can stay cached). Only for
/// weight-streaming figures: gemv and the GEMMs with M <= 64; at least 256 MiB in all, at most 16.
/// torch_peer.py's weight_copies() computes the same.
inline int weightCopies(const Figure& f) {
  const bool gemv = f.kind == "gemv";
  if (!gemv && !(f.kind == "gemm" && f.dims.size() == 3 && f.dims[0] <= 64)) return 1;
  const int64_t bytes = (gemv ? f.dims[0] * f.dims[1] : f.dims[1] * f.dims[2]) *
                        (f.dtype == "bf16" ? 2 : f.dtype == "i8" ? 1 : 4);
  const int64_t want = bytes > 0 ? ((int64_t{256} << 20) + bytes - 1) / bytes : 1;
  return static_cast<int>(std::min<int64_t>(16, std::max<int64_t>(1, want)));
}

/// A conv figure, "conv <dtype> batch cin hw cout k stride pad": NCHW input {batch, cin, hw, hw}
/// (seed kSeedA), OIHW weight {cout, cin, k, k} (kSeedB), square padding, no bias.
struct Conv {
  int64_t batch = 1, cin = 1, hw = 1, cout = 1, k = 1, stride = 1, pad = 0;
  int64_t out() const { return (hw + 2 * pad - k) / stride + 1; }
  int64_t outputs() const { return batch * cout * out() * out(); }
  double flops() const { return 2.0 * static_cast<double>(outputs()) * static_cast<double>(cin * k * k); }
};

inline Conv convOf(const Figure& f) {
  const auto& d = f.dims;
  return d.size() == 7 ? Conv{d[0], d[1], d[2], d[3], d[4], d[5], d[6]} : Conv{};
}

inline std::string convSpec(const Conv& c, const std::string& dtype) {
  std::string s = "conv " + dtype;
  for (int64_t v : {c.batch, c.cin, c.hw, c.cout, c.k, c.stride, c.pad}) s += " " + std::to_string(v);
  return s;
}

// Seeds and scales of each figure's inputs (torch_peer.py's INPUTS mirrors these).
inline constexpr uint32_t kSeedA = 1, kSeedB = 2, kSeedW = 3, kSeedX = 4, kSeedSoftmax = 5, kSeedRms = 6,
                          kSeedRmsWeight = 7, kSeedTanh = 8, kSeedGelu = 9, kSeedTriadB = 10, kSeedTriadC = 11,
                          kSeedQ = 12, kSeedK = 13, kSeedV = 14;  // attention: q, k, v {h, n, hd}
inline constexpr float kActivationScale = 4.0f;  // softmax, rmsnorm, tanh and gelu inputs lie in [-4, 4)
inline constexpr float kTriadScalar = 3.0f;
inline constexpr float kRmsEps = 1e-6f;

/// bf16 from f32, rounding to nearest even (NaN kept quiet).
inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float fromBf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline double wallSeconds() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// CPU time of the whole process (all threads): cpu/wall of a rep tells how many threads ran.
inline double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// One implementation of the figures.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Library, version, threads as the library reports them.
  virtual std::string info() = 0;
  /// Builds inputs and the kernel; returns "" when ready, else why the figure does not apply.
  virtual std::string setup(const Figure& figure) = 0;
  /// Runs the kernel once (synchronously).
  virtual void run() = 0;
  /// The last result, as f32.
  virtual std::vector<float> output() = 0;
};

inline std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

/// Answers the driver's commands on stdin/stdout until "quit" or EOF.
inline int serve(Backend& backend) {
  std::string line;
  bool ready = false;
  auto reply = [](const std::string& s) {
    std::fputs((s + "\n").c_str(), stdout);
    std::fflush(stdout);
  };
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string command;
    in >> command;
    try {
      if (command == "quit") {
        break;
      } else if (command == "info") {
        reply("info " + oneLine(backend.info()));
      } else if (command == "setup") {
        ready = false;
        const Figure figure = parseFigure(in);
        const std::string why = backend.setup(figure);
        ready = why.empty();
        reply(ready ? std::string("ok") : "na " + oneLine(why));
      } else if (command == "run") {
        int iters = 1;
        in >> iters;
        if (!ready) throw std::runtime_error("run before a successful setup");
        const double c0 = cpuSeconds(), t0 = wallSeconds();
        for (int i = 0; i < iters; ++i) backend.run();
        const double t1 = wallSeconds(), c1 = cpuSeconds();
        char buf[128];
        std::snprintf(buf, sizeof buf, "time %.9g %.9g", (t1 - t0) / iters, (c1 - c0) / iters);
        reply(buf);
      } else if (command == "dump") {
        std::string path;
        in >> path;
        if (!ready) throw std::runtime_error("dump before a successful setup");
        const std::vector<float> out = backend.output();
        FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr) throw std::runtime_error("cannot write " + path);
        const size_t written = std::fwrite(out.data(), sizeof(float), out.size(), f);
        std::fclose(f);
        if (written != out.size()) throw std::runtime_error("short write to " + path);
        reply("ok");
      } else {
        reply("err unknown command " + command);
      }
    } catch (const std::exception& e) {
      reply((command == "setup" ? "na " : "err ") + oneLine(e.what()));
    }
  }
  return 0;
}

}  // namespace bench

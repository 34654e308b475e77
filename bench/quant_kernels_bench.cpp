// radix-bench-qkernels: the quantized kernels (src/compiler/kernels/quant) called directly, as the
// dispatcher does (rows split over T OpenMP threads), against a STREAM triad in the same process.
//
//   build/bin/radix-bench-qkernels                      # q8_0 q4_0 q4_k, 1 and 2 threads
//   build/bin/radix-bench-qkernels --types all --threads 2 --isa avx2
//
// GEMV (m = 1): GB/s of weight bytes streamed; the weight cycles through copies (>= 256 MiB in
// all, on 2 MiB pages as a model's are) so that it comes from memory, as in decoding. `int8` is the default path (activations
// quantized per 32), `f32` the RADIX_QUANT_EXACT=1 one. GEMM (m = 512, prompt processing):
// GFLOP/s = 2 m n k / s. `hot int8`: one copy of the weight (in cache), 1 thread, timed by the
// thread's CPU time: the kernel's compute ceiling, readable on a busy machine. Best of 7 reps,
// each >= 30 ms. Not a test: timings are noisy.
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/kernels/quant/qkernels.h"

namespace {

using radix::QuantType;
namespace kernels = radix::kernels;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
double best(F&& f, int reps = 7) {
  f();
  double b = 1e30;
  for (int r = 0; r < reps; ++r) {
    int iters = 0;
    const double t0 = now();
    double t = 0;
    do {
      f();
      ++iters;
      t = now() - t0;
    } while (t < 0.03);
    b = std::min(b, t / iters);
  }
  return b;
}

double cpuNow() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// Best time per call by this thread's CPU time: on a busy machine, what the kernel itself costs.
template <class F>
double bestCpu(F&& f, int reps = 7) {
  f();
  double b = 1e30;
  for (int r = 0; r < reps; ++r) {
    int iters = 0;
    const double t0 = cpuNow();
    double t = 0;
    do {
      f();
      ++iters;
      t = cpuNow() - t0;
    } while (t < 0.03);
    b = std::min(b, t / iters);
  }
  return b;
}

double triad(int threads) {
  const size_t n = size_t(16) << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  auto run = [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
  };
  return 12.0 * n / best(run) / 1e9;
}

struct Fmt {
  const char* name;
  QuantType type;
  int elems, bytes;
};
const Fmt kFormats[] = {{"q8_0", QuantType::q8_0, 32, 34}, {"q4_0", QuantType::q4_0, 32, 18},
                        {"q4_1", QuantType::q4_1, 32, 20}, {"q5_0", QuantType::q5_0, 32, 22},
                        {"q5_1", QuantType::q5_1, 32, 24}, {"q4_k", QuantType::q4_k, 256, 144},
                        {"q5_k", QuantType::q5_k, 256, 176}, {"q6_k", QuantType::q6_k, 256, 210}};

// Random blocks with small finite f16 scales (0x2000..0x23ff: about 0.008).
std::vector<uint8_t> weights(const Fmt& f, int64_t n, int64_t k) {
  std::vector<uint8_t> w(static_cast<size_t>(n * (k / f.elems) * f.bytes));
  std::mt19937 rng(7);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  const int at = f.type == QuantType::q6_k ? 208 : 0;
  const int scales = (f.type == QuantType::q4_1 || f.type == QuantType::q5_1 || f.elems == 256) && at == 0 ? 2 : 1;
  for (size_t blk = 0; blk < w.size() / f.bytes; ++blk)
    for (int s = 0; s < scales; ++s) w[blk * f.bytes + at + 2 * s + 1] = 0x20;
  return w;
}

struct Runner {
  bool avx512, vnni;
  kernels::QPath operator()(const kernels::QProblem& p, int threads) const {
    kernels::QPath path = kernels::QPath::scalar;
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t lo = p.n * t / nt / 4 * 4, hi = t + 1 == nt ? p.n : p.n * (t + 1) / nt / 4 * 4;
      const auto got = avx512 ? kernels::runQuantAvx512(p, lo, hi, vnni) : kernels::runQuantAvx2(p, lo, hi, vnni);
      if (t == 0) path = got;
    }
    return path;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> types = {"q8_0", "q4_0", "q4_k"};
  std::vector<int> threadCounts = {1, 2};
  __builtin_cpu_init();
  std::string isa = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") ? "avx512" : "avx2";
  bool vnni = isa == "avx512" ? __builtin_cpu_supports("avx512vnni") : __builtin_cpu_supports("avxvnni");
  bool gemm = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--types" && i + 1 < argc) {
      const std::string v = argv[++i];
      types.clear();
      if (v == "all")
        for (const auto& f : kFormats) types.push_back(f.name);
      else
        for (size_t s = 0, e; s <= v.size(); s = e + 1) types.push_back(v.substr(s, (e = std::min(v.find(',', s), v.size())) - s));
    } else if (a == "--threads" && i + 1 < argc) {
      threadCounts = {std::atoi(argv[++i])};
    } else if (a == "--isa" && i + 1 < argc) {
      isa = argv[++i];
      vnni = isa.find("vnni") != std::string::npos;
      isa = isa.substr(0, isa.find('_'));
    } else if (a == "--no-gemm") {
      gemm = false;
    } else {
      std::printf("usage: radix-bench-qkernels [--types q8_0,q4_0|all] [--threads T] [--isa avx2|avx2_vnni|avx512|avx512_vnni] [--no-gemm]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  const Runner runner{isa == "avx512", vnni};
  std::printf("isa %s%s; GEMV m=1 GB/s of weight bytes (ratio to the triad), GEMM m=512 GFLOP/s\n", isa.c_str(),
              vnni ? " + vnni" : "");
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{768, 768}, {2048, 768}, {768, 2048}, {4096, 4096}, {32000, 768}};
  for (int threads : threadCounts) {
    const double roof = triad(threads);
    std::printf("\nT=%d  triad %.1f GB/s\n%-6s %-10s %14s %14s %12s %10s\n", threads, roof, "type", "n x k", "gemv int8",
                "gemv f32", "gemm m=512", "hot int8");
    for (const auto& name : types) {
      const Fmt* f = nullptr;
      for (const auto& x : kFormats)
        if (name == x.name) f = &x;
      if (!f) {
        std::printf("unknown type %s\n", name.c_str());
        return 2;
      }
      for (const auto& [n, k] : shapes) {
        const int64_t rowBytes = k / f->elems * f->bytes, bytes = n * rowBytes;
        const int copies = static_cast<int>(std::max<int64_t>(1, (int64_t(256) << 20) / bytes));
        // On 2 MiB pages, as a model's weights are (a file read into memory: io::Residency::copied).
        const size_t stride = static_cast<size_t>(bytes + 63) / 64 * 64, huge = size_t(2) << 20;
        const size_t total = (stride * copies + huge - 1) / huge * huge;
        std::unique_ptr<uint8_t, decltype(&std::free)> block(static_cast<uint8_t*>(std::aligned_alloc(huge, total)), std::free);
        ::madvise(block.get(), total, MADV_HUGEPAGE);
        const std::vector<uint8_t> w = weights(*f, n, k);
        std::vector<uint8_t*> ws(copies);
        for (int i = 0; i < copies; ++i) ws[i] = static_cast<uint8_t*>(std::memcpy(block.get() + i * stride, w.data(), w.size()));
        std::vector<float> a(static_cast<size_t>(512 * k)), c(static_cast<size_t>(512 * n));
        std::mt19937 rng(3);
        std::normal_distribution<float> nd;
        for (auto& x : a) x = nd(rng);
        kernels::QProblem p;
        p.a = a.data(), p.c = c.data(), p.type = f->type;
        p.m = 1, p.n = n, p.k = k, p.sam = k, p.wRowBytes = rowBytes, p.scm = n, p.scn = 1;
        int call = 0;
        auto gemv = [&] {
          p.w = ws[call++ % copies];
          runner(p, threads);
        };
        unsetenv("RADIX_QUANT_EXACT");
        const double tInt8 = best(gemv);
        setenv("RADIX_QUANT_EXACT", "1", 1);
        const double tF32 = best(gemv);
        unsetenv("RADIX_QUANT_EXACT");
        // One copy, 1 thread, CPU time: the rate from cache, the kernel's own ceiling.
        double hot = 0;
        if (threads == 1) {
          p.w = ws[0];
          hot = bytes / bestCpu([&] { kernels::runQuantAvx2(p, 0, n, runner.vnni); }) / 1e9;
          if (runner.avx512) hot = bytes / bestCpu([&] { kernels::runQuantAvx512(p, 0, n, runner.vnni); }) / 1e9;
        }
        double gflops = 0;
        if (gemm) {
          p.m = 512, p.w = ws[0];
          gflops = 2.0 * 512 * n * k / best([&] { runner(p, threads); }, 3) / 1e9;
        }
        const double gInt8 = bytes / tInt8 / 1e9, gF32 = bytes / tF32 / 1e9;
        std::printf("%-6s %4lldx%-5lld %7.1f (%.2f) %7.1f (%.2f) %12.1f %10.1f\n", f->name, static_cast<long long>(n),
                    static_cast<long long>(k), gInt8, gInt8 / roof, gF32, gF32 / roof, gflops, hot);
      }
    }
  }
  return 0;
}

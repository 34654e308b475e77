// radix_kernel_contract: the one symbol compiled code calls for a contraction. It lowers the
// requested ISA to what this CPU runs, picks the thread count and counts the call.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/kernels.h"

namespace radix::kernels {

namespace {
std::atomic<uint64_t> counters[kPathCount][kIsaCount];
std::atomic<uint64_t> requests[kIsaCount];
std::atomic<int> packAlongForced{-1};
}

Isa hostIsa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
      if (!__builtin_cpu_supports("avx512bf16")) return Isa::avx512;
      // The tiles need the OS's permission too; refused (old kernel, small sigaltstack): no AMX.
      return amxBf16Available() ? Isa::amx : Isa::avx512bf16;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
      return Isa::avx2;
    return Isa::x86_64;
  }();
  return isa;
}

bool packAlongPays() {
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
  }();
  const int forced = packAlongForced.load(std::memory_order_relaxed);
  return forced < 0 ? amd : forced != 0;
}

void forcePackAlong(int on) { packAlongForced.store(on, std::memory_order_relaxed); }

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::x86_64: return "x86-64";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::amx: return "amx";
  }
  return "?";
}

uint64_t requestCount(Isa isa) { return requests[static_cast<int>(isa)].load(std::memory_order_relaxed); }

uint64_t callCount(Path path, Isa isa) {
  return counters[static_cast<int>(path)][static_cast<int>(isa)].load(std::memory_order_relaxed);
}

}  // namespace radix::kernels

using namespace radix::kernels;

extern "C" void radix_kernel_contract(int64_t aBase, int64_t aOffset, int64_t bBase, int64_t bOffset, int64_t cBase,
                                      int64_t cOffset, int64_t types, int64_t batch, int64_t m, int64_t n, int64_t k,
                                      int64_t sab, int64_t sam, int64_t sak, int64_t sbb, int64_t sbk, int64_t sbn,
                                      int64_t scb, int64_t scm, int64_t scn, int64_t threads, int64_t isa) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  Problem p;
  p.aType = static_cast<Elem>(types & 0xff);
  p.bType = static_cast<Elem>((types >> 8) & 0xff);
  p.overwrite = (types & kContractOverwrite) != 0;
  p.a = reinterpret_cast<const char*>(aBase) + aOffset * elemBytes(p.aType);
  p.b = reinterpret_cast<const char*>(bBase) + bOffset * elemBytes(p.bType);
  p.bBase = reinterpret_cast<const void*>(bBase);
  p.c = reinterpret_cast<float*>(cBase) + cOffset;
  p.batch = batch, p.m = m, p.n = n, p.k = k;
  p.sab = sab, p.sam = sam, p.sak = sak, p.sbb = sbb, p.sbk = sbk, p.sbn = sbn, p.scb = scb, p.scm = scm, p.scn = scn;
  // A cached object may ask for more than this CPU has: run the best it has.
  const int64_t asked = std::clamp<int64_t>(isa, 0, kIsaCount - 1);
  requests[asked].fetch_add(1, std::memory_order_relaxed);
  const Isa run = static_cast<Isa>(std::min<int64_t>(asked, static_cast<int64_t>(hostIsa())));
  int t = threads > 0 ? static_cast<int>(threads) : omp_get_max_threads();
  // Never nest inside a parallel region; small problems are not worth a fork-join.
  const double flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
                       static_cast<double>(k);
  if (omp_in_parallel() || flops < 1e6) t = 1;
  t = std::max(t, 1);
  const bool bytes = isByte(p.aType);
  // Only the tiles write C without reading it first; elsewhere the dropped fill runs here (runBytes
  // does it for the 8-bit kernels that add).
  if (p.overwrite && !bytes && !(run == Isa::amx && amxTilesTake(p))) {
    zeroC(p, t);
    p.overwrite = false;
  }
  if (bytes) {
    const Isa ran = runBytes(p, t, run);
    counters[static_cast<int>(p.m == 1 || p.n == 1 ? Path::gemv : Path::gemm)][static_cast<int>(ran)].fetch_add(
        1, std::memory_order_relaxed);
    return;
  }
  Path path;
  switch (run) {
    case Isa::amx: path = runAmx(p, t); break;
    case Isa::avx512bf16: path = runAvx512(p, t, true); break;
    case Isa::avx512: path = runAvx512(p, t, false); break;
    case Isa::avx2: path = runAvx2(p, t); break;
    default: path = runX86_64(p, t); break;
  }
  counters[static_cast<int>(path)][static_cast<int>(run)].fetch_add(1, std::memory_order_relaxed);
}

namespace radix::kernels {

bool hostHasAvx512Vnni() {
  static const bool vnni = (__builtin_cpu_init(), __builtin_cpu_supports("avx512vnni") != 0);
  return vnni;
}

bool bytesOnTiles(const Problem& p, Isa run) { return run == Isa::amx && p.m != 1 && p.n != 1 && amxInt8Available(); }

Isa runBytes(const Problem& p, int threads, Isa run) {
  if (bytesOnTiles(p, run)) {
    amxBytesRun(p, threads);
    return Isa::amx;
  }
  if (run >= Isa::avx512 && hostHasAvx512Vnni()) {
    bytesGemmVnni(p, threads);  // honours overwrite itself
    return Isa::avx512;
  }
  if (p.overwrite) zeroC(p, threads);  // the blocked kernels add to C
  switch (run) {
    case Isa::amx:
    case Isa::avx512bf16:
    case Isa::avx512: bytesGemmAvx512(p, threads); return Isa::avx512;
    case Isa::avx2: bytesGemmAvx2(p, threads); return Isa::avx2;
    default: bytesGemmX86_64(p, threads); return Isa::x86_64;
  }
}

void zeroC(const Problem& p, int threads) {
  const int64_t rows = p.batch * p.m;
  if (p.scn == 1 && p.scm == p.n && (p.batch == 1 || p.scb == p.m * p.n)) {
    radix_kernel_zero(reinterpret_cast<int64_t>(p.c), 0, rows * p.n * int64_t(sizeof(float)), threads);
    return;
  }
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.m; ++i) {
      float* row = p.c + b * p.scb + i * p.scm;
      if (p.scn == 1)
        std::memset(row, 0, sizeof(float) * static_cast<size_t>(p.n));
      else
        for (int64_t j = 0; j < p.n; ++j) row[j * p.scn] = 0.0f;
    }
}

}  // namespace radix::kernels

extern "C" void radix_kernel_zero(int64_t base, int64_t offset, int64_t bytes, int64_t threads) {
  char* p = reinterpret_cast<char*>(base) + offset;
  constexpr int64_t kChunk = int64_t(1) << 20;
  int t = threads > 0 ? static_cast<int>(threads) : omp_get_max_threads();
  if (omp_in_parallel() || bytes < 2 * kChunk) t = 1;
  if (t == 1) {
    std::memset(p, 0, static_cast<size_t>(bytes));
    return;
  }
  const int64_t chunks = (bytes + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(t) schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    std::memset(p + c * kChunk, 0, static_cast<size_t>(std::min(kChunk, bytes - c * kChunk)));
}

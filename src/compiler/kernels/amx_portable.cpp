// The AMX checks that any CPU may run (not compiled for AMX): the OS tile permission, the int8
// entry points' guards, the int8 B packer, and the drivers on emulated tiles for tests.
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/impl.h"
#include "compiler/kernels/amx_impl.h"

namespace {

// A tile byte as tdpb*d reads it: signed or unsigned.
template <int Signed>
int32_t byteValue(uint8_t x) {
  return Signed ? int32_t(int8_t(x)) : int32_t(x);
}

// The tile registers in memory; tdpbf16ps rounds through f32 like the hardware (which also
// flushes denormals: the emulation does not, tests stay clear of them).
struct EmulatedTiles : ScalarWords {
  struct Tile {
    uint8_t bytes[16][64];
  };
  static inline thread_local Tile tiles[8];
  static inline thread_local TileConfig cfg;
  static void config(const TileConfig& c) {
    cfg = c;
    std::memset(tiles, 0, sizeof(tiles));
  }
  static void release() { cfg = TileConfig(); }
  template <class CT>
  static void addTransposed(const CT* edge, CT* c, int64_t ldc, int mr, int nr) {
    addTransposedScalar(edge, c, ldc, mr, nr);
  }
  template <int t>
  static void load(const void* p, int64_t stride) {
    for (int r = 0; r < cfg.rows[t]; ++r)
      std::memcpy(tiles[t].bytes[r], static_cast<const char*>(p) + r * stride, cfg.colsb[t]);
  }
  template <int t>
  static void zero() {
    std::memset(tiles[t].bytes, 0, sizeof(tiles[t].bytes));
  }
  template <int t>
  static void store(void* p, int64_t stride) {
    for (int r = 0; r < cfg.rows[t]; ++r)
      std::memcpy(static_cast<char*>(p) + r * stride, tiles[t].bytes[r], cfg.colsb[t]);
  }
  template <bool Int8, int Signs, int c, int a, int b>
  static void dot() {
    const int rows = cfg.rows[c], cols = cfg.colsb[c] / 4, groups = cfg.colsb[a] / 4;
    for (int m = 0; m < rows; ++m)
      for (int n = 0; n < cols; ++n) {
        if constexpr (Int8) {
          int32_t acc;
          std::memcpy(&acc, tiles[c].bytes[m] + 4 * n, 4);
          for (int g = 0; g < groups; ++g)
            for (int i = 0; i < 4; ++i)
              acc += byteValue<Signs & 1>(tiles[a].bytes[m][4 * g + i]) *
                     byteValue<Signs & 2>(tiles[b].bytes[g][4 * n + i]);
          std::memcpy(tiles[c].bytes[m] + 4 * n, &acc, 4);
        } else {
          float acc;
          std::memcpy(&acc, tiles[c].bytes[m] + 4 * n, 4);
          for (int g = 0; g < groups; ++g) {
            uint16_t x[2], y[2];
            std::memcpy(x, tiles[a].bytes[m] + 4 * g, 4);
            std::memcpy(y, tiles[b].bytes[g] + 4 * n, 4);
            acc += bf16ToF32(x[0]) * bf16ToF32(y[0]) + bf16ToF32(x[1]) * bf16ToF32(y[1]);
          }
          std::memcpy(tiles[c].bytes[m] + 4 * n, &acc, 4);
        }
      }
  }
};

bool askTilePermission() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("amx-tile")) return false;
  // Per process, before any thread touches a tile; without it the first tile instruction raises
  // SIGILL. Refused on kernels without dynamic xstate (< 5.16) or with a small sigaltstack.
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

bool validInt8(int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, int64_t ldb, const void* c, int64_t ldc) {
  return m > 0 && n > 0 && k > 0 && a && c && lda >= k && ldb >= n && ldc >= n;
}

}  // namespace

namespace radix::kernels {

bool amxTilesPermitted() {
  static const bool permitted = askTilePermission();
  return permitted;
}

bool amxBf16Available() {
  return __builtin_cpu_supports("amx-bf16") && __builtin_cpu_supports("avx512bf16") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && amxTilesPermitted();
}

bool amxInt8Available() {
  return __builtin_cpu_supports("amx-int8") && __builtin_cpu_supports("avx512bw") && amxTilesPermitted();
}

size_t amxBf16PanelBytes(int64_t rows, int64_t k) {
  return rows > 0 && k > 0 ? sizeof(uint16_t) * static_cast<size_t>(packedTileElems<false>(k, rows)) : 0;
}

size_t amxInt8PackedBytes(int64_t k, int64_t n) {
  return k > 0 && n > 0 ? static_cast<size_t>(packedTileElems<true>(k, n)) : 0;
}

void amxInt8PackB(int64_t k, int64_t n, const int8_t* b, int64_t ldb, void* packed) {
  if (k <= 0 || n <= 0 || !b || !packed) return;
  const int64_t kp = roundUp(k, 64);
  packTilePanels<true>(b, ldb, 1, 0, k, kp, 0, n, kp * 32, static_cast<int8_t*>(packed));
}

bool amxInt8Gemm(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                 int32_t* c, int64_t ldc, bool accumulate, int threads) {
  if (!b || !validInt8(m, n, k, a, lda, ldb, c, ldc) || !amxInt8Available()) return false;
  amxInt8Run(m, n, k, a, lda, b, ldb, nullptr, c, ldc, accumulate, threads > 0 ? threads : omp_get_max_threads());
  return true;
}

bool amxInt8GemmPacked(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const void* packedB,
                       int32_t* c, int64_t ldc, bool accumulate, int threads) {
  if (!packedB || !validInt8(m, n, k, a, lda, n, c, ldc) || !amxInt8Available()) return false;
  amxInt8Run(m, n, k, a, lda, nullptr, 0, packedB, c, ldc, accumulate, threads > 0 ? threads : omp_get_max_threads());
  return true;
}

void amxEmulatedBf16Gemm(const Problem& p) { tileGemmBf16<EmulatedTiles>(p, 1, p.bBase != nullptr); }

void amxEmulatedBytes(const Problem& p) { tileGemmBytes<EmulatedTiles>(p, 1, p.bBase != nullptr); }

void amxEmulatedInt8Gemm(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b,
                         int64_t ldb, const void* packedB, int32_t* c, int64_t ldc, bool accumulate) {
  tileGemmInt8<EmulatedTiles>(m, n, k, a, lda, b, ldb, packedB, c, ldc, accumulate, 1);
}

}  // namespace radix::kernels

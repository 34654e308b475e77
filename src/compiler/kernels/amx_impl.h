#pragma once
// The AMX GEMM drivers (bf16 tdpbf16ps -> f32, int8 tdpbusd u8 x s8 -> s32), written against a
// tile backend T: amx.cpp's issues the tile instructions (compiled for AMX), amx_portable.cpp's
// emulates them in plain C++, so that the blocking, packing and edges run in tests on any CPU.
// Included after impl.h, in that TU's anonymous namespace.
//
// Tiles: 0-3 hold a 32 x 32 block of C (2 x 2 tiles of 16 x 16 f32/s32); 4, 5 two 16-row A tiles
// (16 x 64 bytes); 6, 7 two 16-column B tiles (16 pair rows of bf16, or quad rows of s8, x 64 B).
// B is packed in 32-column panels, element (k, j) at (k / G) * 32 * G + j * G + k % G (G = 2 for
// bf16, 4 for s8; avx512's CfgBf16 layout), k zero-padded to KT (32 bf16, 64 s8) so that every
// step is a whole tile: the B tiles of one step are 16 rows 128 B apart, the second 64 B in.
// A is read in place (tileloadd with its row stride) when its k is contiguous and the block has
// whole tiles; else it is packed row-major, zero-padded to 32 rows and KT.

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

inline TileConfig fullTileConfig() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  return cfg;
}

template <bool Int8>
struct TileTypes {
  using A = uint16_t;  // bf16 bits
  using B = uint16_t;
  using C = float;
  static constexpr int G = 2, KT = 32;
};
template <>
struct TileTypes<true> {
  using A = uint8_t;
  using B = int8_t;
  using C = int32_t;
  static constexpr int G = 4, KT = 64;
};

inline int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// c[j * ldc + i] += edge[i * 32 + j] for i < mr, j < nr (the tiles' backends may vectorise it).
template <class CT>
inline void addTransposedScalar(const CT* edge, CT* c, int64_t ldc, int mr, int nr) {
  for (int j = 0; j < nr; ++j)
    for (int i = 0; i < mr; ++i) c[j * ldc + i] += edge[i * 32 + j];
}

// The signs of an int8 tile product: bit 0 A's, bit 1 B's (tdpbuud, tdpbsud, tdpbusd, tdpbssd).
constexpr int kU8S8 = 2;
inline int tileSigns(Elem a, Elem b) { return (a == Elem::i8 ? 1 : 0) | (b == Elem::i8 ? 2 : 0); }

// One GEMM of the tile drivers (one batch): element strides; c is f32 (bf16) or s32 (int8).
struct TileGemm {
  const void* a = nullptr;
  int64_t sam = 0, sak = 0;
  const void* b = nullptr;  // raw B, packed per block when bPacked is null
  int64_t sbk = 0, sbn = 0;
  const void* bPacked = nullptr;  // the whole B packed (packTilePanels over K and N)
  void* c = nullptr;
  int64_t scm = 0, scn = 0;
  int64_t m = 0, n = 0, k = 0;
  bool overwrite = false;  // C = A . B: the first K block starts from zero tiles, not C
};

// Elements of the whole packed B: 32-column panels of roundUp(k, KT) x 32.
template <bool Int8>
int64_t packedTileElems(int64_t k, int64_t n) {
  return roundUp(n, 32) * roundUp(k, TileTypes<Int8>::KT);
}

struct ScalarWords {
  // dst[w * 32 + j] = word w of column j (src + j * stride bytes), j < cols, w < words.
  static void columnWords(const char* src, int64_t stride, int cols, int64_t words, uint32_t* dst) {
    for (int j = 0; j < cols; ++j)
      for (int64_t w = 0; w < words; ++w) std::memcpy(dst + w * 32 + j, src + j * stride + 4 * w, 4);
  }
};

// Packs B[k0, k0 + kc) x [j0, j0 + nc) into panels `panel` elements apart, k padded to kcp.
template <bool Int8, class W = ScalarWords>
void packTilePanels(const typename TileTypes<Int8>::B* b, int64_t sbk, int64_t sbn, int64_t k0, int64_t kc,
                    int64_t kcp, int64_t j0, int64_t nc, int64_t panel, typename TileTypes<Int8>::B* dst) {
  using BT = typename TileTypes<Int8>::B;
  constexpr int G = TileTypes<Int8>::G, KT = TileTypes<Int8>::KT;
  int64_t q0 = 0;
  if (sbn == 1 && nc >= 32) {
    // Row-major B, whole panels: KT rows at a time across all panels, so that each row is read
    // in sequence (one panel at a time read 64 bytes a row, a new page each, and was 3x slower).
    // G rows at a time are interleaved into one panel row (vectorised by the compiler).
    const int64_t full = nc / 32;
    if (kc < kcp)
      for (int64_t q = 0; q < full; ++q) std::memset(dst + q * panel, 0, sizeof(BT) * static_cast<size_t>(kcp) * 32);
    for (int64_t kb = 0; kb < kc; kb += KT)
      for (int64_t q = 0; q < full; ++q) {
        const int64_t rows = std::min<int64_t>(KT, kc - kb);
        BT* dk = dst + q * panel + (kb / G) * 32 * G;
        const BT* s = b + (k0 + kb) * sbk + j0 + q * 32;
        int64_t k = 0;
        for (; k + G <= rows; k += G, dk += 32 * G, s += G * sbk)
          for (int j = 0; j < 32; ++j)
            for (int g = 0; g < G; ++g) dk[j * G + g] = s[g * sbk + j];
        for (int g = 0; k < rows; ++k, ++g, s += sbk)
          for (int j = 0; j < 32; ++j) dk[j * G + g] = s[j];
      }
    q0 = full;
  }
  for (int64_t q = q0; q * 32 < nc; ++q) {
    BT* d = dst + q * panel;
    const int nr = static_cast<int>(std::min<int64_t>(32, nc - q * 32));
    if (nr < 32 || kc < kcp) std::memset(d, 0, sizeof(BT) * static_cast<size_t>(kcp) * 32);
    if (sbk == 1 && sbn != 1) {
      // Each column's k is contiguous: G consecutive k are one 4-byte word of the panel.
      const int64_t words = kc / G;
      W::columnWords(reinterpret_cast<const char*>(b + (j0 + q * 32) * sbn + k0), sbn * int64_t(sizeof(BT)), nr,
                     words, reinterpret_cast<uint32_t*>(d));
      for (int j = 0; j < nr; ++j) {
        const BT* s = b + (j0 + q * 32 + j) * sbn + k0;
        BT* dt = d + j * G + words * 32 * G;
        for (int64_t k = words * G; k < kc; ++k) dt[k % G] = s[k];
      }
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        const BT* s = b + (k0 + k) * sbk + (j0 + q * 32) * sbn;
        BT* dk = d + (k / G) * 32 * G + k % G;
        for (int j = 0; j < nr; ++j) dk[j * G] = s[j * sbn];
      }
    }
  }
}

// Rows [i0, i0 + mr) x k [k0, k0 + kc) of A into a row-major [rows][kcp] buffer, zero-padded.
template <class AT>
void packTileRows(const AT* a, int64_t sam, int64_t sak, int64_t i0, int64_t mr, int64_t rows, int64_t k0,
                  int64_t kc, int64_t kcp, AT* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    AT* d = dst + r * kcp;
    if (r >= mr) {
      std::memset(d, 0, sizeof(AT) * static_cast<size_t>(kcp));
      continue;
    }
    const AT* s = a + (i0 + r) * sam + k0 * sak;
    if (sak == 1) {
      std::memcpy(d, s, sizeof(AT) * static_cast<size_t>(kc));
    } else {
      for (int64_t k = 0; k < kc; ++k) d[k] = s[k * sak];
    }
    if (kcp > kc) std::memset(d + kc, 0, sizeof(AT) * static_cast<size_t>(kcp - kc));
  }
}

// How tileMicro fetches B ahead of its tile loads.
enum class BFetch {
  none,
  l1Next,   // B is in L2: the next step into L1 (bf16 1024^3, 1 thread: 2.38-2.42 -> 2.20-2.28 ms)
  l2Ahead,  // B streams from memory: 4 steps ahead into L2 (an L1 fetch on top cost 10-18 % here)
};

// C[32 x 32] (row stride sc bytes) += A (two 16-row tiles, row stride sa bytes, 64 B a step) .
// B (one 32-column panel, 2 KB a step), C tiles kept in registers across the `steps` k steps;
// `fresh`: C = A . B (C is not read). The last steps' fetches reach what follows the panel (the
// next panel when K is one block).
template <class T, bool Int8, int Signs = kU8S8>
inline void tileMicro(int64_t steps, const char* a0, int64_t sa, const char* b, char* c, int64_t sc,
                      bool fresh = false, BFetch fetch = BFetch::none) {
  const char* a1 = a0 + 16 * sa;
  if (fresh) {
    T::template zero<0>();
    T::template zero<1>();
    T::template zero<2>();
    T::template zero<3>();
  } else {
    T::template load<0>(c, sc);
    T::template load<1>(c + 64, sc);
    T::template load<2>(c + 16 * sc, sc);
    T::template load<3>(c + 16 * sc + 64, sc);
  }
  for (int64_t s = 0; s < steps; ++s) {
    if (fetch == BFetch::l1Next)
      for (int l = 0; l < 32; ++l) __builtin_prefetch(b + (s + 1) * 2048 + l * 64, 0, 3);
    else if (fetch == BFetch::l2Ahead)
      for (int l = 0; l < 32; ++l) __builtin_prefetch(b + (s + 4) * 2048 + l * 64, 0, 2);
    T::template load<4>(a0 + s * 64, sa);
    T::template load<6>(b + s * 2048, 128);
    T::template load<7>(b + s * 2048 + 64, 128);
    T::template load<5>(a1 + s * 64, sa);
    T::template dot<Int8, Signs, 0, 4, 6>();
    T::template dot<Int8, Signs, 1, 4, 7>();
    T::template dot<Int8, Signs, 2, 5, 6>();
    T::template dot<Int8, Signs, 3, 5, 7>();
  }
  T::template store<0>(c, sc);
  T::template store<1>(c + 64, sc);
  T::template store<2>(c + 16 * sc, sc);
  T::template store<3>(c + 16 * sc + 64, sc);
}

// C[i0, i1) x [j0, j1) += A . B (j0 a multiple of 32). Configures the tiles on this thread (the
// configuration is per thread, and another library may have loaded its own) and releases them.
template <class T, bool Int8, int Signs = kU8S8>
void tileBlock(const TileGemm& g, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  using TT = TileTypes<Int8>;
  using AT = typename TT::A;
  using BT = typename TT::B;
  using CT = typename TT::C;
  constexpr int64_t eb = sizeof(AT), KT = TT::KT, MC = 256, NC = 512, KC = Int8 ? 2048 : 1024;
  static thread_local Scratch aScratch, bScratch;
  const AT* a = static_cast<const AT*>(g.a);
  CT* c = static_cast<CT*>(g.c);
  const int64_t kp = roundUp(g.k, KT), kcMax = std::min(KC, kp);
  const int64_t mcMax = std::min(MC, roundUp(i1 - i0, 32)), ncMax = std::min(NC, roundUp(j1 - j0, 32));
  AT* abuf = static_cast<AT*>(aScratch.get(sizeof(AT) * static_cast<size_t>(mcMax * kcMax)));
  BT* bbuf = g.bPacked ? nullptr : static_cast<BT*>(bScratch.get(sizeof(BT) * static_cast<size_t>(ncMax * kcMax)));
  const bool aDense = g.sak == 1;
  const TileConfig cfg = fullTileConfig();
  T::config(cfg);
  alignas(64) CT edge[32 * 32];
  for (int64_t jc = j0; jc < j1; jc += NC) {
    const int64_t nc = std::min(NC, j1 - jc);
    for (int64_t pc = 0; pc < g.k; pc += KC) {
      const int64_t kc = std::min(KC, g.k - pc), kcp = roundUp(kc, KT), steps = kcp / KT;
      const BT* bblk;
      int64_t panel;
      if (g.bPacked) {
        bblk = static_cast<const BT*>(g.bPacked) + (jc / 32) * kp * 32 + pc * 32;
        panel = kp * 32;
      } else {
        packTilePanels<Int8, T>(static_cast<const BT*>(g.b), g.sbk, g.sbn, pc, kc, kcp, jc, nc, kcp * 32, bbuf);
        bblk = bbuf;
        panel = kcp * 32;
      }
      const bool fresh = g.overwrite && pc == 0;
      for (int64_t ic = i0; ic < i1; ic += MC) {
        const int64_t mc = std::min(MC, i1 - ic), full = mc / 32 * 32;
        const bool inPlace = aDense && kc == kcp;
        if (!inPlace)
          packTileRows(a, g.sam, g.sak, ic, mc, roundUp(mc, 32), pc, kc, kcp, abuf);
        else if (full < mc)
          packTileRows(a, g.sam, g.sak, ic + full, mc - full, 32, pc, kc, kcp, abuf);
        auto block = [&](int64_t ir, int64_t jr, BFetch fetch) {
          const int nr = static_cast<int>(std::min<int64_t>(32, nc - jr));
          const int mr = static_cast<int>(std::min<int64_t>(32, mc - ir));
          const char* bp = reinterpret_cast<const char*>(bblk + (jr / 32) * panel);
          const AT* ap;
          int64_t sa;
          if (inPlace && mr == 32) {
            ap = a + (ic + ir) * g.sam + pc, sa = g.sam * eb;
          } else {
            ap = inPlace ? abuf : abuf + ir * kcp, sa = kcp * eb;
          }
          const char* apc = reinterpret_cast<const char*>(ap);
          CT* cp = c + (ic + ir) * g.scm + (jc + jr) * g.scn;
          if (mr == 32 && nr == 32 && g.scn == 1) {
            tileMicro<T, Int8, Signs>(steps, apc, sa, bp, reinterpret_cast<char*>(cp), g.scm * 4, fresh, fetch);
          } else {
            tileMicro<T, Int8, Signs>(steps, apc, sa, bp, reinterpret_cast<char*>(edge), 128, true, fetch);
            if (fresh)
              for (int i = 0; i < mr; ++i)
                for (int j = 0; j < nr; ++j) cp[i * g.scm + j * g.scn] = CT(0);
            if (g.scm == 1) {  // C^T of the swapped GEMM: C's rows are the edge's columns
              T::addTransposed(edge, cp, g.scn, mr, nr);
            } else {
              for (int i = 0; i < mr; ++i)
                for (int j = 0; j < nr; ++j) cp[i * g.scm + j * g.scn] += edge[i * 32 + j];
            }
          }
        };
        // Many row tiles: each A tile pair runs across the block's B panels (in L2) while it is
        // hot in L1 (bf16 1024^3, 1 thread: 680-737 -> 716-800 GFLOP/s); few (a prompt's 64
        // rows): each B panel serves them all while it is hot, fetched ahead, and what follows it
        // too (bf16 64x4096x4096, weights from memory, 1 thread: 378-390 -> 409-435
        // GFLOP/s; where B is in cache the prefetches cost 4-6 %).
        if (mc >= 128) {
          for (int64_t ir = 0; ir < mc; ir += 32)
            for (int64_t jr = 0; jr < nc; jr += 32) block(ir, jr, BFetch::l1Next);
        } else {
          for (int64_t jr = 0; jr < nc; jr += 32)
            for (int64_t ir = 0; ir < mc; ir += 32) block(ir, jr, BFetch::l2Ahead);
        }
      }
    }
  }
  T::release();
}

// Splits one GEMM over threads (as splitWork does) in whole 32 x 32 blocks.
template <class T, bool Int8>
void tileGemm(const TileGemm& g, int threads) {
  Problem shape;
  shape.m = g.m, shape.n = g.n, shape.k = g.k;
  splitWork(shape, threads, 32, 32,
            [&](int64_t, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { tileBlock<T, Int8>(g, i0, i1, j0, j1); });
}

// p on tiles (bf16 -> f32, or 8-bit -> s32 with the sign mix Signs), B from the packed-weight
// cache when it is a constant argument.
template <class T, bool Int8, int Signs = kU8S8>
void tileGemmCached(const Problem& p, int threads, bool useCache) {
  using BT = typename TileTypes<Int8>::B;
  constexpr int64_t KT = TileTypes<Int8>::KT, G = TileTypes<Int8>::G;
  std::shared_ptr<const void> pre;
  if (useCache) {
    const int64_t kp = roundUp(p.k, KT);
    pre = radix::kernels::packedB(p, (Int8 ? 0x20000 : 0x10000) | (KT << 8) | G,
                                  sizeof(BT) * packedTileElems<Int8>(p.k, p.n), [&](void* dst) {
                                    packPanelsParallel(p.n, 32, threads, [&](int64_t j0, int64_t nc) {
                                      packTilePanels<Int8, T>(static_cast<const BT*>(p.b), p.sbk, p.sbn, 0, p.k, kp, j0,
                                                              nc, kp * 32, static_cast<BT*>(dst) + (j0 / 32) * kp * 32);
                                    });
                                  });
  }
  const int64_t ea = elemBytes(p.aType), eb = elemBytes(p.bType);
  splitWork(p, threads, 32, 32, [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    TileGemm g;
    g.a = static_cast<const char*>(p.a) + bi * p.sab * ea;
    g.sam = p.sam, g.sak = p.sak;
    g.b = static_cast<const char*>(p.b) + bi * p.sbb * eb;
    g.sbk = p.sbk, g.sbn = p.sbn;
    g.bPacked = pre.get();
    g.c = p.c + bi * p.scb;  // f32 or s32, 4 bytes either way
    g.scm = p.scm, g.scn = p.scn;
    g.m = p.m, g.n = p.n, g.k = p.k;
    g.overwrite = p.overwrite;
    tileBlock<T, Int8, Signs>(g, i0, i1, j0, j1);
  });
}

// The bf16 contraction problem on tiles (both operands bf16), B from the packed-weight cache
// when it is a constant argument.
template <class T>
void tileGemmBf16(const Problem& p, int threads, bool useCache) {
  if (p.sbk == 1 && p.sak == 1 && p.sbn != 1) {
    // B = W^T with W's rows contiguous (nn::Linear's {N, K} weights): C^T = W . A^T, W read in
    // place as the tiles' A operand and the activations packed per block as their B, so that
    // weights seen once (a prompt) are never packed and none are cached.
    Problem swapped;
    swapped.batch = p.batch, swapped.m = p.n, swapped.n = p.m, swapped.k = p.k;
    splitWork(swapped, threads, 32, 32, [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      TileGemm g;
      g.a = static_cast<const uint16_t*>(p.b) + bi * p.sbb;
      g.sam = p.sbn, g.sak = 1;
      g.b = static_cast<const uint16_t*>(p.a) + bi * p.sab;
      g.sbk = 1, g.sbn = p.sam;
      g.c = p.c + bi * p.scb;
      g.scm = p.scn, g.scn = p.scm;
      g.m = p.n, g.n = p.m, g.k = p.k;
      g.overwrite = p.overwrite;
      tileBlock<T, false>(g, i0, i1, j0, j1);
    });
    return;
  }
  tileGemmCached<T, false>(p, threads, useCache);
}

// The 8-bit contraction (C in i32) on int8 tiles, in its sign mix.
template <class T>
void tileGemmBytes(const Problem& p, int threads, bool useCache) {
  switch (tileSigns(p.aType, p.bType)) {
    case 0: return tileGemmCached<T, true, 0>(p, threads, useCache);
    case 1: return tileGemmCached<T, true, 1>(p, threads, useCache);
    case 2: return tileGemmCached<T, true, 2>(p, threads, useCache);
    default: return tileGemmCached<T, true, 3>(p, threads, useCache);
  }
}

// The int8 entry: C (=|+=) A . B with raw or packed B.
template <class T>
void tileGemmInt8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                  const void* packedB, int32_t* c, int64_t ldc, bool accumulate, int threads) {
  TileGemm g;
  g.overwrite = !accumulate;
  g.a = a, g.sam = lda, g.sak = 1;
  g.b = b, g.sbk = ldb, g.sbn = 1;
  g.bPacked = packedB;
  g.c = c, g.scm = ldc, g.scn = 1;
  g.m = m, g.n = n, g.k = k;
  tileGemm<T, true>(g, threads);
}

}  // namespace

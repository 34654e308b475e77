// The 8-bit contraction on AVX-512 VNNI (vpdpbusd: u8 x s8 -> s32 in groups of 4 along k), for
// CPUs without AMX-INT8 (AMD Zen 4/5, Ice Lake, Cascade Lake). B is packed whole, in 32-column
// panels of k quads ([k/4][32][4], from the packed-weight cache when it is a constant argument),
// A per 8-row tile ([k/4][8][4]); 8 x 32 tiles of 16 zmm accumulators. Sign mixes other than
// u8 x s8 are shifted into it (a + 128, b - 128 by flipping the top bit) and corrected once per
// element of C (which the first K block stores rather than adds to under `overwrite`): sum a b = sum a' b' + beta sum_k a' - alpha sum_k b' - alpha beta K.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "compiler/kernels/kernels.h"
#include "compiler/kernels/packed.h"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c,avx2"))), \
                             apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

constexpr int MR = 8, NR = 32;
constexpr int64_t MC = 256, KC = 1024;  // KC a multiple of 4
static_assert(MC % MR == 0, "A's scratch holds whole row tiles of a block");

// The packed B: panels of kq quads x NR columns x 4 bytes, then the column sums of the stored
// (shifted) values over all of K, one int32 per column rounded up to a panel.
struct PackedBytesB {
  static int64_t quads(int64_t k) { return (k + 3) / 4; }
  static int64_t panels(int64_t n) { return (n + NR - 1) / NR; }
  static size_t bytes(int64_t k, int64_t n) {
    return static_cast<size_t>(panels(n) * quads(k) * NR * 4 + panels(n) * NR * 4);
  }
};

// Panel q0's columns [j0, j0 + nr) of B (all of K), each byte xor `flip`, zero-padded to NR columns
// and whole quads; its column sums into sums[0, NR).
void packPanel(const uint8_t* b, int64_t sbk, int64_t sbn, int64_t k, int64_t j0, int nr, uint8_t flip, uint8_t* d,
               int32_t* sums) {
  const int64_t kq = PackedBytesB::quads(k);
  if (nr < NR || k % 4 != 0) std::memset(d, 0, static_cast<size_t>(kq * NR * 4));
  int64_t q = 0;
  if (sbn == 1 && nr == NR) {
    // Four rows of 32 bytes interleaved into 32 quads (bytes, then byte pairs).
    const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
    for (; 4 * q + 4 <= k; ++q)
      for (int h = 0; h < 2; ++h) {
        __m128i r[4];
        for (int t = 0; t < 4; ++t)
          r[t] = _mm_xor_si128(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + (4 * q + t) * sbk + j0 + 16 * h)), f);
        const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
        const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
        __m128i* out = reinterpret_cast<__m128i*>(d + q * NR * 4 + h * 64);
        _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(lo01, lo23));
        _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
        _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
        _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
      }
  }
  for (int64_t kk = 4 * q; kk < k; ++kk)
    for (int j = 0; j < nr; ++j) d[(kk / 4) * NR * 4 + j * 4 + kk % 4] = b[kk * sbk + (j0 + j) * sbn] ^ flip;
  // Sums of the stored bytes as s8, per column: dot of each quad with (1, 1, 1, 1) as u8.
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t i = 0; i < kq; ++i) {
    s0 = _mm512_dpbusd_epi32(s0, ones, _mm512_loadu_si512(d + i * NR * 4));
    s1 = _mm512_dpbusd_epi32(s1, ones, _mm512_loadu_si512(d + i * NR * 4 + 64));
  }
  _mm512_storeu_si512(sums, s0);
  _mm512_storeu_si512(sums + 16, s1);
}

// Rows [i0, i0 + mr) x k [k0, k0 + kc) of A as [kc/4][MR][4] bytes, each xor `flip`, zero-padded
// (rows past mr, k past kc); row sums of the stored bytes (as u8) added to sums[0, mr).
void packTile(const uint8_t* a, int64_t sam, int64_t sak, int64_t i0, int mr, int64_t k0, int64_t kc, uint8_t flip,
              uint8_t* d, int32_t* sums) {
  const int64_t kq = (kc + 3) / 4;
  if (mr < MR || kc % 4 != 0) std::memset(d, 0, static_cast<size_t>(kq * MR * 4));
  for (int r = 0; r < mr; ++r) {
    const uint8_t* row = a + (i0 + r) * sam + k0 * sak;
    int32_t s = 0;
    int64_t kk = 0;
    if (sak == 1) {
      const uint32_t f = flip * 0x01010101u;
      for (; kk + 4 <= kc; kk += 4) {
        uint32_t w;
        std::memcpy(&w, row + kk, 4);
        w ^= f;
        std::memcpy(d + (kk / 4) * MR * 4 + r * 4, &w, 4);
        s += static_cast<int32_t>((w & 0xff) + ((w >> 8) & 0xff) + ((w >> 16) & 0xff) + (w >> 24));
      }
    }
    for (; kk < kc; ++kk) {
      const uint8_t x = row[kk * sak] ^ flip;
      d[(kk / 4) * MR * 4 + r * 4 + kk % 4] = x;
      s += x;
    }
    sums[r] += s;
  }
}

// C[mr x nr] (row stride scm, column stride scn) += the tile's sums over kq quads (= with `store`);
// `ahead` (the next panel's quads, or null) is fetched step by step meanwhile.
void micro(int64_t kq, const uint8_t* ap, const uint8_t* bp, int32_t* c, int64_t scm, int64_t scn, int mr, int nr,
           const uint8_t* ahead, bool store) {
  __m512i acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kq; ++q) {
    if (ahead) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + q * NR * 4), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(ahead + q * NR * 4 + 64), _MM_HINT_T0);
    }
    const __m512i b0 = _mm512_loadu_si512(bp + q * NR * 4), b1 = _mm512_loadu_si512(bp + q * NR * 4 + 64);
    for (int r = 0; r < MR; ++r) {
      int32_t word;
      std::memcpy(&word, ap + q * MR * 4 + r * 4, 4);
      const __m512i a = _mm512_set1_epi32(word);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], a, b1);
    }
  }
  if (scn == 1) {
    const __mmask16 m0 = static_cast<__mmask16>(nr >= 16 ? 0xffff : (1u << nr) - 1);
    const __mmask16 m1 = static_cast<__mmask16>(nr >= 32 ? 0xffff : nr <= 16 ? 0 : (1u << (nr - 16)) - 1);
    for (int r = 0; r < mr; ++r) {
      int32_t* row = c + r * scm;
      if (!store) {
        acc[r][0] = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, row), acc[r][0]);
        acc[r][1] = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, row + 16), acc[r][1]);
      }
      _mm512_mask_storeu_epi32(row, m0, acc[r][0]);
      _mm512_mask_storeu_epi32(row + 16, m1, acc[r][1]);
    }
    return;
  }
  alignas(64) int32_t t[MR][NR];
  for (int r = 0; r < MR; ++r) {
    _mm512_store_si512(t[r], acc[r][0]);
    _mm512_store_si512(t[r] + 16, acc[r][1]);
  }
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j) {
      int32_t& x = c[r * scm + j * scn];
      x = store ? t[r][j] : static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(t[r][j]));
    }
}

// One batch of p (a batch-1 problem): B packed whole (cached where it may be), the blocks split
// over threads.
void runOne(const Problem& p, int threads) {
  const uint8_t alpha = p.aType == Elem::i8 ? 0x80 : 0, beta = p.bType == Elem::u8 ? 0x80 : 0;
  const int64_t kq = PackedBytesB::quads(p.k), panels = PackedBytesB::panels(p.n);
  const size_t bytes = PackedBytesB::bytes(p.k, p.n);
  const uint8_t* b = static_cast<const uint8_t*>(p.b);
  auto pack = [&](void* dst) {
    uint8_t* d = static_cast<uint8_t*>(dst);
    int32_t* sums = reinterpret_cast<int32_t*>(d + panels * kq * NR * 4);
    packPanelsParallel(p.n, NR, threads, [&](int64_t j0, int64_t nc) {
      for (int64_t j = j0; j < j0 + nc; j += NR)
        packPanel(b, p.sbk, p.sbn, p.k, j, static_cast<int>(std::min<int64_t>(NR, p.n - j)), beta,
                  d + (j / NR) * kq * NR * 4, sums + j);
    });
  };
  std::shared_ptr<const void> cached = radix::kernels::packedB(p, 0x30000 | (NR << 8) | 4, bytes, pack);
  static thread_local Scratch own;
  const uint8_t* bPacked = static_cast<const uint8_t*>(cached.get());
  if (!bPacked) {
    void* d = own.get(bytes);
    pack(d);
    bPacked = static_cast<const uint8_t*>(d);
  }
  const int32_t* colSums = reinterpret_cast<const int32_t*>(bPacked + panels * kq * NR * 4);
  const uint8_t* a = static_cast<const uint8_t*>(p.a);
  int32_t* c = reinterpret_cast<int32_t*>(p.c);
  splitWork(p, threads, MR, NR, [&](int64_t, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    static thread_local Scratch aScratch, sumScratch;
    const int64_t mcMax = std::min<int64_t>(MC, (i1 - i0 + MR - 1) / MR * MR);
    uint8_t* ap = static_cast<uint8_t*>(aScratch.get(static_cast<size_t>(mcMax * KC)));
    int32_t* rowSums = static_cast<int32_t*>(sumScratch.get(sizeof(int32_t) * static_cast<size_t>(i1 - i0 + MR)));
    std::memset(rowSums, 0, sizeof(int32_t) * static_cast<size_t>(i1 - i0 + MR));
    for (int64_t pc = 0; pc < p.k; pc += KC) {
      const int64_t kc = std::min(KC, p.k - pc), kcq = (kc + 3) / 4;
      for (int64_t ic = i0; ic < i1; ic += MC) {
        const int64_t mc = std::min(MC, i1 - ic);
        for (int64_t ir = 0; ir < mc; ir += MR)
          packTile(a, p.sam, p.sak, ic + ir, static_cast<int>(std::min<int64_t>(MR, mc - ir)), pc, kc, alpha,
                   ap + ir * kcq * 4, rowSums + (ic - i0) + ir);
        for (int64_t jr = j0; jr < j1; jr += NR) {
          const uint8_t* bp = bPacked + (jr / NR) * kq * NR * 4 + (pc / 4) * NR * 4;
          const int nr = static_cast<int>(std::min<int64_t>(NR, j1 - jr));
          // The first row tile fetches the next panel's block (from memory when B streams).
          const uint8_t* next = jr + NR < j1 ? bp + kq * NR * 4 : nullptr;
          for (int64_t ir = 0; ir < mc; ir += MR)
            micro(kcq, ap + ir * kcq * 4, bp, c + (ic + ir) * p.scm + jr * p.scn, p.scm, p.scn,
                  static_cast<int>(std::min<int64_t>(MR, mc - ir)), nr, ir == 0 ? next : nullptr,
                  p.overwrite && pc == 0);
        }
      }
    }
    if (alpha == 0 && beta == 0) return;
    // The shifts' share, in wrapping i32 arithmetic as the products'.
    const uint32_t ab = static_cast<uint32_t>(alpha) * beta * static_cast<uint32_t>(p.k);
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) {
        int32_t& x = c[i * p.scm + j * p.scn];
        const uint32_t fix = static_cast<uint32_t>(beta) * static_cast<uint32_t>(rowSums[i - i0]) -
                             static_cast<uint32_t>(alpha) * static_cast<uint32_t>(colSums[j]) - ab;
        x = static_cast<int32_t>(static_cast<uint32_t>(x) + fix);
      }
  });
}

}  // namespace

namespace radix::kernels {

void bytesGemmVnni(const Problem& p, int threads) {
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    Problem q = p;
    q.batch = 1;
    q.a = static_cast<const uint8_t*>(p.a) + bi * p.sab;
    q.b = static_cast<const uint8_t*>(p.b) + bi * p.sbb;
    q.c = p.c + bi * p.scb;
    if (bi > 0 && p.sbb != 0) q.bBase = nullptr;  // another B each batch: not a cached weight
    runOne(q, threads);
  }
}

}  // namespace radix::kernels

#pragma clang attribute pop

#pragma once
// The 8-bit contraction without tiles: C (i32) += A . B for i8/u8 operands in any mix and any
// strides. Blocks of 64 columns x 512 k of B are widened to i16 and transposed once (each
// column's k contiguous), each row of A is widened once per block, and four columns at a time
// take i16 dot products that the compiler vectorises for the TU's target (pmaddwd, vpmaddwd).
// Included after impl.h by the ISA TUs, inside their target pragma.

namespace {

inline void widenBytes(const void* src, int64_t stride, int64_t n, bool isSigned, int16_t* __restrict dst) {
  const auto* s = static_cast<const uint8_t*>(src);
  if (isSigned)
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int16_t>(static_cast<int8_t>(s[i * stride]));
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int16_t>(s[i * stride]);
}

// c += s modulo 2^32, as the tiles' and VNNI's i32 sums wrap (no signed overflow).
inline void addWrapping(int32_t& c, uint32_t s) { c = static_cast<int32_t>(static_cast<uint32_t>(c) + s); }

inline void bytesGemmBlock(const Problem& p, int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int64_t NC = 64, KC = 512;
  static thread_local Scratch bScratch, aScratch;
  int16_t* bt = static_cast<int16_t*>(bScratch.get(sizeof(int16_t) * NC * KC));
  int16_t* ar = static_cast<int16_t*>(aScratch.get(sizeof(int16_t) * KC));
  const auto* a = static_cast<const uint8_t*>(p.a) + bi * p.sab;
  const auto* b = static_cast<const uint8_t*>(p.b) + bi * p.sbb;
  int32_t* c = reinterpret_cast<int32_t*>(p.c) + bi * p.scb;
  const bool sa = p.aType == Elem::i8, sb = p.bType == Elem::i8;
  for (int64_t jc = j0; jc < j1; jc += NC) {
    const int64_t nc = std::min(NC, j1 - jc);
    for (int64_t pc = 0; pc < p.k; pc += KC) {
      const int64_t kc = std::min(KC, p.k - pc);
      for (int64_t j = 0; j < nc; ++j) widenBytes(b + pc * p.sbk + (jc + j) * p.sbn, p.sbk, kc, sb, bt + j * KC);
      for (int64_t i = i0; i < i1; ++i) {
        widenBytes(a + i * p.sam + pc * p.sak, p.sak, kc, sa, ar);
        int32_t* row = c + i * p.scm + jc * p.scn;
        int64_t j = 0;
        for (; j + 4 <= nc; j += 4) {
          const int16_t *b0 = bt + j * KC, *b1 = b0 + KC, *b2 = b1 + KC, *b3 = b2 + KC;
          uint32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          for (int64_t q = 0; q < kc; ++q) {
            const int32_t x = ar[q];
            s0 += static_cast<uint32_t>(x * b0[q]);
            s1 += static_cast<uint32_t>(x * b1[q]);
            s2 += static_cast<uint32_t>(x * b2[q]);
            s3 += static_cast<uint32_t>(x * b3[q]);
          }
          addWrapping(row[j * p.scn], s0);
          addWrapping(row[(j + 1) * p.scn], s1);
          addWrapping(row[(j + 2) * p.scn], s2);
          addWrapping(row[(j + 3) * p.scn], s3);
        }
        for (; j < nc; ++j) {
          const int16_t* b0 = bt + j * KC;
          uint32_t s0 = 0;
          for (int64_t q = 0; q < kc; ++q) s0 += static_cast<uint32_t>(int32_t(ar[q]) * b0[q]);
          addWrapping(row[j * p.scn], s0);
        }
      }
    }
  }
}

inline void bytesGemm(const Problem& p, int threads) {
  splitWork(p, threads, 8, 64, [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    bytesGemmBlock(p, bi, i0, i1, j0, j1);
  });
}

}  // namespace

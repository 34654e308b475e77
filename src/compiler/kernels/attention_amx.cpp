// Fused attention on AMX tiles (bf16 operands): S = Q·Kᵀ and O += P·V as tdpbf16ps tile products,
// the online softmax between them on AVX-512. Only the wide case (prefill: more than 4 query rows
// a task), hd a multiple of 32 up to 256 and no softcap; everything else runs attentionAvx512.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/attention.h"
#include "compiler/kernels/kernels.h"

#pragma clang attribute push(                                                                              \
    __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c,avx2"))), \
    apply_to = function)

#include "compiler/kernels/impl.h"
#include "compiler/kernels/amx_impl.h"
#include "compiler/kernels/amx_tiles.h"

#define RADIX_ATTENTION_F16C 1
namespace {
#include "compiler/kernels/attention_impl.h"

using radix::kernels::AttentionProblem;
using Vec = Attention<16>;
constexpr int64_t kKeys = 64;  // keys per block: two 32-key B panels for S, two k steps for P·V

struct Work {
  std::vector<uint16_t> q, kp, vp, pb;
  std::vector<float> s, o, m, l;
  std::vector<int32_t> lo, hi;
};

// Queries [i0, i0 + bq) of every head of key head kh (rows r = g * bq + i), as Attention::task.
uint64_t task(const AttentionProblem& p, int64_t b0, int64_t b1, int64_t kh, int64_t i0, int64_t bq, Work& w) {
  const int64_t group = p.hq / p.hk, rows = group * bq, rp = roundUp(rows, 32), hd = p.hd, steps = hd / 32;
  w.q.assign(rp * hd, 0);
  w.o.assign(rp * hd, 0.0f);
  w.s.resize(rp * kKeys);
  w.pb.assign(rp * kKeys, 0);
  w.kp.resize(2 * hd * 32);
  w.vp.resize(kKeys * hd);
  w.m.assign(rp, -std::numeric_limits<float>::infinity());
  w.l.assign(rp, 0.0f);
  w.lo.assign(rp, 0);
  w.hi.assign(rp, 0);
  const int64_t offset = p.offset ? *p.offset : p.nk - p.nq;
  int64_t keyEnd = p.nk;
  if (p.lengths)
    keyEnd = std::min<int64_t>(keyEnd, std::max<int64_t>(0, p.lengths[b0 * p.lengthStride[0] + b1 * p.lengthStride[1]]));
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
  const uint16_t* q = static_cast<const uint16_t*>(p.q);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t g = r / bq, i = i0 + r % bq, h = kh * group + g;
    std::memcpy(&w.q[r * hd], q + b0 * p.qStride[0] + b1 * p.qStride[1] + h * p.qStride[2] + i * p.qStride[3],
                sizeof(uint16_t) * static_cast<size_t>(hd));
    keyRange(p, i, offset, keyEnd, w.lo[r], w.hi[r]);
    if (w.lo[r] < w.hi[r]) first = std::min<int64_t>(first, w.lo[r]), last = std::max<int64_t>(last, w.hi[r]);
  }
  const uint16_t* kBase = static_cast<const uint16_t*>(p.k) + b0 * p.kStride[0] + b1 * p.kStride[1] + kh * p.kStride[2];
  const uint16_t* vBase = static_cast<const uint16_t*>(p.v) + b0 * p.vStride[0] + b1 * p.vStride[1] + kh * p.vStride[2];
  const TileConfig cfg = fullTileConfig();
  HardwareTiles::config(cfg);
  uint64_t keysRead = 0;
  for (int64_t j0 = first; j0 < last; j0 += kKeys) {
    const int64_t n = std::min(kKeys, last - j0);
    keysRead += static_cast<uint64_t>(n);
    // Kᵀ as the B operand of S: per 32-key panel, pairs of head dims of each key (4-byte words).
    for (int64_t jp = 0; jp * 32 < n; ++jp) {
      const int cols = static_cast<int>(std::min<int64_t>(32, n - jp * 32));
      uint16_t* panel = w.kp.data() + jp * hd * 32;
      if (cols < 32) std::memset(panel, 0, sizeof(uint16_t) * static_cast<size_t>(hd * 32));
      HardwareTiles::columnWords(reinterpret_cast<const char*>(kBase + (j0 + jp * 32) * p.kStride[3]), p.kStride[3] * 2,
                                 cols, hd / 2, reinterpret_cast<uint32_t*>(panel));
    }
    // V as the B operand of P·V: per 32-dim panel, pairs of keys interleaved.
    for (int64_t jj = 0; jj < kKeys / 2; ++jj) {
      const int64_t ja = 2 * jj, jb = 2 * jj + 1;
      const uint16_t* r0 = ja < n ? vBase + (j0 + ja) * p.vStride[3] : nullptr;
      const uint16_t* r1 = jb < n ? vBase + (j0 + jb) * p.vStride[3] : nullptr;
      for (int64_t dp = 0; dp < steps; ++dp) {
        uint16_t* d = w.vp.data() + dp * kKeys * 32 + jj * 64;
        const __m512i a = r0 ? _mm512_loadu_si512(r0 + dp * 32) : _mm512_setzero_si512();
        const __m512i b = r1 ? _mm512_loadu_si512(r1 + dp * 32) : _mm512_setzero_si512();
        __m512i lo, hi;
        interleavePairs(a, b, lo, hi);
        _mm512_storeu_si512(d, lo);
        _mm512_storeu_si512(d + 32, hi);
      }
    }
    std::memset(w.s.data(), 0, sizeof(float) * static_cast<size_t>(rp * kKeys));
    for (int64_t r = 0; r < rp; r += 32)
      for (int64_t jp = 0; jp * 32 < n; ++jp)
        tileMicro<HardwareTiles, false>(steps, reinterpret_cast<const char*>(&w.q[r * hd]), hd * 2,
                                        reinterpret_cast<const char*>(w.kp.data() + jp * hd * 32),
                                        reinterpret_cast<char*>(&w.s[r * kKeys + jp * 32]), kKeys * 4);
    // The online softmax along each row; O's row shrinks by corr before P·V adds to it.
    for (int64_t r = 0; r < rows; ++r) {
      float* sr = &w.s[r * kKeys];
      const int32_t lo = w.lo[r], hi = w.hi[r];
      Vec::F x[4];
      Vec::F mx = Vec::splat(-std::numeric_limits<float>::infinity());
      for (int c = 0; c < 4; ++c) {
        Vec::I at;
        for (int e = 0; e < 16; ++e) at[e] = static_cast<int32_t>(j0 + c * 16 + e);
        const Vec::I valid = (at >= lo) & (at < hi) & (at < static_cast<int32_t>(j0 + n));
        x[c] = valid ? Vec::load(sr + c * 16) * p.scale : Vec::splat(-std::numeric_limits<float>::infinity());
        mx = __builtin_elementwise_max(mx, x[c]);
      }
      const float mOld = w.m[r], mNew = std::max(mOld, Vec::max(mx));
      if (mNew == -std::numeric_limits<float>::infinity()) continue;  // no visible key yet: P = 0
      const float corr = mOld == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(mOld - mNew);
      Vec::F total = Vec::F{};
      uint16_t* pr = &w.pb[r * kKeys];
      for (int c = 0; c < 4; ++c) {
        const Vec::F e = Vec::exp(x[c] - mNew);
        const Vec::F pe = x[c] == Vec::splat(-std::numeric_limits<float>::infinity()) ? Vec::F{} : e;
        const __m256bh h = _mm512_cvtneps_pbh(reinterpret_cast<const __m512&>(pe));
        std::memcpy(pr + c * 16, &h, 32);
        // l sums the probabilities as P·V sees them (rounded to bf16).
        const __m512 back = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(h)), 16));
        total += reinterpret_cast<const Vec::F&>(back);
      }
      w.l[r] = w.l[r] * corr + Vec::sum(total);
      w.m[r] = mNew;
      if (corr != 1.0f) {
        float* orow = &w.o[r * hd];
        for (int64_t d = 0; d < hd; d += 16) Vec::store(orow + d, Vec::load(orow + d) * corr);
      }
    }
    for (int64_t r = 0; r < rp; r += 32)
      for (int64_t dp = 0; dp < steps; ++dp)
        tileMicro<HardwareTiles, false>(kKeys / 32, reinterpret_cast<const char*>(&w.pb[r * kKeys]), kKeys * 2,
                                        reinterpret_cast<const char*>(w.vp.data() + dp * kKeys * 32),
                                        reinterpret_cast<char*>(&w.o[r * hd + dp * 32]), hd * 4);
  }
  HardwareTiles::release();
  uint16_t* out = static_cast<uint16_t*>(p.out);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t g = r / bq, i = i0 + r % bq, h = kh * group + g;
    uint16_t* dst = out + b0 * p.oStride[0] + b1 * p.oStride[1] + h * p.oStride[2] + i * p.oStride[3];
    // A query that sees no key divides 0 by 0: NaN, as PyTorch gives.
    const float inv = w.l[r] > 0 ? 1.0f / w.l[r] : std::numeric_limits<float>::quiet_NaN();
    for (int64_t d = 0; d < hd; ++d) dst[d] = f32ToBf16(w.o[r * hd + d] * inv);
  }
  return keysRead;
}

}  // namespace

namespace radix::kernels {

bool attentionAmxApplies(const AttentionProblem& p) {
  return p.bf16 && p.kv == Elem::bf16 && p.softcap == 0 && p.hd % 32 == 0 && p.hd <= 256 && p.nq * (p.hq / p.hk) > 4;
}

uint64_t attentionAmx(const AttentionProblem& p, int threads) { return runTasks<Work>(p, threads, &task); }

}  // namespace radix::kernels

#pragma clang attribute pop

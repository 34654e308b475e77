// Prompt-processing GEMM (m > 4) with int8 dots, for the AVX-512 VNNI copy of qimpl.h (included
// there, no include guard, inside its namespace and target region). The activations are quantized
// per 32 as for the GEMV; each weight row's 32-blocks are decoded once per panel into unsigned
// bytes (q + offset) in vpdpbusd's layout, with their scale dw and min share mw' = mw - offset*dw:
//   C[i][j] += sum_g da[i][g] * (dw[j][g] * sum(q_u * qa) + mw'[j][g] * sum(qa)).
// q6_k's scales cover 16 weights: its blocks have two (dw, mw') per column, one per half, and
// the activation sums per 16 (Act::sd16).

// Panel of kPanelCols weight rows over kb blocks: per block, 8 steps of [col][4 bytes], then dw
// and mw' per column for elements 0..15 and again for 16..31 (the same twice but for q6_k).
constexpr int kPanelCols = 32, kTileRows = 4;
constexpr int64_t kBlockBytes = 8 * kPanelCols * 4 + 4 * kPanelCols * 4;

template <class F>
void decodePanel(const QProblem& p, int64_t j0, int nc, int64_t g0, int64_t kb, uint8_t* panel) {
  constexpr int kPerBlock = F::kElems / 32;
  constexpr int kOffset = F::kUnsigned ? 0 : 128;
  for (int c = 0; c < kPanelCols; ++c) {
    const uint8_t* row = p.w + (j0 + c) * p.wRowBytes;
    for (int64_t g = 0; g < kb; ++g) {
      uint8_t* blockOut = panel + g * kBlockBytes;
      float* dw = reinterpret_cast<float*>(blockOut + 8 * kPanelCols * 4);
      float* mw = dw + kPanelCols;
      if (c >= nc) {
        for (int s = 0; s < 8; ++s) std::memset(blockOut + (s * kPanelCols + c) * 4, 0, 4);
        dw[c] = mw[c] = dw[2 * kPanelCols + c] = mw[2 * kPanelCols + c] = 0;
        continue;
      }
      const int64_t sub = g0 + g;  // the 32-block of the row
      const uint8_t* blk = row + (sub / kPerBlock) * F::kBytes;
      typename F::Hdr h;
      F::header(blk, h);
      const int j = static_cast<int>(sub % kPerBlock);
      __m256i q = F::sub(blk, j);
      if constexpr (!F::kUnsigned) q = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
      alignas(32) uint32_t words[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(words), q);
      for (int s = 0; s < 8; ++s) std::memcpy(blockOut + (s * kPanelCols + c) * 4, &words[s], 4);
      float mins = 0;
      if constexpr (F::kMins) mins = h.mn[F::kSubs == 8 ? j : 0];
      const float s0 = scale0<F>(h, j), s1 = scale1<F>(h, j);
      dw[c] = s0;
      mw[c] = mins - kOffset * s0;
      dw[2 * kPanelCols + c] = s1;
      mw[2 * kPanelCols + c] = mins - kOffset * s1;
    }
  }
}

// Rows [i0, i0 + kTileRows) (clamped to m for reading) x the panel's 32 columns, over kb blocks.
// kHalves: a scale per 16 weights (q6_k), each half with its own epilogue.
template <bool kHalves>
void tileInt8(const QProblem& p, const Act& act, int64_t i0, int mr, int64_t g0, int64_t kb, const uint8_t* panel,
              int64_t j0, int nc) {
  __m512 c[kTileRows][2];
  const int8_t* aq[kTileRows];
  const float *ad[kTileRows], *asd[kTileRows];
  for (int r = 0; r < kTileRows; ++r) {
    const int64_t i = i0 + std::min(r, mr - 1);
    aq[r] = act.q + i * act.ldq + 32 * g0;
    ad[r] = act.d + i * act.ldd + g0;
    asd[r] = kHalves ? act.sd16 + i * 2 * act.ldd + 2 * g0 : act.sd + i * act.ldd + g0;
    c[r][0] = c[r][1] = _mm512_setzero_ps();
  }
  constexpr int kParts = kHalves ? 2 : 1, kSteps = 8 / kParts;
  for (int64_t g = 0; g < kb; ++g) {
    const uint8_t* b = panel + g * kBlockBytes;
    for (int part = 0; part < kParts; ++part) {
      __m512i acc[kTileRows][2];
      for (int r = 0; r < kTileRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
      for (int s = part * kSteps; s < (part + 1) * kSteps; ++s) {
        const __m512i b0 = _mm512_load_si512(b + s * kPanelCols * 4), b1 = _mm512_load_si512(b + s * kPanelCols * 4 + 64);
        for (int r = 0; r < kTileRows; ++r) {
          int32_t word;
          std::memcpy(&word, aq[r] + 32 * g + 4 * s, 4);
          const __m512i a = _mm512_set1_epi32(word);
          acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, a);
          acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, a);
        }
      }
      const float* dw = reinterpret_cast<const float*>(b + 8 * kPanelCols * 4) + part * 2 * kPanelCols;
      const __m512 dw0 = _mm512_load_ps(dw), dw1 = _mm512_load_ps(dw + 16);
      const __m512 mw0 = _mm512_load_ps(dw + 32), mw1 = _mm512_load_ps(dw + 48);
      for (int r = 0; r < kTileRows; ++r) {
        const __m512 da = _mm512_set1_ps(ad[r][g]), sd = _mm512_set1_ps(asd[r][kParts * g + part]);
        c[r][0] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][0]), da), dw0, _mm512_fmadd_ps(sd, mw0, c[r][0]));
        c[r][1] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][1]), da), dw1, _mm512_fmadd_ps(sd, mw1, c[r][1]));
      }
    }
  }
  for (int r = 0; r < mr; ++r) {
    alignas(64) float out[kPanelCols];
    _mm512_store_ps(out, c[r][0]);
    _mm512_store_ps(out + 16, c[r][1]);
    float* dst = p.c + (i0 + r) * p.scm + j0 * p.scn;
    for (int col = 0; col < nc; ++col) dst[col * p.scn] += out[col];
  }
}

// Rows [n0, n1) of the weight; the activations are quantized here, per thread.
template <class F>
QPath gemmInt8(const QProblem& p, int64_t n0, int64_t n1) {
  static thread_local Scratch sa, sp;
  const Act act = quantizeActs(p, sa);
  const int64_t blocks = p.k / 32;
  constexpr int64_t kKB = 64;          // blocks per panel (2048 weights): 80 KiB of panel
  constexpr int64_t kPanels = 8;       // panels decoded together (256 weight rows)
  uint8_t* panels = static_cast<uint8_t*>(sp.get(static_cast<size_t>(kPanels * kKB * kBlockBytes)));
  for (int64_t jc = n0; jc < n1; jc += kPanels * kPanelCols) {
    const int64_t ncAll = std::min<int64_t>(kPanels * kPanelCols, n1 - jc);
    for (int64_t g0 = 0; g0 < blocks; g0 += kKB) {
      const int64_t kb = std::min<int64_t>(kKB, blocks - g0);
      const int64_t np = (ncAll + kPanelCols - 1) / kPanelCols;
      for (int64_t q = 0; q < np; ++q)
        decodePanel<F>(p, jc + q * kPanelCols, static_cast<int>(std::min<int64_t>(kPanelCols, ncAll - q * kPanelCols)),
                       g0, kb, panels + q * kKB * kBlockBytes);
      for (int64_t i = 0; i < p.m; i += kTileRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kTileRows, p.m - i));
        for (int64_t q = 0; q < np; ++q)
          tileInt8<F::kTwoScales>(p, act, i, mr, g0, kb, panels + q * kKB * kBlockBytes, jc + q * kPanelCols,
                                  static_cast<int>(std::min<int64_t>(kPanelCols, ncAll - q * kPanelCols)));
      }
    }
  }
  return QPath::gemmInt8;
}

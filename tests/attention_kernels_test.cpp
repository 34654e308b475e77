// The fused attention kernel (src/compiler/kernels/attention*.cpp): each ISA variant called
// directly against a double reference (GQA, causal with query offsets, windows, key lengths,
// softcap, odd lengths, f32 and bf16, 1 and 2 threads), then nn::sdpa compiled with the kernel
// against the same reference and against its own composition (RADIX_ATTENTION=composed), with the call counters proving which path ran and how many keys decode read.
#include <gtest/gtest.h>
#include <radix/nn.h>
#include <radix/profiler.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/attention.h"
#include "compiler/kernels/lower.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
namespace kernels = radix::kernels;
namespace nn = radix::nn;
using Dims = std::vector<int64_t>;

const radix::Platform& cpu() {
  static const radix::Platform p = radix::Platform::cpu();
  return p;
}

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}
float fromBf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<float> randoms(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> out(n);
  for (float& x : out) x = u(rng);
  return out;
}

// One attention problem in {b, h, s, hd} order (the layout both the direct and compiled tests use).
struct Spec {
  const char* name;
  int64_t b, hq, hk, nq, nk, hd;
  bool causal = false;
  std::optional<int32_t> offset;  // nullopt: nk - nq
  int64_t window = 0;
  std::vector<int32_t> lengths;   // per batch; empty: none
  double softcap = 0;
  DType dtype = DType::f32;  // q and out
  int threads = 1;
  DType kv = DType::f32;     // k and v under an f32 q (a half-precision KV cache); bf16 q: bf16
};

DType kvOf(const Spec& s) { return s.dtype == DType::bf16 ? DType::bf16 : s.kv; }

uint16_t toF16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
float fromF16(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }
uint16_t toHalf(DType d, float f) { return d == DType::f16 ? toF16(f) : toBf16(f); }
float roundTo(DType d, float f) { return d == DType::f16 ? fromF16(toF16(f)) : d == DType::bf16 ? fromBf16(toBf16(f)) : f; }

// softmax(mask(scale q·kᵀ)) v in double; a query that sees no key gives NaN.
std::vector<double> reference(const Spec& s, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.hd));
  const int64_t offset = s.offset ? *s.offset : s.nk - s.nq, group = s.hq / s.hk;
  std::vector<double> out(s.b * s.hq * s.nq * s.hd);
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t h = 0; h < s.hq; ++h)
      for (int64_t i = 0; i < s.nq; ++i) {
        const int64_t kh = h / group;
        std::vector<double> score(s.nk, -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < s.nk; ++j) {
          if (!s.lengths.empty() && j >= s.lengths[b]) continue;
          if (s.causal && j > i + offset) continue;
          if (s.window > 0 && j <= i + offset - s.window) continue;
          double acc = 0;
          for (int64_t d = 0; d < s.hd; ++d)
            acc += double(q[((b * s.hq + h) * s.nq + i) * s.hd + d]) * k[((b * s.hk + kh) * s.nk + j) * s.hd + d];
          acc *= scale;
          if (s.softcap > 0) acc = s.softcap * std::tanh(acc / s.softcap);
          score[j] = acc;
          mx = std::max(mx, acc);
        }
        double sum = 0;
        for (double& x : score) sum += (x = std::isinf(x) ? 0 : std::exp(x - mx));
        for (int64_t d = 0; d < s.hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < s.nk; ++j) acc += score[j] * v[((b * s.hk + kh) * s.nk + j) * s.hd + d];
          out[((b * s.hq + h) * s.nq + i) * s.hd + d] = sum > 0 ? acc / sum : std::nan("");
        }
      }
  return out;
}

// f32: the kernel's exp polynomial and summation order; bf16: the output's rounding (2^-9) plus
// f32 accumulation on bf16-rounded inputs.
double tolerance(DType d) { return d == DType::bf16 ? 1e-2 : 2e-5; }

void expectClose(const std::vector<double>& actual, const std::vector<double>& expected, double tol,
                 const std::string& what, const std::vector<double>* skipNanOf = nullptr) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (skipNanOf && std::isnan((*skipNanOf)[i])) continue;
    if (std::isnan(expected[i])) {
      ASSERT_TRUE(std::isnan(actual[i])) << what << " at " << i << ": " << actual[i] << ", expected NaN";
      continue;
    }
    const double e = std::abs(actual[i] - expected[i]);
    if (!(e <= worst)) worst = e, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": worst at " << at << ", " << actual[at] << " vs " << expected[at];
}

// Inputs rounded to the dtype (so that the reference sees what the kernel reads).
struct Inputs {
  std::vector<float> q, k, v;
  explicit Inputs(const Spec& s) {
    q = randoms(s.b * s.hq * s.nq * s.hd, 1, 1.5f);
    k = randoms(s.b * s.hk * s.nk * s.hd, 2, 1.5f);
    v = randoms(s.b * s.hk * s.nk * s.hd, 3);
    for (float& f : q) f = roundTo(s.dtype, f);
    for (auto* x : {&k, &v})
      for (float& f : *x) f = roundTo(kvOf(s), f);
  }
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> all = {
      {"q1_decode_at_37_of_600", 1, 4, 4, 1, 600, 64, true, 37},
      {"q1_gqa4_decode", 2, 8, 2, 1, 129, 32, true, 100},
      {"q7_gqa2_causal", 1, 4, 2, 7, 7, 16, true},
      {"q33_k40_not_causal", 2, 3, 3, 33, 40, 24},
      {"q129_gqa4_causal_hd80", 1, 8, 2, 129, 129, 80, true, std::nullopt, 0, {}, 0, DType::f32, 2},
      {"q513_causal_two_threads", 1, 2, 1, 513, 513, 64, true, std::nullopt, 0, {}, 0, DType::f32, 2},
      {"q33_k600_offset_window", 1, 2, 2, 33, 600, 64, true, 300, 50},
      {"window_larger_than_context", 1, 2, 2, 17, 17, 16, true, std::nullopt, 40},
      {"key_lengths_zero_gives_nan", 3, 2, 1, 9, 70, 16, false, std::nullopt, 0, {70, 5, 0}},
      {"key_lengths_causal", 2, 2, 2, 12, 12, 8, true, std::nullopt, 0, {12, 7}},
      {"negative_offset_masks_all", 1, 1, 1, 3, 8, 8, true, -2},
      {"softcap", 1, 2, 2, 20, 33, 16, true, std::nullopt, 0, {}, 1.5},
      {"bf16_q33_gqa2_causal", 2, 4, 2, 33, 65, 64, true, std::nullopt, 0, {}, 0, DType::bf16},
      {"bf16_q1_decode", 1, 4, 4, 1, 300, 64, true, 255, 0, {}, 0, DType::bf16},
      {"bf16_q129_odd_hd", 1, 2, 1, 129, 129, 40, true, std::nullopt, 0, {}, 0, DType::bf16, 2},
      // bf16 with hd a multiple of 32: the AMX tiles' cases too.
      {"bf16_q129_gqa4_causal_hd128", 1, 8, 2, 129, 129, 128, true, std::nullopt, 0, {}, 0, DType::bf16, 2},
      {"bf16_q70_k200_offset_window_hd32", 1, 2, 2, 70, 200, 32, true, 100, 50, {}, 0, DType::bf16},
      {"bf16_key_lengths_not_causal_hd64", 2, 2, 1, 20, 90, 64, false, std::nullopt, 0, {90, 33}, 0, DType::bf16},
      {"bf16_key_lengths_zero_gives_nan_hd32", 2, 2, 1, 9, 40, 32, false, std::nullopt, 0, {40, 0}, 0, DType::bf16},
      // Decode tasks of 2 and 3 rows, a window that starts inside a key block, softcap at decode.
      {"q2_decode_two_queries_hd24", 1, 2, 2, 2, 50, 24, true, 30},
      {"q1_gqa3_decode_hd40", 1, 6, 2, 1, 77, 40, true, 70},
      {"q1_window_decode", 1, 2, 2, 1, 300, 32, true, 250, 20},
      {"softcap_decode", 1, 2, 2, 1, 40, 16, true, 30, 0, {}, 1.5},
      // f32 queries over an f16 or bf16 cache: decode and prefill, odd head widths for the tails.
      {"f16kv_q1_decode_hd40", 1, 4, 4, 1, 300, 40, true, 255, 0, {}, 0, DType::f32, 1, DType::f16},
      {"f16kv_q1_gqa4_decode", 2, 8, 2, 1, 129, 64, true, 100, 0, {}, 0, DType::f32, 1, DType::f16},
      {"f16kv_q33_gqa2_causal_hd24", 2, 4, 2, 33, 65, 24, true, std::nullopt, 0, {}, 0, DType::f32, 2, DType::f16},
      {"bf16kv_q1_decode", 1, 4, 4, 1, 300, 64, true, 255, 0, {}, 0, DType::f32, 1, DType::bf16},
      // Decode splits the key heads among threads: [0, 2) and [2, 5) here.
      {"f16kv_q1_decode_two_threads_hd72", 1, 5, 5, 1, 150, 72, true, 140, 0, {}, 0, DType::f32, 2, DType::f16},
      {"q3_gqa1_decode_two_threads_batch3", 3, 3, 3, 3, 90, 32, true, 80, 0, {}, 0, DType::f32, 2},
      {"q1_decode_hd600", 1, 2, 2, 1, 40, 600, true, 33},
      // Decode with key lengths (batch 1 sees none: NaN) and a window, split among threads.
      {"q1_key_lengths_decode_batch3", 3, 4, 2, 1, 70, 32, false, std::nullopt, 0, {70, 0, 33}, 0, DType::f32, 2},
      {"f16kv_q2_window_decode_lengths", 2, 6, 3, 2, 90, 48, true, 60, 16, {90, 41}, 0, DType::f32, 2, DType::f16},
      {"bf16kv_q70_offset_window_hd32", 1, 2, 2, 70, 200, 32, true, 100, 50, {}, 0, DType::f32, 1, DType::bf16},
  };
  return all;
}

kernels::AttentionProblem problemFor(const Spec& s, const void* q, const void* k, const void* v, void* out,
                                     const int32_t* offset) {
  kernels::AttentionProblem p;
  p.q = q, p.k = k, p.v = v, p.out = out, p.bf16 = s.dtype == DType::bf16;
  p.kv = kvOf(s) == DType::f16 ? kernels::Elem::f16 : kvOf(s) == DType::bf16 ? kernels::Elem::bf16 : kernels::Elem::f32;
  p.offset = offset;
  p.lengths = s.lengths.empty() ? nullptr : s.lengths.data();
  p.lengthStride[0] = 1;
  p.batch[0] = s.b;
  p.hq = s.hq, p.hk = s.hk, p.nq = s.nq, p.nk = s.nk, p.hd = s.hd;
  const int64_t qs[4] = {s.hq * s.nq * s.hd, 0, s.nq * s.hd, s.hd}, ks[4] = {s.hk * s.nk * s.hd, 0, s.nk * s.hd, s.hd};
  std::memcpy(p.qStride, qs, sizeof qs), std::memcpy(p.oStride, qs, sizeof qs);
  std::memcpy(p.kStride, ks, sizeof ks), std::memcpy(p.vStride, ks, sizeof ks);
  p.causal = s.causal, p.window = s.window;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hd)));
  p.softcap = static_cast<float>(s.softcap);
  return p;
}

using Variant = uint64_t (*)(const kernels::AttentionProblem&, int);

void checkVariant(Variant run, const Spec& s) {
  const Inputs in(s);
  const std::vector<double> expected = reference(s, in.q, in.k, in.v);
  std::vector<double> actual(expected.size());
  const int32_t offset = s.offset.value_or(0);
  std::vector<uint16_t> hq, hk, hv, hout;
  std::vector<float> fout;
  const void* q = in.q.data();
  const void* k = in.k.data();
  const void* v = in.v.data();
  void* out = nullptr;
  if (s.dtype == DType::bf16) {
    for (float f : in.q) hq.push_back(toBf16(f));
    q = hq.data();
    hout.resize(expected.size());
    out = hout.data();
  } else {
    fout.resize(expected.size());
    out = fout.data();
  }
  if (kvOf(s) != DType::f32) {
    for (float f : in.k) hk.push_back(toHalf(kvOf(s), f));
    for (float f : in.v) hv.push_back(toHalf(kvOf(s), f));
    k = hk.data(), v = hv.data();
  }
  run(problemFor(s, q, k, v, out, s.offset ? &offset : nullptr), s.threads);
  for (size_t i = 0; i < actual.size(); ++i) actual[i] = s.dtype == DType::bf16 ? fromBf16(hout[i]) : fout[i];
  expectClose(actual, expected, tolerance(s.dtype), s.name);
}

TEST(AttentionKernels, BaselineVariantMatchesReference) {
  for (const Spec& s : specs()) checkVariant(&kernels::attentionX86_64, s);
}

TEST(AttentionKernels, Avx2VariantMatchesReference) {
  if (kernels::attentionHostIsa() < kernels::AttentionIsa::avx2) GTEST_SKIP() << "host lacks avx2/fma/f16c";
  for (const Spec& s : specs()) checkVariant(&kernels::attentionAvx2, s);
}

TEST(AttentionKernels, Avx512VariantMatchesReference) {
  if (kernels::attentionHostIsa() < kernels::AttentionIsa::avx512) GTEST_SKIP() << "host lacks avx512f/bw/vl/dq";
  for (const Spec& s : specs()) checkVariant(&kernels::attentionAvx512, s);
}

TEST(AttentionKernels, AmxVariantMatchesReference) {
  if (!kernels::amxBf16Available()) GTEST_SKIP() << "host lacks amx-bf16 (or the OS refused the AMX tile state)";
  int applied = 0;
  for (const Spec& s : specs()) {
    std::vector<float> out(1);
    if (!kernels::attentionAmxApplies(problemFor(s, nullptr, nullptr, nullptr, out.data(), nullptr))) continue;
    ++applied;
    checkVariant(&kernels::attentionAmx, s);
  }
  EXPECT_GE(applied, 5);
}

// Decode reads only the keys its query sees: position 37 of a 600-key cache reads 38 per key head.
TEST(AttentionKernels, DecodeReadsOnlyTheUsedCache) {
  const Spec& s = specs()[0];
  const Inputs in(s);
  std::vector<float> out(s.b * s.hq * s.nq * s.hd);
  const int32_t offset = *s.offset;
  const uint64_t read = kernels::attentionX86_64(problemFor(s, in.q.data(), in.k.data(), in.v.data(), out.data(), &offset), 1);
  EXPECT_EQ(read, static_cast<uint64_t>(s.b * s.hk * (offset + 1)));
}

// ---- nn::sdpa compiled ----

struct SdpaFn {
  bool causal = false;
  int64_t window = 0;
  double softcap = 0;
  Tensor forward(Tensor q, Tensor k, Tensor v, std::optional<Tensor> offset, std::optional<Tensor> lengths) const {
    nn::AttentionOptions o;
    o.causal = causal;
    o.queryOffset = offset;
    if (window > 0) o.window = window;
    if (softcap > 0) o.softcap = softcap;
    o.keyLengths = lengths;
    return nn::sdpa(q, k, v, o);
  }
};

// RADIX_ATTENTION=composed while it lives: the compiler keeps nn::sdpa's composition.
struct Composed {
  Composed() { setenv("RADIX_ATTENTION", "composed", 1); }
  ~Composed() { unsetenv("RADIX_ATTENTION"); }
};

std::vector<double> compiled(const Spec& s, const Inputs& in, const radix::Platform& platform, bool fused = true) {
  std::optional<Composed> composed;
  if (!fused) composed.emplace();
  const Shape qs = Shape({s.b, s.hq, s.nq, s.hd}, s.dtype).withTags({"b", "h", "q", "hd"});
  const Shape ks = Shape({s.b, s.hk, s.nk, s.hd}, kvOf(s)).withTags({"b", "h", "k", "hd"});
  Tensor q = Tensor::fromValues(platform, qs, in.q), k = Tensor::fromValues(platform, ks, in.k),
         v = Tensor::fromValues(platform, ks, in.v);
  std::optional<Tensor> offset, lengths;
  if (s.offset) offset = Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{*s.offset});
  if (!s.lengths.empty())
    lengths = Tensor::fromValues(platform, Shape({s.b}, DType::i32).withTags({"b"}), s.lengths);
  SdpaFn fn{s.causal, s.window, s.softcap};
  Tensor y = radix::testing::compileAndCall(platform, &SdpaFn::forward, fn, q, k, v, offset, lengths);
  EXPECT_EQ(y.shape(), qs);
  return y.toVector<double>();
}

radix::Platform withThreads(int threads, std::string features = "") {
  radix::CompileOptions o;
  o.cache = false;
  o.optLevel = 1;
  o.threads = threads;
  o.targetFeatures = std::move(features);
  return cpu().withOptions(o);
}

TEST(AttentionKernels, SdpaFusedMatchesReferenceAndComposition) {
  const kernels::AttentionIsa isa = kernels::attentionHostIsa();
  for (const char* name : {"q1_gqa4_decode", "q33_k600_offset_window", "key_lengths_zero_gives_nan", "softcap",
                           "bf16_q33_gqa2_causal", "f16kv_q1_gqa4_decode", "bf16kv_q70_offset_window_hd32"}) {
    const Spec& s = *std::find_if(specs().begin(), specs().end(), [&](const Spec& x) { return std::string(x.name) == name; });
    const Inputs in(s);
    const std::vector<double> expected = reference(s, in.q, in.k, in.v);
    const uint64_t before = kernels::attentionCallCount(isa);
    const std::vector<double> fused = compiled(s, in, withThreads(s.threads));
    EXPECT_EQ(kernels::attentionCallCount(isa), before + 1) << name << ": the fused kernel did not run";
    expectClose(fused, expected, tolerance(s.dtype), std::string(name) + " fused");
    const std::vector<double> unfused = compiled(s, in, withThreads(s.threads), false);
    EXPECT_EQ(kernels::attentionCallCount(isa), before + 1) << name << ": the composition ran the kernel";
    // The composition rounds scores and probabilities to bf16 on the way; where no key is
    // visible it gives 0 (its softmax's row-fused lowering), the kernel and PyTorch NaN.
    expectClose(fused, unfused, s.dtype == DType::bf16 ? 6e-2 : 2e-5, std::string(name) + " fused vs composition",
                &expected);
  }
}

// A KV cache at decode: q = 1 at run-time positions; the compiled kernel reads index keys only.
struct DecodeStep {
  Tensor forward(nn::KvCache cache, Tensor q) const { return cache.attend(q); }
};

TEST(AttentionKernels, KvCacheDecodeReadsTheUsedPart) {
  const int64_t MAX = 512, H = 4, HD = 32;
  const Shape cs = Shape({MAX, H, HD}, DType::f32).withTags({"k", "h", "hd"});
  const Shape qs = Shape({1, H, HD}, DType::f32).withTags({"q", "h", "hd"});
  const std::vector<float> keys = randoms(MAX * H * HD, 7), values = randoms(MAX * H * HD, 8), query = randoms(H * HD, 9);
  const radix::Platform platform = withThreads(1);
  auto exe = radix::compile(platform, &DecodeStep::forward, DecodeStep{},
                            nn::KvCache{Tensor::fromValues(platform, cs, keys), Tensor::fromValues(platform, cs, values),
                                        Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{1})},
                            Tensor::fromValues(platform, qs, query));
  for (int32_t index : {1, 64, 300}) {
    nn::KvCache cache{Tensor::fromValues(platform, cs, keys), Tensor::fromValues(platform, cs, values),
                      Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{index})};
    const uint64_t before = kernels::attentionKeysRead();
    Tensor y = exe(DecodeStep{}, cache, Tensor::fromValues(platform, qs, query));
    EXPECT_EQ(kernels::attentionKeysRead() - before, static_cast<uint64_t>(H * index)) << "index " << index;
    // {k, h, hd} -> {h, k, hd} for the reference.
    Spec s{"decode", 1, H, H, 1, MAX, HD, true, index - 1};
    std::vector<float> q(H * HD), k(H * MAX * HD), v(H * MAX * HD);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < HD; ++d) {
        q[h * HD + d] = query[h * HD + d];
        for (int64_t j = 0; j < MAX; ++j) {
          k[(h * MAX + j) * HD + d] = keys[(j * H + h) * HD + d];
          v[(h * MAX + j) * HD + d] = values[(j * H + h) * HD + d];
        }
      }
    expectClose(y.toVector<double>(), reference(s, q, k, v), 2e-5, "decode at " + std::to_string(index));
  }
}

// The compile target picks the variant (features of targetCpu/targetFeatures), and the call is
// lowered at run time to what the CPU has. An AVX-512 module runs only on an AVX-512 host.
TEST(AttentionKernels, TargetFeaturesSelectTheVariant) {
  const Spec& s = specs()[2];
  const Inputs in(s);
  const uint64_t baseline = kernels::attentionCallCount(kernels::AttentionIsa::x86_64);
  expectClose(compiled(s, in, withThreads(1, "-avx2")), reference(s, in.q, in.k, in.v), 2e-5, "x86-64 target");
  EXPECT_EQ(kernels::attentionCallCount(kernels::AttentionIsa::x86_64), baseline + 1);
  // (after a compile: LLVM's targets are registered)
  const auto isaFor = [&](const char* cpu, const char* features) {
    return static_cast<kernels::AttentionIsa>(kernels::attentionIsaFor({"x86_64-unknown-linux-gnu", cpu, features, 1}));
  };
  EXPECT_EQ(isaFor("x86-64", ""), kernels::AttentionIsa::x86_64);
  EXPECT_EQ(isaFor("x86-64-v3", ""), kernels::AttentionIsa::avx2);
  EXPECT_EQ(isaFor("x86-64-v4", ""), kernels::AttentionIsa::avx512);
  EXPECT_EQ(isaFor("x86-64-v3", "+avx512f,+avx512bw,+avx512vl,+avx512dq"), kernels::AttentionIsa::avx512);
  EXPECT_EQ(isaFor("x86-64-v4", "-avx512f"), kernels::AttentionIsa::avx2);
  EXPECT_EQ(isaFor("sapphirerapids", ""), kernels::AttentionIsa::amx);
  EXPECT_EQ(isaFor("sapphirerapids", "-amx-tile"), kernels::AttentionIsa::avx512);
  EXPECT_EQ(static_cast<kernels::AttentionIsa>(kernels::attentionIsaFor({"aarch64-unknown-linux-gnu", "", "", 1})),
            kernels::AttentionIsa::x86_64);
  if (kernels::attentionHostIsa() < kernels::AttentionIsa::avx512) GTEST_SKIP() << "host lacks avx512f/bw/vl/dq";
  const uint64_t before = kernels::attentionCallCount(kernels::AttentionIsa::avx512);
  const std::vector<double> y =
      compiled(s, in, withThreads(1, "+avx512f,+avx512bw,+avx512vl,+avx512dq,+fma,+f16c,-amx-tile"));
  EXPECT_EQ(kernels::attentionCallCount(kernels::AttentionIsa::avx512), before + 1);
  expectClose(y, reference(s, in.q, in.k, in.v), 2e-5, "avx512 target");
}

// Where the kernel does not apply (a bias), the composition runs; the module keeps running
// through mlir-opt's dialects: the marked function's body is the composition.
struct BiasedFn {
  Tensor forward(Tensor q, Tensor k, Tensor v, Tensor bias) const {
    return nn::sdpa(q, k, v, {.causal = true, .bias = bias});
  }
};

TEST(AttentionKernels, BiasFallsBackAndModuleIsMarked) {
  const Spec s{"bias", 1, 2, 2, 5, 5, 8, true};
  const Inputs in(s);
  const radix::Platform platform = withThreads(1);
  const Shape qs = Shape({1, 2, 5, 8}, DType::f32).withTags({"b", "h", "q", "hd"});
  const Shape ks = Shape({1, 2, 5, 8}, DType::f32).withTags({"b", "h", "k", "hd"});
  Tensor q = Tensor::fromValues(platform, qs, in.q), k = Tensor::fromValues(platform, ks, in.k),
         v = Tensor::fromValues(platform, ks, in.v);
  Tensor bias = Tensor::fromValues(platform, Shape({5, 5}, DType::f32).withTags({"q", "k"}), std::vector<float>(25, 0));
  const uint64_t before = kernels::attentionCallCount(kernels::attentionHostIsa());
  auto exe = radix::compile(platform, &BiasedFn::forward, BiasedFn{}, q, k, v, bias);
  Tensor y = exe(BiasedFn{}, q, k, v, bias);
  EXPECT_EQ(kernels::attentionCallCount(kernels::attentionHostIsa()), before);
  expectClose(y.toVector<double>(), reference(s, in.q, in.k, in.v), 2e-5, "bias fallback");
  EXPECT_EQ(exe.mlir().find("radix.kernel"), std::string::npos);

  auto marked = radix::compile(platform, &SdpaFn::forward, SdpaFn{true}, q, k, v, std::optional<Tensor>(),
                               std::optional<Tensor>());
  const std::string text = marked.mlir();
  EXPECT_NE(text.find("radix.kernel = \"attention\""), std::string::npos) << text;
  EXPECT_NE(text.find("func.func private @radix_attention_"), std::string::npos) << text;
}

// With profiling on, the kernel call is one profile row (the composition it replaced has none).
TEST(AttentionKernels, ProfiledAsOneRow) {
  radix::CompileOptions options;
  options.cache = false;
  options.optLevel = 1;
  options.profile = true;
  const radix::Platform platform = cpu().withOptions(options);
  const Spec& s = specs()[2];
  const Inputs in(s);
  radix::profileReset();
  expectClose(compiled(s, in, platform), reference(s, in.q, in.k, in.v), 2e-5, "profiled");
  int64_t calls = 0;
  for (const radix::ProfileRow& r : radix::profileRows())
    if (r.op == "attention") {
      calls += r.calls;
      EXPECT_EQ(r.kind, "kernel");
      EXPECT_TRUE(r.location.starts_with("attention.h:")) << r.location;  // nn::sdpa's lines, not "?"
    }
  EXPECT_EQ(calls, 1) << radix::profileReport();
  radix::profileReset();
}

TEST(AttentionKernels, BadOptionsStillThrow) {
  const radix::Platform platform = withThreads(1);
  const Shape qs = Shape({1, 2, 5, 8}, DType::f32).withTags({"b", "h", "q", "hd"});
  const Shape ks = Shape({1, 2, 5, 8}, DType::f32).withTags({"b", "h", "k", "hd"});
  Tensor q = Tensor::fromValues(platform, qs, std::vector<float>(80, 0));
  Tensor k = Tensor::fromValues(platform, ks, std::vector<float>(80, 0));
  SdpaFn windowed{false, 4};
  EXPECT_EQ(radix::testing::errorOf([&] {
              radix::compile(platform, &SdpaFn::forward, windowed, q, k, k, std::optional<Tensor>(),
                             std::optional<Tensor>());
            }).rfind("[nn.sdpa] a sliding window needs causal attention", 0),
            0u);
}

}  // namespace

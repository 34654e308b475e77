// radix::nn layers against naive C++ references: odd sizes, f32 and a 16-bit float, tags in and
// out, attention with grouped KV heads, causal masks and odd sequence lengths, the KV cache.
#include <radix/nn.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
namespace nn = radix::nn;

radix::Platform cpu() { return radix::Platform::cpu(); }

/// Deterministic values in [-1, 1).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

Tensor make(const Shape& s, uint32_t seed) {
  return Tensor::fromValues(cpu(), s, values(static_cast<size_t>(s.count()), seed));
}
std::vector<double> host(const Tensor& t) { return t.toVector<double>(); }

using radix::testing::errorOf;

void expectNear(const Tensor& actual, const std::vector<double>& expected, double tol) {
  std::vector<float> e(expected.begin(), expected.end());
  radix::testing::expectClose(actual, e, tol);
}

double tolFor(DType d) { return d == DType::f32 ? 1e-5 : d == DType::f16 ? 2e-3 : 1e-2; }

// ---- Linear and Embedding ----

TEST(Nn, LinearMatchesNaive) {
  for (DType d : {DType::f32, DType::bf16}) {
    const int64_t S = 3, I = 5, O = 7;
    Tensor x = make(Shape({S, I}, d).withTags({"s", "d"}), 1);
    Tensor w = make(Shape({O, I}, d), 2);  // untagged: {out, in} as in PyTorch
    Tensor b = make(Shape({O}, d), 3);
    nn::Linear fc{w, b, "d", "f"};
    Tensor y = radix::testing::compileAndCall(cpu(), &nn::Linear::forward, fc, x);
    EXPECT_EQ(y.shape(), Shape({S, O}, d).withTags({"s", "f"}));
    const auto X = host(x), W = host(w), B = host(b);
    std::vector<double> ref(S * O);
    for (int64_t i = 0; i < S; ++i)
      for (int64_t o = 0; o < O; ++o) {
        double acc = B[o];
        for (int64_t j = 0; j < I; ++j) acc += X[i * I + j] * W[o * I + j];
        ref[i * O + o] = acc;
      }
    expectNear(y, ref, tolFor(d));

    // A tagged {in, out} weight (GPT-2's Conv1D layout) and no bias: the axis tagged `in` is contracted.
    std::vector<float> wt(I * O);
    const auto Wf = w.toVector<float>();
    for (int64_t o = 0; o < O; ++o)
      for (int64_t j = 0; j < I; ++j) wt[j * O + o] = Wf[o * I + j];
    nn::Linear tagged{Tensor::fromValues(cpu(), Shape({I, O}, d).withTags({"d", "f"}), wt), std::nullopt, "d", "f"};
    Tensor z = radix::testing::compileAndCall(cpu(), &nn::Linear::forward, tagged, x);
    for (int64_t i = 0; i < S; ++i)
      for (int64_t o = 0; o < O; ++o) ref[i * O + o] -= B[o];
    expectNear(z, ref, tolFor(d));
  }
  // Untagged input: its last axis is contracted; the new axis is tagged `out`.
  Tensor x = make(Shape({1, 3}, DType::f32), 4);
  nn::Linear fc{make(Shape({1, 3}, DType::f32), 5), std::nullopt, "d", "o"};
  EXPECT_EQ(radix::testing::compileAndCall(cpu(), &nn::Linear::forward, fc, x).shape(),
            Shape({1, 1}, DType::f32).withTag(1, "o"));
  nn::Linear wrongTag{make(Shape({1, 3}, DType::f32).withTags({"o", "i"}), 6)};
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), &nn::Linear::forward, wrongTag, x); })
                .rfind("[nn.Linear] weight {o=1,i=3}:f32 has no axis tagged \"d\" (the layer's `in`)", 0),
            0u);
  nn::Linear bad{make(Shape({2, 3, 4}, DType::f32), 6)};
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), &nn::Linear::forward, bad, x); })
                .rfind("[nn.Linear] weight must be 2-D {out, in}, got {2,3,4}:f32", 0),
            0u);
}

TEST(Nn, EmbeddingGathersRows) {
  const int64_t V = 11, D = 3;
  nn::Embedding emb{make(Shape({V, D}, DType::f32), 7)};
  Tensor ids = Tensor::fromValues(cpu(), Shape({2, 3}, DType::i32).withTags({"b", "s"}),
                                  std::vector<int32_t>{0, 10, 4, 4, 1, 7});
  Tensor y = radix::testing::compileAndCall(cpu(), &nn::Embedding::forward, emb, ids);
  EXPECT_EQ(y.shape(), Shape({2, 3, D}, DType::f32).withTags({"b", "s", "d"}));
  const auto W = host(emb.weight);
  std::vector<double> ref;
  for (int id : {0, 10, 4, 4, 1, 7})
    for (int64_t j = 0; j < D; ++j) ref.push_back(W[id * D + j]);
  expectNear(y, ref, 0);
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), &nn::Embedding::forward, emb, make(Shape({3}, DType::f32), 1)); })
                .rfind("[nn.Embedding] ids must be integers", 0),
            0u);
}

// ---- normalizations ----

std::vector<double> naiveNorm(const std::vector<double>& x, int64_t rows, int64_t n, const std::vector<double>& w,
                              const std::vector<double>* b, double eps, bool rms) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x[r * n];
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < n; ++j) mean += row[j];
      mean /= n;
    }
    for (int64_t j = 0; j < n; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= n;
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = (row[j] - mean) / std::sqrt(var + eps) * w[j] + (b ? (*b)[j] : 0);
  }
  return y;
}

TEST(Nn, LayerNormMatchesNaive) {
  for (DType d : {DType::f32, DType::f16}) {
    for (int64_t n : {1, 17}) {
      Tensor x = make(Shape({3, n}, d).withTags({"s", "d"}), 11);
      nn::LayerNorm ln{make(Shape({n}, d).withTags({"d"}), 12), make(Shape({n}, d).withTags({"d"}), 13), 1e-5};
      Tensor y = radix::testing::compileAndCall(cpu(), &nn::LayerNorm::forward, ln, x);
      EXPECT_EQ(y.shape(), x.shape());
      const auto B = host(*ln.bias);
      expectNear(y, naiveNorm(host(x), 3, n, host(ln.weight), &B, 1e-5, false), tolFor(d));
    }
  }
  // No bias, untagged, rank 1.
  nn::LayerNorm plain{make(Shape({7}, DType::f32), 14), std::nullopt, 1e-3};
  Tensor x = make(Shape({7}, DType::f32), 15);
  expectNear(radix::testing::compileAndCall(cpu(), &nn::LayerNorm::forward, plain, x),
             naiveNorm(host(x), 1, 7, host(plain.weight), nullptr, 1e-3, false), 1e-5);
  Tensor ints = Tensor::fromValues(cpu(), Shape({7}, DType::i32), std::vector<int32_t>(7, 1));
  const std::string e = errorOf([&] { radix::compile(cpu(), &nn::LayerNorm::forward, plain, ints); });
  EXPECT_EQ(e.rfind("[nn.LayerNorm] needs a float tensor, got {7}:i32", 0), 0u) << e;
  EXPECT_NE(e.find("nn/norm.h:"), std::string::npos) << e;  // the layer's line, not an earlier op's
}

TEST(Nn, RMSNormMatchesNaive) {
  for (DType d : {DType::f32, DType::bf16}) {
    Tensor x = make(Shape({2, 3, 129}, d).withTags({"b", "s", "d"}), 21);
    nn::RMSNorm norm{make(Shape({129}, d).withTags({"d"}), 22), 1e-6};
    Tensor y = radix::testing::compileAndCall(cpu(), &nn::RMSNorm::forward, norm, x);
    EXPECT_EQ(y.shape(), x.shape());
    expectNear(y, naiveNorm(host(x), 6, 129, host(norm.weight), nullptr, 1e-6, true), tolFor(d));
  }
}

TEST(Nn, NormalizeL2AsZml) {
  // ZML's normalizeL2 test: torch.nn.functional.normalize(x, dim=-1).
  Tensor x = Tensor::fromValues(cpu(), Shape({2, 2}, DType::f32), {-0.9686f, -1.0058f, -1.7808f, 0.6698f});
  Tensor y = radix::testing::compileAndCall(cpu(), [](Tensor x) { return nn::normalizeL2(x, 1e-12); }, x);
  radix::testing::expectClose(y, {-0.6937f, -0.7203f, -0.9360f, 0.3520f}, 1e-4);
  Tensor z = radix::testing::compileAndCall(cpu(), [](Tensor x) { return nn::normalizeVariance(x, 0); }, x);
  radix::testing::expectClose(z, {1, -1, -1, 1}, 1e-4);
}

// ---- rotary embeddings ----

/// x {s, h, hd} row-major; positions offset + i.
std::vector<double> naiveRope(const std::vector<double>& x, int64_t S, int64_t H, int64_t HD, int64_t offset,
                              bool interleaved, double base) {
  std::vector<double> y(x.size());
  const int64_t half = HD / 2;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(offset + s) * std::pow(base, -2.0 * i / HD);
        const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
        const double* row = &x[(s * H + h) * HD];
        y[(s * H + h) * HD + a] = row[a] * std::cos(angle) - row[b] * std::sin(angle);
        y[(s * H + h) * HD + b] = row[a] * std::sin(angle) + row[b] * std::cos(angle);
      }
  return y;
}

TEST(Nn, RopeBothLayoutsWithAnOffset) {
  const int64_t S = 5, H = 3, HD = 6;
  for (DType d : {DType::f32, DType::bf16})
    for (nn::RopeLayout layout : {nn::RopeLayout::rotateHalf, nn::RopeLayout::interleaved}) {
      Tensor x = make(Shape({S, H, HD}, d).withTags({"s", "h", "hd"}), 31);
      nn::Rope rope{layout, 100};
      Tensor zero = Tensor::fromValues(cpu(), Shape({}, DType::i32), std::vector<int32_t>{0});
      radix::Exe exe = radix::compile(cpu(), &nn::Rope::forward, rope, x, zero);
      for (int32_t offset : {0, 7}) {  // the offset is a run-time value: one compile serves both
        Tensor pos = Tensor::fromValues(cpu(), Shape({}, DType::i32), std::vector<int32_t>{offset});
        Tensor y = exe(rope, x, pos);
        EXPECT_EQ(y.shape(), x.shape());
        expectNear(y, naiveRope(host(x), S, H, HD, offset, layout == nn::RopeLayout::interleaved, 100), tolFor(d));
      }
    }
  nn::Rope rope;
  Tensor pos = Tensor::fromValues(cpu(), Shape({}, DType::i32), std::vector<int32_t>{0});
  Tensor odd = make(Shape({2, 3}, DType::f32).withTags({"s", "hd"}), 1);
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), &nn::Rope::forward, rope, odd, pos); })
                .rfind("[nn.Rope] the \"hd\" axis must be even", 0),
            0u);
}

// ---- attention ----

/// q {b, hq, q, hd}, k/v {b, hk, k, hd} row-major; bias {q, k} or empty.
std::vector<double> naiveAttention(const std::vector<double>& q, const std::vector<double>& k,
                                   const std::vector<double>& v, int64_t B, int64_t HQ, int64_t HK, int64_t Q,
                                   int64_t K, int64_t HD, bool causal, int64_t offset, const std::vector<double>& bias,
                                   double scale) {
  std::vector<double> out(B * HQ * Q * HD);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < HQ; ++h) {
      const int64_t hk = h / (HQ / HK);
      for (int64_t i = 0; i < Q; ++i) {
        std::vector<double> s(K);
        double mx = -INFINITY;
        for (int64_t j = 0; j < K; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < HD; ++e)
            acc += q[((b * HQ + h) * Q + i) * HD + e] * k[((b * HK + hk) * K + j) * HD + e];
          s[j] = acc * scale + (bias.empty() ? 0 : bias[i * K + j]);
          if (causal && j > i + offset) s[j] = -INFINITY;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < HD; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < K; ++j) acc += s[j] / sum * v[((b * HK + hk) * K + j) * HD + e];
          out[((b * HQ + h) * Q + i) * HD + e] = acc;
        }
      }
    }
  return out;
}

struct SdpaCase {
  nn::AttentionOptions options;
  Tensor forward(Tensor q, Tensor k, Tensor v) const { return nn::sdpa(q, k, v, options); }
};

TEST(Nn, SdpaGroupedCausalBiasedOddLengths) {
  const int64_t B = 2, HQ = 4, HK = 2, Q = 5, K = 7, HD = 3;
  for (DType d : {DType::f32, DType::f16}) {
    Tensor q = make(Shape({B, HQ, Q, HD}, d).withTags({"b", "h", "q", "hd"}), 41);
    Tensor k = make(Shape({B, HK, K, HD}, d).withTags({"b", "h", "k", "hd"}), 42);
    Tensor v = make(Shape({B, HK, K, HD}, d).withTags({"b", "h", "k", "hd"}), 43);
    Tensor bias = make(Shape({Q, K}, DType::f32).withTags({"q", "k"}), 44);
    SdpaCase c{{.causal = true, .bias = bias, .scale = 0.7}};
    Tensor y = radix::testing::compileAndCall(cpu(), &SdpaCase::forward, c, q, k, v);
    EXPECT_EQ(y.shape(), q.shape());
    expectNear(y, naiveAttention(host(q), host(k), host(v), B, HQ, HK, Q, K, HD, true, K - Q, host(bias), 0.7),
               tolFor(d));
  }
  // Plain attention, one query, heads equal, q's axes in another order (the result keeps it).
  Tensor q = make(Shape({1, 1, 3, 4}, DType::f32).withTags({"b", "q", "h", "hd"}), 45);
  Tensor k = make(Shape({1, 3, 17, 4}, DType::f32).withTags({"b", "h", "k", "hd"}), 46);
  Tensor v = make(Shape({1, 3, 17, 4}, DType::f32).withTags({"b", "h", "k", "hd"}), 47);
  SdpaCase plain{};
  Tensor y = radix::testing::compileAndCall(cpu(), &SdpaCase::forward, plain, q, k, v);
  EXPECT_EQ(y.shape(), q.shape());
  // {b, q=1, h, hd} holds the same numbers as {b, h, q=1, hd}.
  expectNear(y, naiveAttention(host(q), host(k), host(v), 1, 3, 3, 1, 17, 4, false, 0, {}, 0.5), 1e-5);

  Tensor k3 = make(Shape({1, 2, 17, 4}, DType::f32).withTags({"b", "h", "k", "hd"}), 48);
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), &SdpaCase::forward, plain, q, k3, k3); })
                .rfind("[nn.sdpa] q's heads must be a multiple of k's", 0),
            0u);
}

// ---- KV cache ----

struct Step {
  std::pair<nn::KvCache, Tensor> forward(nn::KvCache cache, Tensor newK, Tensor newV, Tensor q) const {
    nn::KvCache next = cache.update(newK, newV);
    return {next, next.attend(q)};
  }
};

TEST(Nn, KvCacheWritesInPlaceAndAttendsCausally) {
  const int64_t MAX = 8, H = 2, HD = 4;
  const Shape cacheShape = Shape({MAX, H, HD}, DType::f32).withTags({"k", "h", "hd"});
  nn::KvCache cache{Tensor::fromValues(cpu(), cacheShape, std::vector<float>(MAX * H * HD, 0)),
                    Tensor::fromValues(cpu(), cacheShape, std::vector<float>(MAX * H * HD, 0)),
                    Tensor::fromValues(cpu(), Shape({}, DType::i32), std::vector<int32_t>{0})};
  std::vector<double> keys, vals;  // written rows, {k, h, hd}
  int64_t written = 0;
  for (int64_t n : {3, 1}) {
    Tensor newK = make(Shape({n, H, HD}, DType::f32).withTags({"k", "h", "hd"}), 50 + n);
    Tensor newV = make(Shape({n, H, HD}, DType::f32).withTags({"k", "h", "hd"}), 60 + n);
    Tensor q = make(Shape({H, n, HD}, DType::f32).withTags({"h", "q", "hd"}), 70 + n);
    const void* kBuffer = cache.k.bufferAddress();
    radix::Exe exe = radix::compile(cpu(), &Step::forward, Step{}, cache, newK, newV, q);
    EXPECT_NE(exe.mlir().find("tf.aliasing_output"), std::string::npos);
    auto [next, out] = exe(Step{}, cache, newK, newV, q);
    EXPECT_EQ(next.k.bufferAddress(), kBuffer);  // donated: written in place
    EXPECT_EQ(next.index.toVector<int64_t>(), std::vector<int64_t>{written + n});
    for (double x : host(newK)) keys.push_back(x);
    for (double x : host(newV)) vals.push_back(x);
    written += n;
    std::vector<double> expectedK = keys;
    expectedK.resize(MAX * H * HD, 0);
    expectNear(next.k, expectedK, 0);
    // Naive attention over the written rows, {k, h, hd} -> {h, k, hd}, queries at written - n ...
    std::vector<double> kh(H * written * HD), vh(H * written * HD);
    for (int64_t j = 0; j < written; ++j)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t e = 0; e < HD; ++e) {
          kh[(h * written + j) * HD + e] = keys[(j * H + h) * HD + e];
          vh[(h * written + j) * HD + e] = vals[(j * H + h) * HD + e];
        }
    expectNear(out, naiveAttention(host(q), kh, vh, 1, H, H, n, written, HD, true, written - n, {}, 0.5), 1e-5);
    cache = next;
  }
}

// ---- MLPs ----

TEST(Nn, GeluAndSwiGluMlpsMatchNaive) {
  const int64_t S = 3, D = 5, F = 7;
  Tensor x = make(Shape({S, D}, DType::f32).withTags({"s", "d"}), 81);
  auto linear = [&](int64_t o, int64_t i, radix::Tag in, radix::Tag out, uint32_t seed) {
    return nn::Linear{make(Shape({o, i}, DType::f32), seed), make(Shape({o}, DType::f32), seed + 1), in, out};
  };
  auto apply = [](const nn::Linear& l, const std::vector<double>& x, int64_t rows) {
    const auto W = host(l.weight), B = host(*l.bias);
    const int64_t o = l.weight.dim(0), i = l.weight.dim(1);
    std::vector<double> y(rows * o);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t a = 0; a < o; ++a) {
        double acc = B[a];
        for (int64_t b = 0; b < i; ++b) acc += x[r * i + b] * W[a * i + b];
        y[r * o + a] = acc;
      }
    return y;
  };
  nn::GeluMlp gelu{linear(F, D, "d", "f", 82), linear(D, F, "f", "d", 84)};
  Tensor y = radix::testing::compileAndCall(cpu(), &nn::GeluMlp::forward, gelu, x);
  EXPECT_EQ(y.shape(), x.shape());
  std::vector<double> h = apply(gelu.up, host(x), S);
  for (double& a : h) a = 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
  expectNear(y, apply(gelu.down, h, S), 1e-5);

  nn::SwiGluMlp swiglu{linear(F, D, "d", "f", 86), linear(F, D, "d", "f", 88), linear(D, F, "f", "d", 90)};
  Tensor z = radix::testing::compileAndCall(cpu(), &nn::SwiGluMlp::forward, swiglu, x);
  std::vector<double> g = apply(swiglu.gate, host(x), S), u = apply(swiglu.up, host(x), S);
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
  expectNear(z, apply(swiglu.down, g, S), 1e-5);
}

TEST(Nn, ActivationsAndElu) {
  Tensor x = Tensor::fromValues(cpu(), Shape({5}, DType::f32), {-2, -0.5f, 0, 0.5f, 3});
  const std::vector<double> X = host(x);
  auto run = [&](nn::Activation a) { return radix::testing::compileAndCall(cpu(), &nn::Activation::forward, a, x); };
  auto ref = [&](auto f) {
    std::vector<double> r;
    for (double v : X) r.push_back(f(v));
    return r;
  };
  expectNear(run({nn::ActivationKind::elu, 0.5}), ref([](double v) { return v >= 0 ? v : 0.5 * std::expm1(v); }), 1e-5);
  expectNear(run({nn::ActivationKind::leakyRelu, 0.1}), ref([](double v) { return v > 0 ? v : 0.1 * v; }), 1e-6);
  expectNear(run({nn::ActivationKind::silu}), ref([](double v) { return v / (1 + std::exp(-v)); }), 1e-5);
  expectNear(run({nn::ActivationKind::geluErf}), ref([](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }),
             1e-5);
  expectNear(run({nn::ActivationKind::relu}), ref([](double v) { return std::max(v, 0.0); }), 0);
}

TEST(Nn, UpsampleNearest) {
  // ZML's nearest test: {1,1,2} holding 1,2 scaled by 3 along the last axis.
  Tensor x = Tensor::fromValues(cpu(), Shape({1, 1, 2}, DType::i32), std::vector<int32_t>{1, 2});
  auto up = [](Tensor x) { return nn::upsampleNearest(x, {{2, 6}}); };
  EXPECT_EQ(radix::testing::compileAndCall(cpu(), up, x).toVector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 2, 2, 2}));
  // Two tagged axes, up and down, against the naive rule.
  const int64_t H = 3, W = 5, NH = 7, NW = 2;
  Tensor img = make(Shape({2, H, W}, DType::f32).withTags({"c", "h", "w"}), 95);
  auto resize = [](Tensor x) { return nn::upsampleNearest(x, {{"h", 7}, {"w", 2}}); };
  Tensor y = radix::testing::compileAndCall(cpu(), resize, img);
  EXPECT_EQ(y.shape(), Shape({2, NH, NW}, DType::f32).withTags({"c", "h", "w"}));
  const auto X = host(img);
  std::vector<double> ref;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < NH; ++i)
      for (int64_t j = 0; j < NW; ++j) {
        const auto si = static_cast<int64_t>(std::floor((i + 0.5) * H / NH));
        const auto sj = static_cast<int64_t>(std::floor((j + 0.5) * W / NW));
        ref.push_back(X[(c * H + si) * W + sj]);
      }
  expectNear(y, ref, 0);
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), [](Tensor x) { return nn::upsampleNearest(x, {{"h", 0}}); }, img); })
                .rfind("[nn.upsampleNearest] new sizes must be >= 1", 0),
            0u);
}

// ---- testing helpers ----

TEST(Nn, TestLayerAgainstRecordedActivations) {
  const int64_t n = 9;
  nn::LayerNorm ln{make(Shape({n}, DType::f32), 91), make(Shape({n}, DType::f32), 92), 1e-5};
  Tensor x = make(Shape({2, n}, DType::f32), 93);
  const auto B = host(*ln.bias);
  std::vector<double> ref = naiveNorm(host(x), 2, n, host(ln.weight), &B, 1e-5, false);
  nn::testing::Activations recorded{{"ln_f.in.0", x},
                                    {"ln_f.out.0", Tensor::fromValues(cpu(), x.shape(), std::vector<double>(ref))}};
  nn::testing::Comparison c = nn::testing::testLayer(cpu(), recorded, "ln_f", ln, 1e-5, 1e-5);
  EXPECT_TRUE(c) << c.report;

  ref[4] += 0.5;
  recorded["ln_f.out.0"] = Tensor::fromValues(cpu(), x.shape(), ref);
  c = nn::testing::testLayer(cpu(), recorded, "ln_f", ln, 1e-5, 1e-5);
  EXPECT_FALSE(c);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst, 4);
  EXPECT_NEAR(c.maxAbsError, 0.5, 1e-5);
  EXPECT_EQ(c.report.rfind("ln_f: {2,9}:f32: 1 of 18 elements differ", 0), 0u) << c.report;
  EXPECT_NE(c.report.find("[4]"), std::string::npos) << c.report;

  EXPECT_FALSE(nn::testing::compare(x, make(Shape({18}, DType::f32), 1), 1, 1));
  EXPECT_EQ(errorOf([&] { nn::testing::testLayer(cpu(), recorded, "ln_g", ln, 0, 0); }),
            "[nn.testing] no activation \"ln_g.out.0\" was recorded");
}

}  // namespace

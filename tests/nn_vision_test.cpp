// radix::nn CNN and encoder layers (conv.h, pool.h, encoder.h, sdpa's keyLengths) against naive
// C++ references (NnVision), the loader's hints (NnVision.Load*), and the ResNet and BERT examples
// and torch.nn.TransformerEncoderLayer against PyTorch (ModelsResnet, ModelsBert: they run the
// oracles of tests/oracle/ with Debian's python3-torch).
#include <gtest/gtest.h>
#include <radix/io.h>
#include <radix/nn.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bert/bert.h"
#include "io_testing.h"
#include "models_testing.h"
#include "resnet/resnet.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
using radix::testing::compileAndCall;
using radix::testing::errorOf;
namespace nn = radix::nn;
namespace io = radix::io;
using Vec = std::vector<double>;
using radix::iotest::cpu;

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
Tensor make(const Shape& s, uint32_t seed) { return Tensor::fromValues(cpu(), s, values(static_cast<size_t>(s.count()), seed)); }
void expectNear(const Tensor& actual, const Vec& expected, double tol) {
  radix::testing::expectClose(actual, std::vector<float>(expected.begin(), expected.end()), tol);
}

// ---- Conv1d / Conv2d ----

/// Naive PyTorch conv2d over NCHW (a 1-d conv is h = kh = 1).
Vec naiveConv(const Vec& x, const Vec& w, const Vec* b, std::vector<int64_t> xd, std::vector<int64_t> wd,
              std::array<int64_t, 2> stride, std::array<int64_t, 4> pad /* top, bottom, left, right */,
              std::array<int64_t, 2> dil, int64_t groups, int64_t& oh, int64_t& ow) {
  const int64_t B = xd[0], C = xd[1], H = xd[2], W = xd[3], O = wd[0], I = wd[1], KH = wd[2], KW = wd[3];
  oh = (H + pad[0] + pad[1] - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  ow = (W + pad[2] + pad[3] - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  Vec y(static_cast<size_t>(B * O * oh * ow));
  const int64_t perGroup = O / groups;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b ? (*b)[o] : 0;
          for (int64_t ci = 0; ci < I; ++ci)
            for (int64_t u = 0; u < KH; ++u)
              for (int64_t v = 0; v < KW; ++v) {
                const int64_t r = i * stride[0] - pad[0] + u * dil[0], c = j * stride[1] - pad[2] + v * dil[1];
                if (r < 0 || r >= H || c < 0 || c >= W) continue;
                const int64_t ch = (o / perGroup) * I + ci;
                acc += x[((n * C + ch) * H + r) * W + c] * w[((o * I + ci) * KH + u) * KW + v];
              }
          y[((n * O + o) * oh + i) * ow + j] = acc;
        }
  (void)C;
  return y;
}

struct ConvCase {
  const char* name;
  std::vector<int64_t> x, w;  // rank 4 (Conv2d) or 3 (Conv1d)
  std::array<int64_t, 2> stride, padding, dilation;
  int64_t groups;
  bool same, bias;
};

TEST(NnVision, ConvMatchesNaive) {
  const std::vector<ConvCase> cases = {
      {"conv2d 3x3 pad 1", {2, 3, 5, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, true},
      {"conv2d stride 2, pad (1,0), dilation (1,2)", {1, 2, 7, 9}, {3, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 1, false, false},
      {"conv2d groups 2, same, even kernel", {1, 4, 5, 5}, {6, 2, 2, 4}, {1, 1}, {0, 0}, {2, 1}, 2, true, true},
      {"conv2d depthwise", {1, 3, 4, 5}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3, false, true},
      {"conv1d stride 2 pad 1", {2, 3, 9}, {4, 3, 3}, {2, 0}, {1, 0}, {1, 0}, 1, false, true},
      {"conv1d same, k 4, dilation 2", {1, 2, 7}, {2, 2, 4}, {1, 0}, {0, 0}, {2, 0}, 1, true, false},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const bool is2d = c.x.size() == 4;
    const Tensor x = make(Shape(c.x, DType::f32), 1), w = make(Shape(c.w, DType::f32), 2);
    const Tensor b = make(Shape({c.w[0]}, DType::f32), 3);
    const Vec X = x.toVector<double>(), W = w.toVector<double>(), Bv = b.toVector<double>();
    std::vector<int64_t> xd = c.x, wd = c.w;
    if (!is2d) {
      xd.insert(xd.begin() + 2, 1);
      wd.insert(wd.begin() + 2, 1);
    }
    std::array<int64_t, 2> stride = is2d ? c.stride : std::array<int64_t, 2>{1, c.stride[0]};
    std::array<int64_t, 2> dil = is2d ? c.dilation : std::array<int64_t, 2>{1, c.dilation[0]};
    std::array<int64_t, 4> pad = is2d ? std::array<int64_t, 4>{c.padding[0], c.padding[0], c.padding[1], c.padding[1]}
                                      : std::array<int64_t, 4>{0, 0, c.padding[0], c.padding[0]};
    if (c.same) {
      const int64_t th = dil[0] * (wd[2] - 1), tw = dil[1] * (wd[3] - 1);
      pad = {th / 2, th - th / 2, tw / 2, tw - tw / 2};
    }
    int64_t oh = 0, ow = 0;
    const Vec ref = naiveConv(X, W, c.bias ? &Bv : nullptr, xd, wd, stride, pad, dil, c.groups, oh, ow);
    Tensor y;
    if (is2d) {
      nn::Conv2d conv{.weight = w, .stride = c.stride, .padding = c.padding, .dilation = c.dilation, .groups = c.groups,
                      .samePadding = c.same};
      if (c.bias) conv.bias = b;
      y = compileAndCall(cpu(), &nn::Conv2d::forward, conv, x);
      EXPECT_EQ(y.shape(), Shape({c.x[0], c.w[0], oh, ow}, DType::f32).withTags({"b", "c", "h", "w"}));
    } else {
      nn::Conv1d conv{.weight = w, .stride = {c.stride[0]}, .padding = {c.padding[0]}, .dilation = {c.dilation[0]},
                      .groups = c.groups, .samePadding = c.same};
      if (c.bias) conv.bias = b;
      y = compileAndCall(cpu(), &nn::Conv1d::forward, conv, x);
      EXPECT_EQ(y.shape(), Shape({c.x[0], c.w[0], ow}, DType::f32).withTags({"b", "c", "s"}));
    }
    expectNear(y, ref, 1e-5);
  }
}

// ---- BatchNorm, GroupNorm ----

TEST(NnVision, BatchNormMatchesNaive) {
  struct Case {
    std::vector<int64_t> dims;
    bool affine;
    std::vector<radix::Tag> tags;
  };
  const std::vector<Case> cases = {{{2, 3, 4, 5}, true, {}}, {{3, 5}, false, {}}, {{2, 4, 3}, true, {"b", "s", "c"}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(Shape(c.dims, DType::f32).str());
    Tensor x = make(Shape(c.dims, DType::f32), 4);
    if (!c.tags.empty()) x = x.withTags(c.tags);
    const int64_t cAxis = c.tags.empty() ? 1 : 2, C = c.dims[cAxis];
    const Tensor w = make(Shape({C}, DType::f32), 5), b = make(Shape({C}, DType::f32), 6),
                 mean = make(Shape({C}, DType::f32), 7);
    std::vector<float> var = values(C, 8);
    for (float& v : var) v = v * v + 0.25f;
    nn::BatchNorm bn{.running_mean = mean, .running_var = Tensor::fromValues(cpu(), Shape({C}, DType::f32), var), .eps = 1e-3};
    if (c.affine) bn.weight = w, bn.bias = b;
    const Tensor y = compileAndCall(cpu(), &nn::BatchNorm::forward, bn, x);
    EXPECT_EQ(y.shape(), x.shape());
    const Vec X = x.toVector<double>(), W = w.toVector<double>(), B = b.toVector<double>(), M = mean.toVector<double>();
    int64_t inner = 1;
    for (size_t i = static_cast<size_t>(cAxis) + 1; i < c.dims.size(); ++i) inner *= c.dims[i];
    Vec ref(X.size());
    for (size_t i = 0; i < X.size(); ++i) {
      const int64_t ch = (static_cast<int64_t>(i) / inner) % C;
      const double n = (X[i] - M[ch]) / std::sqrt(var[ch] + 1e-3);
      ref[i] = c.affine ? n * W[ch] + B[ch] : n;
    }
    expectNear(y, ref, 1e-5);
  }
}

TEST(NnVision, GroupNormMatchesNaive) {
  const int64_t N = 2, C = 6, H = 3, W = 5, G = 3;
  const Tensor x = make(Shape({N, C, H, W}, DType::f32), 9), w = make(Shape({C}, DType::f32), 10),
               b = make(Shape({C}, DType::f32), 11);
  const nn::GroupNorm gn{.weight = w, .bias = b, .groups = G};
  const Tensor y = compileAndCall(cpu(), &nn::GroupNorm::forward, gn, x);
  const Vec X = x.toVector<double>(), Wv = w.toVector<double>(), Bv = b.toVector<double>();
  Vec ref(X.size());
  const int64_t per = C / G * H * W;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const size_t base = static_cast<size_t>((n * G + g) * per);
      double mean = 0, var = 0;
      for (int64_t i = 0; i < per; ++i) mean += X[base + i] / per;
      for (int64_t i = 0; i < per; ++i) var += (X[base + i] - mean) * (X[base + i] - mean) / per;
      for (int64_t i = 0; i < per; ++i) {
        const int64_t ch = g * (C / G) + i / (H * W);
        ref[base + i] = (X[base + i] - mean) / std::sqrt(var + 1e-5) * Wv[ch] + Bv[ch];
      }
    }
  expectNear(y, ref, 1e-5);
}

// ---- pooling ----

/// Naive pooling of {n, c, h, w} (n*c planes): max, or mean with or without the padding counted;
/// adaptive windows when `adaptive` (PyTorch's floor/ceil bounds).
Vec naivePool(const Vec& x, int64_t planes, int64_t H, int64_t W, std::array<int64_t, 2> k, std::array<int64_t, 2> s,
              std::array<int64_t, 2> p, bool max, bool countPad, int64_t& oh, int64_t& ow, bool adaptive = false) {
  if (!adaptive) {
    oh = (H + 2 * p[0] - k[0]) / s[0] + 1;
    ow = (W + 2 * p[1] - k[1]) / s[1] + 1;
  }
  Vec y;
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t r0 = i * s[0] - p[0], r1 = r0 + k[0], c0 = j * s[1] - p[1], c1 = c0 + k[1];
        if (adaptive) r0 = i * H / oh, r1 = ((i + 1) * H + oh - 1) / oh, c0 = j * W / ow, c1 = ((j + 1) * W + ow - 1) / ow;
        double acc = max ? -INFINITY : 0;
        int64_t inside = 0;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) {
            if (r < 0 || r >= H || c < 0 || c >= W) continue;
            const double v = x[(q * H + r) * W + c];
            acc = max ? std::max(acc, v) : acc + v;
            ++inside;
          }
        y.push_back(max ? acc : acc / double(countPad && !adaptive ? k[0] * k[1] : inside));
      }
  return y;
}

TEST(NnVision, PoolingMatchesNaive) {
  const int64_t N = 1, C = 2, H = 7, W = 6;
  const Tensor x = make(Shape({N, C, H, W}, DType::f32), 12);
  const Vec X = x.toVector<double>();
  int64_t oh = 0, ow = 0;
  {
    const nn::MaxPool2d pool{.kernel = {3, 3}, .stride = {{2, 2}}, .padding = {1, 1}};
    const Tensor y = compileAndCall(cpu(), &nn::MaxPool2d::forward, pool, x);
    const Vec ref = naivePool(X, N * C, H, W, {3, 3}, {2, 2}, {1, 1}, true, true, oh, ow);
    EXPECT_EQ(y.shape(), Shape({N, C, oh, ow}, DType::f32).withTags({"b", "c", "h", "w"}));
    expectNear(y, ref, 1e-6);
  }
  for (bool countPad : {true, false}) {
    SCOPED_TRACE(countPad ? "count_include_pad" : "count_include_pad=False");
    const nn::AvgPool2d pool{.kernel = {3, 2}, .stride = {{2, 1}}, .padding = {1, 1}, .countIncludePad = countPad};
    const Tensor y = compileAndCall(cpu(), &nn::AvgPool2d::forward, pool, x);
    expectNear(y, naivePool(X, N * C, H, W, {3, 2}, {2, 1}, {1, 1}, false, countPad, oh, ow), 1e-5);
  }
  for (std::array<int64_t, 2> out : {std::array<int64_t, 2>{1, 1}, {3, 4}, {7, 3}}) {
    SCOPED_TRACE("adaptive " + std::to_string(out[0]) + "x" + std::to_string(out[1]));
    const nn::AdaptiveAvgPool2d pool{.outputSize = out};
    const Tensor y = compileAndCall(cpu(), &nn::AdaptiveAvgPool2d::forward, pool, x);
    oh = out[0], ow = out[1];
    EXPECT_EQ(y.shape(), Shape({N, C, oh, ow}, DType::f32).withTags({"b", "c", "h", "w"}));
    expectNear(y, naivePool(X, N * C, H, W, {0, 0}, {1, 1}, {0, 0}, false, false, oh, ow, true), 1e-5);
  }
}

// ---- sdpa's key-padding mask ----

TEST(NnVision, SdpaKeyLengthsMasksPaddedKeys) {
  const int64_t B = 2, Hh = 2, Q = 3, K = 5, D = 4;
  const Tensor q = make(Shape({B, Hh, Q, D}, DType::f32).withTags({"b", "h", "q", "hd"}), 13);
  const Tensor k = make(Shape({B, Hh, K, D}, DType::f32).withTags({"b", "h", "k", "hd"}), 14);
  const Tensor v = make(Shape({B, Hh, K, D}, DType::f32).withTags({"b", "h", "k", "hd"}), 15);
  const std::vector<int> lengths = {5, 2};
  const Tensor len = Tensor::fromValues(cpu(), Shape({B}, DType::i32), lengths);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    auto f = [causal](Tensor q, Tensor k, Tensor v, Tensor len) {
      return nn::sdpa(q, k, v, {.causal = causal, .keyLengths = len});
    };
    const Tensor y = compileAndCall(cpu(), f, q, k, v, len);
    const Vec Qv = q.toVector<double>(), Kv = k.toVector<double>(), Vv = v.toVector<double>();
    Vec ref;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hh; ++h)
        for (int64_t i = 0; i < Q; ++i) {
          std::vector<double> p(K, 0);
          double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j < K; ++j) {
            if (j >= lengths[b] || (causal && j > i + K - Q)) {
              p[j] = -INFINITY;
              continue;
            }
            for (int64_t d = 0; d < D; ++d) p[j] += Qv[((b * Hh + h) * Q + i) * D + d] * Kv[((b * Hh + h) * K + j) * D + d];
            p[j] /= std::sqrt(double(D));
            mx = std::max(mx, p[j]);
          }
          for (double& e : p) sum += (e = std::exp(e - mx));
          for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < K; ++j) acc += p[j] / sum * Vv[((b * Hh + h) * K + j) * D + d];
            ref.push_back(acc);
          }
        }
    expectNear(y, ref, 1e-5);
  }
}

// ---- MultiHeadAttention: fused (causal self-attention) and separate (cross-attention) ----

/// Naive multi-head attention of xq {b, n, d} over xkv {b, m, d}: w {3d, d} and bias {3d} hold
/// the q, k, v projections; out {d, d} + bo the output projection (when given).
Vec naiveMha(const Vec& xq, const Vec& xkv, int64_t B, int64_t N, int64_t M, int64_t D, int64_t H, const Vec& w,
             const Vec& bias, const Vec* out, const Vec* bo, bool causal) {
  auto project = [&](const Vec& x, int64_t rows, int64_t which) {
    Vec y(static_cast<size_t>(rows * D));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < D; ++o) {
        double acc = bias[which * D + o];
        for (int64_t i = 0; i < D; ++i) acc += x[r * D + i] * w[(which * D + o) * D + i];
        y[r * D + o] = acc;
      }
    return y;
  };
  const Vec q = project(xq, B * N, 0), k = project(xkv, B * M, 1), v = project(xkv, B * M, 2);
  const int64_t hd = D / H;
  Vec a(static_cast<size_t>(B * N * D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        std::vector<double> p(M);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < M; ++j) {
          p[j] = 0;
          for (int64_t e = 0; e < hd; ++e) p[j] += q[(b * N + i) * D + h * hd + e] * k[(b * M + j) * D + h * hd + e];
          p[j] = causal && j > i + M - N ? -INFINITY : p[j] / std::sqrt(double(hd));
          mx = std::max(mx, p[j]);
        }
        for (double& e : p) sum += (e = std::exp(e - mx));
        for (int64_t e = 0; e < hd; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < M; ++j) acc += p[j] / sum * v[(b * M + j) * D + h * hd + e];
          a[(b * N + i) * D + h * hd + e] = acc;
        }
      }
  if (!out) return a;
  Vec y(a.size());
  for (int64_t r = 0; r < B * N; ++r)
    for (int64_t o = 0; o < D; ++o) {
      double acc = (*bo)[o];
      for (int64_t i = 0; i < D; ++i) acc += a[r * D + i] * (*out)[o * D + i];
      y[r * D + o] = acc;
    }
  return y;
}

TEST(NnVision, MultiHeadAttentionMatchesNaive) {
  const int64_t B = 2, N = 3, M = 5, D = 6, H = 3;
  const Tensor w = make(Shape({3 * D, D}, DType::f32), 16), bias = make(Shape({3 * D}, DType::f32), 17);
  const Tensor wo = make(Shape({D, D}, DType::f32), 18), bo = make(Shape({D}, DType::f32), 19);
  const Tensor xq = make(Shape({B, N, D}, DType::f32), 20), xkv = make(Shape({B, M, D}, DType::f32), 21);
  const Vec W = w.toVector<double>(), Bi = bias.toVector<double>(), Wo = wo.toVector<double>(), Bo = bo.toVector<double>();
  {
    SCOPED_TRACE("fused, causal self-attention");
    const nn::MultiHeadAttention mha{.in_proj_weight = w, .in_proj_bias = bias, .out_proj = {{wo, bo}}, .heads = H, .causal = true};
    const Tensor y = compileAndCall(cpu(), &nn::MultiHeadAttention::forward, mha, xkv, std::optional<Tensor>());
    EXPECT_EQ(y.shape(), Shape({B, M, D}, DType::f32).withTags({"b", "s", "d"}));
    expectNear(y, naiveMha(xkv.toVector<double>(), xkv.toVector<double>(), B, M, M, D, H, W, Bi, &Wo, &Bo, true), 1e-5);
  }
  {
    SCOPED_TRACE("separate q/k/v (BERT), cross-attention, no output projection");
    auto rows = [&](int64_t i) { return Tensor::fromValues(cpu(), Shape({D, D}, DType::f32), std::vector<double>(W.begin() + i * D * D, W.begin() + (i + 1) * D * D)); };
    auto part = [&](int64_t i) { return Tensor::fromValues(cpu(), Shape({D}, DType::f32), std::vector<double>(Bi.begin() + i * D, Bi.begin() + (i + 1) * D)); };
    const nn::MultiHeadAttention mha{.query = nn::Linear{rows(0), part(0)}, .key = nn::Linear{rows(1), part(1)},
                                     .value = nn::Linear{rows(2), part(2)}, .heads = H};
    auto cross = [](nn::MultiHeadAttention m, Tensor q, Tensor kv) { return m.attend(q, kv, {}); };
    const Tensor y = compileAndCall(cpu(), cross, mha, xq, xkv);
    EXPECT_EQ(y.shape(), Shape({B, N, D}, DType::f32).withTags({"b", "s", "d"}));
    expectNear(y, naiveMha(xq.toVector<double>(), xkv.toVector<double>(), B, N, M, D, H, W, Bi, nullptr, nullptr, false), 1e-5);
  }
}

// ---- errors: a row per layer, traced on placeholders ----

TEST(NnVision, ErrorsNameTheLayerAndShapes) {
  auto ph = [](std::vector<int64_t> dims) { return Tensor(Shape(dims, DType::f32)); };
  auto traceError = [](auto layer, auto... inputs) {
    return errorOf([&] { radix::compile(cpu(), &decltype(layer)::forward, layer, inputs...); });
  };
  struct Row {
    const char* name;
    std::function<std::string()> error;
    const char* expected;
  };
  const std::vector<Row> rows = {
      {"conv channels", [&] { return traceError(nn::Conv2d{.weight = ph({4, 2, 3, 3})}, ph({1, 3, 5, 5})); },
       "[nn.Conv2d] weight {4,2,3,3}:f32 takes 2 x 1 (groups) input channels, the input {b=1,c=3,h=5,w=5}:f32 has 3"},
      {"conv groups", [&] { return traceError(nn::Conv2d{.weight = ph({3, 2, 1, 1}), .groups = 2}, ph({1, 4, 5, 5})); },
       "[nn.Conv2d] groups = 2 must divide the input channels (4) and the output channels (3)"},
      {"conv same stride", [&] { return traceError(nn::Conv1d{.weight = ph({2, 2, 3}), .stride = {2}, .samePadding = true}, ph({1, 2, 9})); },
       "[nn.Conv1d] padding \"same\" needs stride 1 (as in PyTorch), got stride (2)"},
      {"conv rank", [&] { return traceError(nn::Conv2d{.weight = ph({4, 3, 3, 3})}, ph({3, 5, 5})); },
       "[nn.Conv2d] needs a batched {b, c, h, w} input (PyTorch's layout), got {3,5,5}:f32"},
      {"conv tags", [&] { return traceError(nn::Conv2d{.weight = ph({4, 3, 3, 3})}, ph({1, 3, 5, 5}).withTags({"b", "d", "h", "w"})); },
       "[nn.Conv2d] a tagged input needs axes tagged \"c\" and \"h\", \"w\""},
      {"batchnorm channels", [&] { return traceError(nn::BatchNorm{.running_mean = ph({3}), .running_var = ph({4})}, ph({2, 3, 4, 4})); },
       "[nn.BatchNorm] running_var must be {c} = {3}, got {4}:f32"},
      {"groupnorm groups", [&] { return traceError(nn::GroupNorm{.groups = 4}, ph({2, 6, 3, 3})); },
       "[nn.GroupNorm] groups = 4 must divide the channels of {2,6,3,3}:f32"},
      {"maxpool padding", [&] { return traceError(nn::MaxPool2d{.kernel = {2, 2}, .padding = {2, 0}}, ph({1, 1, 8, 8})); },
       "[nn.MaxPool2d] padding (2, 0) must be at most half the kernel (2, 2) (as in PyTorch)"},
      {"avgpool dtype", [&] { return traceError(nn::AvgPool2d{}, Tensor(Shape({1, 1, 4, 4}, DType::i32))); },
       "[nn.AvgPool2d] needs a float tensor, got {b=1,c=1,h=4,w=4}:i32"},
      {"adaptive size", [&] { return traceError(nn::AdaptiveAvgPool2d{.outputSize = {0, 1}}, ph({1, 1, 4, 4})); },
       "[nn.AdaptiveAvgPool2d] outputSize must be >= 1, got (0, 1)"},
      {"mha heads",
       [&] {
         return traceError(nn::MultiHeadAttention{.in_proj_weight = ph({24, 8}), .heads = 3}, ph({2, 5, 8}), std::optional<Tensor>());
       },
       "[nn.MultiHeadAttention] heads = 3 must divide the projected width of q {b=2,s=5,d=8}:f32"},
      {"mha layouts",
       [&] { return traceError(nn::MultiHeadAttention{.heads = 2}, ph({2, 5, 8}), std::optional<Tensor>()); },
       "[nn.MultiHeadAttention] needs either in_proj_weight (fused q, k, v) or the query, key and value Linears"},
      {"sdpa keyLengths",
       [&] {
         auto f = [](Tensor q, Tensor k, Tensor len) { return nn::sdpa(q, k, k, {.keyLengths = len}); };
         return errorOf([&] {
           radix::compile(cpu(), f, Tensor(Shape({2, 1, 3, 4}, DType::f32).withTags({"b", "h", "q", "hd"})),
                          Tensor(Shape({2, 1, 3, 4}, DType::f32).withTags({"b", "h", "k", "hd"})), ph({2}));
         });
       },
       "[nn.sdpa] keyLengths must be integers {b} or a scalar, got {2}:f32"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_NE(r.error().find(r.expected), std::string::npos) << r.error();
  }
}

// ---- loadInto: PyTorch-only entries and "did you mean" ----

struct TinyNet {
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
};

TinyNet tinyNet() {
  auto ph = [](std::vector<int64_t> dims) { return Tensor(Shape(dims, DType::f32)); };
  return {{.weight = ph({2, 1, 1, 1})}, {.weight = ph({2}), .bias = ph({2}), .running_mean = ph({2}), .running_var = ph({2})}};
}

std::string tinyNetFile(const std::string& prefix, bool count) {
  using radix::iotest::iotaFloats;
  using radix::iotest::raw;
  std::vector<radix::iotest::StTensor> t = {
      {prefix + "conv.weight", "F32", {2, 1, 1, 1}, raw(iotaFloats(2))}, {prefix + "bn.weight", "F32", {2}, raw(iotaFloats(2))},
      {prefix + "bn.bias", "F32", {2}, raw(iotaFloats(2))},           {prefix + "bn.running_mean", "F32", {2}, raw(iotaFloats(2))},
      {prefix + "bn.running_var", "F32", {2}, raw(iotaFloats(2))}};
  if (count) t.push_back({prefix + "bn.num_batches_tracked", "I64", {}, raw(std::vector<int64_t>{3})});
  return radix::iotest::safetensors(t);
}

TEST(NnVision, LoadIntoIgnoresNumBatchesTrackedWithANote) {
  const std::string bytes = tinyNetFile("", true);
  const io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(radix::iotest::span(bytes), "tiny.safetensors");
  TinyNet m = tinyNet();
  const io::LoadReport report = io::loadInto(cpu(), m, ckpt);
  EXPECT_TRUE(m.bn.running_var.isBound());
  EXPECT_EQ(report.ignored, std::vector<std::string>{"bn.num_batches_tracked"});
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_EQ(report.notes[0], "ignored 1 PyTorch-only tensor (num_batches_tracked): bn.num_batches_tracked");
  TinyNet strict = tinyNet();
  io::LoadSpec spec;
  spec.ignorePyTorchOnly = false;
  EXPECT_NE(errorOf([&] { io::loadInto(cpu(), strict, ckpt, spec); }).find("extra: \"bn.num_batches_tracked\" {} I64"),
            std::string::npos);
}

TEST(NnVision, LoadIntoSaysDidYouMeanForAPrefix) {
  {  // the checkpoint's names carry "module." (torch.nn.DataParallel)
    const std::string bytes = tinyNetFile("module.", true);
    const io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(radix::iotest::span(bytes), "dp.safetensors");
    TinyNet m = tinyNet();
    const std::string e = errorOf([&] { io::loadInto(cpu(), m, ckpt); });
    EXPECT_NE(e.find("missing: \"conv.weight\" for conv.weight {2,1,1,1}:f32 is not in the checkpoint; did you mean "
                     "\"module.conv.weight\"?"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("did you mean LoadSpec::prefixes with \"module.\"? The checkpoint's names start with it"), std::string::npos)
        << e;
    io::LoadSpec spec;
    spec.prefixes = {"module."};
    EXPECT_EQ(io::loadInto(cpu(), m, ckpt, spec).notes.size(), 1u);
  }
  {  // the model's names carry a prefix the checkpoint lacks
    struct Wrapped {
      TinyNet backbone;
    } w{tinyNet()};
    const std::string bytes = tinyNetFile("", false);
    const io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(radix::iotest::span(bytes), "plain.safetensors");
    const std::string e = errorOf([&] { io::loadInto(cpu(), w, ckpt); });
    EXPECT_NE(e.find("missing: \"backbone.bn.bias\" for backbone.bn.bias {2}:f32 is not in the checkpoint; did you mean "
                     "\"bn.bias\"?"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("did you mean to load into the model's member \"backbone\"?"), std::string::npos) << e;
  }
}

// ---- the examples and torch.nn against PyTorch ----

using radix::models::testing::kPython;
using radix::models::testing::kSource;
using radix::models::testing::runCommand;

/// A temp folder (removed at exit) where `script` of tests/oracle/ wrote its files.
const std::string& oracleDir(const std::string& script) {
  static std::map<std::string, std::unique_ptr<radix::iotest::TempDir>> dirs;
  auto& dir = dirs[script];
  if (!dir) {
    dir = std::make_unique<radix::iotest::TempDir>("vision-" + script.substr(0, script.find('.')));
    const auto r = runCommand(kPython + " " + kSource + "/tests/oracle/" + script + " " + dir->path.string() + " 2>&1");
    if (r.status != 0) ADD_FAILURE() << script << " failed:\n" << r.out;
  }
  static std::map<std::string, std::string> paths;
  return paths[script] = dir->path.string();
}

TEST(ModelsResnet, MatchesPyTorch) {
  const std::string& dir = oracleDir("resnet_ref.py");
  const io::Checkpoint ckpt = io::Checkpoint::open(dir + "/resnet.safetensors");
  const io::Checkpoint data = io::Checkpoint::open(dir + "/resnet_io.safetensors");
  const resnet::Config config = resnet::configOf(ckpt);
  EXPECT_EQ(config.widths, (std::array<int64_t, 4>{4, 8, 8, 8}));
  resnet::ResNet model = resnet::placeholders(config);
  const io::LoadReport report = io::loadInto(cpu(), model, ckpt);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("ignored 12 PyTorch-only tensors (num_batches_tracked): bn1.num_batches_tracked"),
            std::string::npos)
      << report.notes[0];
  const Tensor images = data.load(cpu(), "input");
  const Tensor logits = compileAndCall(cpu(), &resnet::ResNet::forward, model, images);
  EXPECT_EQ(logits.shape(), Shape({2, 5}, DType::f32).withTags({"b", "cls"}));
  radix::testing::expectClose(logits, data.load(cpu(), "logits"), 1e-4);
}

TEST(ModelsResnet, ExampleRunsOnTheCheckpoint) {
  const std::string& dir = oracleDir("resnet_ref.py");
  const auto r = runCommand(std::string(RADIX_RESNET_PATH) + " " + dir + "/resnet.safetensors " + dir + "/resnet_io.safetensors 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("max |error| against the expected logits"), std::string::npos) << r.out;
}

TEST(ModelsBert, MatchesPyTorch) {
  const std::string& dir = oracleDir("bert_ref.py");
  const io::Checkpoint ckpt = io::Checkpoint::open(dir + "/bert.safetensors");
  const io::Checkpoint data = io::Checkpoint::open(dir + "/bert_io.safetensors");
  bert::Bert model = bert::placeholders(bert::configOf(ckpt, 3));
  EXPECT_TRUE(io::loadInto(cpu(), model, ckpt).notes.empty());
  const Tensor ids = data.load(cpu(), "input_ids"), types = data.load(cpu(), "token_type_ids"),
               lengths = data.load(cpu(), "lengths");
  auto exe = radix::compile(cpu(), &bert::Bert::forward, model, ids, types, lengths);
  const bert::Output out = exe(model, ids, types, lengths);
  EXPECT_EQ(out.pooler_output.shape(), Shape({2, 24}, DType::f32).withTags({"b", "d"}));
  radix::testing::expectClose(out.last_hidden_state, data.load(cpu(), "last_hidden_state"), 1e-4);
  radix::testing::expectClose(out.pooler_output, data.load(cpu(), "pooler_output"), 1e-4);
}

TEST(ModelsBert, ExampleRunsOnTheCheckpoint) {
  const std::string& dir = oracleDir("bert_ref.py");
  const auto r = runCommand(std::string(RADIX_BERT_PATH) + " " + dir + "/bert.safetensors 3 " + dir + "/bert_io.safetensors 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("max |error| against the expected outputs"), std::string::npos) << r.out;
}

TEST(ModelsBert, TransformerEncoderLayerMatchesPyTorch) {
  const std::string& dir = oracleDir("bert_ref.py");
  const io::Checkpoint data = io::Checkpoint::open(dir + "/encoder_io.safetensors");
  auto ph = [](std::vector<int64_t> dims) { return Tensor(Shape(dims, DType::f32)); };
  const int64_t D = 12, F = 20;
  for (bool pre : {false, true}) {
    SCOPED_TRACE(pre ? "norm_first, gelu" : "post-norm, relu");
    nn::TransformerEncoderLayer layer{
        .self_attn = {.in_proj_weight = ph({3 * D, D}), .in_proj_bias = ph({3 * D}), .out_proj = {{ph({D, D}), ph({D})}}, .heads = 3},
        .linear1 = {ph({F, D}), ph({F})},
        .linear2 = {ph({D, F}), ph({D})},
        .norm1 = {ph({D}), ph({D})},
        .norm2 = {ph({D}), ph({D})},
        .normFirst = pre,
        .activation = pre ? nn::EncoderActivation::gelu : nn::EncoderActivation::relu};
    const io::Checkpoint ckpt = io::Checkpoint::open(dir + (pre ? "/encoder_pre.safetensors" : "/encoder_post.safetensors"));
    io::loadInto(cpu(), layer, ckpt);
    const Tensor x = data.load(cpu(), "x");
    const std::optional<Tensor> lengths = data.load(cpu(), "lengths");
    const Tensor y = compileAndCall(cpu(), &nn::TransformerEncoderLayer::forward, layer, x, lengths);
    radix::testing::expectClose(y, data.load(cpu(), pre ? "pre" : "post"), 1e-4);
  }
}

}  // namespace

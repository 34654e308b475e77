// Fused row ops and elementwise chains of the fast CPU path (src/compiler/fast_ewise.cpp: rows
// tiled with their producers fused, vector row reductions, polynomial math) against naive double
// references: softmax, logSoftmax, LayerNorm, RMSNorm, row sum and max, tanh(x*y+z) and GELU, on
// odd shapes (rows of 1 element, 7, 17, 129, rank 3), f32 and bf16, 1 and 2 threads, and the
// host, x86-64-v3 and x86-64 targets. One compile per configuration computes every op.
#include <gtest/gtest.h>
#include <radix/nn.h>
#include <radix/radix.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "io_testing.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
using Vals = std::vector<double>;

/// The ops under test, on x {.., d} with weight/bias {d} and y, z shaped like x.
std::vector<Tensor> allOps(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& z) {
  return {x.softmax("d"),
          x.logSoftmax("d"),
          radix::nn::LayerNorm{w, b, 1e-5}.forward(x),
          radix::nn::RMSNorm{w, 1e-6}.forward(x),
          x.sum("d"),
          x.max("d"),
          x.mul(y).add(z).tanh(),
          x.gelu(),
          x.geluErf()};
}
const char* const kOpNames[] = {"softmax", "logSoftmax", "layerNorm", "rmsNorm", "sum", "max", "tanh(xy+z)", "gelu", "geluErf"};

/// Naive references, row by row (rows of the last axis), in double.
std::vector<Vals> references(const Vals& x, const Vals& w, const Vals& b, const Vals& y, const Vals& z, int64_t rows, int64_t d) {
  std::vector<Vals> out(9);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * d;
    double m = -INFINITY, s = 0, sum = 0, sq = 0;
    for (int64_t i = 0; i < d; ++i) m = std::max(m, row[i]), sum += row[i], sq += row[i] * row[i];
    for (int64_t i = 0; i < d; ++i) s += std::exp(row[i] - m);
    const double mean = sum / d;
    double var = 0;
    for (int64_t i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= d;
    for (int64_t i = 0; i < d; ++i) {
      out[0].push_back(std::exp(row[i] - m) / s);
      out[1].push_back(row[i] - m - std::log(s));
      out[2].push_back((row[i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i]);
      out[3].push_back(row[i] / std::sqrt(sq / d + 1e-6) * w[i]);
    }
    out[4].push_back(sum);
    out[5].push_back(m);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    out[6].push_back(std::tanh(x[i] * y[i] + z[i]));
    const double v = x[i];
    out[7].push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
    out[8].push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  }
  return out;
}

struct Target {
  const char* name;
  const char* cpu;
};
const Target kTargets[] = {{"host", ""}, {"x86_64_v3", "x86-64-v3"}, {"x86_64", "x86-64"}};
const std::vector<std::vector<int64_t>> kShapes = {{7, 1}, {1, 7}, {17, 129}, {129, 17}, {3, 5, 33}, {2, 1000}};

using Param = std::tuple<int, bool, int, int>;  // shape, bf16, threads, target

class FusedRows : public ::testing::TestWithParam<Param> {};

TEST_P(FusedRows, MatchNaiveReferences) {
  const auto [shapeIndex, bf16, threads, targetIndex] = GetParam();
  const std::vector<int64_t>& dims = kShapes[shapeIndex];
  const DType dtype = bf16 ? DType::bf16 : DType::f32;
  radix::CompileOptions options;
  options.threads = threads;
  options.cache = false;
  options.targetCpu = kTargets[targetIndex].cpu;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);

  std::vector<std::string> tags;
  for (size_t i = 0; i + 1 < dims.size(); ++i) tags.push_back(std::string(1, static_cast<char>('a' + i)));
  tags.push_back("d");
  std::vector<radix::Tag> tagList(tags.begin(), tags.end());
  const Shape shape = Shape(dims, dtype).withTags(tagList);
  const int64_t d = dims.back(), count = shape.count(), rows = count / d;
  auto values = [&](int64_t n, double scale, double offset, uint32_t seed) {
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) {
      seed = seed * 1664525u + 1013904223u;
      v[i] = static_cast<float>(offset + scale * ((seed >> 8) / 16777216.0 - 0.5));
    }
    return v;
  };
  const Tensor x = Tensor::fromValues(cpu, shape, values(count, 8, 0.5, 1));
  const Tensor y = Tensor::fromValues(cpu, shape, values(count, 2, 0, 2));
  const Tensor z = Tensor::fromValues(cpu, shape, values(count, 2, 0, 3));
  const Shape rowShape = Shape({d}, dtype).withTags({"d"});
  const Tensor w = Tensor::fromValues(cpu, rowShape, values(d, 1, 1, 4));
  const Tensor b = Tensor::fromValues(cpu, rowShape, values(d, 1, 0, 5));
  auto host = [](const Tensor& t) {  // the inputs as the reference sees them: rounded to the dtype
    const std::vector<float> f = t.toVector<float>();
    return Vals(f.begin(), f.end());
  };
  const std::vector<Vals> want = references(host(x), host(w), host(b), host(y), host(z), rows, d);
  const std::vector<Tensor> got = radix::compile(cpu, &allOps, x, w, b, y, z)(x, w, b, y, z);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const std::vector<float> g = got[k].toVector<float>();
    ASSERT_EQ(g.size(), want[k].size()) << kOpNames[k];
    // f32: a few ulps of the polynomials plus reassociated sums; bf16: the result's rounding.
    double tol = bf16 ? 1.6e-2 : 2e-5;
    if (k == 4) tol *= std::sqrt(static_cast<double>(d)) * 4;  // sums of d values of |x| <= 4.5
    if (bf16 && (k == 1 || k == 2)) tol = 4e-2;               // log-softmax, layer norm: larger values
    int failures = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const double err = std::fabs(g[i] - want[k][i]);
      if (!(err <= tol * (1 + std::fabs(want[k][i]))) && failures++ < 3)
        ADD_FAILURE() << kOpNames[k] << "[" << i << "] = " << g[i] << ", want " << want[k][i];
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<Param>& info) {
  std::string name;
  for (int64_t dim : kShapes[std::get<0>(info.param)]) name += (name.empty() ? "" : "x") + std::to_string(dim);
  return name + (std::get<1>(info.param) ? "_bf16" : "_f32") + "_t" + std::to_string(std::get<2>(info.param)) + "_" +
         kTargets[std::get<3>(info.param)].name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedRows,
                         ::testing::Combine(::testing::Range(0, 6), ::testing::Bool(), ::testing::Values(1, 2),
                                            ::testing::Range(0, 3)),
                         paramName);

/// NaN and -inf propagate through the vector row reductions as through the naive loops: a NaN
/// anywhere in a row (vector body or scalar tail) makes its max and softmax NaN; a row of -inf
/// gives softmax 0s; +inf wins the max.
TEST(FusedRowsSpecial, NanInfInBodyAndTail) {
  const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false});
  const int64_t d = 70;  // 64 in the vector body, 6 in the tail
  std::vector<float> v(4 * d, 1.f);
  v[0 * d + 10] = NAN;                  // row 0: NaN in the body
  v[1 * d + 67] = NAN;                  // row 1: NaN in the tail
  for (int64_t i = 0; i < d; ++i) v[2 * d + i] = -INFINITY;  // row 2: all -inf
  v[3 * d + 68] = INFINITY;             // row 3: +inf in the tail
  const Tensor x = Tensor::fromValues(cpu, Shape({4, d}, DType::f32).withTags({"r", "d"}), v);
  auto fn = [](const Tensor& t) { return std::make_pair(t.max("d"), t.softmax("d")); };
  const auto [m, s] = radix::compile(cpu, fn, x)(x);
  const std::vector<float> mv = m.toVector<float>(), sv = s.toVector<float>();
  EXPECT_TRUE(std::isnan(mv[0]));
  EXPECT_TRUE(std::isnan(mv[1]));
  EXPECT_EQ(mv[2], -INFINITY);
  EXPECT_EQ(mv[3], INFINITY);
  EXPECT_TRUE(std::isnan(sv[0 * d + 3]));
  EXPECT_TRUE(std::isnan(sv[1 * d + 3]));
  EXPECT_EQ(sv[2 * d + 5], 0.f);
}

}  // namespace

namespace {

/// Row reductions big enough (>= 32768 iterations) to run their rows as OpenMP loops outside any
/// row tile, with 2 threads: sum, max and mean over the last axis, and softmax, against naive loops.
TEST(FusedRowsSpecial, LargeRowsWithTwoThreads) {
  const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false, .threads = 2});
  const int64_t rows = 96, d = 1001;  // 1001 = 15 * 64 + 41: vector body and scalar tail
  std::vector<float> v(rows * d);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 1000) / 100.f - 5.f;
  const Tensor x = Tensor::fromValues(cpu, Shape({rows, d}, DType::f32).withTags({"r", "d"}), v);
  auto fn = [](const Tensor& t) { return std::make_tuple(t.sum("d"), t.max("d"), t.softmax("d")); };
  const auto [s, m, p] = radix::compile(cpu, fn, x)(x);
  const std::vector<float> sv = s.toVector<float>(), mv = m.toVector<float>(), pv = p.toVector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, mx = -INFINITY, z = 0;
    for (int64_t i = 0; i < d; ++i) sum += v[r * d + i], mx = std::max<double>(mx, v[r * d + i]);
    for (int64_t i = 0; i < d; ++i) z += std::exp(v[r * d + i] - mx);
    EXPECT_NEAR(sv[r], sum, 1e-5 * (1 + std::fabs(sum)) * 100) << "row " << r;
    EXPECT_EQ(mv[r], static_cast<float>(mx)) << "row " << r;
    for (int64_t i = 0; i < d; i += 97)
      EXPECT_NEAR(pv[r * d + i], std::exp(v[r * d + i] - mx) / z, 1e-6) << "row " << r << " col " << i;
  }
}

/// Maps, copies and conversions outside row loops with 2 threads run as one OpenMP loop over
/// the outermost dim of 8+ iterations (here the third: {1, 3, 37, 1001}) around serial inner
/// loops, and small ones serially: bit-equal to 1 thread, and to the values themselves.
TEST(FusedRowsSpecial, MapsWithTwoThreadsMatchOneThread) {
  auto run = [](int threads) {
    const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false, .threads = threads});
    const int64_t n = 1 * 3 * 37 * 1001;
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % 1000) / 100.f - 5.f;
    const Tensor x = Tensor::fromValues(cpu, Shape({1, 3, 37, 1001}, DType::f32), v);
    const Tensor small = Tensor::fromValues(cpu, Shape({3, 5}, DType::f32), std::vector<float>(15, 1.5f));
    auto fn = [](const Tensor& t, const Tensor& u) {
      const Tensor two = Tensor::constant(t.shape(), 2.0), one = Tensor::constant(t.shape(), 1.0);
      return std::make_tuple(t.mul(two).add(one).exp().convert(DType::bf16), t.transpose({0, 3, 2, 1}), u.mul(u));
    };
    const auto [a, b, c] = radix::compile(cpu, fn, x, small)(x, small);
    return std::make_tuple(a.toVector<float>(), b.toVector<float>(), c.toVector<float>(), v);
  };
  const auto [a1, b1, c1, v] = run(1);
  const auto [a2, b2, c2, v2] = run(2);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(b1, b2);
  EXPECT_EQ(c1, c2);
  ASSERT_EQ(b2.size(), v.size());
  // b = x transposed {0, 3, 2, 1}: b[0][k][j][i] = x[0][i][j][k].
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 37; j += 5)
      for (int64_t k = 0; k < 1001; k += 97) EXPECT_EQ(b2[(k * 37 + j) * 3 + i], v[(i * 37 + j) * 1001 + k]);
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); i += 1013)
    EXPECT_NEAR(a2[i], std::exp(2.0 * v[i] + 1.0), 1e-2 * std::exp(2.0 * v[i] + 1.0));
  EXPECT_EQ(c2, std::vector<float>(15, 2.25f));
}

}  // namespace

namespace {

/// A transcendental read through a broadcast is computed once per element of its own shape, not
/// once per copy (rope's sin/cos over {s, hd/2} broadcast over heads): the sin's loop nest after
/// bufferization writes a {64} buffer, and the numbers are right.
TEST(FusedRowsSpecial, TranscendentalIsNotRecomputedPerBroadcastCopy) {
  const std::string dir = ::testing::TempDir() + "radix_fusion_broadcast";
  const radix::Platform cpu =
      radix::Platform::cpu().withOptions(radix::iotest::passDumpOptions(dir, "convert-bufferization-to-memref"));
  std::vector<float> v(64 * 12 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 13) - 6.f;
  const Tensor x = Tensor::fromValues(cpu, Shape({64, 12, 32}, DType::f32).withTags({"s", "h", "d"}), v);
  auto fn = [](const Tensor& t) {
    const Tensor angle = Tensor::arange(64, DType::f32).withTags({"s"}).mulConstant(0.1).sin();
    return t.mul(angle.broad(t.shape()));
  };
  const std::vector<float> y = radix::compile(cpu, fn, x)(x).toVector<float>();
  const std::string text = radix::iotest::passDump(dir, "convert-bufferization-to-memref");
  const size_t sin = text.find("math.sin");
  ASSERT_NE(sin, std::string::npos) << text;
  const size_t generic = text.rfind("linalg.generic", sin);
  ASSERT_NE(generic, std::string::npos) << text;
  const std::string head = text.substr(generic, text.find('\n', generic) - generic);
  EXPECT_NE(head.find("memref<64xf32>"), std::string::npos) << "sin computed in: " << head;
  for (size_t i = 0; i < v.size(); i += 37)
    EXPECT_NEAR(y[i], v[i] * std::sin(0.1 * static_cast<double>(i / (12 * 32))), 1e-5) << i;
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

/// y against a naive softmax of v's rows ({rows, cols}), every rowStep-th row and colStep-th column.
void expectNaiveSoftmax(const std::vector<float>& v, const std::vector<float>& y, int64_t rows, int64_t cols,
                        int64_t rowStep, int64_t colStep) {
  for (int64_t r = 0; r < rows; r += rowStep) {
    double m = -1e30, sum = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(v[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(v[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; c += colStep)
      EXPECT_NEAR(y[r * cols + c], std::exp(double(v[r * cols + c]) - m) / sum, 1e-6) << r << "," << c;
  }
}

/// Softmax's row loop prefetches the next row in its exp sweep (radix-lower-rows): one
/// memref.prefetch per vector load of x, at the next row, and none in the max sweep; the
/// numbers are those of a naive softmax.
TEST(FusedRowsSpecial, SoftmaxPrefetchesTheNextRowInItsExpSweep) {
  const std::string dir = ::testing::TempDir() + "radix_fusion_prefetch";
  const radix::Platform cpu = radix::Platform::cpu().withOptions(radix::iotest::passDumpOptions(dir, "radix-lower-rows", 1));
  const int64_t rows = 6, cols = 2048;  // one row per tile (about 2048 elements)
  std::vector<float> v(rows * cols);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 29) * 0.25f - 3.f;
  const Tensor x = Tensor::fromValues(cpu, Shape({rows, cols}, DType::f32), v);
  const std::vector<float> y = radix::compile(cpu, [](const Tensor& t) { return t.softmax(1); }, x)(x).toVector<float>();
  const std::string text = radix::iotest::passDump(dir, "radix-lower-rows", "math.exp");
  const size_t exp = text.find("math.exp");
  ASSERT_NE(exp, std::string::npos) << text;
  const size_t prefetch = text.find("memref.prefetch");
  ASSERT_NE(prefetch, std::string::npos) << "no prefetch in the row loop:\n" << text;
  EXPECT_GT(prefetch, text.find("arith.maximumf")) << "the prefetch belongs to the exp sweep, after the max";
  EXPECT_LT(prefetch, exp) << "before the exp sweep's loads are used";
  EXPECT_NE(text.find("arith.minsi"), std::string::npos) << "the next row, clamped to the last";
  expectNaiveSoftmax(v, y, rows, cols, 1, 17);
  std::filesystem::remove_all(dir);
}

/// Softmax's row temporaries (the row's exponentials, its max and sum) cost no malloc, free or
/// memset call per row: with one thread they are allocated once before the row loop, with two
/// they are stack allocations of each row.
TEST(FusedRowsSpecial, SoftmaxRowTemporariesAreNotHeapAllocatedPerRow) {
  for (const int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const std::string dir = ::testing::TempDir() + "radix_row_temporaries_" + std::to_string(threads);
    const radix::Platform cpu =
        radix::Platform::cpu().withOptions(radix::iotest::passDumpOptions(dir, "radix-lower-rows", threads));
    const int64_t rows = 64, cols = 1024;
    std::vector<float> v(rows * cols);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 31) * 0.5f - 7.f;
    const Tensor x = Tensor::fromValues(cpu, Shape({rows, cols}, DType::f32), v);
    const std::vector<float> y = radix::compile(cpu, [](const Tensor& t) { return t.softmax(1); }, x)(x).toVector<float>();
    const std::string text = radix::iotest::passDump(dir, "radix-lower-rows", "math.exp");
    const size_t loop = text.find(threads == 1 ? "scf.for" : "scf.parallel");
    ASSERT_NE(loop, std::string::npos) << text;
    EXPECT_EQ(text.find("memref.alloc(", loop), std::string::npos) << "a heap allocation in the row loop:\n" << text;
    EXPECT_EQ(text.find("radix_kernel_zero", loop), std::string::npos) << "a memset call in the row loop:\n" << text;
    expectNaiveSoftmax(v, y, rows, cols, 7, 13);
    std::filesystem::remove_all(dir);
  }
}

}  // namespace

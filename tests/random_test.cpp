// radix::Rng (Philox4x32-10) against Random123's known answers and a host Philox, determinism
// across runs, calls and executables, chi-square tests of its distributions; sampleTokens against
// argmax and chi-square tests of what it samples. Every draw uses a fixed seed, so no test can
// flake: each either passes or fails on every run. Chi-square thresholds are the 0.999 quantiles
// of the distribution with the stated degrees of freedom (a fair generator fails one in 1000 seeds).
#include <gtest/gtest.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <numeric>
#include <tuple>
#include <vector>

namespace {

using radix::DType;
using radix::Rng;
using radix::RngDraw;
using radix::Shape;
using radix::Tensor;

const radix::Platform& cpu() {
  static const radix::Platform platform = radix::Platform::cpu();
  return platform;
}

using Block = std::array<uint32_t, 4>;

/// A generator in a given state: counter words then key words.
Rng stateOf(const Block& counter, uint32_t k0, uint32_t k1) {
  std::vector<int64_t> words(counter.begin(), counter.end());
  words.push_back(k0);
  words.push_back(k1);
  return Rng{Tensor::fromValues(cpu(), Rng::stateShape(), words)};
}

std::vector<uint32_t> words(const Tensor& t) {
  std::vector<uint32_t> out;
  for (int64_t v : t.toVector<int64_t>()) out.push_back(static_cast<uint32_t>(v));
  return out;
}

/// Philox4x32-10 on the host, written from the Random123 paper (for streams longer than a block).
Block philoxHost(Block x, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    const uint64_t p0 = uint64_t{0xD2511F53u} * x[0], p1 = uint64_t{0xCD9E8D57u} * x[2];
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k0, static_cast<uint32_t>(p1), static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k1,
         static_cast<uint32_t>(p0)};
  }
  return x;
}

/// The 128-bit counter plus n.
Block plus(Block c, uint64_t n) {
  const uint64_t lo = (uint64_t{c[1]} << 32 | c[0]) + n;
  const uint64_t hi = (uint64_t{c[3]} << 32 | c[2]) + (lo < n ? 1 : 0);
  return {static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), static_cast<uint32_t>(hi), static_cast<uint32_t>(hi >> 32)};
}

RngDraw draw(const Rng& rng, const Shape& shape) { return rng.bitGenerator(shape); }

/// sum (observed - expected)^2 / expected, with `p` the bins' probabilities.
double chiSquare(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  const double n = static_cast<double>(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = n * p[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

// 0.999 quantiles of chi-square with k degrees of freedom.
constexpr double kChi1 = 10.83, kChi2 = 13.82, kChi3 = 16.27, kChi4 = 18.47, kChi15 = 37.70, kChi19 = 43.82;

// Random123's kat_vectors, the philox4x32 10 lines: counter, key -> the block.
TEST(Random, PhiloxKnownAnswers) {
  struct Kat {
    Block counter;
    uint32_t k0, k1;
    Block expected;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  auto exe = radix::compile(cpu(), [](const Rng& r) { return draw(r, Shape({4}, DType::u32)); }, Rng{});
  for (const Kat& k : kats) {
    RngDraw d = exe(stateOf(k.counter, k.k0, k.k1));
    EXPECT_EQ(words(d.values), std::vector<uint32_t>(k.expected.begin(), k.expected.end()));
    // The counter moved past the one block used (wrapping at 2^128); the key stayed.
    const Block next = plus(k.counter, 1);
    EXPECT_EQ(words(d.rng.state), (std::vector<uint32_t>{next[0], next[1], next[2], next[3], k.k0, k.k1}));
    // The host Philox agrees with the published vectors, so it can check longer streams below.
    EXPECT_EQ(philoxHost(k.counter, k.k0, k.k1), k.expected);
  }
}

// A draw is the Philox stream of consecutive counters in order (a carry crosses words 0..2 here),
// 64-bit elements take two words (low first), narrower ones the low bits of one.
TEST(Random, BitsFollowTheCounterStream) {
  const Block counter = {0xfffffffe, 0xffffffff, 0xffffffff, 7};
  const uint32_t k0 = 0x12345678, k1 = 0x9abcdef0;
  std::vector<uint32_t> stream;
  for (uint64_t i = 0; i < 8; ++i)
    for (uint32_t w : philoxHost(plus(counter, i), k0, k1)) stream.push_back(w);
  auto fn = [](const Rng& r) {
    RngDraw a = draw(r, Shape({3, 5}, DType::u32).withTags({"b", "s"}));
    RngDraw b = draw(r, Shape({5}, DType::i64));
    RngDraw c = draw(r, Shape({7}, DType::u8));
    return std::tuple{a, b.values, c.values};
  };
  auto [a, b, c] = radix::testing::compileAndCall(cpu(), fn, stateOf(counter, k0, k1));
  EXPECT_EQ(a.values.shape(), Shape({3, 5}, DType::u32).withTags({"b", "s"}));
  EXPECT_EQ(words(a.values), std::vector<uint32_t>(stream.begin(), stream.begin() + 15));
  const Block next = plus(counter, 4);  // 15 words: 4 blocks
  EXPECT_EQ(words(a.rng.state), (std::vector<uint32_t>{next[0], next[1], next[2], next[3], k0, k1}));
  const std::vector<int64_t> wide = b.toVector<int64_t>();
  for (size_t e = 0; e < 5; ++e)
    EXPECT_EQ(static_cast<uint64_t>(wide[e]), uint64_t{stream[2 * e + 1]} << 32 | stream[2 * e]) << "element " << e;
  const std::vector<int64_t> bytes = c.toVector<int64_t>();
  for (size_t e = 0; e < 7; ++e) EXPECT_EQ(bytes[e], stream[e] & 0xff) << "element " << e;
}

RngDraw uniform1000(const Rng& r) { return r.uniform(Shape({1000}, DType::f32)); }

// The same state gives the same values in every run, executable, radix::call and trace; the
// returned state gives new ones.
TEST(Random, DeterministicAndThreadedThroughCalls) {
  const Rng seed = Rng::init(cpu(), 1234);
  auto exe = radix::compile(cpu(), &uniform1000, Rng{});
  const RngDraw first = exe(seed), again = exe(seed);
  const RngDraw second = exe(first.rng);
  EXPECT_EQ(first.values.toVector<float>(), again.values.toVector<float>());
  EXPECT_NE(first.values.toVector<float>(), second.values.toVector<float>());
  EXPECT_NE(first.values.toVector<float>(), exe(Rng::init(cpu(), 1235)).values.toVector<float>());
  // Another executable, two radix::calls threading the state.
  auto twice = [](const Rng& r) {
    RngDraw a = radix::call(&uniform1000, r);
    RngDraw b = radix::call(&uniform1000, a.rng);
    return std::tuple{a.values, b.values, b.rng};
  };
  auto [a, b, rng] = radix::testing::compileAndCall(cpu(), twice, seed);
  EXPECT_EQ(a.toVector<float>(), first.values.toVector<float>());
  EXPECT_EQ(b.toVector<float>(), second.values.toVector<float>());
  EXPECT_EQ(words(rng.state), words(second.rng.state));
  // Rng::init inside a trace is the host's Rng::init.
  auto traced = [](const Tensor&) { return uniform1000(Rng::init(1234)).values; };
  Tensor t = radix::testing::compileAndCall(cpu(), traced, Tensor::fromValues(cpu(), Shape({1}, DType::f32), {0}));
  EXPECT_EQ(t.toVector<float>(), first.values.toVector<float>());
}

/// Counts of floor(bins * cdf(x)) for every value.
template <class Cdf>
std::vector<int64_t> histogram(const std::vector<double>& v, int bins, Cdf cdf) {
  std::vector<int64_t> counts(bins, 0);
  for (double x : v) counts[std::clamp(static_cast<int>(cdf(x) * bins), 0, bins - 1)]++;
  return counts;
}

// Uniform: 20000 draws in 20 equal bins of [lo, hi); every value inside [lo, hi).
TEST(Random, UniformChiSquare) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    SCOPED_TRACE(std::string(radix::name(d)));
    auto fn = [d](const Rng& r) { return r.uniform(Shape({20000}, d), -2, 3).values; };
    const std::vector<double> v = radix::testing::compileAndCall(cpu(), fn, Rng::init(cpu(), 7)).toVector<double>();
    EXPECT_GE(*std::min_element(v.begin(), v.end()), -2);
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 3);
    // bf16 holds 8 bits: 16 bins, which its grid fills evenly.
    const int bins = d == DType::bf16 ? 16 : 20;
    const double chi = chiSquare(histogram(v, bins, [](double x) { return (x + 2) / 5; }), std::vector<double>(bins, 1.0 / bins));
    EXPECT_LT(chi, d == DType::bf16 ? kChi15 : kChi19);
  }
}

// Rounding to the dtype never reaches hi, also where the interval's top is denser than the dtype.
TEST(Random, UniformStaysBelowHi) {
  auto fn = [](const Rng& r) {
    RngDraw a = r.uniform(Shape({100000}, DType::f16), 0, 1);
    RngDraw b = a.rng.uniform(Shape({100000}, DType::bf16), 1, 1.005);
    return std::pair{a.values, b.values};
  };
  auto [h, b] = radix::testing::compileAndCall(cpu(), fn, Rng::init(cpu(), 3));
  const std::vector<float> hv = h.toVector<float>(), bv = b.toVector<float>();
  EXPECT_LT(*std::max_element(hv.begin(), hv.end()), 1.0f);
  EXPECT_EQ(*std::min_element(hv.begin(), hv.end()), 0.0f);
  // bf16 has no value in (1, 1.005) (its next after 1 is 1.0078): all draws are 1.
  EXPECT_EQ(*std::max_element(bv.begin(), bv.end()), 1.0f);
}

double normalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Normal: 20000 draws of N(1, 2^2) in 20 equally likely bins; mean and deviation within 5 sigma.
TEST(Random, NormalChiSquare) {
  for (DType d : {DType::f32, DType::f64, DType::bf16}) {
    SCOPED_TRACE(std::string(radix::name(d)));
    auto fn = [d](const Rng& r) { return r.normal(Shape({100, 200}, d), 1, 2).values; };
    const std::vector<double> v = radix::testing::compileAndCall(cpu(), fn, Rng::init(cpu(), 11)).toVector<double>();
    const double n = static_cast<double>(v.size());
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    var /= n;
    EXPECT_NEAR(mean, 1, 5 * 2 / std::sqrt(n));
    EXPECT_NEAR(std::sqrt(var), 2, 0.05);
    if (d != DType::bf16) {  // bf16's 8 bits put many values on bin edges
      const double chi = chiSquare(histogram(v, 20, [](double x) { return normalCdf((x - 1) / 2); }), std::vector<double>(20, 0.05));
      EXPECT_LT(chi, kChi19);
    }
  }
}

// Gumbel: mean Euler's gamma, variance pi^2/6.
TEST(Random, GumbelMoments) {
  auto fn = [](const Rng& r) { return r.gumbel(Shape({20000}, DType::f32)).values; };
  const std::vector<double> v = radix::testing::compileAndCall(cpu(), fn, Rng::init(cpu(), 5)).toVector<double>();
  const double n = static_cast<double>(v.size()), mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 0.5772, 5 * 1.2825 / std::sqrt(n));
  EXPECT_NEAR(var / n, std::numbers::pi * std::numbers::pi / 6, 0.1);
}

/// Rows of log(p) for every row: {rows, p.size()}.
Tensor logitRows(int64_t rows, const std::vector<double>& p, DType d = DType::f32, bool tagged = false) {
  std::vector<double> v;
  for (int64_t r = 0; r < rows; ++r)
    for (double x : p) v.push_back(std::log(x));
  Shape s({rows, static_cast<int64_t>(p.size())}, d);
  return Tensor::fromValues(cpu(), tagged ? s.withTags({"n", "voc"}) : s, v);
}

std::vector<int64_t> counts(const Tensor& tokens, size_t classes) {
  std::vector<int64_t> out(classes, 0);
  for (int64_t t : tokens.toVector<int64_t>()) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, static_cast<int64_t>(classes));
    if (t >= 0 && t < static_cast<int64_t>(classes)) out[t]++;
  }
  return out;
}

// Categorical: 20000 draws from softmax(log p) along a tagged axis, which is removed.
TEST(Random, CategoricalChiSquare) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  auto fn = [](const Rng& r, const Tensor& logits) { return r.categorical(logits, "voc"); };
  RngDraw d = radix::testing::compileAndCall(cpu(), fn, Rng::init(cpu(), 9), logitRows(20000, p, DType::f32, true));
  EXPECT_EQ(d.values.shape(), Shape({20000}, DType::i32).withTags({"n"}));
  EXPECT_LT(chiSquare(counts(d.values, 4), p), kChi3);
}

TEST(Random, Errors) {
  const Rng rng;
  const Tensor f(Shape({3, 4}, DType::f32)), i(Shape({3, 4}, DType::i32));
  auto expectError = [](auto fn, const auto& arg, const std::string& prefix, const std::string& part) {
    try {
      radix::compile(cpu(), fn, arg);
      ADD_FAILURE() << "no radix::Error; expected " << prefix << " ... " << part;
    } catch (const radix::Error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.starts_with(prefix)) << what;
      EXPECT_NE(what.find(part), std::string::npos) << what << "\nexpected to contain: " << part;
    }
  };
  expectError([](const Rng& r) { return r.uniform(Shape({3}, DType::i32)).values; }, rng, "[uniform]", "needs a float dtype, got {3}:i32");
  expectError([](const Rng& r) { return r.uniform(Shape({3}, DType::f32), 1, 1).values; }, rng, "[uniform]", "needs finite lo < hi");
  expectError([](const Rng& r) { return r.uniform(Shape({3}, DType::f16), 1.0001, 1.0002).values; }, rng, "[uniform]",
              "no f16 value in [1.000100, 1.000200)");
  expectError([](const Rng& r) { return r.uniform(Shape({3}, DType::bf16), -3e38, 3e38).values; }, rng, "[uniform]",
              "hi - lo overflows f32 for {3}:bf16");
  expectError([](const Rng& r) { return r.normal(Shape({3}, DType::f32), 0, -1).values; }, rng, "[normal]", "stddev >= 0");
  expectError([](const Rng& r) { return r.bitGenerator(Shape({3}, DType::f32)).values; }, rng, "[bitGenerator]",
              "needs an integer dtype, got {3}:f32");
  expectError([](const Rng& r) { return r.gumbel(Shape({3}, DType::u8)).values; }, rng, "[gumbel]", "needs a float dtype");
  expectError([](const Tensor& t) { return Rng{t}.uniform(Shape({3}, DType::f32)).values; }, f, "[uniform]",
              "the generator's state must be {6}:u32, got {3,4}:f32");
  expectError([](const Tensor& t) { return Rng().categorical(t, 1).values; }, i, "[categorical]", "needs float logits, got {3,4}:i32");
  expectError([](const Tensor& t) { return Rng().categorical(t, 2).values; }, f, "[categorical]", "axis 2 out of range for {3,4}:f32");
}

// ---- sampleTokens ----

/// First index of the largest value of each row.
std::vector<int64_t> argmaxRows(const std::vector<double>& v, int64_t voc) {
  std::vector<int64_t> out;
  for (size_t r = 0; r * voc < v.size(); ++r) out.push_back(std::max_element(v.begin() + r * voc, v.begin() + (r + 1) * voc) - (v.begin() + r * voc));
  return out;
}

radix::SampledTokens sample(const Tensor& logits, const Rng& rng, radix::SamplingOptions o) {
  auto fn = [o](const Tensor& l, const Rng& r) { return radix::sampleTokens(l, o, r); };
  return radix::testing::compileAndCall(cpu(), fn, logits, rng);
}

// Greedy is argmax (first index on ties) and leaves the generator as it was; topK = 1 and a tiny
// topP are greedy at any temperature.
TEST(Random, SampleTokensGreedy) {
  const int64_t rows = 5, voc = 1000;
  std::vector<double> v(rows * voc);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::floor(std::sin(i * 12.9898) * 20);  // ties at the top
  for (DType d : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(radix::name(d)));
    const Tensor logits = Tensor::fromValues(cpu(), Shape({rows, voc}, d).withTags({"b", "voc"}), v);
    const std::vector<int64_t> expected = argmaxRows(logits.toVector<double>(), voc);
    const Rng rng = Rng::init(cpu(), 17);
    radix::SampledTokens greedy = sample(logits, rng, {.temperature = 0});
    EXPECT_EQ(greedy.tokens.shape(), Shape({rows}, DType::i32).withTags({"b"}));
    EXPECT_EQ(greedy.tokens.toVector<int64_t>(), expected);
    EXPECT_EQ(words(greedy.rng.state), words(rng.state));
    for (double temperature : {0.5, 1.0, 5.0}) {
      EXPECT_EQ(sample(logits, rng, {.temperature = temperature, .topK = 1}).tokens.toVector<int64_t>(), expected);
      EXPECT_EQ(sample(logits, rng, {.temperature = temperature, .topP = 1e-6}).tokens.toVector<int64_t>(), expected);
    }
  }
}

// Greedy over a long vocabulary runs in chunks of 256 (two reductions): the first index of the
// maximum wherever it falls, the first NaN over any number, index 0 for a row of -inf, and a
// maximum in the last, partial chunk.
TEST(Random, SampleTokensGreedyLongVocabulary) {
  const int64_t voc = 50257;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v(size_t(5 * voc));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 0.37) * 10;
  v[0 * voc + 777] = 50, v[0 * voc + 40000] = 50;      // a tie across chunks: the first
  v[1 * voc + 300] = nan, v[1 * voc + 100] = 60, v[1 * voc + 9000] = nan;  // the first NaN
  std::fill(v.begin() + 2 * voc, v.begin() + 3 * voc, -inf);  // nothing finite: index 0
  v[3 * voc + voc - 1] = 40;                            // the last token, alone in its chunk's tail
  v[4 * voc + 256] = 30, v[4 * voc + 255] = 30;         // across a chunk boundary
  const Tensor logits = Tensor::fromValues(cpu(), Shape({5, voc}, DType::f32).withTags({"b", "voc"}), v);
  const radix::SampledTokens greedy = sample(logits, Rng::init(cpu(), 3), {.temperature = 0});
  EXPECT_EQ(greedy.tokens.toVector<int64_t>(), (std::vector<int64_t>{777, 300, 0, voc - 1, 255}));
}

// At temperature 1 with all tokens, 20000 rows of log p sample p.
TEST(Random, SampleTokensChiSquare) {
  const std::vector<double> p = {0.05, 0.1, 0.15, 0.3, 0.4};
  radix::SampledTokens s = sample(logitRows(20000, p), Rng::init(cpu(), 21), {});
  EXPECT_EQ(s.tokens.shape(), Shape({20000}, DType::i32));
  EXPECT_LT(chiSquare(counts(s.tokens, 5), p), kChi4);
}

// topK, topP and temperature: only the kept tokens appear, with renormalized probabilities.
TEST(Random, SampleTokensFilters) {
  const std::vector<double> p = {0.15, 0.05, 0.4, 0.1, 0.3};
  const Tensor logits = logitRows(20000, p);
  {
    // Temperature 2 then the top 3 (0.4, 0.3, 0.15): probabilities as sqrt(p), renormalized.
    const std::vector<int64_t> c = counts(sample(logits, Rng::init(cpu(), 31), {.temperature = 2, .topK = 3}).tokens, 5);
    EXPECT_EQ(c[1] + c[3], 0);
    const double z = std::sqrt(0.4) + std::sqrt(0.3) + std::sqrt(0.15);
    EXPECT_LT(chiSquare({c[0], c[2], c[4]}, {std::sqrt(0.15) / z, std::sqrt(0.4) / z, std::sqrt(0.3) / z}), kChi2);
  }
  {
    // topP 0.6: 0.4 is not enough, 0.4 + 0.3 reaches it; 4/7 and 3/7.
    const std::vector<int64_t> c = counts(sample(logits, Rng::init(cpu(), 32), {.topP = 0.6}).tokens, 5);
    EXPECT_EQ(c[0] + c[1] + c[3], 0);
    EXPECT_LT(chiSquare({c[2], c[4]}, {4.0 / 7, 3.0 / 7}), kChi1);
  }
  {
    // topK 4 then topP 0.8 of the renormalized four (0.4, 0.3, 0.15, 0.1)/0.95: 0.42 + 0.32 < 0.8,
    // so the third (0.15) stays too.
    const std::vector<int64_t> c = counts(sample(logits, Rng::init(cpu(), 33), {.topK = 4, .topP = 0.8}).tokens, 5);
    EXPECT_EQ(c[1] + c[3], 0);
    EXPECT_LT(chiSquare({c[0], c[2], c[4]}, {0.15 / 0.85, 0.4 / 0.85, 0.3 / 0.85}), kChi2);
  }
}

// ZML's sampleTokens test: infinite logits win, the first of equal ones (also through topP, where
// the softmax of infinities is NaN and only the most likely token stays).
TEST(Random, SampleTokensInfiniteLogits) {
  const double inf = INFINITY;
  const std::vector<std::pair<std::vector<double>, int64_t>> cases = {
      {{inf, 3, 2, 1}, 0}, {{-inf, 3, -inf, -inf}, 1}, {{3, 2, inf, inf}, 2}};
  for (const radix::SamplingOptions& o : {radix::SamplingOptions{.temperature = 2, .topK = 4}, radix::SamplingOptions{.topP = 0.9}}) {
    Rng rng = Rng::init(cpu(), 0xdeadbeef);
    for (const auto& [logits, expected] : cases) {
      radix::SampledTokens s = sample(Tensor::fromValues(cpu(), Shape({4}, DType::f32).withTags({"voc"}), logits), rng, o);
      EXPECT_EQ(s.tokens.toVector<int64_t>(), std::vector<int64_t>{expected});
      rng = s.rng;
    }
  }
}

// The vocabulary axis is the one tagged "voc", wherever it is, and batch axes stay.
TEST(Random, SampleTokensBatchAxes) {
  std::vector<double> v(7 * 2 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(i * 1.7);
  const Tensor logits = Tensor::fromValues(cpu(), Shape({7, 2, 3}, DType::f16).withTags({"voc", "b", "s"}), v);
  radix::SampledTokens s = sample(logits, Rng::init(cpu(), 1), {.temperature = 0});
  EXPECT_EQ(s.tokens.shape(), Shape({2, 3}, DType::i32).withTags({"b", "s"}));
  const std::vector<double> x = logits.toVector<double>();
  std::vector<int64_t> expected;
  for (int64_t bs = 0; bs < 6; ++bs) {
    int64_t best = 0;
    for (int64_t t = 1; t < 7; ++t)
      if (x[t * 6 + bs] > x[best * 6 + bs]) best = t;
    expected.push_back(best);
  }
  EXPECT_EQ(s.tokens.toVector<int64_t>(), expected);
  // Sampling keeps the shape too.
  EXPECT_EQ(sample(logits, Rng::init(cpu(), 1), {.topK = 3}).tokens.shape(), Shape({2, 3}, DType::i32).withTags({"b", "s"}));
}

// Empty draws and empty batches: the state does not move, shapes are right.
TEST(Random, EmptyShapes) {
  auto fn = [](const Rng& r, const Tensor& logits) {
    RngDraw u = r.uniform(Shape({0, 3}, DType::f32));
    radix::SampledTokens s = radix::sampleTokens(logits, {.topK = 2, .topP = 0.5}, u.rng);
    return std::tuple{u, s};
  };
  const Rng rng = Rng::init(cpu(), 4);
  auto [u, s] = radix::testing::compileAndCall(cpu(), fn, rng, Tensor::fromValues(cpu(), Shape({0, 5}, DType::f32), std::vector<float>{}));
  EXPECT_EQ(u.values.shape(), Shape({0, 3}, DType::f32));
  EXPECT_EQ(words(u.rng.state), words(rng.state));
  EXPECT_EQ(s.tokens.shape(), Shape({0}, DType::i32));
}

TEST(Random, SampleTokensErrors) {
  const Tensor f(Shape({3, 5}, DType::f32)), i(Shape({3, 5}, DType::i32));
  auto expectError = [](const Tensor& logits, radix::SamplingOptions o, const std::string& part) {
    try {
      sample(logits, Rng{}, o);
      ADD_FAILURE() << "no radix::Error; expected [sampleTokens] ... " << part;
    } catch (const radix::Error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.starts_with("[sampleTokens]")) << what;
      EXPECT_NE(what.find(part), std::string::npos) << what << "\nexpected to contain: " << part;
    }
  };
  expectError(f, {.temperature = -1}, "temperature must be finite and >= 0");
  expectError(f, {.topK = -2}, "topK must be >= 0");
  expectError(f, {.topP = 0}, "topP must be in (0, 1]");
  expectError(f, {.topP = 1.5}, "topP must be in (0, 1]");
  expectError(i, {}, "needs float logits with a vocabulary axis, got {3,5}:i32");
  expectError(Tensor(Shape({3, 0}, DType::f32)), {}, "the vocabulary axis of {3,0}:f32 is empty");
}

}  // namespace

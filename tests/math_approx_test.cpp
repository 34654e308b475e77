// The polynomial f32 math of the fast CPU path (src/compiler/fast_ewise.cpp, radix-math-approx)
// against double-precision libm: the ulp bounds stated in docs/compiler-notes.md ("Fast CPU:
// elementwise, reductions and math"), over the whole f32 range (a strided sweep of every bit
// pattern, dense sweeps where the polynomials switch or saturate, and the edges: +-0, +-inf, NaN,
// subnormals, overflow and underflow), on the host and on forced x86-64-v3 and x86-64 targets.
// f16 and bf16 (computed in f32) are checked exhaustively: within 1 ulp of their own dtype.
#include <gtest/gtest.h>
#include <radix/radix.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

struct Function {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> reference;
  /// Max error in f32 ulps (docs/compiler-notes.md); results below FLT_MIN may flush to 0.
  int64_t ulpBound;
};

const std::vector<Function>& functions() {
  static const std::vector<Function> all = {
      {"exp", [](const Tensor& x) { return x.exp(); }, [](double v) { return std::exp(v); }, 5},
      {"log", [](const Tensor& x) { return x.log(); }, [](double v) { return std::log(v); }, 2},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, [](double v) { return std::tanh(v); }, 5},
      {"erf", [](const Tensor& x) { return x.erf(); }, [](double v) { return std::erf(v); }, 5},
      {"expm1", [](const Tensor& x) { return x.expm1(); }, [](double v) { return std::expm1(v); }, 5},
      {"log1p", [](const Tensor& x) { return x.log1p(); }, [](double v) { return std::log1p(v); }, 2},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, [](double v) { return 1 / (1 + std::exp(-v)); }, 2},
  };
  return all;
}

radix::Platform platformFor(const std::string& cpu) {
  radix::CompileOptions options;
  options.threads = 1;
  options.cache = false;
  options.targetCpu = cpu;
  return radix::Platform::cpu().withOptions(options);
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Position of f on the line of floats: adjacent floats differ by 1 (+0 and -0 coincide).
int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : i;
}

std::vector<float> f32Inputs() {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (1ull << 32); b += 2039) xs.push_back(fromBits(static_cast<uint32_t>(b)));  // every 2039th pattern
  auto sweep = [&](double lo, double hi, int n) {
    for (int i = 0; i <= n; ++i) xs.push_back(static_cast<float>(lo + (hi - lo) * i / n));
  };
  sweep(-10, 10, 200000);     // the polynomials' own ranges and their switch points
  sweep(-1e-3, 1e-3, 20000);  // near 0 (expm1, log1p, tanh, erf keep relative accuracy)
  sweep(85, 89.5, 20000);     // exp overflow
  sweep(-104, -86, 20000);    // exp underflow into subnormals
  sweep(0, 2, 20000);         // log near 1
  const float inf = std::numeric_limits<float>::infinity();
  for (float e : {0.f, -0.f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(), fromBits(0x007fffff),
                  fromBits(0x807fffff), std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  88.72283f, 88.72284f, 88.7229f, -87.33654f, -87.3365f, -103.97f, -103.98f, -1.f, 1.f, 1e-30f,
                  -1e-30f, 9.f, -9.f, 1e30f, -1e30f})
    xs.push_back(e);
  return xs;
}

struct Target {
  const char* name;
  const char* cpu;
};
const Target kTargets[] = {{"host", ""}, {"x86_64_v3", "x86-64-v3"}, {"x86_64", "x86-64"}};

class MathApprox : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(MathApprox, WithinUlpBoundOverTheF32Range) {
  const Function& f = functions()[std::get<0>(GetParam())];
  const Target& target = kTargets[std::get<1>(GetParam())];
  static const std::vector<float> xs = f32Inputs();
  const radix::Platform cpu = platformFor(target.cpu);
  const Tensor x = Tensor::fromValues(cpu, Shape({static_cast<int64_t>(xs.size())}, DType::f32), xs);
  const std::vector<float> y = radix::compile(cpu, f.op, x)(x).toVector<float>();
  ASSERT_EQ(y.size(), xs.size());
  int64_t worst = 0;
  float worstX = 0;
  int failures = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double exact = f.reference(xs[i]);
    const float want = static_cast<float>(exact);  // inf when it rounds past FLT_MAX: 1 ulp above it
    const float got = y[i];
    if (std::isnan(want) || std::isnan(got) || std::isinf(exact)) {
      const bool same = std::isnan(want) ? std::isnan(got) : got == want;
      if (!same && failures++ < 5) ADD_FAILURE() << f.name << "(" << xs[i] << ") = " << got << ", want " << want;
      continue;
    }
    if (std::fabs(want) < std::numeric_limits<float>::min()) {  // subnormal results may flush to 0
      if (std::fabs(got - want) > std::numeric_limits<float>::min() && failures++ < 5)
        ADD_FAILURE() << f.name << "(" << xs[i] << ") = " << got << ", want " << want << " (subnormal)";
      continue;
    }
    const int64_t d = std::llabs(ordered(got) - ordered(want));
    if (d > worst) worst = d, worstX = xs[i];
  }
  EXPECT_LE(worst, f.ulpBound) << f.name << " on " << target.name << ": worst at x = " << worstX;
}

INSTANTIATE_TEST_SUITE_P(Functions, MathApprox,
                         ::testing::Combine(::testing::Range(0, 7), ::testing::Range(0, 3)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
                           return std::string(functions()[std::get<0>(info.param)].name) + "_" +
                                  kTargets[std::get<1>(info.param)].name;
                         });

/// Every f16 / bf16 value through exp, log, tanh, erf (computed in f32): within 1 ulp
/// of the correctly rounded result in the dtype itself.
template <class H>
void checkHalf(DType dtype, const Function& f) {
  const radix::Platform cpu = platformFor("");
  std::vector<uint16_t> bits(65536);
  for (uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
  const Tensor x = Tensor::fromBytes(cpu, Shape({65536}, dtype), bits.data(), bits.size() * 2);
  const std::vector<uint8_t> out = radix::compile(cpu, f.op, x)(x).toBytes();
  ASSERT_EQ(out.size(), bits.size() * 2);
  auto toFloat = [](uint16_t b) {
    H h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
  };
  auto orderedHalf = [](uint16_t b) { return (b & 0x8000) ? -static_cast<int32_t>(b & 0x7fff) : static_cast<int32_t>(b); };
  int failures = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    uint16_t gotBits;
    std::memcpy(&gotBits, out.data() + 2 * i, 2);
    const float xf = toFloat(static_cast<uint16_t>(i));
    const H want = static_cast<H>(static_cast<float>(f.reference(xf)));
    uint16_t wantBits;
    std::memcpy(&wantBits, &want, 2);
    const float got = toFloat(gotBits), w = static_cast<float>(want);
    bool ok;
    if (std::isnan(w) || std::isnan(got)) ok = std::isnan(w) == std::isnan(got);
    else if (std::isinf(w)) ok = got == w;
    else ok = std::abs(orderedHalf(gotBits) - orderedHalf(wantBits)) <= 1 ||
              (std::fabs(w) < std::numeric_limits<float>::min() && std::fabs(got - w) <= std::numeric_limits<float>::min());
    if (!ok && failures++ < 5) ADD_FAILURE() << f.name << "(" << xf << ") = " << got << ", want " << w;
  }
}

TEST(MathApproxHalf, Bf16AndF16WithinOneUlpOfTheirDtype) {
  for (const Function& f : functions()) {
    // Composites round each step in the dtype itself (sigmoid's 1 + e^-x, ...): f32 above.
    if (std::string(f.name) == "expm1" || std::string(f.name) == "log1p" || std::string(f.name) == "sigmoid") continue;
    SCOPED_TRACE(f.name);
    checkHalf<__bf16>(DType::bf16, f);
    checkHalf<_Float16>(DType::f16, f);
  }
}

/// The vector body and the scalar tail of a loop compute the same polynomial: element i of a
/// 37-element tensor (mostly tail) equals element i of every row of a 16 x 37 one.
TEST(MathApproxHalf, TailAndBodyAgree) {
  const radix::Platform cpu = platformFor("");
  std::vector<float> v(37);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -3.f + 0.17f * static_cast<float>(i);
  const Tensor x = Tensor::fromValues(cpu, Shape({37}, DType::f32), v);
  std::vector<float> tiled(16 * 37);
  for (size_t r = 0; r < 16; ++r)
    for (size_t i = 0; i < 37; ++i) tiled[r * 37 + i] = v[i];
  const Tensor xt = Tensor::fromValues(cpu, Shape({16 * 37}, DType::f32), tiled);
  for (const Function& f : functions()) {
    const std::vector<float> a = radix::compile(cpu, f.op, x)(x).toVector<float>();
    const std::vector<float> b = radix::compile(cpu, f.op, xt)(xt).toVector<float>();
    for (size_t r = 0; r < 16; ++r)
      for (size_t i = 0; i < 37; ++i)
        if (!(std::isnan(a[i]) && std::isnan(b[r * 37 + i]))) ASSERT_EQ(a[i], b[r * 37 + i]) << f.name << " at " << i;
  }
}

}  // namespace

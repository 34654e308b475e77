// Elementwise ops, constants and conversions against naive references.
#include "ops_testing.h"

#include <bit>
#include <limits>

namespace opstest {
namespace {

/// The expected values, whatever the inputs.
Ref fixed(Vals v) {
  return [=](const std::vector<Host>&) { return v; };
}

double geluTanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

std::vector<Case> unaryCases() {
  const NamedOp1 unary[] = {
      {"neg", [](const Tensor& x) { return x.neg(); }, [](double x) { return -x; }, -3, 3},
      {"abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -3, 3},
      {"exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -3, 3},
      {"log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.1, 10},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -3, 3},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0.1, 10},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 10},
      {"sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -4, 4},
      {"cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -4, 4},
      {"relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); }, -3, 3},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -6, 6},
      {"addConstant", [](const Tensor& x) { return x.addConstant(1.5); }, [](double x) { return x + 1.5; }, -3, 3},
      {"mulConstant", [](const Tensor& x) { return x.mulConstant(-3); }, [](double x) { return x * -3; }, -3, 3},
      {"subConstant", [](const Tensor& x) { return x.subConstant(1.5); }, [](double x) { return x - 1.5; }, -3, 3},
      {"divConstant", [](const Tensor& x) { return x.divConstant(4); }, [](double x) { return x / 4; }, -3, 3},
      {"powConstant", [](const Tensor& x) { return x.powConstant(1.5); }, [](double x) { return std::pow(x, 1.5); }, 0.1, 4},
      {"fmod", [](const Tensor& x) { return x.fmod(0.75); }, [](double x) { return std::fmod(x, 0.75); }, -3, 3},
      {"clamp", [](const Tensor& x) { return x.clamp(-1, 0.5); }, [](double x) { return std::min(std::max(x, -1.0), 0.5); }, -3, 3},
      {"sign", [](const Tensor& x) { return x.sign(); }, [](double x) { return double((x > 0) - (x < 0)); }, -3, 3},
      {"expm1", [](const Tensor& x) { return x.expm1(); }, [](double x) { return std::expm1(x); }, -3, 3},
      {"log1p", [](const Tensor& x) { return x.log1p(); }, [](double x) { return std::log1p(x); }, -0.9, 5},
      {"floor", [](const Tensor& x) { return x.floor(); }, [](double x) { return std::floor(x); }, -5, 5},
      {"ceil", [](const Tensor& x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -5, 5},
      {"round", [](const Tensor& x) { return x.round(); }, [](double x) { return std::round(x); }, -5, 5},
      {"roundNearestEven", [](const Tensor& x) { return x.roundNearestEven(); }, [](double x) { return std::nearbyint(x); }, -5, 5},
      {"erf", [](const Tensor& x) { return x.erf(); }, [](double x) { return std::erf(x); }, -3, 3},
      {"gelu", [](const Tensor& x) { return x.gelu(); }, geluTanh, -4, 4},
      {"geluErf", [](const Tensor& x) { return x.geluErf(); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4},
      {"quickGelu", [](const Tensor& x) { return x.quickGelu(); }, [](double x) { return x / (1 + std::exp(-1.702 * x)); }, -4, 4},
      {"silu", [](const Tensor& x) { return x.silu(); }, [](double x) { return x / (1 + std::exp(-x)); }, -6, 6},
      {"leakyRelu", [](const Tensor& x) { return x.leakyRelu(0.125); }, [](double x) { return x > 0 ? x : 0.125 * x; }, -3, 3},
      {"elu", [](const Tensor& x) { return x.elu(0.5); }, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, -3, 3},
  };
  const std::set<std::string> noScalar = {"clamp", "sign", "log1p", "floor", "ceil", "round", "roundNearestEven", "geluErf", "quickGelu", "silu", "leakyRelu", "elu"};
  const Shape shapes[] = {sh({129}), sh({}), sh({17, 1, 3}, {"a", "b", "c"})};
  std::vector<Case> cases;
  for (const NamedOp1& u : unary)
    for (const Shape& s : shapes) {
      // Scalars not for every new op: each case costs compile time, and these lower like exp.
      if (s.rank() == 0 && noScalar.contains(u.name)) continue;
      auto op = u.op;
      cases.push_back({std::string(u.name) + "_" + dimsName(s), {s}, [op](const Ts& x) { return op(x[0]); },
                       map1(u.ref), s, kFloats, u.lo, u.hi});
    }
  return cases;
}

std::vector<Case> binaryCases() {
  const NamedOp2 binary[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); }, [](double a, double b) { return a + b; }, -3, 3},
      {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b); }, [](double a, double b) { return a - b; }, -3, 3},
      {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); }, [](double a, double b) { return a * b; }, -3, 3},
      // Positive, so that no denominator is near 0.
      {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); }, [](double a, double b) { return a / b; }, 0.5, 4},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }, [](double a, double b) { return std::max(a, b); }, -3, 3},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }, [](double a, double b) { return std::min(a, b); }, -3, 3},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); }, [](double a, double b) { return std::pow(a, b); }, 0.25, 3},
      // Positive, so that no divisor is near 0; signs are in remainderSigns.
      {"remainder", [](const Tensor& a, const Tensor& b) { return a.remainder(b); }, [](double a, double b) { return std::fmod(a, b); }, 0.5, 4},
      {"clamp", [](const Tensor& a, const Tensor& b) { return a.clamp(b, b.addConstant(1)); },
       [](double a, double b) { return std::min(std::max(a, b), b + 1); }, -3, 3},
  };
  // (lhs, rhs, result): equal shapes, a scalar side (either one), size-1 axes on both sides, and
  // size-1 axes under equal tag lists.
  const Shape shapes[][3] = {
      {sh({3, 17}), sh({3, 17}), sh({3, 17})},
      {sh({17, 1, 3}), sh({}), sh({17, 1, 3})},
      {sh({}), sh({129}), sh({129})},
      {sh({17, 1, 3}), sh({1, 4, 3}), sh({17, 4, 3})},
      {sh({1, 17}, {"b", "d"}), sh({3, 17}, {"b", "d"}), sh({3, 17}, {"b", "d"})},
  };
  std::vector<Case> cases;
  for (const NamedOp2& b : binary)
    for (const auto& s : shapes) {
      auto op = b.op;
      std::string name = std::string(b.name) + "_" + dimsName(s[0]) + "_" + dimsName(s[1]) + (s[0].isTagged() ? "_tagged" : "");
      cases.push_back({name, {s[0], s[1]}, [op](const Ts& x) { return op(x[0], x[1]); }, map2(b.ref), s[2], kFloats, b.lo, b.hi});
    }
  return cases;
}

std::vector<Case> integerCases() {
  const std::vector<DType> i32 = {DType::i32}, u8 = {DType::u8};
  auto trunc = [](double a, double b) { return std::trunc(a / b); };
  return {
      {"add", {sh({3, 17}), sh({3, 17})}, [](const Ts& x) { return x[0].add(x[1]); }, map2([](double a, double b) { return a + b; }), sh({3, 17}), i32, -1000, 1000},
      {"sub_scalar", {sh({129}), sh({})}, [](const Ts& x) { return x[0].sub(x[1]); }, map2([](double a, double b) { return a - b; }), sh({129}), i32, -1000, 1000},
      {"mul", {sh({17, 1, 3}), sh({1, 4, 3})}, [](const Ts& x) { return x[0].mul(x[1]); }, map2([](double a, double b) { return a * b; }), sh({17, 4, 3}), i32, -100, 100},
      {"mul_untagged_ones_onto_tagged", {sh({1, 1}), sh({5, 3}, {"b", "d"})}, [](const Ts& x) { return x[0].mul(x[1]); }, map2([](double a, double b) { return a * b; }), sh({5, 3}, {"b", "d"}), i32, -100, 100},
      // Integer division truncates toward zero, also for negative operands.
      {"div", {sh({8}), sh({8})}, [](const Ts& x) { return x[0].div(x[1]); }, map2(trunc), sh({8}), i32, 0, 0,
       {{-7, 7, -8, 9, 100, -100, 0, 5}, {2, -2, 3, -4, 7, 7, 3, -1}}},
      {"maximum", {sh({3, 17}), sh({3, 17})}, [](const Ts& x) { return x[0].maximum(x[1]); }, map2([](double a, double b) { return std::max(a, b); }), sh({3, 17}), i32, -1000, 1000},
      {"minimum", {sh({3, 17}), sh({})}, [](const Ts& x) { return x[0].minimum(x[1]); }, map2([](double a, double b) { return std::min(a, b); }), sh({3, 17}), i32, -1000, 1000},
      // Values above 127 tell an unsigned comparison from a signed one.
      {"maximum", {sh({6}), sh({6})}, [](const Ts& x) { return x[0].maximum(x[1]); }, map2([](double a, double b) { return std::max(a, b); }), sh({6}), u8, 0, 0,
       {{200, 0, 127, 128, 255, 3}, {100, 1, 128, 127, 0, 250}}},
      {"div", {sh({4}), sh({4})}, [](const Ts& x) { return x[0].div(x[1]); }, map2(trunc), sh({4}), u8, 0, 0, {{200, 255, 7, 128}, {3, 2, 7, 130}}},
      {"neg", {sh({129})}, [](const Ts& x) { return x[0].neg(); }, map1([](double x) { return -x; }), sh({129}), i32, -1000, 1000},
      {"abs", {sh({129})}, [](const Ts& x) { return x[0].abs(); }, map1([](double x) { return std::fabs(x); }), sh({129}), i32, -1000, 1000},
      {"relu", {sh({129})}, [](const Ts& x) { return x[0].relu(); }, map1([](double x) { return std::max(x, 0.0); }), sh({129}), i32, -1000, 1000},
      {"addConstant", {sh({3, 17})}, [](const Ts& x) { return x[0].addConstant(7); }, map1([](double x) { return x + 7; }), sh({3, 17}), i32, -1000, 1000},
      {"mulConstant", {sh({3, 17})}, [](const Ts& x) { return x[0].mulConstant(-3); }, map1([](double x) { return x * -3; }), sh({3, 17}), i32, -1000, 1000},
      {"dotGeneral_matmul", {sh({3, 17}), sh({17, 5})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{1, 0}}, {}); }, dotRef({{1, 0}}, {}), sh({3, 5}), i32, -10, 10},
      {"sum", {sh({3, 17})}, [](const Ts& x) { return x[0].sum(1); }, reduceRef(1, false), sh({3, 1}), i32, -1000, 1000},
      // All negative: a max that starts from 0 would return 0.
      {"max", {sh({17, 3})}, [](const Ts& x) { return x[0].max(0); }, reduceRef(0, true), sh({1, 3}), i32, -1000, -1},
      {"max", {sh({2, 3})}, [](const Ts& x) { return x[0].max(1); }, reduceRef(1, true), sh({2, 1}), u8, 0, 0, {{1, 200, 128, 127, 0, 3}}},
  };
}


std::vector<Case> constantCases() {
  const auto F = kFloats;
  return {
      {"scalar_mul", {sh({3, 17})}, [](const Ts& x) { return x[0].mul(Tensor::scalar(-0.5, x[0].dtype())); }, map1([](double x) { return x * -0.5; }), sh({3, 17}), F},
      {"constant_add", {sh({17, 1, 3})}, [](const Ts& x) { return x[0].add(Tensor::constant(x[0].shape(), 2.5)); }, map1([](double x) { return x + 2.5; }), sh({17, 1, 3}), F},
      {"constant_f16", {}, [](const Ts&) { return Tensor::constant(sh({3, 17}, DType::f16), 1.5); }, filledWith(51, 1.5), sh({3, 17}, DType::f16), {}},
      {"constant_bf16_tagged", {}, [](const Ts&) { return Tensor::constant(sh({2, 3}, {"b", "d"}, DType::bf16), -2.25); }, filledWith(6, -2.25), sh({2, 3}, {"b", "d"}, DType::bf16), {}},
      {"constant_i32", {}, [](const Ts&) { return Tensor::constant(sh({129}, DType::i32), -7); }, filledWith(129, -7), sh({129}, DType::i32), {}},
      {"scalar_bf16", {}, [](const Ts&) { return Tensor::scalar(2.5, DType::bf16); }, filledWith(1, 2.5), sh({}, DType::bf16), {}},
      {"scalar_f32", {}, [](const Ts&) { return Tensor::scalar(-0.75, DType::f32); }, filledWith(1, -0.75), sh({}, DType::f32), {}},
  };
}

std::vector<Case> convertCases() {
  auto convert = [](DType to) -> Op { return [=](const Ts& x) { return x[0].convert(to); }; };
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  return {
      // Float conversions round to nearest even exactly as the host does: tolerance 0.
      {"convert_f32_f16", {sh({129}, f32)}, convert(f16), roundedTo(f16), sh({129}, f16), {}, -100, 100, {}, 0},
      {"convert_f32_bf16", {sh({129}, f32)}, convert(bf16), roundedTo(bf16), sh({129}, bf16), {}, -100, 100, {}, 0},
      {"convert_f16_f32", {sh({3, 17}, f16)}, convert(f32), sameValues(), sh({3, 17}, f32), {}, -100, 100, {}, 0},
      {"convert_bf16_f32", {sh({3, 17}, bf16)}, convert(f32), sameValues(), sh({3, 17}, f32), {}, -100, 100, {}, 0},
      {"convert_f16_bf16", {sh({129}, f16)}, convert(bf16), roundedTo(bf16), sh({129}, bf16), {}, -100, 100, {}, 0},
      {"convert_bf16_f16", {sh({129}, bf16)}, convert(f16), roundedTo(f16), sh({129}, f16), {}, -100, 100, {}, 0},
      {"convert_f64_bf16", {sh({129}, DType::f64)}, convert(bf16), roundedTo(bf16), sh({129}, bf16), {}, -100, 100, {}, 0},
      {"convert_f64_f16", {sh({129}, DType::f64)}, convert(f16), roundedTo(f16), sh({129}, f16), {}, -100, 100, {}, 0},
      {"convert_bf16_f64", {sh({17}, bf16)}, convert(DType::f64), sameValues(), sh({17}, DType::f64), {}, -100, 100, {}, 0},
      {"convert_u32_f32", {sh({4}, DType::u32)}, convert(f32), sameValues(), sh({4}, f32), {}, 0, 0, {{0, 1, 2147483648.0, 4294967040.0}}},
      {"convert_i8_u32", {sh({4}, DType::i8)}, convert(DType::u32), fixed({0, 4294967295.0, 127, 4294967168.0}), sh({4}, DType::u32), {}, 0, 0, {{0, -1, 127, -128}}},
      {"convert_scalar_f32_f16", {sh({}, f32)}, convert(f16), roundedTo(f16), sh({}, f16), {}, -100, 100, {}, 0},
      // Float to integer truncates toward zero.
      {"convert_f32_i32", {sh({129}, f32)}, convert(DType::i32), map1([](double x) { return std::trunc(x); }), sh({129}, DType::i32), {}, -50, 50},
      {"convert_i32_f32", {sh({3, 17}, DType::i32)}, convert(f32), sameValues(), sh({3, 17}, f32), {}, -1000, 1000},
      {"convert_i32_i64", {sh({5}, DType::i32)}, convert(DType::i64), sameValues(), sh({5}, DType::i64), {}, 0, 0,
       {{-2147483648.0, -1, 0, 1, 2147483647.0}}},
      {"convert_f32_bool", {sh({6}, f32)}, convert(DType::bool_), map1([](double x) { return x != 0 ? 1.0 : 0.0; }), sh({6}, DType::bool_), {}, 0, 0,
       {{0, -0.5, 2, -0.0, 1e-30, 3}}},
      {"convert_bool_f32", {sh({5}, DType::bool_)}, convert(f32), sameValues(), sh({5}, f32), {}, 0, 0, {{0, 1, 1, 0, 1}}},
      {"convert_u8_f32", {sh({5}, DType::u8)}, convert(f32), sameValues(), sh({5}, f32), {}, 0, 0, {{0, 127, 128, 200, 255}}},
  };
}


// ---- helpers for rows whose result dtype is not the inputs' ----

/// One case per dtype: inputs from `first` on take the dtype; the result keeps c.out's dtype
/// unless `retypeOut`.
std::vector<Case> eachDtype(const Case& c, const std::vector<DType>& dtypes, size_t first = 0, bool retypeOut = false) {
  std::vector<Case> out;
  for (DType d : dtypes) {
    Case e = c;
    e.name += "_" + std::string(radix::name(d));
    for (size_t i = first; i < e.inputs.size(); ++i) e.inputs[i] = e.inputs[i].withDtype(d);
    if (retypeOut) e.out = e.out.withDtype(d);
    out.push_back(e);
  }
  return out;
}

void append(std::vector<Case>& to, const std::vector<Case>& more) { to.insert(to.end(), more.begin(), more.end()); }

/// Strict broadcasting of any number of inputs (scalars, or one rank with size-1 axes; size 1
/// against 0 gives 0), then f on the elements.
Ref mapN(std::function<double(const Vals&)> f) {
  return [=](const std::vector<Host>& in) {
    Dims dims;
    for (const Host& h : in)
      if (h.dims.size() > dims.size()) dims = Dims(h.dims.size(), 1);
    for (const Host& h : in)
      if (h.dims.size() == dims.size())
        for (size_t i = 0; i < dims.size(); ++i)
          if (h.dims[i] != 1) dims[i] = h.dims[i];
    Vals out;
    forEachIndex(dims, [&](const Dims& idx) {
      Vals args;
      for (const Host& h : in) args.push_back(h.v[offsetOf(h.dims, idx)]);
      out.push_back(f(args));
    });
    return out;
  };
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Integer semantics by width: wraps v (an exact integer) to `bits` bits, signed or not.
double wrapTo(double v, int bits, bool isSigned) {
  const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(v)) & mask;
  if (!isSigned) return static_cast<double>(u);
  const uint64_t sign = 1ull << (bits - 1);
  return static_cast<double>(static_cast<int64_t>((u ^ sign) - sign));
}

struct IntType {
  DType dtype;
  int bits;
  bool isSigned;
  double min() const { return isSigned ? -std::ldexp(1, bits - 1) : 0; }
  // i64's max is not a double: 2^53 stands in for it.
  double max() const { return bits == 64 ? std::ldexp(1, 53) : isSigned ? std::ldexp(1, bits - 1) - 1 : std::ldexp(1, bits) - 1; }
};

const IntType kIntTypes[] = {{DType::i8, 8, true}, {DType::i32, 32, true}, {DType::i64, 64, true}, {DType::u8, 8, false}, {DType::u32, 32, false}};

// ---- special values: ties, NaN, inf, accuracy near 0 ----

std::vector<Case> specialCases() {
  const auto F = kFloats;
  const Vals ties = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0, 0.25, -3.75};
  const Vals small = {1e-6, -1e-6, 3e-7, -5e-6, 1e-5, 2e-6, -8e-6};
  std::vector<Case> cases = {
      {"round_ties", {sh({10})}, [](const Ts& x) { return x[0].round(); }, fixed({-3, -2, -1, 1, 2, 3, 4, 0, 0, -4}), sh({10}), F, 0, 0, {ties}, 0},
      {"roundNearestEven_ties", {sh({10})}, [](const Ts& x) { return x[0].roundNearestEven(); }, fixed({-2, -2, 0, 0, 2, 2, 4, 0, 0, -4}), sh({10}), F, 0, 0, {ties}, 0},
      {"floor_ties", {sh({10})}, [](const Ts& x) { return x[0].floor(); }, fixed({-3, -2, -1, 0, 1, 2, 3, 0, 0, -4}), sh({10}), F, 0, 0, {ties}, 0},
      {"ceil_ties", {sh({10})}, [](const Ts& x) { return x[0].ceil(); }, fixed({-2, -1, 0, 1, 2, 3, 4, 0, 1, -3}), sh({10}), F, 0, 0, {ties}, 0},
      // Scaled by 1e6, so that the check is relative: exp(x) - 1 would be 10% off in f32.
      {"expm1_small", {sh({7}, DType::f32)}, [](const Ts& x) { return x[0].expm1().mulConstant(1e6); },
       map1([](double x) { return std::expm1(x) * 1e6; }), sh({7}, DType::f32), {}, 0, 0, {small}},
      {"log1p_small", {sh({7}, DType::f32)}, [](const Ts& x) { return x[0].log1p().mulConstant(1e6); },
       map1([](double x) { return std::log1p(x) * 1e6; }), sh({7}, DType::f32), {}, 0, 0, {small}},
      {"expm1_special", {sh({6})}, [](const Ts& x) { return x[0].expm1(); }, map1([](double x) { return std::expm1(x); }), sh({6}), F, 0, 0,
       {{kInf, -kInf, kNan, -100, 0, 10}}},
      {"log1p_special", {sh({6})}, [](const Ts& x) { return x[0].log1p(); }, map1([](double x) { return std::log1p(x); }), sh({6}), F, 0, 0,
       {{kInf, -1, -2, kNan, 0, 1000}}},
      {"sign_special", {sh({6})}, [](const Ts& x) { return x[0].sign(); }, fixed({1, -1, 0, 0, kNan, -1}), sh({6}), F, 0, 0, {{kInf, -kInf, 0, -0.0, kNan, -1e-3}}},
      {"remainder_signs", {sh({8}), sh({8})}, [](const Ts& x) { return x[0].remainder(x[1]); }, map2([](double a, double b) { return std::fmod(a, b); }), sh({8}), F, 0, 0,
       {{-7, 7, -7, 7, 5.5, -5.5, 1, kInf}, {3, -3, -3, 3, 2, 2, 0, 2}}},
      {"pow_special", {sh({6}), sh({6})}, [](const Ts& x) { return x[0].pow(x[1]); }, map2([](double a, double b) { return std::pow(a, b); }), sh({6}), F, 0, 0,
       {{-2, -2, 0, 2, kNan, 1}, {3, 2, 0, -1, 0, kNan}}},
      {"gelu_tagged", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].gelu(); }, map1(geluTanh), sh({3, 17}, {"b", "d"}), F, -4, 4},
  };
  const Shape b6 = sh({9}, DType::bool_);
  append(cases, eachDtype({"isFinite", {sh({9})}, [](const Ts& x) { return x[0].isFinite(); }, map1([](double x) { return double(std::isfinite(x)); }), b6, {}, 0, 0,
                           {{0, 1, -1, kInf, -kInf, kNan, 1e30, 65504, 70000}}},
                          F));
  return cases;
}

// ---- comparisons and selection ----

std::vector<Case> compareCases() {
  using Cmp = Tensor (Tensor::*)(const Tensor&, Tensor::Loc) const;
  struct Named {
    const char* name;
    Cmp op;
    bool (*ref)(double, double);
  };
  const Named ops[] = {
      {"eq", &Tensor::eq, [](double a, double b) { return a == b; }}, {"ne", &Tensor::ne, [](double a, double b) { return a != b; }},
      {"lt", &Tensor::lt, [](double a, double b) { return a < b; }},  {"le", &Tensor::le, [](double a, double b) { return a <= b; }},
      {"gt", &Tensor::gt, [](double a, double b) { return a > b; }},  {"ge", &Tensor::ge, [](double a, double b) { return a >= b; }},
  };
  const DType B = DType::bool_;
  // Ties, NaN on either side, infinities, signed zeros.
  const Vals fa = {1, 2, 3, kNan, -0.0, kInf, -kInf, 1.5, kNan}, fb = {1, 3, 2, 1, 0.0, kInf, 0, kNan, kNan};
  // Above 127 in u8 (unsigned order), negatives in i32.
  const Vals ua = {200, 0, 127, 128, 255, 3, 7}, ub = {100, 1, 128, 127, 255, 250, 7};
  const Vals ia = {-5, 5, 0, -2147483648.0, 2147483647.0, 7, -1}, ib = {5, -5, 0, 2147483647.0, -2147483648.0, 7, -1};
  std::vector<Case> cases;
  for (const Named& n : ops) {
    const Cmp op = n.op;
    auto ref = n.ref;
    const Op call = [op](const Ts& x) { return (x[0].*op)(x[1], Tensor::Loc::current()); };
    const Ref r = mapN([ref](const Vals& v) { return double(ref(v[0], v[1])); });
    const std::string name = n.name;
    append(cases, eachDtype({name + "_special", {sh({9}), sh({9})}, call, r, sh({9}, B), {}, 0, 0, {fa, fb}}, kFloats));
    append(cases, eachDtype({name + "_broadcast", {sh({17, 1, 3}), sh({1, 4, 3})}, call, r, sh({17, 4, 3}, B), {}, -2, 2}, kFloats));
    append(cases, eachDtype({name + "_scalar_tagged", {sh({3, 17}, {"b", "d"}), sh({})}, call, r, sh({3, 17}, {"b", "d"}, B), {}, -2, 2}, {DType::f32, DType::i32}));
    cases.push_back({name + "_u8", {sh({7}, DType::u8), sh({7}, DType::u8)}, call, r, sh({7}, B), {}, 0, 0, {ua, ub}});
    cases.push_back({name + "_i32", {sh({7}, DType::i32), sh({7}, DType::i32)}, call, r, sh({7}, B), {}, 0, 0, {ia, ib}});
    cases.push_back({name + "_bool", {sh({2, 2}, B), sh({2, 2}, B)}, call, r, sh({2, 2}, B), {}, 0, 0, {{0, 0, 1, 1}, {0, 1, 0, 1}}});
  }
  // With a constant, converted to x's dtype.
  cases.push_back({"lt_constant", {sh({129})}, [](const Ts& x) { return x[0].lt(0.5); }, map1([](double x) { return double(x < 0.5); }), sh({129}, B)});
  cases.push_back({"eq_constant_i32", {sh({129}, DType::i32)}, [](const Ts& x) { return x[0].eq(1); }, map1([](double x) { return double(x == 1); }), sh({129}, B), {}, -3, 3});
  cases.push_back({"ge_constant_bf16", {sh({17}, DType::bf16)}, [](const Ts& x) { return x[0].ge(-0.25); }, map1([](double x) { return double(x >= -0.25); }), sh({17}, B)});
  cases.push_back({"ne_constant_f16", {sh({5}, DType::f16)}, [](const Ts& x) { return x[0].ne(0); }, fixed({0, 1, 1, 0, 1}), sh({5}, B), {}, 0, 0, {{0, 1, kNan, -0.0, -2}}});
  cases.push_back({"gt_constant_u8", {sh({4}, DType::u8)}, [](const Ts& x) { return x[0].gt(127); }, fixed({1, 0, 0, 1}), sh({4}, B), {}, 0, 0, {{200, 127, 0, 128}}});
  cases.push_back({"le_constant", {sh({17, 1, 3})}, [](const Ts& x) { return x[0].le(0); }, map1([](double x) { return double(x <= 0); }), sh({17, 1, 3}, B)});
  return cases;
}

std::vector<Case> selectCases() {
  const DType B = DType::bool_;
  const Ref pick = mapN([](const Vals& v) { return v[0] != 0 ? v[1] : v[2]; });
  const Op select = [](const Ts& x) { return x[0].select(x[1], x[2]); };
  const std::vector<DType> all = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::u8, DType::i64};
  std::vector<Case> cases;
  append(cases, eachDtype({"select", {sh({3, 17}, B), sh({3, 17}), sh({3, 17})}, select, pick, sh({3, 17}), {}, 0, 2}, all, 1, true));
  append(cases, eachDtype({"select_scalar_false", {sh({129}, B), sh({129}), sh({})}, select, pick, sh({129}), {}, 0, 2}, all, 1, true));
  append(cases, eachDtype({"select_scalar_cond", {sh({}, B), sh({17, 1, 3}), sh({17, 1, 3})}, select, pick, sh({17, 1, 3}), {}, 0, 2}, kFloats, 1, true));
  append(cases, eachDtype({"select_broadcast_tagged", {sh({1, 17}, {"b", "d"}, B), sh({3, 1}, {"b", "d"}), sh({3, 17}, {"b", "d"})}, select, pick,
                           sh({3, 17}, {"b", "d"}), {}, 0, 2},
                          kFloats, 1, true));
  append(cases, eachDtype({"select_scalars", {sh({7}, B), sh({}), sh({})}, select, pick, sh({7}), {}, 0, 2}, {DType::f32}, 1, true));
  cases.push_back({"select_bool_values", {sh({4}, B), sh({4}, B), sh({4}, B)}, select, pick, sh({4}, B), {}, 0, 0, {{1, 0, 1, 0}, {1, 1, 0, 0}, {0, 1, 1, 0}}});
  // Condition from a comparison, as users write it.
  cases.push_back({"select_where", {sh({129})}, [](const Ts& x) { return x[0].gt(0).select(x[0], x[0].mulConstant(0.5)); },
                   map1([](double x) { return x > 0 ? x : 0.5 * x; }), sh({129}), kFloats});
  return cases;
}

// ---- integer semantics (XLA): division, remainder, shifts, bits ----

std::vector<Case> integerEdgeCases() {
  std::vector<Case> cases;
  for (const IntType& t : kIntTypes) {
    const int bits = t.bits;
    const bool s = t.isSigned;
    const double mn = t.min(), mx = t.max(), allOnes = s ? -1 : mx;
    Vals x, y;
    if (s) {
      x = {mn, mn, mn, 7, -7, 0, mx, 100, -100, 7, mn + 1};
      y = {-1, 0, 1, 0, 0, 0, -1, 7, 7, -2, -1};
    } else {
      x = {mx, mx, 0, 7, 200, 100, 5, mx};
      y = {0, 1, 0, 0, 3, 7, mx, 2};
    }
    const int64_t n = static_cast<int64_t>(x.size());
    const std::string w = std::string(radix::name(t.dtype));
    auto div = [=](double a, double b) { return b == 0 ? allOnes : (s && a == mn && b == -1) ? mn : std::trunc(a / b); };
    auto rem = [=](double a, double b) { return b == 0 ? a : (s && a == mn && b == -1) ? 0.0 : std::fmod(a, b); };
    cases.push_back({"div_edges_" + w, {sh({n}, t.dtype), sh({n}, t.dtype)}, [](const Ts& v) { return v[0].div(v[1]); },
                     mapN([=](const Vals& v) { return div(v[0], v[1]); }), sh({n}, t.dtype), {}, 0, 0, {x, y}});
    cases.push_back({"remainder_edges_" + w, {sh({n}, t.dtype), sh({n}, t.dtype)}, [](const Ts& v) { return v[0].remainder(v[1]); },
                     mapN([=](const Vals& v) { return rem(v[0], v[1]); }), sh({n}, t.dtype), {}, 0, 0, {x, y}});
    // A divisor of 0 by broadcasting a scalar, and by a constant.
    cases.push_back({"div_by_zero_scalar_" + w, {sh({}, t.dtype), sh({3, 17}, t.dtype)}, [](const Ts& v) { return v[1].div(v[0]); },
                     mapN([=](const Vals&) { return allOnes; }), sh({3, 17}, t.dtype), {}, 0, 100, std::vector<Vals>{Vals{0}}});
    cases.push_back({"divConstant_zero_" + w, {sh({17}, t.dtype)}, [](const Ts& v) { return v[0].divConstant(0); },
                     mapN([=](const Vals&) { return allOnes; }), sh({17}, t.dtype), {}, 0, 100});
    cases.push_back({"fmod_zero_" + w, {sh({17}, t.dtype)}, [](const Ts& v) { return v[0].fmod(0); }, sameValues(), sh({17}, t.dtype), {}, 0, 100});
    // Shifts: counts at, above and below the width, and negative (an unsigned huge count).
    const double b = bits;
    Vals sx, sc;
    if (s) {
      sx = {1, 1, 1, 1, mn, mn, -1, 64, -7, 5, -100, 3};
      // Logical right shifts of negative i64s are exact doubles only by 12 bits or more.
      sc = {0, b - 1, b, b + 1, b - 1, b, 100, 1, bits == 64 ? 12.0 : 1.0, -1, bits == 64 ? 20.0 : 2.0, 2};
    } else {
      sx = {1, 1, 1, mx, mx, 200, 64, 5, 0};
      sc = {0, b - 1, b, 1, b + 3, 1, 1, 2, b};
    }
    auto toBits = [=](double v) { return static_cast<uint64_t>(static_cast<int64_t>(v)) & (bits == 64 ? ~0ull : ((1ull << bits) - 1)); };
    auto asSigned = [=](double v) { return wrapTo(v, bits, true); };
    auto countOk = [=](double c) { return toBits(c) < static_cast<uint64_t>(bits); };
    auto shl = [=](double v, double c) -> double {
      if (!countOk(c)) return 0;
      return wrapTo(static_cast<double>(static_cast<int64_t>(toBits(v) << static_cast<int>(c))), bits, s);
    };
    auto shrl = [=](double v, double c) -> double {
      if (!countOk(c)) return 0;
      return wrapTo(static_cast<double>(static_cast<int64_t>(toBits(v) >> static_cast<int>(c))), bits, s);
    };
    auto shra = [=](double v, double c) -> double {
      const int64_t sv = static_cast<int64_t>(asSigned(v));
      const int k = countOk(c) ? static_cast<int>(c) : bits - 1;
      return wrapTo(static_cast<double>(sv >> k), bits, s);
    };
    const int64_t m = static_cast<int64_t>(sx.size());
    cases.push_back({"shiftLeft_" + w, {sh({m}, t.dtype), sh({m}, t.dtype)}, [](const Ts& v) { return v[0].shiftLeft(v[1]); },
                     mapN([=](const Vals& v) { return shl(v[0], v[1]); }), sh({m}, t.dtype), {}, 0, 0, {sx, sc}});
    cases.push_back({"shiftRightLogical_" + w, {sh({m}, t.dtype), sh({m}, t.dtype)}, [](const Ts& v) { return v[0].shiftRightLogical(v[1]); },
                     mapN([=](const Vals& v) { return shrl(v[0], v[1]); }), sh({m}, t.dtype), {}, 0, 0, {sx, sc}});
    cases.push_back({"shiftRightArithmetic_" + w, {sh({m}, t.dtype), sh({m}, t.dtype)}, [](const Ts& v) { return v[0].shiftRightArithmetic(v[1]); },
                     mapN([=](const Vals& v) { return shra(v[0], v[1]); }), sh({m}, t.dtype), {}, 0, 0, {sx, sc}});
    // Bits.
    // i64's extremes are not doubles, nor are their complements: +-1e15 stand in for them.
    const Vals bx = s ? Vals{0, 1, -1, bits == 64 ? -1e15 : mn, 5, 64, -100, bits == 64 ? 1e15 : mx} : Vals{0, 1, mx, 5, 64, 128, 200};
    const int64_t k = static_cast<int64_t>(bx.size());
    cases.push_back({"popcnt_" + w, {sh({k}, t.dtype)}, [](const Ts& v) { return v[0].popcnt(); },
                     mapN([=](const Vals& v) { return double(std::popcount(toBits(v[0]))); }), sh({k}, t.dtype), {}, 0, 0, {bx}});
    cases.push_back({"countLeadingZeros_" + w, {sh({k}, t.dtype)}, [](const Ts& v) { return v[0].countLeadingZeros(); },
                     mapN([=](const Vals& v) { return double(std::countl_zero(toBits(v[0])) - (64 - bits)); }), sh({k}, t.dtype), {}, 0, 0, {bx}});
    cases.push_back({"logicalNot_" + w, {sh({k}, t.dtype)}, [](const Ts& v) { return v[0].logicalNot(); },
                     mapN([=](const Vals& v) { return wrapTo(static_cast<double>(static_cast<int64_t>(~toBits(v[0]))), bits, s); }), sh({k}, t.dtype), {}, 0, 0, {bx}});
    cases.push_back({"sign_" + w, {sh({k}, t.dtype)}, [](const Ts& v) { return v[0].sign(); },
                     mapN([](const Vals& v) { return double((v[0] > 0) - (v[0] < 0)); }), sh({k}, t.dtype), {}, 0, 0, {bx}});
  }
  return cases;
}

std::vector<Case> logicCases() {
  const DType B = DType::bool_;
  auto bitwise = [](uint64_t (*f)(uint64_t, uint64_t), bool isSigned, int bits) {
    return mapN([=](const Vals& v) {
      auto u = [&](double d) { return static_cast<uint64_t>(static_cast<int64_t>(d)); };
      return wrapTo(static_cast<double>(static_cast<int64_t>(f(u(v[0]), u(v[1])))), bits, isSigned);
    });
  };
  uint64_t (*andF)(uint64_t, uint64_t) = [](uint64_t a, uint64_t b) { return a & b; };
  uint64_t (*orF)(uint64_t, uint64_t) = [](uint64_t a, uint64_t b) { return a | b; };
  uint64_t (*xorF)(uint64_t, uint64_t) = [](uint64_t a, uint64_t b) { return a ^ b; };
  std::vector<Case> cases;
  const Vals ia = {-1, 0, 12, -128, 127, 85}, ib = {5, -1, 10, 127, -128, -86};
  const Vals ua = {255, 0, 12, 128, 127, 85}, ub = {5, 255, 10, 127, 128, 170};
  struct Named {
    const char* name;
    Op op;
    uint64_t (*f)(uint64_t, uint64_t);
  };
  const Named ops[] = {
      {"logicalAnd", [](const Ts& x) { return x[0].logicalAnd(x[1]); }, andF},
      {"logicalOr", [](const Ts& x) { return x[0].logicalOr(x[1]); }, orF},
      {"logicalXor", [](const Ts& x) { return x[0].logicalXor(x[1]); }, xorF},
  };
  for (const Named& n : ops) {
    const std::string name = n.name;
    cases.push_back({name + "_bool", {sh({3, 17}, B), sh({3, 17}, B)}, n.op, bitwise(n.f, false, 1), sh({3, 17}, B), {}, 0, 2});
    cases.push_back({name + "_bool_broadcast_tagged", {sh({1, 17}, {"b", "d"}, B), sh({3, 1}, {"b", "d"}, B)}, n.op, bitwise(n.f, false, 1),
                     sh({3, 17}, {"b", "d"}, B), {}, 0, 2});
    cases.push_back({name + "_i8", {sh({6}, DType::i8), sh({6}, DType::i8)}, n.op, bitwise(n.f, true, 8), sh({6}, DType::i8), {}, 0, 0, {ia, ib}});
    cases.push_back({name + "_u8", {sh({6}, DType::u8), sh({6}, DType::u8)}, n.op, bitwise(n.f, false, 8), sh({6}, DType::u8), {}, 0, 0, {ua, ub}});
    cases.push_back({name + "_i32_scalar", {sh({129}, DType::i32), sh({}, DType::i32)}, n.op, bitwise(n.f, true, 32), sh({129}, DType::i32), {}, -1000, 1000});
  }
  cases.push_back({"logicalNot_bool", {sh({17}, B)}, [](const Ts& x) { return x[0].logicalNot(); }, map1([](double x) { return x != 0 ? 0.0 : 1.0; }), sh({17}, B), {}, 0, 2});
  cases.push_back({"logicalNot_tagged", {sh({2, 3}, {"b", "d"}, B)}, [](const Ts& x) { return x[0].logicalNot(); }, map1([](double x) { return x != 0 ? 0.0 : 1.0; }),
                   sh({2, 3}, {"b", "d"}, B), {}, 0, 2});
  return cases;
}

// ---- conversions: bit casts, saturating float -> integer ----

/// The bytes of `v` as `dtype` holds them.
std::vector<uint8_t> bytesOf(DType dtype, const Vals& v) {
  return Tensor::fromValues(cpu(), Shape({static_cast<int64_t>(v.size())}, dtype), v).toBytes();
}

Ref bitCastRef(DType from, DType to) {
  return [=](const std::vector<Host>& in) {
    const std::vector<uint8_t> bytes = bytesOf(from, in[0].v);
    return Tensor::fromBytes(cpu(), Shape({static_cast<int64_t>(in[0].v.size())}, to), bytes.data(), bytes.size()).toVector<double>();
  };
}

std::vector<Case> bitCastCases() {
  auto bitCast = [](DType to) -> Op { return [=](const Ts& x) { return x[0].bitCast(to); }; };
  const Vals floats = {1, -2.5, 0, -0.0, kInf, 3.14159, -1e-3};
  const Vals ints = {1065353216, -1082130432, 0, 1, -1, 2139095040, 12345};
  using D = DType;
  struct Pair {
    D from, to;
    Vals v;
  };
  const Pair pairs[] = {
      {D::f32, D::i32, floats}, {D::f32, D::u32, floats}, {D::i32, D::f32, ints},   {D::f16, D::i16, floats}, {D::bf16, D::u16, floats},
      {D::i16, D::f16, {15360, -17408, 0, 1, 31744, 100, -1024}}, {D::u8, D::i8, {0, 1, 127, 128, 255, 200, 7}}, {D::i64, D::f64, {0, 4607182418800017408.0, -4611686018427387904.0, 4611686018427387904.0, 4613937818241073152.0, 9218868437227405312.0, 4602678819172646912.0}},
      {D::f32, D::f32, floats},
  };
  std::vector<Case> cases;
  for (const Pair& p : pairs) {
    const std::string name = "bitCast_" + std::string(radix::name(p.from)) + "_" + std::string(radix::name(p.to));
    cases.push_back({name, {sh({7}, p.from)}, bitCast(p.to), bitCastRef(p.from, p.to), sh({7}, p.to), {}, 0, 0, {p.v}, 0});
  }
  cases.push_back({"bitCast_tagged", {sh({3, 17}, {"b", "d"}, D::f32)}, bitCast(D::i32), bitCastRef(D::f32, D::i32), sh({3, 17}, {"b", "d"}, D::i32)});
  return cases;
}

std::vector<Case> saturateCases() {
  auto convert = [](DType to) -> Op { return [=](const Ts& x) { return x[0].convert(to); }; };
  using D = DType;
  const double i32max = 2147483647.0, i32min = -2147483648.0, u32max = 4294967295.0, i64min = -std::ldexp(1, 63);
  struct Row {
    D from, to;
    Vals in, out;
  };
  const Row rows[] = {
      {D::f32, D::u8, {kNan, kInf, -kInf, 1e30, -1, 300, 255.9, 0.5, 127.5, -0.5}, {0, 255, 0, 255, 0, 255, 255, 0, 127, 0}},
      {D::f32, D::i8, {kNan, kInf, -kInf, 1e30, -1e30, -129, 128, -128.9, 127.9, -3.7}, {0, 127, -128, 127, -128, -128, 127, -128, 127, -3}},
      {D::f32, D::i32, {kNan, kInf, -kInf, 2147483648.0, -2147483904.0, 3e9, -3.7, 2147483520.0}, {0, i32max, i32min, i32max, i32min, i32max, -3, 2147483520.0}},
      {D::f16, D::i32, {kInf, -kInf, kNan, 65504, -65504, 3.5}, {i32max, i32min, 0, 65504, -65504, 3}},
      {D::f16, D::u16, {kInf, 65504, -5, kNan, 1.5}, {65535, 65504, 0, 0, 1}},
      {D::f16, D::i8, {kInf, 300, -300, kNan, -1.5}, {127, 127, -128, 0, -1}},
      {D::bf16, D::u32, {kInf, -1, 1e30, kNan, 256}, {u32max, 0, u32max, 0, 256}},
      {D::bf16, D::i16, {-kInf, 1e10, -1e10, kNan, -7.5}, {-32768, 32767, -32768, 0, -7}},
      {D::f64, D::i64, {kNan, -kInf, -1e300, 1e15, -2.9}, {0, i64min, i64min, 1e15, -2}},
      {D::f32, D::u64, {-1, 1e10, kNan, 0.9}, {0, 1e10, 0, 0}},
  };
  std::vector<Case> cases;
  for (const Row& r : rows) {
    const int64_t n = static_cast<int64_t>(r.in.size());
    cases.push_back({"convert_saturate_" + std::string(radix::name(r.from)) + "_" + std::string(radix::name(r.to)), {sh({n}, r.from)}, convert(r.to),
                     fixed(r.out), sh({n}, r.to), {}, 0, 0, {r.in}});
  }
  // Random values in range truncate toward zero for every float type.
  append(cases, eachDtype({"convert_trunc_i32", {sh({129})}, convert(D::i32), map1([](double x) { return std::trunc(x); }), sh({129}, D::i32), {}, -50, 50}, kFloats));
  append(cases, eachDtype({"convert_trunc_u8", {sh({3, 17})}, convert(D::u8), map1([](double x) { return std::trunc(x); }), sh({3, 17}, D::u8), {}, 0, 250}, kFloats));
  return cases;
}

// ---- zero-size shapes ----

std::vector<Case> zeroSizeCases() {
  const DType B = DType::bool_;
  const Ref none = fixed({});
  auto add = [](const Ts& x) { return x[0].add(x[1]); };
  auto mul = [](const Ts& x) { return x[0].mul(x[1]); };
  std::vector<Case> cases = {
      {"mul_0_1", {sh({0}), sh({1})}, mul, none, sh({0}), kFloats},
      {"mul_1_0", {sh({1}), sh({0})}, mul, none, sh({0}), kFloats},
      {"add_0x3_1x3", {sh({0, 3}), sh({1, 3})}, add, none, sh({0, 3}), kFloats},
      {"add_1x0_tagged", {sh({1, 0}, {"b", "d"}), sh({4, 1}, {"b", "d"})}, add, none, sh({4, 0}, {"b", "d"}), kFloats},
      {"mul_2x0_scalar", {sh({2, 0}), sh({})}, mul, none, sh({2, 0}), kFloats},
      {"add_untagged_ones_0", {sh({1, 1}), sh({2, 0}, {"b", "d"})}, add, none, sh({2, 0}, {"b", "d"}), kFloats},
      {"add_0_i32", {sh({0}, DType::i32), sh({1}, DType::i32)}, add, none, sh({0}, DType::i32)},
      {"exp_0", {sh({0, 5})}, [](const Ts& x) { return x[0].exp(); }, none, sh({0, 5}), kFloats},
  };
  append(cases, eachDtype({"lt_0_1", {sh({0}), sh({1})}, [](const Ts& x) { return x[0].lt(x[1]); }, none, sh({0}, B)}, kFloats));
  cases.push_back({"select_0", {sh({0, 3}, B), sh({1, 3}), sh({})}, [](const Ts& x) { return x[0].select(x[1], x[2]); }, none, sh({0, 3})});
  return cases;
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  auto floatOnly = [](const char* name, Tensor (*op)(const Tensor&)) {
    return ErrorCase{std::string(name) + "_int", {sh({3}, DType::i32)}, [op](const Ts& x) { return op(x[0]); },
                     "[" + std::string(name) + "]", "{3}:i32"};
  };
  std::vector<ErrorCase> cases = {
      {"add_dtype", {sh({3}), sh({3}, f16)}, [](const Ts& x) { return x[0].add(x[1]); }, "[add]", "{3}:f32 and {3}:f16"},
      {"add_bool", {sh({3}, b), sh({3}, b)}, [](const Ts& x) { return x[0].add(x[1]); }, "[add]", "{3}:bool"},
      {"sub_dims", {sh({3, 17}), sh({17, 3})}, [](const Ts& x) { return x[0].sub(x[1]); }, "[sub]", "{3,17}:f32 and {17,3}:f32"},
      {"mul_rank", {sh({3}), sh({1, 3})}, [](const Ts& x) { return x[0].mul(x[1]); }, "[mul]", "{3}:f32 and {1,3}:f32"},
      {"add_untagged_onto_tagged", {sh({2, 3}, {"b", "d"}), sh({2, 3})}, [](const Ts& x) { return x[0].add(x[1]); }, "[add]",
       "{2,3}:f32 is untagged and {b=2,d=3}:f32 is tagged: Radix does not align axes by position; tag it with the axes it maps to, e.g. x.withTags({\"b\", \"d\"})"},
      {"mul_untagged_lower_rank", {sh({3}), sh({2, 3}, {"b", "d"})}, [](const Ts& x) { return x[0].mul(x[1]); }, "[mul]", "{3}:f32 is untagged and {b=2,d=3}:f32 is tagged"},
      {"div_tags", {sh({3}, {"b"}), sh({3}, {"d"})}, [](const Ts& x) { return x[0].div(x[1]); }, "[div]", "{b=3}:f32 and {d=3}:f32"},
      {"maximum_dims", {sh({3}), sh({17})}, [](const Ts& x) { return x[0].maximum(x[1]); }, "[maximum]", "{3}:f32 and {17}:f32"},
      {"minimum_dtype", {sh({3}, i32), sh({3})}, [](const Ts& x) { return x[0].minimum(x[1]); }, "[minimum]", "{3}:i32 and {3}:f32"},
      {"neg_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].neg(); }, "[neg]", "{3}:bool"},
      {"abs_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].abs(); }, "[abs]", "{3}:bool"},
      floatOnly("exp", [](const Tensor& x) { return x.exp(); }),
      floatOnly("log", [](const Tensor& x) { return x.log(); }),
      floatOnly("tanh", [](const Tensor& x) { return x.tanh(); }),
      floatOnly("sqrt", [](const Tensor& x) { return x.sqrt(); }),
      floatOnly("rsqrt", [](const Tensor& x) { return x.rsqrt(); }),
      floatOnly("sin", [](const Tensor& x) { return x.sin(); }),
      floatOnly("cos", [](const Tensor& x) { return x.cos(); }),
      floatOnly("sigmoid", [](const Tensor& x) { return x.sigmoid(); }),
      {"relu_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].relu(); }, "[relu]", "{3}:bool"},
      {"addConstant_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].addConstant(1); }, "[addConstant]", "{3}:bool"},
      {"mulConstant_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].mulConstant(2); }, "[mulConstant]", "{3}:bool"},
      floatOnly("expm1", [](const Tensor& x) { return x.expm1(); }),
      floatOnly("log1p", [](const Tensor& x) { return x.log1p(); }),
      floatOnly("floor", [](const Tensor& x) { return x.floor(); }),
      floatOnly("ceil", [](const Tensor& x) { return x.ceil(); }),
      floatOnly("round", [](const Tensor& x) { return x.round(); }),
      floatOnly("roundNearestEven", [](const Tensor& x) { return x.roundNearestEven(); }),
      floatOnly("erf", [](const Tensor& x) { return x.erf(); }),
      floatOnly("isFinite", [](const Tensor& x) { return x.isFinite(); }),
      floatOnly("gelu", [](const Tensor& x) { return x.gelu(); }),
      floatOnly("geluErf", [](const Tensor& x) { return x.geluErf(); }),
      floatOnly("quickGelu", [](const Tensor& x) { return x.quickGelu(); }),
      floatOnly("silu", [](const Tensor& x) { return x.silu(); }),
      floatOnly("leakyRelu", [](const Tensor& x) { return x.leakyRelu(0.1); }),
      floatOnly("elu", [](const Tensor& x) { return x.elu(1); }),
      floatOnly("powConstant", [](const Tensor& x) { return x.powConstant(2); }),
      {"pow_int", {sh({3}, i32), sh({3}, i32)}, [](const Ts& x) { return x[0].pow(x[1]); }, "[pow]", "{3}:i32 and {3}:i32"},
      {"pow_dims", {sh({3}), sh({4})}, [](const Ts& x) { return x[0].pow(x[1]); }, "[pow]", "{3}:f32 and {4}:f32"},
      {"remainder_bool", {sh({3}, b), sh({3}, b)}, [](const Ts& x) { return x[0].remainder(x[1]); }, "[remainder]", "{3}:bool"},
      {"remainder_dtype", {sh({3}), sh({3}, i32)}, [](const Ts& x) { return x[0].remainder(x[1]); }, "[remainder]", "{3}:f32 and {3}:i32"},
      {"fmod_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].fmod(2); }, "[fmod]", "{3}:bool"},
      {"subConstant_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].subConstant(1); }, "[subConstant]", "{3}:bool"},
      {"divConstant_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].divConstant(1); }, "[divConstant]", "{3}:bool"},
      {"sign_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].sign(); }, "[sign]", "{3}:bool"},
      {"popcnt_float", {sh({3})}, [](const Ts& x) { return x[0].popcnt(); }, "[popcnt]", "integer tensor, got {3}:f32"},
      {"popcnt_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].popcnt(); }, "[popcnt]", "{3}:bool"},
      {"countLeadingZeros_float", {sh({3}, f16)}, [](const Ts& x) { return x[0].countLeadingZeros(); }, "[countLeadingZeros]", "{3}:f16"},
      {"logicalNot_float", {sh({3})}, [](const Ts& x) { return x[0].logicalNot(); }, "[logicalNot]", "{3}:f32"},
      {"logicalAnd_float", {sh({3}), sh({3})}, [](const Ts& x) { return x[0].logicalAnd(x[1]); }, "[logicalAnd]", "{3}:f32 and {3}:f32"},
      {"logicalOr_dtype", {sh({3}, b), sh({3}, i32)}, [](const Ts& x) { return x[0].logicalOr(x[1]); }, "[logicalOr]", "{3}:bool and {3}:i32"},
      {"logicalXor_tags", {sh({3}, {"a"}, b), sh({3}, {"b"}, b)}, [](const Ts& x) { return x[0].logicalXor(x[1]); }, "[logicalXor]", "{a=3}:bool and {b=3}:bool"},
      {"shiftLeft_float", {sh({3}), sh({3})}, [](const Ts& x) { return x[0].shiftLeft(x[1]); }, "[shiftLeft]", "{3}:f32"},
      {"shiftRightLogical_bool", {sh({3}, b), sh({3}, b)}, [](const Ts& x) { return x[0].shiftRightLogical(x[1]); }, "[shiftRightLogical]", "{3}:bool"},
      {"shiftRightArithmetic_dims", {sh({3}, i32), sh({2}, i32)}, [](const Ts& x) { return x[0].shiftRightArithmetic(x[1]); }, "[shiftRightArithmetic]", "{3}:i32 and {2}:i32"},
      {"clamp_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].clamp(0, 1); }, "[clamp]", "{3}:bool"},
      {"clamp_dims", {sh({3}), sh({4}), sh({})}, [](const Ts& x) { return x[0].clamp(x[1], x[2]); }, "[clamp]", "{3}:f32 and {4}:f32"},
      {"clamp_dtype", {sh({3}), sh({}), sh({}, f16)}, [](const Ts& x) { return x[0].clamp(x[1], x[2]); }, "[clamp]", "{3}:f32 and {}:f16"},
      {"bitCast_width", {sh({3})}, [](const Ts& x) { return x[0].bitCast(DType::f16); }, "[bitCast]", "{3}:f32 to f16"},
      {"bitCast_invalid_dtype", {sh({3})}, [](const Ts& x) { return x[0].bitCast(static_cast<DType>(13)); }, "[bitCast]", "invalid DType 13"},
      {"convert_invalid_dtype", {sh({3})}, [](const Ts& x) { return x[0].convert(static_cast<DType>(13)); }, "[convert]", "invalid DType 13"},
      {"bitCast_bool", {sh({3}, DType::u8)}, [](const Ts& x) { return x[0].bitCast(DType::bool_); }, "[bitCast]", "{3}:u8 to bool"},
      {"eq_dtype", {sh({3}), sh({3}, f16)}, [](const Ts& x) { return x[0].eq(x[1]); }, "[eq]", "{3}:f32 and {3}:f16"},
      {"ne_dims", {sh({3}), sh({4})}, [](const Ts& x) { return x[0].ne(x[1]); }, "[ne]", "{3}:f32 and {4}:f32"},
      {"lt_rank", {sh({3}), sh({1, 3})}, [](const Ts& x) { return x[0].lt(x[1]); }, "[lt]", "{3}:f32 and {1,3}:f32"},
      {"le_tags", {sh({3}, {"a"}), sh({3}, {"b"})}, [](const Ts& x) { return x[0].le(x[1]); }, "[le]", "{a=3}:f32 and {b=3}:f32"},
      {"gt_dtype", {sh({3}, i32), sh({3}, DType::u32)}, [](const Ts& x) { return x[0].gt(x[1]); }, "[gt]", "{3}:i32 and {3}:u32"},
      {"ge_dims", {sh({2, 3}), sh({3, 2})}, [](const Ts& x) { return x[0].ge(x[1]); }, "[ge]", "{2,3}:f32 and {3,2}:f32"},
      {"select_cond_dtype", {sh({3}), sh({3}), sh({3})}, [](const Ts& x) { return x[0].select(x[1], x[2]); }, "[select]", "must be bool, got {3}:f32"},
      {"select_values_dtype", {sh({3}, b), sh({3}), sh({3}, f16)}, [](const Ts& x) { return x[0].select(x[1], x[2]); }, "[select]", "{3}:f32 and {3}:f16"},
      {"select_values_dims", {sh({3}, b), sh({3}), sh({4})}, [](const Ts& x) { return x[0].select(x[1], x[2]); }, "[select]", "{3}:f32 and {4}:f32"},
      {"select_cond_dims", {sh({4}, b), sh({3}), sh({3})}, [](const Ts& x) { return x[0].select(x[1], x[2]); }, "[select]", "condition {4}:bool and values {3}:f32, {3}:f32"},
      {"select_cond_tags", {sh({3}, {"a"}, b), sh({3}, {"b"}), sh({})}, [](const Ts& x) { return x[0].select(x[1], x[2]); }, "[select]", "condition {a=3}:bool"},
      // A tensor made inside the function that is neither an argument nor an op's result.
      {"convert_placeholder", {}, [](const Ts&) { return Tensor(sh({3})).convert(f16); }, "[convert]", "{3}:f32 is a placeholder"},
  };
  return cases;
}

/// The new ops on a bound tensor `x` (f32 {d=3}) or `i` (i32 {d=3}), named as their errors should be.
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> newOps() {
  using T = const Tensor&;
  return {
      {"[pow]", [](T x, T) { return x.pow(x); }},
      {"[remainder]", [](T x, T) { return x.remainder(x); }},
      {"[logicalAnd]", [](T, T i) { return i.logicalAnd(i); }},
      {"[logicalOr]", [](T, T i) { return i.logicalOr(i); }},
      {"[logicalXor]", [](T, T i) { return i.logicalXor(i); }},
      {"[shiftLeft]", [](T, T i) { return i.shiftLeft(i); }},
      {"[shiftRightLogical]", [](T, T i) { return i.shiftRightLogical(i); }},
      {"[shiftRightArithmetic]", [](T, T i) { return i.shiftRightArithmetic(i); }},
      {"[clamp]", [](T x, T) { return x.clamp(x, x); }},
      {"[clamp]", [](T x, T) { return x.clamp(0, 1); }},
      {"[sign]", [](T x, T) { return x.sign(); }},
      {"[expm1]", [](T x, T) { return x.expm1(); }},
      {"[log1p]", [](T x, T) { return x.log1p(); }},
      {"[floor]", [](T x, T) { return x.floor(); }},
      {"[ceil]", [](T x, T) { return x.ceil(); }},
      {"[round]", [](T x, T) { return x.round(); }},
      {"[roundNearestEven]", [](T x, T) { return x.roundNearestEven(); }},
      {"[erf]", [](T x, T) { return x.erf(); }},
      {"[isFinite]", [](T x, T) { return x.isFinite(); }},
      {"[logicalNot]", [](T, T i) { return i.logicalNot(); }},
      {"[popcnt]", [](T, T i) { return i.popcnt(); }},
      {"[countLeadingZeros]", [](T, T i) { return i.countLeadingZeros(); }},
      {"[leakyRelu]", [](T x, T) { return x.leakyRelu(0.1); }},
      {"[elu]", [](T x, T) { return x.elu(1); }},
      {"[silu]", [](T x, T) { return x.silu(); }},
      {"[gelu]", [](T x, T) { return x.gelu(); }},
      {"[geluErf]", [](T x, T) { return x.geluErf(); }},
      {"[quickGelu]", [](T x, T) { return x.quickGelu(); }},
      {"[bitCast]", [](T x, T) { return x.bitCast(DType::i32); }},
      {"[subConstant]", [](T x, T) { return x.subConstant(1); }},
      {"[divConstant]", [](T x, T) { return x.divConstant(2); }},
      {"[powConstant]", [](T x, T) { return x.powConstant(2); }},
      {"[fmod]", [](T x, T) { return x.fmod(2); }},
      {"[eq]", [](T x, T) { return x.eq(x); }},
      {"[ne]", [](T x, T) { return x.ne(0); }},
      {"[lt]", [](T x, T) { return x.lt(x); }},
      {"[le]", [](T x, T) { return x.le(0); }},
      {"[gt]", [](T x, T) { return x.gt(x); }},
      {"[ge]", [](T x, T) { return x.ge(0); }},
      {"[select]", [](T x, T) {
         static const Tensor cond = Tensor::fromValues(cpu(), sh({3}, {"d"}, DType::bool_), std::vector<int64_t>{1, 0, 1});
         return cond.select(x, x);
       }},
      {"[triangular]", [](T x, T) { return x.triangular(0, 0, 0); }},
      {"[oneHot]", [](T, T i) { return i.oneHot(4, "c", DType::f32); }},
  };
}

TEST(OpsErrors, NewOpsOnBoundTensorOutsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  const Tensor i = Tensor::fromValues(cpu(), sh({3}, {"d"}, DType::i32), std::vector<int64_t>{1, 2, 3});
  for (const auto& [prefix, op] : newOps()) {
    SCOPED_TRACE(prefix);
    // triangular checks its axes first (x has one axis).
    expectError([&] { op(x, i); }, prefix, prefix == "[triangular]" ? "one axis" : "no compilation in progress");
  }
  expectError([] { Tensor::iota(sh({3}), 0); }, "[iota]", "no compilation in progress");
  expectError([] { Tensor::arange(3, DType::i32); }, "[arange]", "no compilation in progress");
  expectError([] { Tensor::arange(0, 3, 1, DType::i32); }, "[arange]", "no compilation in progress");
  expectError([] { Tensor::linspace(0, 1, 3, DType::f32); }, "[linspace]", "no compilation in progress");
  expectError([] { Tensor::constantTensor(sh({1}), {1}); }, "[constantTensor]", "no compilation in progress");
  expectError([] { Tensor::causalMask(sh({2, 2}), 0, 1); }, "[causalMask]", "no compilation in progress");
}

TEST(OpsErrors, NewOpsOnBoundTensorCapturedInsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  const Tensor i = Tensor::fromValues(cpu(), sh({3}, {"d"}, DType::i32), std::vector<int64_t>{1, 2, 3});
  const Tensor arg(sh({3}, {"d"}));
  for (const auto& [prefix, op] : newOps()) {
    SCOPED_TRACE(prefix);
    if (prefix == "[triangular]") continue;  // its axes are checked first
    auto fn = [&](const Tensor&) { return op(x, i); };
    expectError([&] { radix::compile(cpu(), fn, arg); }, prefix, "is a device buffer that is not an argument");
  }
}

}  // namespace

RADIX_OPS_CASES("unary", unaryCases);
RADIX_OPS_CASES("binary", binaryCases);
RADIX_OPS_CASES("integer", integerCases);
RADIX_OPS_CASES("constant", constantCases);
RADIX_OPS_CASES("convert", convertCases);
RADIX_OPS_CASES("special", specialCases);
RADIX_OPS_CASES("compare", compareCases);
RADIX_OPS_CASES("select", selectCases);
RADIX_OPS_CASES("integer_edges", integerEdgeCases);
RADIX_OPS_CASES("logic", logicCases);
RADIX_OPS_CASES("bitcast", bitCastCases);
RADIX_OPS_CASES("saturate", saturateCases);
// One zero-size row per section, so that each compiles alone: a function returning two zero-size
// results crashes buffer-results-to-out-params (both become one tensor.empty, returned twice).
template <int K>
std::vector<Case> zeroSizeRow() {
  return {zeroSizeCases().at(K)};
}
RADIX_OPS_CASES("zero_size_0", zeroSizeRow<0>);
RADIX_OPS_CASES("zero_size_1", zeroSizeRow<1>);
RADIX_OPS_CASES("zero_size_2", zeroSizeRow<2>);
RADIX_OPS_CASES("zero_size_3", zeroSizeRow<3>);
RADIX_OPS_CASES("zero_size_4", zeroSizeRow<4>);
RADIX_OPS_CASES("zero_size_5", zeroSizeRow<5>);
RADIX_OPS_CASES("zero_size_6", zeroSizeRow<6>);
RADIX_OPS_CASES("zero_size_7", zeroSizeRow<7>);
RADIX_OPS_CASES("zero_size_8", zeroSizeRow<8>);
RADIX_OPS_CASES("zero_size_9", zeroSizeRow<9>);
RADIX_OPS_CASES("zero_size_10", zeroSizeRow<10>);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest

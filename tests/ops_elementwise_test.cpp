// Elementwise ops, constants and conversions against naive references.
#include "ops_testing.h"

namespace opstest {
namespace {

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
  };
  const Shape shapes[] = {sh({129}), sh({}), sh({17, 1, 3})};
  std::vector<Case> cases;
  for (const NamedOp1& u : unary)
    for (const Shape& s : shapes) {
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
      // A tensor made inside the function that is neither an argument nor an op's result.
      {"convert_placeholder", {}, [](const Ts&) { return Tensor(sh({3})).convert(f16); }, "[convert]", "{3}:f32 is a placeholder"},
  };
  return cases;
}

}  // namespace

RADIX_OPS_CASES("unary", unaryCases);
RADIX_OPS_CASES("binary", binaryCases);
RADIX_OPS_CASES("integer", integerCases);
RADIX_OPS_CASES("constant", constantCases);
RADIX_OPS_CASES("convert", convertCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest

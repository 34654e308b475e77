// Creation ops (iota, arange, linspace, constantTensor) and the masks built from them, against
// naive references.
#include "ops_testing.h"

#include <limits>

namespace opstest {
namespace {

/// Index along `axis` of each element of `dims`, row-major.
Vals iotaValues(const Dims& dims, size_t axis) {
  Vals out;
  forEachIndex(dims, [&](const Dims& i) { out.push_back(static_cast<double>(i[axis])); });
  return out;
}

Ref fixed(Vals v) {
  return [=](const std::vector<Host>&) { return v; };
}

/// The values as `dtype` holds them, whatever the inputs.
Ref fixedIn(DType dtype, Vals v) {
  return [=](const std::vector<Host>&) { return v.empty() ? v : roundedTo(dtype, v); };
}

Vals linspaceValues(double start, double end, int64_t n) {
  Vals out;
  const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0;
  for (int64_t i = 0; i < n; ++i) out.push_back(i < (n + 1) / 2 ? start + static_cast<double>(i) * step : end - static_cast<double>(n - 1 - i) * step);
  return out;
}

std::vector<Case> iotaCases() {
  using D = DType;
  std::vector<Case> cases;
  for (D d : {D::f32, D::f16, D::bf16, D::i32, D::i64, D::u8}) {
    const std::string w(radix::name(d));
    cases.push_back({"iota_129_" + w, {}, [d](const Ts&) { return Tensor::iota(sh({129}, d), 0); }, fixedIn(d, iotaValues({129}, 0)), sh({129}, d)});
    cases.push_back({"iota_3x17_axis0_" + w, {}, [d](const Ts&) { return Tensor::iota(sh({3, 17}, d), 0); }, fixedIn(d, iotaValues({3, 17}, 0)), sh({3, 17}, d)});
    cases.push_back({"iota_3x17_axis1_" + w, {}, [d](const Ts&) { return Tensor::iota(sh({3, 17}, d), -1); }, fixedIn(d, iotaValues({3, 17}, 1)), sh({3, 17}, d)});
  }
  cases.push_back({"iota_tagged", {}, [](const Ts&) { return Tensor::iota(sh({2, 7, 3}, {"b", "s", "d"}, D::i32), "s"); }, fixed(iotaValues({2, 7, 3}, 1)),
                   sh({2, 7, 3}, {"b", "s", "d"}, D::i32)});
  cases.push_back({"iota_size1", {}, [](const Ts&) { return Tensor::iota(sh({1, 5}), 0); }, fixed(Vals(5, 0)), sh({1, 5})});
  // As a traced value: iota plus an argument.
  cases.push_back({"iota_plus_arg", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].add(Tensor::iota(x[0].shape(), "d")); },
                   [](const std::vector<Host>& in) {
                     Vals i = iotaValues({3, 17}, 1);
                     for (size_t k = 0; k < i.size(); ++k) i[k] += in[0].v[k];
                     return i;
                   },
                   sh({3, 17}, {"b", "d"}), kFloats, -2, 2, {}, 0.02});

  cases.push_back({"arange_7", {}, [](const Ts&) { return Tensor::arange(7, D::i64); }, fixed({0, 1, 2, 3, 4, 5, 6}), sh({7}, D::i64)});
  cases.push_back({"arange_129_bf16", {}, [](const Ts&) { return Tensor::arange(129, D::bf16); }, fixedIn(D::bf16, iotaValues({129}, 0)), sh({129}, D::bf16)});
  cases.push_back({"arange_step", {}, [](const Ts&) { return Tensor::arange(2, 9, 3, D::i32); }, fixed({2, 5, 8}), sh({3}, D::i32)});
  cases.push_back({"arange_step_exact_end", {}, [](const Ts&) { return Tensor::arange(2, 11, 3, D::i32); }, fixed({2, 5, 8}), sh({3}, D::i32)});
  cases.push_back({"arange_negative_step", {}, [](const Ts&) { return Tensor::arange(5, -6, -4, D::f32); }, fixed({5, 1, -3}), sh({3})});
  cases.push_back({"arange_f16", {}, [](const Ts&) { return Tensor::arange(-3, 14, 1, D::f16); }, fixed(linspaceValues(-3, 13, 17)), sh({17}, D::f16)});

  auto linspace = [](double a, double b, int64_t n, D d) -> Op { return [=](const Ts&) { return Tensor::linspace(a, b, n, d); }; };
  for (D d : {D::f32, D::f16, D::bf16, D::f64}) {
    const std::string w(radix::name(d));
    cases.push_back({"linspace_5_" + w, {}, linspace(0, 1, 5, d), fixedIn(d, {0, 0.25, 0.5, 0.75, 1}), sh({5}, d)});
    cases.push_back({"linspace_129_" + w, {}, linspace(-3, 7.5, 129, d), fixedIn(d, linspaceValues(-3, 7.5, 129)), sh({129}, d)});
  }
  cases.push_back({"linspace_1", {}, linspace(2.5, 9, 1, D::f32), fixed({2.5}), sh({1})});
  cases.push_back({"linspace_descending", {}, linspace(1, -1, 3, D::f32), fixed({1, 0, -1}), sh({3})});
  // Integers: the f64 values truncate toward zero, as convert.
  cases.push_back({"linspace_i32", {}, linspace(0, 10, 4, D::i32), fixed({0, 3, 6, 10}), sh({4}, D::i32)});
  return cases;
}

/// Zero-size results, one per section (see zeroSizeRow).
std::vector<Case> emptyCreationCases() {
  using D = DType;
  auto linspace = [](double a, double b, int64_t n, D d) -> Op { return [=](const Ts&) { return Tensor::linspace(a, b, n, d); }; };
  std::vector<Case> cases;
  cases.push_back({"iota_empty", {}, [](const Ts&) { return Tensor::iota(sh({0, 5}), 1); }, fixed({}), sh({0, 5})});
  cases.push_back({"arange_0", {}, [](const Ts&) { return Tensor::arange(0, D::f32); }, fixed({}), sh({0})});
  cases.push_back({"arange_wrong_direction", {}, [](const Ts&) { return Tensor::arange(5, 9, -1, D::i32); }, fixed({}), sh({0}, D::i32)});
  cases.push_back({"linspace_0", {}, linspace(2.5, 9, 0, D::f32), fixed({}), sh({0})});
  cases.push_back({"constantTensor_empty", {}, [](const Ts&) { return Tensor::constantTensor(sh({0, 3}), {}); }, fixed({}), sh({0, 3})});
  return cases;
}

std::vector<Case> constantTensorCases() {
  using D = DType;
  const Vals v6 = {1.5, -2, 0, 3.25, 1e-3, -7};
  std::vector<Case> cases;
  for (D d : kFloats)
    cases.push_back({"constantTensor_" + std::string(radix::name(d)), {}, [=](const Ts&) { return Tensor::constantTensor(sh({2, 3}, d), v6); },
                     fixedIn(d, v6), sh({2, 3}, d), {}, 0, 0, {}, 0});
  cases.push_back({"constantTensor_i32_tagged", {}, [](const Ts&) { return Tensor::constantTensor(sh({3}, {"c"}, D::i32), {-5, 0, 2147483647.0}); },
                   fixed({-5, 0, 2147483647.0}), sh({3}, {"c"}, D::i32)});
  cases.push_back({"constantTensor_bool", {}, [](const Ts&) { return Tensor::constantTensor(sh({4}, D::bool_), {0, 1, 2, 0}); }, fixed({0, 1, 1, 0}),
                   sh({4}, D::bool_)});
  // Integers saturate, NaN gives 0, fractions truncate (as convert).
  cases.push_back({"constantTensor_i8_saturates", {}, [](const Ts&) { return Tensor::constantTensor(sh({5}, D::i8), {NAN, 1e30, -1e30, 2.7, -2.7}); },
                   fixed({0, 127, -128, 2, -2}), sh({5}, D::i8)});
  cases.push_back({"constant_u8_saturates", {}, [](const Ts&) { return Tensor::constant(sh({2}, D::u8), 300).add(Tensor::scalar(-5, D::u8)); },
                   fixed({255, 255}), sh({2}, D::u8)});
  cases.push_back({"constantTensor_scalar", {}, [](const Ts&) { return Tensor::constantTensor(sh({}), {4.5}); }, fixed({4.5}), sh({})});
  Vals many(129);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i) * 0.5 - 30;
  cases.push_back({"constantTensor_mul_arg", {sh({129})}, [many](const Ts& x) { return x[0].mul(Tensor::constantTensor(x[0].shape(), many)); },
                   [many](const std::vector<Host>& in) {
                     Vals out;
                     for (size_t i = 0; i < many.size(); ++i) out.push_back(in[0].v[i] * many[i]);
                     return out;
                   },
                   sh({129})});
  return cases;
}

/// Keeps x where index(col) - index(row) <= k, zero elsewhere.
Ref triangularRef(size_t row, size_t col, int64_t k) {
  return [=](const std::vector<Host>& in) {
    Vals out;
    size_t n = 0;
    forEachIndex(in[0].dims, [&](const Dims& i) {
      out.push_back(i[col] - i[row] <= k ? in[0].v[n] : 0.0);
      ++n;
    });
    return out;
  };
}

std::vector<Case> maskCases() {
  using D = DType;
  const D B = D::bool_;
  auto tri = [](radix::Axis r, radix::Axis c, int64_t k) -> Op { return [=](const Ts& x) { return x[0].triangular(r, c, k); }; };
  std::vector<Case> cases = {
      {"triangular_lower", {sh({5, 7})}, tri(0, 1, 0), triangularRef(0, 1, 0), sh({5, 7}), kFloats},
      {"triangular_strict", {sh({5, 7})}, tri(0, 1, -1), triangularRef(0, 1, -1), sh({5, 7}), kFloats},
      {"triangular_upper_band", {sh({7, 5})}, tri(0, 1, 2), triangularRef(0, 1, 2), sh({7, 5}), kFloats},
      {"triangular_swapped", {sh({5, 7})}, tri(1, 0, 0), triangularRef(1, 0, 0), sh({5, 7}), kFloats},
      {"triangular_tagged", {sh({2, 3, 4}, {"b", "s", "t"})}, tri("s", "t", 1), triangularRef(1, 2, 1), sh({2, 3, 4}, {"b", "s", "t"}), kFloats},
      {"triangular_i32", {sh({17, 3}, D::i32)}, tri(-2, -1, 0), triangularRef(0, 1, 0), sh({17, 3}, D::i32), {}, -100, 100},
      {"triangular_bool", {sh({4, 4}, B)}, tri(0, 1, -2), triangularRef(0, 1, -2), sh({4, 4}, B), {}, 0, 2},
  };
  auto causal = [](Shape s, radix::Axis q, radix::Axis k) -> Op { return [=](const Ts&) { return Tensor::causalMask(s, q, k); }; };
  auto causalRef = [](Dims dims, size_t q, size_t k) {
    return [=](const std::vector<Host>&) {
      Vals out;
      forEachIndex(dims, [&](const Dims& i) { out.push_back(i[k] <= i[q] ? 1.0 : 0.0); });
      return out;
    };
  };
  cases.push_back({"causalMask_4x6", {}, causal(sh({4, 6}, {"q", "k"}), "q", "k"), causalRef({4, 6}, 0, 1), sh({4, 6}, {"q", "k"}, B)});
  cases.push_back({"causalMask_batched", {}, causal(sh({2, 5, 3}, {"h", "k", "q"}, D::f16), "q", "k"), causalRef({2, 5, 3}, 2, 1), sh({2, 5, 3}, {"h", "k", "q"}, B)});
  cases.push_back({"causalMask_untagged", {}, causal(sh({17, 17}), 0, 1), causalRef({17, 17}, 0, 1), sh({17, 17}, B)});

  auto oneHotRef = [](int64_t n) {
    return [=](const std::vector<Host>& in) {
      Vals out;
      for (double x : in[0].v)
        for (int64_t c = 0; c < n; ++c) out.push_back(x == static_cast<double>(c) ? 1.0 : 0.0);
      return out;
    };
  };
  auto oneHot = [](int64_t n, radix::Tag t, D d) -> Op { return [=](const Ts& x) { return x[0].oneHot(n, t, d); }; };
  // Out-of-range indices (-1, 5, 300) give all-zero rows.
  cases.push_back({"oneHot_i32", {sh({7}, {"b"}, D::i32)}, oneHot(5, "c", D::f32), oneHotRef(5), sh({7, 5}, {"b", "c"}), {}, 0, 0, {{0, 4, -1, 5, 2, 300, 4}}});
  cases.push_back({"oneHot_u8_bool", {sh({2, 3}, D::u8)}, oneHot(3, {}, B), oneHotRef(3), sh({2, 3, 3}, B), {}, 0, 0, {{0, 1, 2, 3, 255, 1}}});
  cases.push_back({"oneHot_i64_bf16", {sh({17}, D::i64)}, oneHot(17, "v", D::bf16), oneHotRef(17), sh({17, 17}, {"", "v"}, D::bf16), {}, -2, 19});
  cases.push_back({"oneHot_scalar", {sh({}, D::i32)}, oneHot(4, "c", D::i32), oneHotRef(4), sh({4}, {"c"}, D::i32), {}, 0, 0, {{2}}});
  cases.push_back({"oneHot_u8_300_classes", {sh({3}, D::u8)}, oneHot(300, "c", D::f32), oneHotRef(300), sh({3, 300}, {"", "c"}), {}, 0, 0, {{0, 44, 255}}});
  return cases;
}

std::vector<ErrorCase> errorCases() {
  using D = DType;
  const D b = D::bool_;
  auto none = [](std::function<Tensor()> f) -> Op { return [f](const Ts&) { return f(); }; };
  return {
      {"iota_axis", {}, none([] { return Tensor::iota(sh({3, 17}), 2); }), "[iota]", "axis 2 out of range for {3,17}:f32"},
      {"iota_tag", {}, none([] { return Tensor::iota(sh({3}, {"b"}), "d"); }), "[iota]", "no axis tagged \"d\" in {b=3}:f32"},
      {"iota_bool", {}, none([] { return Tensor::iota(sh({3}, D::bool_), 0); }), "[iota]", "{3}:bool"},
      {"arange_negative", {}, none([] { return Tensor::arange(-1, D::i32); }), "[arange]", "n >= 0, got -1"},
      {"arange_step_zero", {}, none([] { return Tensor::arange(0, 5, 0, D::i32); }), "[arange]", "step != 0"},
      {"arange_invalid_dtype", {}, none([] { return Tensor::arange(0, 3, 1, static_cast<D>(13)); }), "[arange]", "invalid DType 13"},
      {"linspace_invalid_dtype", {}, none([] { return Tensor::linspace(0, 1, 3, static_cast<D>(13)); }), "[linspace]", "invalid DType 13"},
      {"oneHot_invalid_dtype", {sh({3}, D::i32)}, [](const Ts& x) { return x[0].oneHot(4, "c", static_cast<D>(13)); }, "[oneHot]", "invalid DType 13"},
      {"arange_too_many", {}, none([] { return Tensor::arange(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 1, D::i8); }),
       "[arange]", "too many values"},
      {"arange_bool", {}, none([] { return Tensor::arange(0, 5, 1, D::bool_); }), "[arange]", "bool"},
      {"linspace_negative", {}, none([] { return Tensor::linspace(0, 1, -2, D::f32); }), "[linspace]", "n >= 0, got -2"},
      {"linspace_inf", {}, none([] { return Tensor::linspace(0, INFINITY, 3, D::f32); }), "[linspace]", "finite"},
      {"linspace_bool", {}, none([] { return Tensor::linspace(0, 1, 3, D::bool_); }), "[linspace]", "bool"},
      {"constantTensor_count", {}, none([] { return Tensor::constantTensor(sh({2, 3}), {1, 2}); }), "[constantTensor]", "2 values for {2,3}:f32, which holds 6"},
      {"triangular_same_axis", {sh({3, 3})}, [](const Ts& x) { return x[0].triangular(0, -2, 0); }, "[triangular]", "one axis (0) of {3,3}:f32"},
      {"triangular_axis", {sh({3})}, [](const Ts& x) { return x[0].triangular(0, 1, 0); }, "[triangular]", "axis 1 out of range for {3}:f32"},
      {"triangular_tag", {sh({3, 3}, {"s", "t"})}, [](const Ts& x) { return x[0].triangular("s", "u", 0); }, "[triangular]", "no axis tagged \"u\""},
      {"causalMask_same_axis", {}, none([] { return Tensor::causalMask(sh({3, 3}, {"q", "k"}), "q", 0); }), "[causalMask]", "one axis (0) of {q=3,k=3}:f32"},
      {"causalMask_tag", {}, none([] { return Tensor::causalMask(sh({3, 3}, {"q", "k"}), "q", "s"); }), "[causalMask]", "no axis tagged \"s\""},
      {"oneHot_float", {sh({3})}, [](const Ts& x) { return x[0].oneHot(4, "c", D::f32); }, "[oneHot]", "integer class indices, got {3}:f32"},
      {"oneHot_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].oneHot(4, "c", D::f32); }, "[oneHot]", "{3}:bool"},
      {"oneHot_negative", {sh({3}, D::i32)}, [](const Ts& x) { return x[0].oneHot(-1, "c", D::f32); }, "[oneHot]", "numClasses >= 0, got -1"},
      {"oneHot_tag_taken", {sh({3}, {"c"}, D::i32)}, [](const Ts& x) { return x[0].oneHot(4, "c", D::f32); }, "[oneHot]", "tag \"c\" is already an axis of {c=3}:i32"},
      {"oneHot_rank", {sh({1, 1, 1, 1, 1, 1, 1, 1}, D::i32)}, [](const Ts& x) { return x[0].oneHot(4, "c", D::f32); }, "[oneHot]", "no room for a new axis"},
  };
}

}  // namespace

RADIX_OPS_CASES("iota", iotaCases);
RADIX_OPS_CASES("constantTensor", constantTensorCases);
RADIX_OPS_CASES("masks", maskCases);
// One zero-size row per section, so that each compiles alone: a function returning two zero-size
// results crashes buffer-results-to-out-params (both become one tensor.empty, returned twice).
template <int K>
std::vector<Case> emptyCreationRow() {
  return {emptyCreationCases().at(K)};
}
RADIX_OPS_CASES("creation_empty_0", emptyCreationRow<0>);
RADIX_OPS_CASES("creation_empty_1", emptyCreationRow<1>);
RADIX_OPS_CASES("creation_empty_2", emptyCreationRow<2>);
RADIX_OPS_CASES("creation_empty_3", emptyCreationRow<3>);
RADIX_OPS_CASES("creation_empty_4", emptyCreationRow<4>);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest

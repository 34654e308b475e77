// Every Tensor op against a naive C++ reference (f32, f16, bf16 and integers, odd shapes), and
// the "[op] ..." error each op throws on bad input.
#include <radix/radix.h>
#include <radix/testing.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using radix::DType;
using radix::Shape;
using radix::Tag;
using radix::Tensor;

using Dims = std::vector<int64_t>;
using Vals = std::vector<double>;
using Ts = std::vector<Tensor>;
using Pairs = std::vector<std::pair<int, int>>;

const radix::Platform& cpu() {
  static const radix::Platform platform = radix::Platform::cpu();
  return platform;
}

Shape sh(const Dims& dims, DType dtype = DType::f32) { return Shape(dims, dtype); }
Shape sh(const Dims& dims, const std::vector<Tag>& tags, DType dtype = DType::f32) { return Shape(dims, dtype).withTags(tags); }

// ---- naive reference ----

/// An input as the reference sees it: values already rounded through the input's dtype.
struct Host {
  Vals v;
  Dims dims;
};
using Ref = std::function<Vals(const std::vector<Host>&)>;
using Op = std::function<Tensor(const Ts&)>;

int64_t countOf(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// Calls f(index) for every multi-index of `dims` in row-major order (once for rank 0).
template <class F>
void forEachIndex(const Dims& dims, F&& f) {
  Dims idx(dims.size(), 0);
  for (int64_t n = countOf(dims); n > 0; --n) {
    f(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

/// Row-major offset of `idx`; size-1 axes (and rank 0) read element 0, which is broadcasting.
int64_t offsetOf(const Dims& dims, const Dims& idx) {
  int64_t o = 0;
  for (size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + (dims[i] == 1 ? 0 : idx[i]);
  return o;
}

Ref map1(double (*f)(double)) {
  return [f](const std::vector<Host>& in) {
    Vals out;
    for (double x : in[0].v) out.push_back(f(x));
    return out;
  };
}

/// Binary elementwise with strict broadcasting: a scalar side, or equal rank with size-1 axes.
Ref map2(double (*f)(double, double)) {
  return [f](const std::vector<Host>& in) {
    const Host &a = in[0], &b = in[1];
    Dims dims = a.dims.size() >= b.dims.size() ? a.dims : b.dims;
    if (a.dims.size() == b.dims.size())
      for (size_t i = 0; i < dims.size(); ++i) dims[i] = std::max(a.dims[i], b.dims[i]);
    Vals out;
    forEachIndex(dims, [&](const Dims& i) { out.push_back(f(a.v[offsetOf(a.dims, i)], b.v[offsetOf(b.dims, i)])); });
    return out;
  };
}

/// Result axes: batching pairs, then lhs free axes, then rhs free axes (all in input order).
Ref dotRef(Pairs contracting, Pairs batching) {
  return [=](const std::vector<Host>& in) {
    const Host &a = in[0], &b = in[1];
    auto isFree = [&](int axis, bool lhs) {
      for (const Pairs* ps : {&contracting, &batching})
        for (auto [i, j] : *ps)
          if ((lhs ? i : j) == axis) return false;
      return true;
    };
    Dims outDims, sumDims;
    std::vector<int> freeA, freeB;
    for (auto [i, j] : batching) outDims.push_back(a.dims[i]);
    for (int i = 0; i < static_cast<int>(a.dims.size()); ++i)
      if (isFree(i, true)) freeA.push_back(i), outDims.push_back(a.dims[i]);
    for (int j = 0; j < static_cast<int>(b.dims.size()); ++j)
      if (isFree(j, false)) freeB.push_back(j), outDims.push_back(b.dims[j]);
    for (auto [i, j] : contracting) sumDims.push_back(a.dims[i]);
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims ia(a.dims.size()), ib(b.dims.size());
      size_t k = 0;
      for (auto [i, j] : batching) ia[i] = ib[j] = o[k++];
      for (int i : freeA) ia[i] = o[k++];
      for (int j : freeB) ib[j] = o[k++];
      double s = 0;
      forEachIndex(sumDims, [&](const Dims& c) {
        for (size_t n = 0; n < contracting.size(); ++n) ia[contracting[n].first] = ib[contracting[n].second] = c[n];
        s += a.v[offsetOf(a.dims, ia)] * b.v[offsetOf(b.dims, ib)];
      });
      out.push_back(s);
    });
    return out;
  };
}

/// Axis i of the input lands on axis axes[i] of `outDims`.
Ref broadcastRef(Dims outDims, Dims axes) {
  return [=](const std::vector<Host>& in) {
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims i(axes.size());
      for (size_t k = 0; k < axes.size(); ++k) i[k] = o[axes[k]];
      out.push_back(in[0].v[offsetOf(in[0].dims, i)]);
    });
    return out;
  };
}

/// Result axis i is input axis perm[i].
Ref transposeRef(Dims perm) {
  return [=](const std::vector<Host>& in) {
    Dims outDims;
    for (int64_t p : perm) outDims.push_back(in[0].dims[p]);
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims i(perm.size());
      for (size_t k = 0; k < perm.size(); ++k) i[perm[k]] = o[k];
      out.push_back(in[0].v[offsetOf(in[0].dims, i)]);
    });
    return out;
  };
}

Ref reduceRef(int axis, bool isMax) {
  return [=](const std::vector<Host>& in) {
    Dims outDims = in[0].dims;
    outDims[axis] = 1;
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims i = o;
      double acc = isMax ? -INFINITY : 0;
      for (i[axis] = 0; i[axis] < in[0].dims[axis]; ++i[axis]) {
        const double x = in[0].v[offsetOf(in[0].dims, i)];
        acc = isMax ? std::max(acc, x) : acc + x;
      }
      out.push_back(acc);
    });
    return out;
  };
}

Ref sameValues() {
  return [](const std::vector<Host>& in) { return in[0].v; };
}

Ref filledWith(int64_t n, double value) {
  return [=](const std::vector<Host>&) { return Vals(n, value); };
}

/// The values as `dtype` holds them (round-to-nearest through a device buffer).
Vals roundedTo(DType dtype, const Vals& v) {
  return Tensor::fromValues(cpu(), Shape({static_cast<int64_t>(v.size())}, dtype), v).toVector<double>();
}

Ref roundedTo(DType dtype) {
  return [=](const std::vector<Host>& in) { return roundedTo(dtype, in[0].v); };
}

// ---- cases ----

/// One op on some inputs, checked against `ref`. With `dtypes`, the case runs once per dtype,
/// which replaces the dtype of every input and of `out`.
struct Case {
  std::string name;
  std::vector<Shape> inputs;
  Op op;
  Ref ref;
  Shape out;                 // expected result shape, tags and dtype included
  std::vector<DType> dtypes;  // empty: shapes as written
  double lo = -2, hi = 2;     // range of the pseudo-random inputs (floored for integer dtypes)
  std::vector<Vals> given = {};  // fixed inputs instead of pseudo-random ones
  double tol = -1;            // < 0: by the result dtype
  std::string group = {};     // set by allCases: the cases that compile together
};

// GoogleTest prints parameters on failure; the name says it all.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

double tolFor(DType d) {
  switch (d) {
    case DType::f32: return 1e-5;
    case DType::f16: return 2e-3;
    case DType::bf16: return 2e-2;
    default: return 0;
  }
}

/// A small LCG, so that every run (and every machine) sees the same inputs.
Vals pseudoRandom(int64_t n, double lo, double hi, uint32_t seed, bool integral) {
  Vals v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (double& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * ((s >> 8) / 16777216.0);
    if (integral) x = std::floor(x);
  }
  return v;
}

const std::vector<DType> kFloats = {DType::f32, DType::f16, DType::bf16};

std::string dimsName(const Shape& s) {
  if (s.rank() == 0) return "scalar";
  std::string out;
  for (int64_t i = 0; i < s.rank(); ++i) out += (i ? "x" : "") + std::to_string(s.dim(i));
  return out;
}

struct NamedOp1 {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  double lo, hi;
};

struct NamedOp2 {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  double lo, hi;
};

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

// Ops with their arguments bound, so that a case row stays one line.
Op dotGeneralOp(std::vector<radix::AxisPair> c, std::vector<radix::AxisPair> b) {
  return [=](const Ts& x) { return x[0].dotGeneral(x[1], c, b); };
}
Op dotOp(std::vector<Tag> tags) { return [=](const Ts& x) { return x[0].dot(x[1], tags); }; }
Op broadOp(Shape to) { return [=](const Ts& x) { return x[0].broad(to); }; }
Op broadcastOp(Shape to, Dims axes) { return [=](const Ts& x) { return x[0].broadcast(to, axes); }; }
Op reshapeOp(Dims dims) { return [=](const Ts& x) { return x[0].reshape(dims); }; }
Op transposeOp(std::vector<radix::Axis> perm) { return [=](const Ts& x) { return x[0].transpose(perm); }; }
Op sumOp(radix::Axis a) { return [=](const Ts& x) { return x[0].sum(a); }; }
Op maxOp(radix::Axis a) { return [=](const Ts& x) { return x[0].max(a); }; }

std::vector<Case> contractionCases() {
  const auto F = kFloats;
  const std::vector<Tag> bmk = {"b", "m", "k"}, bkn = {"b", "k", "n"}, bmn = {"b", "m", "n"};
  return {
      {"dotGeneral_matvec", {sh({3, 17}), sh({17})}, dotGeneralOp({{-1, 0}}, {}), dotRef({{1, 0}}, {}), sh({3}), F},
      {"dotGeneral_matmul", {sh({3, 17}), sh({17, 5})}, dotGeneralOp({{1, 0}}, {}), dotRef({{1, 0}}, {}), sh({3, 5}), F},
      {"dotGeneral_inner129", {sh({129}), sh({129})}, dotGeneralOp({{0, 0}}, {}), dotRef({{0, 0}}, {}), sh({}), F, -1, 1},
      {"dotGeneral_batched_tags", {sh({4, 3, 17}, bmk), sh({4, 17, 5}, bkn)}, dotGeneralOp({{"k", "k"}}, {{"b", "b"}}), dotRef({{2, 1}}, {{0, 0}}), sh({4, 3, 5}, bmn), F},
      {"dotGeneral_batched_rhs_last", {sh({3, 4, 17}), sh({17, 5, 4})}, dotGeneralOp({{2, 0}}, {{1, 2}}), dotRef({{2, 0}}, {{1, 2}}), sh({4, 3, 5}), F},
      {"dotGeneral_two_contracting", {sh({3, 17, 2}), sh({2, 5, 17})}, dotGeneralOp({{1, 2}, {2, 0}}, {}), dotRef({{1, 2}, {2, 0}}, {}), sh({3, 5}), F},
      {"dotGeneral_negative_axes", {sh({17, 3}), sh({5, 17})}, dotGeneralOp({{-2, -1}}, {}), dotRef({{0, 1}}, {}), sh({3, 5}), F},
      {"dot_batch_by_tag", {sh({4, 3, 17}, bmk), sh({4, 17, 5}, bkn)}, dotOp({"k"}), dotRef({{2, 1}}, {{0, 0}}), sh({4, 3, 5}, bmn), F},
      {"dot_tags_anywhere", {sh({17, 3}, {"k", "m"}), sh({5, 17}, {"n", "k"})}, dotOp({"k"}), dotRef({{0, 1}}, {}), sh({3, 5}, {"m", "n"}), F},
      {"dot_two_tags", {sh({2, 3, 5}, {"a", "k", "j"}), sh({5, 3}, {"j", "k"})}, dotOp({"k", "j"}), dotRef({{1, 1}, {2, 0}}, {}), sh({2}, {"a"}), F},
      // A shared tag that is not contracted becomes a leading batch axis, wherever it was.
      {"dot_batch_not_leading", {sh({3, 4, 17}, {"m", "b", "k"}), sh({17, 4}, {"k", "b"})}, dotOp({"k"}), dotRef({{2, 0}}, {{1, 1}}), sh({4, 3}, {"b", "m"}), F},
  };
}

std::vector<Case> layoutCases() {
  const auto F = kFloats;
  return {
      {"broad_right_aligned", {sh({17})}, broadOp(sh({3, 17})), broadcastRef({3, 17}, {1}), sh({3, 17}), F},
      {"broad_right_aligned_size1", {sh({1, 3})}, broadOp(sh({17, 5, 3})), broadcastRef({17, 5, 3}, {1, 2}), sh({17, 5, 3}), F},
      {"broad_same_rank", {sh({3, 1})}, broadOp(sh({3, 17})), broadcastRef({3, 17}, {0, 1}), sh({3, 17}), F},
      {"broad_scalar", {sh({})}, broadOp(sh({17, 1, 3})), broadcastRef({17, 1, 3}, {}), sh({17, 1, 3}), F},
      // Tags in another order than the target's: needs a transpose.
      {"broad_tags", {sh({3, 2}, {"d", "b"})}, broadOp(sh({2, 5, 3}, {"b", "s", "d"})), broadcastRef({2, 5, 3}, {2, 0}), sh({2, 5, 3}, {"b", "s", "d"}), F},
      {"broad_tags_size1", {sh({1}, {"d"})}, broadOp(sh({4, 3}, {"b", "d"})), broadcastRef({4, 3}, {1}), sh({4, 3}, {"b", "d"}), F},
      {"broadcast_leading", {sh({3})}, broadcastOp(sh({3, 17}), {0}), broadcastRef({3, 17}, {0}), sh({3, 17}), F},
      {"broadcast_transposing", {sh({3, 17})}, broadcastOp(sh({17, 5, 3}), {2, 0}), broadcastRef({17, 5, 3}, {2, 0}), sh({17, 5, 3}), F},
      {"broadcast_transposing_size1", {sh({1, 17})}, broadcastOp(sh({17, 3}), {1, 0}), broadcastRef({17, 3}, {1, 0}), sh({17, 3}), F},
      {"broadcast_scalar", {sh({})}, broadcastOp(sh({129}), {}), broadcastRef({129}, {}), sh({129}), F},
      {"broadcast_tagged_target", {sh({3})}, broadcastOp(sh({2, 3}, {"b", "d"}), {1}), broadcastRef({2, 3}, {1}), sh({2, 3}, {"b", "d"}), F},

      {"reshape_2d", {sh({3, 17})}, reshapeOp({17, 3}), sameValues(), sh({17, 3}), F},
      {"reshape_split", {sh({129})}, reshapeOp({3, 43}), sameValues(), sh({3, 43}), F},
      {"reshape_flatten_drops_tags", {sh({17, 1, 3}, {"a", "b", "c"})}, reshapeOp({51}), sameValues(), sh({51}), F},
      {"reshape_from_scalar", {sh({})}, reshapeOp({1, 1}), sameValues(), sh({1, 1}), F},
      {"reshape_scalar_to_rank1", {sh({})}, reshapeOp({1}), sameValues(), sh({1}), F},
      {"reshape_rank1_to_scalar", {sh({1})}, reshapeOp({}), sameValues(), sh({}), F},
      {"reshape_to_scalar", {sh({1, 1, 1})}, reshapeOp({}), sameValues(), sh({}), F},

      {"transpose_2d", {sh({3, 17})}, transposeOp({1, 0}), transposeRef({1, 0}), sh({17, 3}), F},
      {"transpose_3d", {sh({17, 1, 3})}, transposeOp({2, 0, 1}), transposeRef({2, 0, 1}), sh({3, 17, 1}), F},
      {"transpose_negative", {sh({3, 4, 17})}, transposeOp({1, -1, 0}), transposeRef({1, 2, 0}), sh({4, 17, 3}), F},
      {"transpose_tags", {sh({3, 17, 2}, {"b", "s", "d"})}, transposeOp({"d", "b", "s"}), transposeRef({2, 0, 1}), sh({2, 3, 17}, {"d", "b", "s"}), F},
      {"transpose_scalar", {sh({})}, transposeOp({}), transposeRef({}), sh({}), F},
      {"withTags", {sh({3, 17})}, [](const Ts& x) { return x[0].withTags({"b", "d"}); }, sameValues(), sh({3, 17}, {"b", "d"}), F},
  };
}

std::vector<Case> reduceCases() {
  const auto F = kFloats;
  return {
      {"sum_last", {sh({3, 17})}, sumOp(1), reduceRef(1, false), sh({3, 1}), F},
      {"sum_first", {sh({3, 17})}, sumOp(0), reduceRef(0, false), sh({1, 17}), F},
      {"sum_129", {sh({129})}, sumOp(0), reduceRef(0, false), sh({1}), F},
      {"sum_negative_axis", {sh({17, 1, 3})}, sumOp(-1), reduceRef(2, false), sh({17, 1, 1}), F},
      {"sum_tag", {sh({3, 17, 5}, {"b", "s", "d"})}, sumOp("s"), reduceRef(1, false), sh({3, 1, 5}, {"b", "s", "d"}), F},
      // All negative: a max that starts from 0 would return 0.
      {"max_last", {sh({3, 17})}, maxOp(1), reduceRef(1, true), sh({3, 1}), F, -5, -1},
      {"max_first", {sh({3, 17})}, maxOp(0), reduceRef(0, true), sh({1, 17}), F, -5, -1},
      {"max_129", {sh({129})}, maxOp(-1), reduceRef(0, true), sh({1}), F},
      {"max_tag", {sh({3, 17, 5}, {"b", "s", "d"})}, maxOp("s"), reduceRef(1, true), sh({3, 1, 5}, {"b", "s", "d"}), F},
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

struct Section {
  const char* name;
  std::vector<Case> (*rows)();
};

/// Every case, one per dtype of its row; cases of one section and dtype form a group.
std::vector<Case> allCases() {
  const Section sections[] = {{"unary", unaryCases},     {"binary", binaryCases}, {"integer", integerCases},
                              {"contraction", contractionCases}, {"layout", layoutCases}, {"reduce", reduceCases},
                              {"constant", constantCases}, {"convert", convertCases}};
  std::vector<Case> out;
  for (const Section& section : sections)
    for (const Case& c : section.rows()) {
      if (c.dtypes.empty()) {
        out.push_back(c);
        out.back().group = section.name;
      }
      for (DType d : c.dtypes) {
        Case e = c;
        e.name += "_" + std::string(radix::name(d));
        e.group = std::string(section.name) + "_" + std::string(radix::name(d));
        for (Shape& s : e.inputs) s = s.withDtype(d);
        e.out = c.out.withDtype(d);
        out.push_back(e);
      }
    }
  return out;
}

/// What one case computed: its inputs as the reference sees them, and its result.
struct Outcome {
  std::vector<Host> inputs;
  Tensor result;
  std::string error;  // the case failed to trace, compile or run
};

/// Compiles one function that applies cases[k].op to args[k] for every k, and runs it.
Ts runTogether(const std::vector<const Case*>& cases, const std::vector<Ts>& args) {
  auto all = [&cases](const std::vector<Ts>& a) {
    Ts results;
    for (size_t k = 0; k < cases.size(); ++k) results.push_back(cases[k]->op(a[k]));
    return results;
  };
  return radix::testing::compileAndCall(cpu(), all, args);
}

/// True if GoogleTest will run case `name` in this process (after --gtest_filter and sharding).
bool selected(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit.total_test_suite_count(); ++i)
      for (int j = 0; j < unit.GetTestSuite(i)->total_test_count(); ++j) {
        const ::testing::TestInfo& test = *unit.GetTestSuite(i)->GetTestInfo(j);
        const std::string testName = test.name();
        if (test.should_run() && std::string(test.test_suite_name()) == "Ops/OpsNumerics")
          out.insert(testName.substr(testName.find('/') + 1));
      }
    return out;
  }();
  return names.contains(name);
}

/// Runs the selected cases of c's group as one compiled function, once per process: compiling
/// each case alone costs ~50 ms, and there are ~400. Selected only, so that ctest, which runs
/// one test per process, compiles one case each time.
const Outcome& outcomeOf(const Case& c) {
  static std::map<std::string, std::map<std::string, Outcome>> groups;
  auto [it, fresh] = groups.try_emplace(c.group);
  std::map<std::string, Outcome>& outcomes = it->second;
  if (!fresh) return outcomes.at(c.name);
  std::vector<Case> cases;
  for (Case& e : allCases())
    if (e.group == c.group && (e.name == c.name || selected(e.name))) cases.push_back(std::move(e));
  std::vector<const Case*> pointers;
  std::vector<Ts> args(cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& e = cases[k];
    pointers.push_back(&e);
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const Shape& s = e.inputs[i];
      const Vals v = i < e.given.size() ? e.given[i]
                                        : pseudoRandom(s.count(), e.lo, e.hi, static_cast<uint32_t>(k * 8 + i + 1), !radix::isFloat(s.dtype()));
      args[k].push_back(Tensor::fromValues(cpu(), s, v));
      outcomes[e.name].inputs.push_back({args[k].back().toVector<double>(), s.dims()});
    }
  }
  try {
    const Ts results = runTogether(pointers, args);
    for (size_t k = 0; k < cases.size(); ++k) outcomes[cases[k].name].result = results[k];
  } catch (const std::exception&) {
    // Run each case alone, so that the failure lands on the cases that cause it.
    for (size_t k = 0; k < cases.size(); ++k) {
      try {
        outcomes[cases[k].name].result = runTogether({pointers[k]}, {args[k]})[0];
      } catch (const std::exception& e) {
        outcomes[cases[k].name].error = e.what();
      }
    }
  }
  return outcomes.at(c.name);
}

class OpsNumerics : public ::testing::TestWithParam<Case> {};

TEST_P(OpsNumerics, MatchesReference) {
  const Case& c = GetParam();
  const Outcome& o = outcomeOf(c);
  ASSERT_EQ(o.error, "");
  ASSERT_EQ(o.result.shape(), c.out);
  const Vals expected = c.ref(o.inputs);
  if (radix::isFloat(c.out.dtype())) {
    radix::testing::expectClose(o.result, std::vector<float>(expected.begin(), expected.end()), c.tol >= 0 ? c.tol : tolFor(c.out.dtype()));
  } else {
    EXPECT_EQ(o.result.toVector<int64_t>(), std::vector<int64_t>(expected.begin(), expected.end()));
  }
}

template <class T>
std::string caseName(const ::testing::TestParamInfo<T>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpsNumerics, ::testing::ValuesIn(allCases()), caseName<Case>);

// ---- errors ----

/// Runs `f`, expecting a radix::Error whose message starts with `prefix` and contains `part`.
template <class F>
void expectError(F&& f, const std::string& prefix, const std::string& part) {
  try {
    f();
  } catch (const radix::Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with(prefix)) << "message: " << what << "\nexpected prefix: " << prefix;
    EXPECT_NE(what.find(part), std::string::npos) << "message: " << what << "\nexpected to contain: " << part;
    return;
  }
  ADD_FAILURE() << "no radix::Error thrown; expected " << prefix << " ... " << part;
}

struct ErrorCase {
  std::string name;
  std::vector<Shape> inputs;
  Op op;
  std::string prefix;  // "[add]"
  std::string part;    // names the shapes, the axis or the tag
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

std::vector<ErrorCase> errorCases() {
  const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
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

      {"dotGeneral_size", {sh({3, 17}), sh({16})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}); }, "[dotGeneral]", "{3,17}:f32 and {16}:f32"},
      {"dotGeneral_axis", {sh({3, 17}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{2, 0}}, {}); }, "[dotGeneral]", "axis 2 out of range for {3,17}:f32"},
      {"dotGeneral_tag", {sh({3, 17}, {"m", "k"}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{"x", 0}}, {}); }, "[dotGeneral]", "no axis tagged \"x\" in {m=3,k=17}:f32"},
      {"dotGeneral_dtype", {sh({3, 17}), sh({17}, f16)}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}); }, "[dotGeneral]", "{3,17}:f32 and {17}:f16"},
      {"dotGeneral_reused_axis", {sh({17, 17}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{0, 0}, {1, 0}}, {}); }, "[dotGeneral]", "{17,17}:f32 and {17}:f32"},
      {"dotGeneral_batch_size", {sh({4, 3}), sh({5, 3})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{1, 1}}, {{0, 0}}); }, "[dotGeneral]", "{4,3}:f32 and {5,3}:f32"},
      {"dot_lhs_tag", {sh({3, 17}, {"m", "k"}), sh({17, 5}, {"k", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"x"}); }, "[dot]", "no axis tagged \"x\" in lhs {m=3,k=17}:f32"},
      {"dot_rhs_tag", {sh({3, 17}, {"m", "k"}), sh({17, 5}, {"j", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"k"}); }, "[dot]", "no axis tagged \"k\" in rhs {j=17,n=5}:f32"},
      {"dot_size", {sh({3, 17}, {"m", "k"}), sh({16, 5}, {"k", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"k"}); }, "[dot]", "{m=3,k=17}:f32 and {k=16,n=5}:f32"},

      {"broad_smaller", {sh({3, 17})}, [](const Ts& x) { return x[0].broad(sh({17})); }, "[broad]", "{3,17}:f32 to smaller {17}:f32"},
      {"broad_tags_differ", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broad(sh({3}, {"d"})); }, "[broad]", "{a=3}:f32 to {d=3}:f32"},
      {"broad_unknown_tag", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broad(sh({2, 3}, {"b", "d"})); }, "[broad]", "no axis tagged \"a\" in {b=2,d=3}:f32"},
      {"broad_sizes", {sh({3})}, [](const Ts& x) { return x[0].broad(sh({2, 4})); }, "[broad]", "axis 0 of {3}:f32 to axis 1 of {2,4}:f32"},
      {"broadcast_sizes", {sh({3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {1}); }, "[broadcast]", "axis 0 of {3}:f32 to axis 1 of {3,17}:f32"},
      {"broadcast_axis_count", {sh({3, 17})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {0}); }, "[broadcast]", "1 axes for {3,17}:f32"},
      {"broadcast_axis_range", {sh({3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {2}); }, "[broadcast]", "axis 2 out of range for {3,17}:f32"},
      {"broadcast_axis_twice", {sh({3, 3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 3}), {1, 1}); }, "[broadcast]", "{3,3}:f32 is targeted twice"},
      {"reshape_count", {sh({3, 17})}, [](const Ts& x) { return x[0].reshape({50}); }, "[reshape]", "{3,17}:f32 (51 elements) to {50}:f32"},
      {"transpose_duplicate", {sh({3, 17})}, [](const Ts& x) { return x[0].transpose({0, 0}); }, "[transpose]", "axis 0 appears twice in the permutation of {3,17}:f32"},
      {"transpose_length", {sh({3, 17})}, [](const Ts& x) { return x[0].transpose({0}); }, "[transpose]", "1 axes in the permutation of {3,17}:f32"},
      {"transpose_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].transpose({"d", "x"}); }, "[transpose]", "no axis tagged \"x\" in {b=3,d=17}:f32"},
      {"sum_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].sum(2); }, "[sum]", "axis 2 out of range for {3,17}:f32"},
      {"sum_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].sum("s"); }, "[sum]", "no axis tagged \"s\" in {b=3,d=17}:f32"},
      {"max_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].max(-3); }, "[max]", "axis -3 out of range for {3,17}:f32"},
      {"max_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].max(0); }, "[max]", "{3}:bool"},
  };
  return cases;
}

class OpsErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpsErrors, ThrowsRadixError) {
  const ErrorCase& c = GetParam();
  Ts args;
  for (const Shape& s : c.inputs) args.emplace_back(s);  // placeholders: tracing needs no buffers
  expectError([&] { radix::compile(cpu(), c.op, args); }, c.prefix, c.part);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpsErrors, ::testing::ValuesIn(errorCases()), caseName<ErrorCase>);

/// Each op as called on a bound tensor `x`, named as its errors should be.
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> namedOps() {
  return {
      {"[add]", [](const Tensor& x) { return x.add(x); }},
      {"[sub]", [](const Tensor& x) { return x.sub(x); }},
      {"[mul]", [](const Tensor& x) { return x.mul(x); }},
      {"[div]", [](const Tensor& x) { return x.div(x); }},
      {"[maximum]", [](const Tensor& x) { return x.maximum(x); }},
      {"[minimum]", [](const Tensor& x) { return x.minimum(x); }},
      {"[neg]", [](const Tensor& x) { return x.neg(); }},
      {"[abs]", [](const Tensor& x) { return x.abs(); }},
      {"[exp]", [](const Tensor& x) { return x.exp(); }},
      {"[log]", [](const Tensor& x) { return x.log(); }},
      {"[tanh]", [](const Tensor& x) { return x.tanh(); }},
      {"[sqrt]", [](const Tensor& x) { return x.sqrt(); }},
      {"[rsqrt]", [](const Tensor& x) { return x.rsqrt(); }},
      {"[sin]", [](const Tensor& x) { return x.sin(); }},
      {"[cos]", [](const Tensor& x) { return x.cos(); }},
      {"[relu]", [](const Tensor& x) { return x.relu(); }},
      {"[sigmoid]", [](const Tensor& x) { return x.sigmoid(); }},
      {"[convert]", [](const Tensor& x) { return x.convert(DType::f16); }},
      {"[addConstant]", [](const Tensor& x) { return x.addConstant(1); }},
      {"[mulConstant]", [](const Tensor& x) { return x.mulConstant(2); }},
      {"[dotGeneral]", [](const Tensor& x) { return x.dotGeneral(x, {{0, 0}}, {}); }},
      {"[dot]", [](const Tensor& x) { return x.dot(x, {"d"}); }},
      {"[broad]", [](const Tensor& x) { return x.broad(sh({2, 3}, {"b", "d"})); }},
      {"[broadcast]", [](const Tensor& x) { return x.broadcast(sh({3, 2}), {0}); }},
      {"[reshape]", [](const Tensor& x) { return x.reshape({3, 1}); }},
      {"[transpose]", [](const Tensor& x) { return x.transpose({0}); }},
      {"[sum]", [](const Tensor& x) { return x.sum(0); }},
      {"[max]", [](const Tensor& x) { return x.max(0); }},
  };
}

TEST(OpsErrors, BoundTensorOutsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  for (const auto& [prefix, op] : namedOps()) {
    SCOPED_TRACE(prefix);
    expectError([&] { op(x); }, prefix, "no compilation in progress");
  }
  expectError([] { Tensor::constant(sh({3}), 1); }, "[constant]", "no compilation in progress");
  expectError([] { Tensor::scalar(1, DType::f32); }, "[scalar]", "no compilation in progress");
}

TEST(OpsErrors, BoundTensorCapturedInsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  const Tensor arg(sh({3}, {"d"}));
  for (const auto& [prefix, op] : namedOps()) {
    SCOPED_TRACE(prefix);
    // The bound tensor is captured, not passed: it is not a value of the traced function.
    auto fn = [&](const Tensor&) { return op(x); };
    expectError([&] { radix::compile(cpu(), fn, arg); }, prefix, "{d=3}:f32 is a device buffer that is not an argument");
  }
}

}  // namespace

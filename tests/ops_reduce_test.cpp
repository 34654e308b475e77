// Reductions, arg-reductions, scans and softmax against naive references.
#include "ops_testing.h"

namespace opstest {
namespace {

using radix::Axis;

enum class Kind { sum, prod, max, min, mean, any, all };

/// The reduction of `xs` as a naive loop would compute it (max/min propagate NaN).
double reduceNaive(Kind kind, const Vals& xs) {
  double acc = kind == Kind::prod || kind == Kind::all ? 1 : kind == Kind::max ? -INFINITY : kind == Kind::min ? INFINITY : 0;
  for (double x : xs) {
    switch (kind) {
      case Kind::sum: case Kind::mean: acc += x; break;
      case Kind::prod: acc *= x; break;
      case Kind::max: acc = std::isnan(x) || std::isnan(acc) ? NAN : std::max(acc, x); break;
      case Kind::min: acc = std::isnan(x) || std::isnan(acc) ? NAN : std::min(acc, x); break;
      case Kind::any: acc = acc != 0 || x != 0; break;
      case Kind::all: acc = acc != 0 && x != 0; break;
    }
  }
  return kind == Kind::mean ? acc / static_cast<double>(xs.size()) : acc;
}

/// Calls f(outIndex, elements along `axes`) for every element of the result (axes kept with size 1).
template <class F>
void forEachRow(const Host& in, const Dims& axes, F&& f) {
  Dims outDims = in.dims, subDims;
  for (int64_t a : axes) outDims[a] = 1, subDims.push_back(in.dims[a]);
  forEachIndex(outDims, [&](const Dims& o) {
    Vals row;
    forEachIndex(subDims, [&](const Dims& k) {
      Dims i = o;
      for (size_t n = 0; n < axes.size(); ++n) i[axes[n]] = k[n];
      row.push_back(in.v[offsetOf(in.dims, i)]);
    });
    f(o, row);
  });
}

Ref reduceAxesRef(Dims axes, Kind kind) {
  return [=](const std::vector<Host>& in) {
    Vals out;
    forEachRow(in[0], axes, [&](const Dims&, const Vals& row) { out.push_back(reduceNaive(kind, row)); });
    return out;
  };
}

/// The first index of the max (or min) along `axis`; NaN counts as the extreme.
Ref argRef(int64_t axis, bool isMax, bool indices) {
  return [=](const std::vector<Host>& in) {
    Vals out;
    forEachRow(in[0], {axis}, [&](const Dims&, const Vals& row) {
      size_t best = 0;
      for (size_t k = 1; k < row.size(); ++k) {
        if (std::isnan(row[best])) break;
        if (std::isnan(row[k]) || (isMax ? row[k] > row[best] : row[k] < row[best])) best = k;
      }
      out.push_back(indices ? static_cast<double>(best) : row[best]);
    });
    return out;
  };
}

/// Inclusive scan along `axis`, each prefix reduced naively.
Ref scanRef(int64_t axis, Kind kind) {
  return [=](const std::vector<Host>& in) {
    const Host& x = in[0];
    Vals out;
    forEachIndex(x.dims, [&](const Dims& o) {
      Vals prefix;
      Dims i = o;
      for (i[axis] = 0; i[axis] <= o[axis]; ++i[axis]) prefix.push_back(x.v[offsetOf(x.dims, i)]);
      out.push_back(reduceNaive(kind, prefix));
    });
    return out;
  };
}

enum class Soft { softmax, logSoftmax, logSumExp };

/// The unshifted formulas, in double (exp(100) does not overflow a double); softmax of a row of
/// only -inf is 0 (ZML's choice, for fully masked attention rows).
Ref softRef(int64_t axis, Soft kind) {
  return [=](const std::vector<Host>& in) {
    const Host& x = in[0];
    Dims outDims = x.dims;
    outDims[axis] = 1;
    std::vector<double> sums;
    forEachRow(x, {axis}, [&](const Dims&, const Vals& row) {
      double s = 0;
      for (double v : row) s += std::exp(v);
      sums.push_back(s);
    });
    if (kind == Soft::logSumExp) {
      Vals out;
      for (double s : sums) out.push_back(std::log(s));
      return out;
    }
    Vals out;
    forEachIndex(x.dims, [&](const Dims& i) {
      const double v = x.v[offsetOf(x.dims, i)], s = sums[offsetOf(outDims, i)];
      if (kind == Soft::softmax) out.push_back(s == 0 && std::isinf(v) ? 0 : std::exp(v) / s);
      else out.push_back(v - std::log(s));
    });
    return out;
  };
}

/// softmax with exp(bias) added to each row's denominator; bias has x's rank (axis at size 1) or is
/// a scalar. A row where x and bias are all -inf gives 0.
Ref softmaxBiasedRef(int64_t axis) {
  return [=](const std::vector<Host>& in) {
    const Host &x = in[0], &bias = in[1];
    Dims outDims = x.dims;
    outDims[axis] = 1;
    std::vector<double> sums;
    forEachRow(x, {axis}, [&](const Dims& o, const Vals& row) {
      double s = std::exp(bias.v[offsetOf(bias.dims, o)]);
      for (double v : row) s += std::exp(v);
      sums.push_back(s);
    });
    Vals out;
    forEachIndex(x.dims, [&](const Dims& i) {
      const double v = x.v[offsetOf(x.dims, i)], s = sums[offsetOf(outDims, i)];
      out.push_back(s == 0 ? 0 : std::exp(v) / s);
    });
    return out;
  };
}

/// One row per dtype, as Case::dtypes, but `out` keeps its dtype (i32 indices).
void addPerDtype(std::vector<Case>& rows, const Case& c, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) {
    Case e = c;
    e.name += "_" + std::string(radix::name(d));
    for (Shape& s : e.inputs) s = s.withDtype(d);
    rows.push_back(e);
  }
}

Op reduceOp(Kind kind, std::vector<Axis> axes) {
  return [=](const Ts& x) {
    switch (kind) {
      case Kind::sum: return x[0].sum(axes);
      case Kind::prod: return x[0].prod(axes);
      case Kind::max: return x[0].max(axes);
      case Kind::min: return x[0].min(axes);
      case Kind::mean: return x[0].mean(axes);
      case Kind::any: return x[0].any(axes);
      case Kind::all: return x[0].all(axes);
    }
    return x[0];
  };
}
Op minOp(Axis a) { return [=](const Ts& x) { return x[0].min(a); }; }
Op meanOp(Axis a) { return [=](const Ts& x) { return x[0].mean(a); }; }
Op prodOp(Axis a) { return [=](const Ts& x) { return x[0].prod(a); }; }
Op anyOp(Axis a) { return [=](const Ts& x) { return x[0].any(a); }; }
Op allOp(Axis a) { return [=](const Ts& x) { return x[0].all(a); }; }
Op argMaxOp(Axis a, bool indices) { return [=](const Ts& x) { auto r = x[0].argMax(a); return indices ? r.indices : r.values; }; }
Op argMinOp(Axis a, bool indices) { return [=](const Ts& x) { auto r = x[0].argMin(a); return indices ? r.indices : r.values; }; }
Op scanOp(Kind kind, Axis a) {
  return [=](const Ts& x) {
    switch (kind) {
      case Kind::max: return x[0].cumulativeMax(a);
      case Kind::min: return x[0].cumulativeMin(a);
      case Kind::prod: return x[0].cumulativeProd(a);
      default: return x[0].cumulativeSum(a);
    }
  };
}
Op softOp(Soft kind, Axis a) {
  return [=](const Ts& x) {
    switch (kind) {
      case Soft::softmax: return x[0].softmax(a);
      case Soft::logSoftmax: return x[0].logSoftmax(a);
      case Soft::logSumExp: return x[0].logSumExp(a);
    }
    return x[0];
  };
}

const std::vector<DType> kInts = {DType::i32, DType::i64};
const std::vector<Tag> kBSD = {"b", "s", "d"};

std::vector<Case> reduceCases() {
  const auto F = kFloats;
  const DType u8 = DType::u8, b = DType::bool_;
  return {
      {"sum_last", {sh({3, 17})}, sumOp(1), reduceRef(1, false), sh({3, 1}), F},
      {"sum_first", {sh({3, 17})}, sumOp(0), reduceRef(0, false), sh({1, 17}), F},
      {"sum_129", {sh({129})}, sumOp(0), reduceRef(0, false), sh({1}), F},
      {"sum_negative_axis", {sh({17, 1, 3})}, sumOp(-1), reduceRef(2, false), sh({17, 1, 1}), F},
      {"sum_tag", {sh({3, 17, 5}, kBSD)}, sumOp("s"), reduceRef(1, false), sh({3, 1, 5}, kBSD), F},
      {"sum_int", {sh({7, 17})}, sumOp(1), reduceRef(1, false), sh({7, 1}), kInts, -50, 50},
      // All negative: a max that starts from 0 would return 0.
      {"max_last", {sh({3, 17})}, maxOp(1), reduceRef(1, true), sh({3, 1}), F, -5, -1},
      {"max_first", {sh({3, 17})}, maxOp(0), reduceRef(0, true), sh({1, 17}), F, -5, -1},
      {"max_129", {sh({129})}, maxOp(-1), reduceRef(0, true), sh({1}), F},
      {"max_tag", {sh({3, 17, 5}, kBSD)}, maxOp("s"), reduceRef(1, true), sh({3, 1, 5}, kBSD), F},
      {"max_int", {sh({7, 17})}, maxOp(0), reduceRef(0, true), sh({1, 17}), kInts, -50, -1},
      {"max_last_u8", {sh({7, 17}, u8)}, maxOp(1), reduceRef(1, true), sh({7, 1}, u8), {}, 0, 250},
      {"min_last", {sh({3, 17})}, minOp(1), reduceAxesRef({1}, Kind::min), sh({3, 1}), F, 1, 5},
      {"min_129", {sh({129})}, minOp(0), reduceAxesRef({0}, Kind::min), sh({1}), F},
      {"min_tag", {sh({3, 17, 5}, kBSD)}, minOp("d"), reduceAxesRef({2}, Kind::min), sh({3, 17, 1}, kBSD), F},
      {"min_int", {sh({7, 17})}, minOp(-1), reduceAxesRef({1}, Kind::min), sh({7, 1}), kInts, 1, 50},
      {"min_first_u8", {sh({7, 17}, u8)}, minOp(0), reduceAxesRef({0}, Kind::min), sh({1, 17}, u8), {}, 5, 250},
      {"mean_last", {sh({3, 17})}, meanOp(1), reduceAxesRef({1}, Kind::mean), sh({3, 1}), F},
      {"mean_129", {sh({129})}, meanOp(0), reduceAxesRef({0}, Kind::mean), sh({1}), F, 0, 10},
      {"mean_tag", {sh({3, 17, 5}, kBSD)}, meanOp("b"), reduceAxesRef({0}, Kind::mean), sh({1, 17, 5}, kBSD), F},
      {"prod_last", {sh({3, 17})}, prodOp(1), reduceAxesRef({1}, Kind::prod), sh({3, 1}), F, 0.5, 1.5},
      {"prod_tag", {sh({7, 3}, {"b", "d"})}, prodOp("b"), reduceAxesRef({0}, Kind::prod), sh({1, 3}, {"b", "d"}), F, -2, 2},
      {"prod_int", {sh({7, 5})}, prodOp(1), reduceAxesRef({1}, Kind::prod), sh({7, 1}), kInts, -3, 4},
      {"any_last", {sh({7, 3}, b)}, anyOp(1), reduceAxesRef({1}, Kind::any), sh({7, 1}, b), {}, 0, 1.3},
      {"any_tag", {sh({3, 17, 5}, kBSD, b)}, anyOp("s"), reduceAxesRef({1}, Kind::any), sh({3, 1, 5}, kBSD, b), {}, 0, 1.05},
      {"all_last", {sh({7, 3}, b)}, allOp(1), reduceAxesRef({1}, Kind::all), sh({7, 1}, b), {}, 0.7, 2},
      {"all_tag", {sh({3, 17, 5}, kBSD, b)}, allOp("b"), reduceAxesRef({0}, Kind::all), sh({1, 17, 5}, kBSD, b), {}, 0.95, 2},
      // Given: any true only in row 1, all true only in row 2.
      {"any_given", {sh({3, 3}, b)}, anyOp(1), reduceAxesRef({1}, Kind::any), sh({3, 1}, b), {}, 0, 1, {{0, 0, 0, 0, 1, 0, 1, 1, 1}}},
      {"all_given", {sh({3, 3}, b)}, allOp(1), reduceAxesRef({1}, Kind::all), sh({3, 1}, b), {}, 0, 1, {{0, 0, 0, 0, 1, 0, 1, 1, 1}}},
  };
}

std::vector<Case> axesCases() {
  const auto F = kFloats;
  const DType i32 = DType::i32, b = DType::bool_;
  const double nan = NAN;
  std::vector<Case> rows = {
      {"sum_two_axes", {sh({3, 7, 5})}, reduceOp(Kind::sum, {0, 2}), reduceAxesRef({0, 2}, Kind::sum), sh({1, 7, 1}), F},
      {"sum_tags", {sh({3, 7, 5}, kBSD)}, reduceOp(Kind::sum, {"d", "b"}), reduceAxesRef({0, 2}, Kind::sum), sh({1, 7, 1}, kBSD), F},
      {"sum_all_axes", {sh({17, 7})}, reduceOp(Kind::sum, {-1, 0}), reduceAxesRef({0, 1}, Kind::sum), sh({1, 1}), F},
      {"sum_no_axes", {sh({3, 7})}, reduceOp(Kind::sum, {}), sameValues(), sh({3, 7}), F},
      {"sum_int_axes", {sh({3, 7, 5})}, reduceOp(Kind::sum, {1, 2}), reduceAxesRef({1, 2}, Kind::sum), sh({3, 1, 1}), kInts, -50, 50},
      {"max_axes", {sh({3, 7, 5}, kBSD)}, reduceOp(Kind::max, {"s", "b"}), reduceAxesRef({0, 1}, Kind::max), sh({1, 1, 5}, kBSD), F, -5, -1},
      {"max_int_axes", {sh({3, 7, 5})}, reduceOp(Kind::max, {0, 2}), reduceAxesRef({0, 2}, Kind::max), sh({1, 7, 1}), kInts, -50, -1},
      {"min_axes", {sh({3, 7, 5})}, reduceOp(Kind::min, {2, 1}), reduceAxesRef({1, 2}, Kind::min), sh({3, 1, 1}), F, 1, 5},
      {"mean_axes", {sh({3, 7, 5}, kBSD)}, reduceOp(Kind::mean, {"s", "d"}), reduceAxesRef({1, 2}, Kind::mean), sh({3, 1, 1}, kBSD), F},
      {"prod_axes", {sh({3, 7, 5})}, reduceOp(Kind::prod, {0, 2}), reduceAxesRef({0, 2}, Kind::prod), sh({1, 7, 1}), F, 0.8, 1.2},
      {"any_axes", {sh({3, 7, 5}, b)}, reduceOp(Kind::any, {0, 2}), reduceAxesRef({0, 2}, Kind::any), sh({1, 7, 1}, b), {}, 0, 1.04},
      {"all_axes", {sh({3, 7, 5}, b)}, reduceOp(Kind::all, {0, 2}), reduceAxesRef({0, 2}, Kind::all), sh({1, 7, 1}, b), {}, 0.96, 2},
      // Empty reduced axes give the identity; mean of nothing is NaN.
      {"sum_empty_last", {sh({3, 0})}, sumOp(1), filledWith(3, 0), sh({3, 1}), F},
      {"max_empty_last", {sh({3, 0})}, maxOp(-1), filledWith(3, -INFINITY), sh({3, 1}), F},
      {"all_empty_last", {sh({3, 0}, b)}, allOp(1), filledWith(3, 1), sh({3, 1}, b)},
      {"sum_empty", {sh({0, 3})}, sumOp(0), filledWith(3, 0), sh({1, 3}), F},
      {"sum_empty_kept", {sh({0, 5})}, sumOp(1), filledWith(0, 0), sh({0, 1}), F},
      {"prod_empty", {sh({0, 3})}, prodOp(0), filledWith(3, 1), sh({1, 3}), F},
      {"max_empty", {sh({0, 3})}, maxOp(0), filledWith(3, -INFINITY), sh({1, 3}), F},
      {"min_empty", {sh({0, 3})}, minOp(0), filledWith(3, INFINITY), sh({1, 3}), F},
      {"mean_empty", {sh({0, 3})}, meanOp(0), filledWith(3, nan), sh({1, 3}), F},
      {"sum_empty_axes", {sh({0, 3, 5})}, reduceOp(Kind::sum, {0, 2}), filledWith(3, 0), sh({1, 3, 1}), F},
      {"mean_empty_axes", {sh({0, 3, 5})}, reduceOp(Kind::mean, {2, 0}), filledWith(3, nan), sh({1, 3, 1}), F},
      {"max_empty_i32", {sh({0, 3}, i32)}, maxOp(0), filledWith(3, -2147483648.0), sh({1, 3}, i32)},
      {"min_empty_i32", {sh({0, 3}, i32)}, minOp(0), filledWith(3, 2147483647.0), sh({1, 3}, i32)},
      {"min_empty_u8", {sh({0, 3}, DType::u8)}, minOp(0), filledWith(3, 255), sh({1, 3}, DType::u8)},
      {"any_empty", {sh({0, 3}, b)}, anyOp(0), filledWith(3, 0), sh({1, 3}, b)},
      {"all_empty", {sh({0, 3}, b)}, allOp(0), filledWith(3, 1), sh({1, 3}, b)},
      // NaN propagates through max and min, wherever it sits in the row.
      {"max_nan", {sh({3, 3})}, maxOp(1), reduceAxesRef({1}, Kind::max), sh({3, 1}), F, 0, 1, {{nan, 1, 2, 1, nan, 2, 1, 2, 3}}},
      {"min_nan", {sh({3, 3})}, minOp(1), reduceAxesRef({1}, Kind::min), sh({3, 1}), F, 0, 1, {{1, 2, nan, 1, nan, 2, 1, 2, 3}}},
      {"sum_nan", {sh({2, 3})}, sumOp(1), reduceAxesRef({1}, Kind::sum), sh({2, 1}), F, 0, 1, {{1, nan, 2, 1, 2, 3}}},
  };
  return rows;
}

std::vector<Case> argCases() {
  const auto F = kFloats;
  const double nan = NAN, inf = INFINITY;
  std::vector<Case> rows;
  for (bool idx : {false, true}) {
    const std::string what = idx ? "_indices" : "_values";
    const DType out = idx ? DType::i32 : DType::f32;
    auto add = [&](Case c, const std::vector<DType>& dtypes) {
      if (idx) return addPerDtype(rows, c, dtypes);
      c.dtypes = dtypes;
      rows.push_back(c);
    };
    add({"argmax_last" + what, {sh({3, 17})}, argMaxOp(1, idx), argRef(1, true, idx), sh({3, 1}, out)}, F);
    add({"argmax_first" + what, {sh({7, 3})}, argMaxOp(0, idx), argRef(0, true, idx), sh({1, 3}, out)}, F);
    add({"argmax_129" + what, {sh({129})}, argMaxOp(-1, idx), argRef(0, true, idx), sh({1}, out)}, F);
    add({"argmax_tag" + what, {sh({3, 17, 5}, kBSD)}, argMaxOp("s", idx), argRef(1, true, idx), sh({3, 1, 5}, kBSD, out)}, F);
    add({"argmin_last" + what, {sh({3, 17})}, argMinOp(1, idx), argRef(1, false, idx), sh({3, 1}, out)}, F);
    add({"argmin_tag" + what, {sh({3, 17, 5}, kBSD)}, argMinOp("d", idx), argRef(2, false, idx), sh({3, 17, 1}, kBSD, out)}, F);
    add({"argmin_1" + what, {sh({7, 1})}, argMinOp(1, idx), argRef(1, false, idx), sh({7, 1}, out)}, F);
    // Integers in [-3, 3): many ties, the first index must win.
    add({"argmax_int" + what, {sh({7, 17})}, argMaxOp(1, idx), argRef(1, true, idx), sh({7, 1}, DType::i32), {}, -3, 3},
        {DType::i32});
    add({"argmin_int" + what, {sh({7, 17})}, argMinOp(0, idx), argRef(0, false, idx), sh({1, 17}, DType::i32), {}, -3, 3},
        {DType::i32});
    add({"argmax_small" + what, {sh({7, 17})}, argMaxOp(1, idx), argRef(1, true, idx), sh({7, 1}, DType::i32), {}, 0, 4},
        {DType::u8});
    // Bools: the first true, else index 0.
    add({"argmax_bool" + what, {sh({3, 4})}, argMaxOp(1, idx), argRef(1, true, idx), sh({3, 1}, DType::i32), {}, 0, 1,
         {{0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1}}},
        {DType::bool_});
    // Given rows: ties, a row of one value, NaN anywhere (first NaN wins), -inf only, +inf.
    const Vals ties = {1, 3, 3, 2, 3,  -1, -1, -1, -1, -1,  2, nan, 5, nan, 1,  -inf, -inf, -inf, -inf, -inf,
                       0, 1, inf, 1, inf,  4, 2, 2, 4, nan};
    add({"argmax_ties" + what, {sh({6, 5})}, argMaxOp(1, idx), argRef(1, true, idx), sh({6, 1}, out), {}, 0, 1, {ties}}, F);
    add({"argmin_ties" + what, {sh({6, 5})}, argMinOp(1, idx), argRef(1, false, idx), sh({6, 1}, out), {}, 0, 1, {ties}}, F);
  }
  return rows;
}

std::vector<Case> scanCases() {
  const auto F = kFloats;
  const double nan = NAN;
  // Two rows of 65: 0..64, then the same with a NaN at 40.
  Vals longNaN;
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 65; ++k) longNaN.push_back(r == 1 && k == 40 ? nan : (k * 7 % 13) - 6);
  return {
      {"cumsum_last", {sh({3, 17})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({3, 17}), F},
      {"cumsum_first", {sh({7, 3})}, scanOp(Kind::sum, 0), scanRef(0, Kind::sum), sh({7, 3}), F},
      {"cumsum_129", {sh({129})}, scanOp(Kind::sum, -1), scanRef(0, Kind::sum), sh({129}), F},
      {"cumsum_1", {sh({3, 1})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({3, 1}), F},
      {"cumsum_tag", {sh({3, 17, 5}, kBSD)}, scanOp(Kind::sum, "s"), scanRef(1, Kind::sum), sh({3, 17, 5}, kBSD), F},
      {"cumsum_int", {sh({7, 17})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({7, 17}), {DType::i32}, -50, 50},
      // Zero elements, along a long axis (slices of the zero-size axis would not verify). One such
      // row per section: main's compile crashes in buffer-results-to-out-params on two zero-size
      // results (reported).
      {"cumsum_empty", {sh({20, 0})}, scanOp(Kind::sum, 0), scanRef(0, Kind::sum), sh({20, 0}), F},
      // A NaN poisons what follows it along the axis, and nothing before it.
      {"cumsum_nan", {sh({2, 4})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({2, 4}), F, 0, 1, {{1, 2, nan, 3, 1, 2, 3, nan}}},
      {"cummax_last", {sh({3, 17})}, scanOp(Kind::max, 1), scanRef(1, Kind::max), sh({3, 17}), F},
      {"cummax_129", {sh({129})}, scanOp(Kind::max, 0), scanRef(0, Kind::max), sh({129}), F, -5, -1},
      {"cummax_tag", {sh({3, 17, 5}, kBSD)}, scanOp(Kind::max, "b"), scanRef(0, Kind::max), sh({3, 17, 5}, kBSD), F},
      {"cummax_int", {sh({7, 17})}, scanOp(Kind::max, 1), scanRef(1, Kind::max), sh({7, 17}), {DType::i32}, -50, -1},
      {"cummax_nan", {sh({2, 4})}, scanOp(Kind::max, 1), scanRef(1, Kind::max), sh({2, 4}), F, 0, 1, {{1, 2, nan, 3, 1, 2, 3, nan}}},
      {"cummin_last", {sh({3, 17})}, scanOp(Kind::min, 1), scanRef(1, Kind::min), sh({3, 17}), F},
      {"cummin_int", {sh({7, 17})}, scanOp(Kind::min, 0), scanRef(0, Kind::min), sh({7, 17}), {DType::i32}, 1, 50},
      {"cumprod_last", {sh({3, 17})}, scanOp(Kind::prod, 1), scanRef(1, Kind::prod), sh({3, 17}), F, 0.5, 1.5},
      {"cumprod_int", {sh({7, 5})}, scanOp(Kind::prod, 1), scanRef(1, Kind::prod), sh({7, 5}), {DType::i32}, -3, 4},
      // Axes longer than 16 take the O(n) loop (so do the 17s and 129s above); 16 and shorter, the
      // masked O(n^2) generic.
      {"cumsum_16", {sh({5, 16})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({5, 16}), F},
      {"cumsum_long_first", {sh({129, 3})}, scanOp(Kind::sum, 0), scanRef(0, Kind::sum), sh({129, 3}), F},
      {"cumsum_long_tag", {sh({3, 129, 5}, kBSD)}, scanOp(Kind::sum, "s"), scanRef(1, Kind::sum), sh({3, 129, 5}, kBSD), F},
      {"cumsum_long_int", {sh({3, 129})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({3, 129}), {DType::i32}, -50, 50},
      {"cumsum_long_nan", {sh({2, 65})}, scanOp(Kind::sum, 1), scanRef(1, Kind::sum), sh({2, 65}), F, 0, 1, {longNaN}},
      {"cummax_long_nan", {sh({2, 65})}, scanOp(Kind::max, 1), scanRef(1, Kind::max), sh({2, 65}), F, 0, 1, {longNaN}},
      {"cummin_long", {sh({2, 200})}, scanOp(Kind::min, -1), scanRef(1, Kind::min), sh({2, 200}), F},
      {"cummin_long_int", {sh({2, 200})}, scanOp(Kind::min, -1), scanRef(1, Kind::min), sh({2, 200}), {DType::i32}, -1000, 1000},
      {"cumprod_long", {sh({2, 129})}, scanOp(Kind::prod, 1), scanRef(1, Kind::prod), sh({2, 129}), F, 0.97, 1.03},
  };
}

std::vector<Case> softmaxCases() {
  const auto F = kFloats;
  const double nan = NAN, inf = INFINITY;
  std::vector<Case> rows;
  for (Soft kind : {Soft::softmax, Soft::logSoftmax, Soft::logSumExp}) {
    const std::string n = kind == Soft::softmax ? "softmax" : kind == Soft::logSoftmax ? "logsoftmax" : "logsumexp";
    const bool kept = kind != Soft::logSumExp;
    auto out = [&](Shape s, int64_t axis) {
      if (kept) return s;
      std::vector<int64_t> dims = s.dims();
      dims[axis] = 1;
      Shape r(dims, s.dtype());
      for (int64_t i = 0; i < s.rank(); ++i) r = r.withTag(i, s.tag(i));
      return r;
    };
    rows.push_back({n + "_last", {sh({3, 17})}, softOp(kind, 1), softRef(1, kind), out(sh({3, 17}), 1), F, -5, 5});
    rows.push_back({n + "_first", {sh({7, 3})}, softOp(kind, 0), softRef(0, kind), out(sh({7, 3}), 0), F, -5, 5});
    rows.push_back({n + "_129", {sh({129})}, softOp(kind, -1), softRef(0, kind), out(sh({129}), 0), F, -5, 5});
    rows.push_back({n + "_1", {sh({3, 1})}, softOp(kind, 1), softRef(1, kind), out(sh({3, 1}), 1), F});
    rows.push_back({n + "_tag", {sh({3, 17, 5}, kBSD)}, softOp(kind, "s"), softRef(1, kind), out(sh({3, 17, 5}, kBSD), 1), F});
    // exp(80..100) overflows f32: only the max-shifted form survives.
    rows.push_back({n + "_large", {sh({3, 17})}, softOp(kind, 1), softRef(1, kind), out(sh({3, 17}), 1), {DType::f32}, 80, 100});
    rows.push_back({n + "_large_half", {sh({3, 17})}, softOp(kind, 1), softRef(1, kind), out(sh({3, 17}), 1), {DType::f16, DType::bf16}, 80, 100});
    rows.push_back({n + "_very_negative", {sh({3, 17})}, softOp(kind, 1), softRef(1, kind), out(sh({3, 17}), 1), {DType::f32}, -120, -100});
    // Rows: a -inf among numbers, all -inf (softmax 0, logSoftmax NaN, logSumExp -inf), a NaN.
    rows.push_back({n + "_inf", {sh({3, 3})}, softOp(kind, 1), softRef(1, kind), out(sh({3, 3}), 1), F, 0, 1,
                    {{1, -inf, 2, -inf, -inf, -inf, 1, nan, 2}}});
  }
  auto biased = [](Axis a) { return Op([=](const Ts& x) { return x[0].softmaxBiased(a, x[1]); }); };
  rows.push_back({"softmax_biased_last", {sh({3, 17}), sh({3, 1})}, biased(1), softmaxBiasedRef(1), sh({3, 17}), F, -5, 5});
  rows.push_back({"softmax_biased_first", {sh({7, 3}), sh({1, 3})}, biased(0), softmaxBiasedRef(0), sh({7, 3}), F, -5, 5});
  rows.push_back({"softmax_biased_scalar", {sh({129}), sh({})}, biased(0), softmaxBiasedRef(0), sh({129}), F, -5, 5});
  rows.push_back({"softmax_biased_tag", {sh({3, 17, 5}, kBSD), sh({3, 1, 5}, kBSD)}, biased("s"), softmaxBiasedRef(1), sh({3, 17, 5}, kBSD), F});
  rows.push_back({"softmax_biased_large", {sh({3, 17}), sh({3, 1})}, biased(1), softmaxBiasedRef(1), sh({3, 17}), {DType::f32}, 80, 100});
  // Rows: bias 0 against a -inf, bias 1 against all -inf (all weight on the sink), all -inf.
  rows.push_back({"softmax_biased_inf", {sh({3, 3}), sh({3, 1})}, biased(1), softmaxBiasedRef(1), sh({3, 3}), F, 0, 1,
                  {{1, -inf, 2, -inf, -inf, -inf, -inf, -inf, -inf}, {0, 1, -inf}}});
  return rows;
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  return {
      {"sum_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].sum(2); }, "[sum]", "axis 2 out of range for {3,17}:f32"},
      {"sum_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].sum("s"); }, "[sum]", "no axis tagged \"s\" in {b=3,d=17}:f32"},
      {"max_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].max(-3); }, "[max]", "axis -3 out of range for {3,17}:f32"},
      {"max_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].max(0); }, "[max]", "{3}:bool"},
      {"sum_repeated", {sh({3, 17})}, [](const Ts& x) { return x[0].sum({0, -2}); }, "[sum]", "axis -2 repeats axis 0 of {3,17}:f32"},
      {"mean_repeated_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].mean({"d", "d"}); }, "[mean]", "axis \"d\" repeats axis 1 of {b=3,d=17}:f32"},
      {"max_axes_range", {sh({3, 17})}, [](const Ts& x) { return x[0].max({0, 2}); }, "[max]", "axis 2 out of range for {3,17}:f32"},
      {"min_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].min(5); }, "[min]", "axis 5 out of range for {3,17}:f32"},
      {"min_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].min(0); }, "[min]", "bool tensors have no arithmetic: {3}:bool"},
      {"prod_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].prod(0); }, "[prod]", "bool tensors have no arithmetic: {3}:bool"},
      {"mean_int", {sh({3}, i32)}, [](const Ts& x) { return x[0].mean(0); }, "[mean]", "needs a float tensor, got {3}:i32"},
      {"any_float", {sh({3})}, [](const Ts& x) { return x[0].any(0); }, "[any]", "needs a bool tensor, got {3}:f32"},
      {"all_int", {sh({3}, i32)}, [](const Ts& x) { return x[0].all(std::vector<Axis>{0}); }, "[all]", "needs a bool tensor, got {3}:i32"},
      {"all_tag", {sh({3}, {"d"}, b)}, [](const Ts& x) { return x[0].all("s"); }, "[all]", "no axis tagged \"s\" in {d=3}:bool"},
      {"argmax_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].argMax(2).values; }, "[argMax]", "axis 2 out of range for {3,17}:f32"},
      {"argmax_empty", {sh({3, 0})}, [](const Ts& x) { return x[0].argMax(1).indices; }, "[argMax]", "axis 1 has size 0 in {3,0}:f32"},
      {"argmin_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].argMin("s").indices; }, "[argMin]", "no axis tagged \"s\" in {b=3,d=17}:f32"},
      {"cumsum_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].cumulativeSum(-3); }, "[cumulativeSum]", "axis -3 out of range for {3,17}:f32"},
      {"cumsum_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].cumulativeSum(0); }, "[cumulativeSum]", "{3}:bool"},
      {"cummax_tag", {sh({3}, {"d"})}, [](const Ts& x) { return x[0].cumulativeMax("s"); }, "[cumulativeMax]", "no axis tagged \"s\" in {d=3}:f32"},
      {"softmax_int", {sh({3}, i32)}, [](const Ts& x) { return x[0].softmax(0); }, "[softmax]", "needs a float tensor, got {3}:i32"},
      {"softmax_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].softmax(2); }, "[softmax]", "axis 2 out of range for {3,17}:f32"},
      {"logsumexp_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].logSumExp("s"); }, "[logSumExp]", "no axis tagged \"s\" in {b=3,d=17}:f32"},
      {"softmax_biased_int", {sh({3}, i32), sh({})}, [](const Ts& x) { return x[0].softmaxBiased(0, x[1]); }, "[softmaxBiased]", "needs a float tensor, got {3}:i32"},
      {"softmax_biased_bias", {sh({3, 17}), sh({4, 1})}, [](const Ts& x) { return x[0].softmaxBiased(1, x[1]); }, "[softmaxBiased]", "{4,1}:f32"},
      {"softmax_biased_axis", {sh({3, 17}), sh({})}, [](const Ts& x) { return x[0].softmaxBiased(2, x[1]); }, "[softmaxBiased]", "axis 2 out of range for {3,17}:f32"},
      {"logsoftmax_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].logSoftmax(0); }, "[logSoftmax]", "needs a float tensor, got {3}:bool"},
  };
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

std::string irOf(Tensor (*fn)(const Tensor&), const Shape& shape) { return radix::compile(cpu(), fn, Tensor(shape)).mlir(); }

TEST(OpsReduce, ArgMaxIsOneGenericWithTwoOutputs) {
  const std::string ir = irOf([](const Tensor& x) { return x.argMax(1).indices; }, sh({3, 17}));
  EXPECT_EQ(countOf(ir, "linalg.generic"), 1u) << ir;
  EXPECT_EQ(countOf(ir, "linalg.index 1"), 1u) << ir;
  EXPECT_NE(ir.find("-> (tensor<3xf32>, tensor<3xi32>)"), std::string::npos) << ir;
}

TEST(OpsReduce, ShortScanIsOneGenericLongScanIsALoop) {
  const std::string shortIr = irOf([](const Tensor& x) { return x.cumulativeSum(1); }, sh({3, 16}));
  EXPECT_EQ(countOf(shortIr, "linalg.generic"), 1u) << shortIr;
  EXPECT_EQ(countOf(shortIr, "scf.for"), 0u) << shortIr;
  const std::string longIr = irOf([](const Tensor& x) { return x.cumulativeSum(1); }, sh({3, 17}));
  EXPECT_EQ(countOf(longIr, "scf.for"), 1u) << longIr;
  EXPECT_EQ(countOf(longIr, "linalg.transpose"), 2u) << longIr;
  const std::string firstIr = irOf([](const Tensor& x) { return x.cumulativeSum(0); }, sh({17, 3}));
  EXPECT_EQ(countOf(firstIr, "linalg.transpose"), 0u) << firstIr;
}

TEST(OpsReduce, HalfSumsAccumulateInF32) {
  const std::string ir = irOf([](const Tensor& x) { return x.sum(1); }, sh({3, 17}, DType::bf16));
  EXPECT_NE(ir.find("linalg.reduce ins(%0 : tensor<3x17xf32>)"), std::string::npos) << ir;
  const std::string maxIr = irOf([](const Tensor& x) { return x.max(1); }, sh({3, 17}, DType::bf16));
  EXPECT_EQ(maxIr.find("f32"), std::string::npos) << maxIr;
}

/// Each op of this family on a tensor, named as its errors should be.
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> familyOps() {
  return {
      {"[sum]", [](const Tensor& x) { return x.sum(std::vector<Axis>{0}); }},
      {"[max]", [](const Tensor& x) { return x.max(std::vector<Axis>{0}); }},
      {"[min]", [](const Tensor& x) { return x.min(0); }},
      {"[mean]", [](const Tensor& x) { return x.mean(0); }},
      {"[prod]", [](const Tensor& x) { return x.prod(0); }},
      {"[argMax]", [](const Tensor& x) { return x.argMax(0).values; }},
      {"[argMin]", [](const Tensor& x) { return x.argMin(0).indices; }},
      {"[cumulativeSum]", [](const Tensor& x) { return x.cumulativeSum(0); }},
      {"[cumulativeMax]", [](const Tensor& x) { return x.cumulativeMax(0); }},
      {"[cumulativeMin]", [](const Tensor& x) { return x.cumulativeMin(0); }},
      {"[cumulativeProd]", [](const Tensor& x) { return x.cumulativeProd(0); }},
      {"[logSumExp]", [](const Tensor& x) { return x.logSumExp(0); }},
      {"[softmax]", [](const Tensor& x) { return x.softmax(0); }},
      {"[logSoftmax]", [](const Tensor& x) { return x.logSoftmax(0); }},
      {"[softmaxBiased]",
       [](const Tensor& x) {
         static const Tensor bias = Tensor::fromValues(cpu(), sh({}), std::vector<float>{0});
         return x.softmaxBiased(0, bias);
       }},
  };
}

TEST(OpsReduce, BoundTensorOutsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  for (const auto& [prefix, op] : familyOps()) {
    SCOPED_TRACE(prefix);
    expectError([&] { op(x); }, prefix, "no compilation in progress");
  }
  const Tensor b = Tensor::fromValues(cpu(), sh({3}, DType::bool_), std::vector<float>{1, 0, 1});
  expectError([&] { b.any(0); }, "[any]", "no compilation in progress");
  expectError([&] { b.all(0); }, "[all]", "no compilation in progress");
}

TEST(OpsReduce, BoundTensorCapturedInsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  const Tensor arg(sh({3}, {"d"}));
  for (const auto& [prefix, op] : familyOps()) {
    SCOPED_TRACE(prefix);
    auto fn = [&](const Tensor&) { return op(x); };
    expectError([&] { radix::compile(cpu(), fn, arg); }, prefix, "{d=3}:f32 is a device buffer that is not an argument");
  }
}

}  // namespace

RADIX_OPS_CASES("reduce", reduceCases);
RADIX_OPS_CASES("reduce_axes", axesCases);
RADIX_OPS_CASES("argreduce", argCases);
RADIX_OPS_CASES("scan", scanCases);
RADIX_OPS_CASES("softmax", softmaxCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest

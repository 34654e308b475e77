// sort, argsort and topK against std::stable_sort.
#include <numeric>

#include "ops_testing.h"

namespace opstest {
namespace {

using radix::Axis;

/// The order the ops sort by: NaN above +inf (NaNs equal), -0 == +0.
bool sortLess(double x, double y) {
  if (std::isnan(x)) return false;
  return std::isnan(y) || x < y;
}

/// Each line along `axis` stably sorted, first `k` kept (k < 0: all); the positions with `indices`.
Ref sortedRef(int axis, bool descending, int64_t k, bool indices) {
  return [=](const std::vector<Host>& in) {
    const Host& x = in[0];
    const int64_t n = x.dims[axis], kept = k < 0 ? n : k;
    Dims outDims = x.dims, lineDims = x.dims;
    outDims[axis] = kept;
    lineDims[axis] = 1;
    Vals out(countOf(outDims));
    forEachIndex(lineDims, [&](const Dims& base) {
      auto at = [&](int64_t j) {
        Dims i = base;
        i[axis] = j;
        return x.v[offsetOf(x.dims, i)];
      };
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return descending ? sortLess(at(b), at(a)) : sortLess(at(a), at(b));
      });
      for (int64_t j = 0; j < kept; ++j) {
        Dims o = base;
        o[axis] = j;
        out[offsetOf(outDims, o)] = indices ? static_cast<double>(order[j]) : at(order[j]);
      }
    });
    return out;
  };
}

Op sortOp(Axis a, bool descending) { return [=](const Ts& x) { return x[0].sort(a, descending); }; }
Op argsortOp(Axis a, bool descending) { return [=](const Ts& x) { return x[0].argsort(a, descending); }; }
Op topKValuesOp(int64_t k, Axis a) { return [=](const Ts& x) { return x[0].topK(k, a).values; }; }
Op topKIndicesOp(int64_t k, Axis a) { return [=](const Ts& x) { return x[0].topK(k, a).indices; }; }

/// Small integers: many ties, which only a stable sort orders as the reference does.
Vals ties(int64_t n, uint32_t seed) { return pseudoRandom(n, -3, 3, seed, true); }

/// NaN, infinities and signed zeros among ties.
Vals specials(int64_t n) {
  const double nan = std::nan(""), inf = INFINITY;
  const Vals pattern = {1, nan, -inf, 0, -0.0, inf, 2, nan, -1, 1, -0.0, inf, -inf, 0, 2, nan, -1};
  Vals v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = pattern[(i * 7) % pattern.size()];
  return v;
}

/// One line of the table: an input shape (dtype set per row), the axis, and the fixed input if any.
struct Line {
  std::string name;
  Dims dims;
  std::vector<Tag> tags;
  Axis axis;
  int refAxis;
  Vals given = {};
};

Shape lineShape(const Line& l, DType d) { return l.tags.empty() ? sh(l.dims, d) : sh(l.dims, l.tags, d); }

/// sort and argsort of a line, both directions, in dtype d; indices are i32 whatever the input.
void addSorts(std::vector<Case>& out, const Line& l, DType d, double lo, double hi) {
  const Shape in = lineShape(l, d);
  std::vector<Vals> given;
  if (!l.given.empty()) given.push_back(l.given);
  for (bool desc : {false, true}) {
    const std::string suffix = std::string(desc ? "_desc_" : "_") + std::string(radix::name(d));
    out.push_back({"sort_" + l.name + suffix, {in}, sortOp(l.axis, desc), sortedRef(l.refAxis, desc, -1, false), in, {}, lo, hi, given});
    out.push_back({"argsort_" + l.name + suffix, {in}, argsortOp(l.axis, desc), sortedRef(l.refAxis, desc, -1, true),
                   in.withDtype(DType::i32), {}, lo, hi, given});
  }
}

void addTopK(std::vector<Case>& out, const Line& l, int64_t k, DType d, double lo, double hi) {
  const Shape in = lineShape(l, d);
  std::vector<int64_t> dims = l.dims;
  dims[l.refAxis] = k;
  const Shape res = l.tags.empty() ? sh(dims, d) : sh(dims, l.tags, d);
  std::vector<Vals> given;
  if (!l.given.empty()) given.push_back(l.given);
  const std::string name = "topK" + std::to_string(k) + "_" + l.name + "_" + std::string(radix::name(d));
  out.push_back({name + "_values", {in}, topKValuesOp(k, l.axis), sortedRef(l.refAxis, true, k, false), res, {}, lo, hi, given});
  out.push_back({name + "_indices", {in}, topKIndicesOp(k, l.axis), sortedRef(l.refAxis, true, k, true), res.withDtype(DType::i32),
                 {}, lo, hi, given});
}

const std::vector<Line>& lines() {
  static const std::vector<Line> all = {
      {"1", {1}, {}, 0, 0},
      {"7", {7}, {}, -1, 0},
      {"3x17", {3, 17}, {}, 1, 1},
      {"129x3_axis0", {129, 3}, {}, 0, 0},
      {"2x1000", {2, 1000}, {}, -1, 1},
      {"tagged_3x17x5", {3, 17, 5}, {"b", "voc", "d"}, "voc", 1},
      {"ties_129", {129}, {}, 0, 0, ties(129, 1)},
      {"ties_4x33", {4, 33}, {"b", "s"}, "s", 1, ties(4 * 33, 2)},
      {"specials_17", {17}, {}, 0, 0, specials(17)},
      {"specials_3x17_axis0", {17, 3}, {}, 0, 0, specials(51)},
  };
  return all;
}

/// (line, k) for topK.
std::vector<std::pair<Line, int64_t>> tops() {
  const auto& l = lines();
  return {{l[0], 1}, {l[1], 0}, {l[1], 7}, {l[2], 5}, {l[3], 3}, {l[4], 40}, {l[4], 1000},
          {l[5], 4}, {l[7], 9}, {l[8], 6}, {{"129", {129}, {}, 0, 0}, 128}};
}

// Sections compile as one function each: a few dozen sorts per function keeps LLVM fast.
std::vector<Case> sortF32() {
  std::vector<Case> out;
  for (const Line& l : lines()) addSorts(out, l, DType::f32, -4, 4);
  return out;
}

/// f16 and bf16 sort as f32 inside: the lines that tell conversions, ties and NaN apart.
template <DType D>
std::vector<Case> sortHalf() {
  std::vector<Case> out;
  for (int i : {2, 5, 7, 8}) addSorts(out, lines()[i], D, -4, 4);
  for (int i : {3, 5, 8, 9}) addTopK(out, tops()[i].first, tops()[i].second, D, -4, 4);
  return out;
}

std::vector<Case> sortIntegers() {
  std::vector<Case> out;
  // Integers: ties everywhere; u8 values above 127 tell an unsigned comparison from a signed one.
  for (int i : {2, 4, 6}) addSorts(out, lines()[i], DType::i32, -50, 50);
  addSorts(out, {"u8_7", {7}, {}, 0, 0, {200, 3, 130, 0, 255, 127, 128}}, DType::u8, 0, 0);
  for (int i : {3, 5, 8}) addTopK(out, tops()[i].first, tops()[i].second, DType::i32, -50, 50);
  return out;
}

std::vector<Case> topKF32() {
  std::vector<Case> out;
  for (const auto& [l, k] : tops()) addTopK(out, l, k, DType::f32, -4, 4);
  return out;
}

std::vector<ErrorCase> errorCases() {
  return {
      {"sort_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].sort(2); }, "[sort]", "axis 2 out of range for {3,17}:f32"},
      {"sort_scalar", {sh({})}, [](const Ts& x) { return x[0].sort(0); }, "[sort]", "axis 0 out of range for {}:f32"},
      {"argsort_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].argsort("voc", true); }, "[argsort]",
       "no axis tagged \"voc\" in {b=3,d=17}:f32"},
      {"topK_too_many", {sh({3, 17})}, [](const Ts& x) { return x[0].topK(18, 1).values; }, "[topK]",
       "k=18 out of range [0, 17] for axis 1 of {3,17}:f32"},
      {"topK_negative", {sh({3, 17}, {"b", "voc"})}, [](const Ts& x) { return x[0].topK(-1, "voc").indices; }, "[topK]",
       "k=-1 out of range [0, 17] for axis \"voc\" of {b=3,voc=17}:f32"},
      {"topK_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].topK(1, -3).values; }, "[topK]", "axis -3 out of range for {3,17}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("sort_f32", sortF32);
RADIX_OPS_CASES("sort_f16", sortHalf<DType::f16>);
RADIX_OPS_CASES("sort_bf16", sortHalf<DType::bf16>);
RADIX_OPS_CASES("sort_integers", sortIntegers);
RADIX_OPS_CASES("topK_f32", topKF32);
RADIX_OPS_ERRORS(errorCases);

namespace {

// Rows as long as a vocabulary (the merge sort's cost is checked structurally below, not timed).
TEST(OpsSort, VocabularyRows) {
  const int64_t rows = 4, voc = 50257;
  const Vals v = pseudoRandom(rows * voc, -10, 10, 7, false);
  const Tensor x = Tensor::fromValues(cpu(), sh({rows, voc}), v);
  auto fn = [](const Tensor& t) { return std::pair{t.sort(-1, true), t.topK(50, -1).indices}; };
  auto exe = radix::compile(cpu(), fn, x);
  auto [sorted, top] = exe(x);
  const std::vector<float> s = sorted.toVector<float>();
  const std::vector<int32_t> idx = top.toVector<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row(v.begin() + r * voc, v.begin() + (r + 1) * voc);
    std::vector<int32_t> order(voc);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < voc; ++j) ASSERT_EQ(s[r * voc + j], row[order[j]]) << "row " << r << " position " << j;
    for (int64_t j = 0; j < 50; ++j) ASSERT_EQ(idx[r * 50 + j], order[j]) << "row " << r << " position " << j;
  }
}

// The passes are a loop, not unrolled: the module of a 50000-long sort is about as long as a 17-long one's.
TEST(OpsSort, IrSizeDoesNotGrowWithLength) {
  auto fn = [](const Tensor& t) { return std::pair{t.argsort(-1), t.topK(3, -1).values}; };
  auto small = radix::compile(cpu(), fn, Tensor(sh({2, 17})));
  auto large = radix::compile(cpu(), fn, Tensor(sh({2, 50000})));
  EXPECT_NE(small.mlir().find("scf.for"), std::string::npos);
  // (Only the sizes in the types are longer; 16 unrolled passes instead of 5 would be 3 times longer.)
  EXPECT_LT(large.mlir().size(), small.mlir().size() * 1.2);
}

// Empty axes and empty batches: nothing to sort, shapes still right. (One result per function:
// several zero-size results of one dtype in one function crash buffer-results-to-out-params.)
TEST(OpsSort, EmptyAxes) {
  const Tensor a = Tensor::fromValues(cpu(), sh({3, 0}, {"b", "voc"}), Vals{});
  const Tensor b = Tensor::fromValues(cpu(), sh({0, 5}), Vals{});
  auto run = [](const Tensor& x, Op op) { return radix::testing::compileAndCall(cpu(), [op](const Tensor& t) { return op({t}); }, x); };
  EXPECT_EQ(run(a, sortOp(1, false)).shape(), sh({3, 0}, {"b", "voc"}));
  EXPECT_EQ(run(a, argsortOp("voc", true)).shape(), sh({3, 0}, {"b", "voc"}, DType::i32));
  EXPECT_EQ(run(a, topKValuesOp(0, 1)).shape(), sh({3, 0}, {"b", "voc"}));
  EXPECT_EQ(run(b, topKIndicesOp(2, 1)).shape(), sh({0, 2}, DType::i32));
  EXPECT_EQ(run(b, sortOp(0, true)).shape(), sh({0, 5}));
}

// The serial pipeline (threads = 1) lowers the loops the same way as the OpenMP one.
TEST(OpsSort, SerialPipelineAgrees) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3, 129}), pseudoRandom(3 * 129, -3, 3, 5, true));
  auto fn = [](const Tensor& t) { return std::tuple{t.sort(1), t.argsort(1, true), t.topK(7, 1).indices}; };
  radix::CompileOptions serialOptions;
  serialOptions.threads = 1;
  auto [a, b, c] = radix::testing::compileAndCall(cpu(), fn, x);
  auto [sa, sb, sc] = radix::testing::compileAndCall(cpu().withOptions(serialOptions), fn, x);
  EXPECT_EQ(a.toVector<float>(), sa.toVector<float>());
  EXPECT_EQ(b.toVector<int32_t>(), sb.toVector<int32_t>());
  EXPECT_EQ(c.toVector<int32_t>(), sc.toVector<int32_t>());
  const std::vector<Host> in = {{x.toVector<double>(), {3, 129}}};
  const Vals expected = sortedRef(1, true, -1, true)(in);
  EXPECT_EQ(sb.toVector<int32_t>(), std::vector<int32_t>(expected.begin(), expected.end()));
}

}  // namespace
}  // namespace opstest

// Sharded execution over MPI (docs/sharding.md). Runs only under mpirun (tests/CMakeLists.txt:
// -np 2 and -np 4): each test compiles the same function for the grid and for one process, and
// compares; the shard shapes each rank holds are checked too.
#include <radix/nn.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using radix::DType;
using radix::Platform;
using radix::Shape;
using radix::Tensor;
using radix::testing::errorOf;

namespace {

// Small dyadic values: every partial sum is exact, so split reductions match one process exactly.
std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37 + seed * 11 + i / 7) % 17 - 8) / 8.0f;
  return v;
}

int world() { return Platform::cpu().processCount(); }
Platform grid() { return Platform::cpu().withSharding({.numPartitions = world()}); }

// Rows [begin, end) of a row-major [rows, cols] array.
std::vector<float> rows(const std::vector<float>& a, int64_t cols, int64_t begin, int64_t end) {
  return std::vector<float>(a.begin() + begin * cols, a.begin() + end * cols);
}

void expectEqual(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ < 5) ADD_FAILURE() << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

}  // namespace

TEST(Mpi, PlatformCountsAndErrors) {
  const Platform cpu = Platform::cpu();
  const int n = cpu.processCount();
  ASSERT_GE(n, 2) << "run under mpirun -np 2 or more";
  EXPECT_EQ(cpu.processIndex(), std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
  const Platform g = grid();
  EXPECT_EQ(g.partitionIndex(), cpu.processIndex());
  // A grid that does not match the world is an error naming both counts.
  const std::string e = errorOf([&] { cpu.withSharding({.numPartitions = n + 1}); });
  EXPECT_EQ(e.rfind("[platform]", 0), 0u) << e;
  EXPECT_NE(e.find("numPartitions = " + std::to_string(n + 1)), std::string::npos) << e;
  EXPECT_NE(e.find("numReplicas = 1"), std::string::npos) << e;
  EXPECT_NE(e.find("started " + std::to_string(n) + " processes"), std::string::npos) << e;
  EXPECT_NE(errorOf([&] { cpu.withSharding({.numReplicas = 2, .numPartitions = n}); }).find("numReplicas = 2"),
            std::string::npos);
}

TEST(Mpi, ShardedInputsAndOutputs) {
  const Platform g = grid();
  const int n = world(), r = g.partitionIndex();
  const Shape s = Shape({3, 2 * n, 5}, DType::f32).withSharding({1});
  const std::vector<float> full = values(s.count(), 1);
  Tensor t = Tensor::fromValues(g, s, full);
  EXPECT_EQ(t.shape(), s);
  EXPECT_EQ(t.localShape().dims(), (std::vector<int64_t>{3, 2, 5}));
  std::vector<float> mine;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 2 * r; j < 2 * r + 2; ++j)
      for (int64_t k = 0; k < 5; ++k) mine.push_back(full[(i * 2 * n + j) * 5 + k]);
  expectEqual(t.localToVector<float>(), mine, "local shard");
  expectEqual(t.toVector<float>(), full, "gathered");
  Tensor u = Tensor::fromShard(g, s, mine);
  expectEqual(u.toVector<float>(), full, "fromShard gathered");
  EXPECT_NE(errorOf([&] { Tensor::fromShard(g, s, full); }).find("[fromShard]"), std::string::npos);
  EXPECT_NE(errorOf([&] { Tensor::fromValues(g, Shape({3, 2 * n + 1}, DType::f32).withSharding({1}), values(3 * (2 * n + 1), 0)); })
                .find("do not divide"),
            std::string::npos);
  // A whole array where the executable takes a shard is an error, not a wrong answer.
  auto fn = [](const Tensor& x) { return x.addConstant(1); };
  auto exe = radix::compile(g, fn, t);
  Tensor whole = Tensor::fromValues(Platform::cpu(), s, full);
  EXPECT_NE(errorOf([&] { exe(whole); }).find("holds the whole array"), std::string::npos);
}

// y = x @ w with x {m, k}, w {k, n}, one of the shardings below; compared with one process.
struct MatmulCase {
  const char* name;
  int xAxis, wAxis, yAxis;  // sharded axis or -1
  std::vector<int64_t> localY;  // in units of the world size: 0 = divided by it
};

TEST(Mpi, MatmulShardings) {
  const int n = world();
  const Platform g = grid();
  const int64_t M = 3 * n, K = 4 * n, N = 5 * n;
  const std::vector<float> xv = values(M * K, 2), wv = values(K * N, 3);
  auto mm = [](const Tensor& x, const Tensor& w) { return x.dotGeneral(w, {{1, 0}}, {}); };
  Tensor ref = radix::compile(Platform::cpu(), mm, Tensor::fromValues(Platform::cpu(), Shape({M, K}, DType::f32), xv),
                              Tensor::fromValues(Platform::cpu(), Shape({K, N}, DType::f32), wv))(
      Tensor::fromValues(Platform::cpu(), Shape({M, K}, DType::f32), xv),
      Tensor::fromValues(Platform::cpu(), Shape({K, N}, DType::f32), wv));
  const std::vector<float> want = ref.toVector<float>();
  const std::vector<MatmulCase> cases = {
      {"rows", 0, -1, -1, {M, N}},
      {"rows_kept_sharded", 0, -1, 0, {M / n, N}},
      {"columns", -1, 1, -1, {M, N}},
      {"columns_kept_sharded", -1, 1, 1, {M, N / n}},
      {"contraction", 1, 0, -1, {M, N}},
      {"contraction_replicated_x", -1, 0, -1, {M, N}},
      {"contraction_scattered_rows", 1, 0, 0, {M / n, N}},
  };
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(c.name);
    Shape xs({M, K}, DType::f32), ws({K, N}, DType::f32);
    if (c.xAxis >= 0) xs = xs.withSharding({c.xAxis});
    if (c.wAxis >= 0) ws = ws.withSharding({c.wAxis});
    Tensor x = Tensor::fromValues(g, xs, xv), w = Tensor::fromValues(g, ws, wv);
    const int yAxis = c.yAxis;
    auto fn = [yAxis](const Tensor& x, const Tensor& w) {
      Tensor y = x.dotGeneral(w, {{1, 0}}, {});
      return yAxis >= 0 ? y.withSharding({yAxis}) : y;
    };
    Tensor y = radix::compile(g, fn, x, w)(x, w);
    EXPECT_EQ(y.localShape().dims(), c.localY);
    expectEqual(y.toVector<float>(), want, c.name);
  }
}

struct Mlp {
  Tensor w1, w2;
  Tensor forward(const Tensor& x) const { return x.dot(w1, {"d"}).relu().dot(w2, {"h"}); }
};

TEST(Mpi, MegatronMlp) {
  const int n = world();
  const Platform g = grid();
  const int64_t B = 6, D = 8, H = 12 * n;
  const auto xv = values(B * D, 4), w1v = values(D * H, 5), w2v = values(H * D, 6);
  auto make = [&](const Platform& p, bool shard) {
    Shape s1 = Shape({D, H}, DType::f32).withTags({"d", "h"}), s2 = Shape({H, D}, DType::f32).withTags({"h", "o"});
    if (shard) {
      s1 = s1.withSharding({"h"});  // column-parallel
      s2 = s2.withSharding({"h"});  // row-parallel: one all-reduce
    }
    return Mlp{Tensor::fromValues(p, s1, w1v), Tensor::fromValues(p, s2, w2v)};
  };
  Tensor x1 = Tensor::fromValues(Platform::cpu(), Shape({B, D}, DType::f32).withTags({"b", "d"}), xv);
  Mlp one = make(Platform::cpu(), false);
  const auto want = radix::compile(Platform::cpu(), &Mlp::forward, one, x1)(one, x1).toVector<float>();
  Mlp sharded = make(g, true);
  EXPECT_EQ(sharded.w1.localShape().dims(), (std::vector<int64_t>{D, H / n}));
  EXPECT_EQ(sharded.w2.localShape().dims(), (std::vector<int64_t>{H / n, D}));
  Tensor x = Tensor::fromValues(g, Shape({B, D}, DType::f32).withTags({"b", "d"}), xv);
  Tensor y = radix::compile(g, &Mlp::forward, sharded, x)(sharded, x);
  EXPECT_EQ(y.localShape().dims(), (std::vector<int64_t>{B, D}));
  expectEqual(y.toVector<float>(), want, "mlp");
}

// Data parallel over replicas x tensor parallel over partitions: each replica runs the MLP on
// its own rows of the batch.
TEST(Mpi, DataTimesTensorParallelGrid) {
  const int n = world();
  if (n % 2 != 0 || n < 4) GTEST_SKIP() << "needs an even world of at least 4 (mpirun -np 4)";
  const int replicas = 2, partitions = n / 2;
  const Platform g = Platform::cpu().withSharding({.numReplicas = replicas, .numPartitions = partitions});
  const int replica = g.processIndex() / partitions;
  EXPECT_EQ(g.partitionIndex(), g.processIndex() % partitions);
  const int64_t B = 4 * replicas, D = 8, H = 6 * partitions;
  const auto xv = values(B * D, 7), w1v = values(D * H, 8), w2v = values(H * D, 9);
  const Shape xs = Shape({B, D}, DType::f32).withTags({"b", "d"});
  Tensor x1 = Tensor::fromValues(Platform::cpu(), xs, xv);
  Mlp one{Tensor::fromValues(Platform::cpu(), Shape({D, H}, DType::f32).withTags({"d", "h"}), w1v),
          Tensor::fromValues(Platform::cpu(), Shape({H, D}, DType::f32).withTags({"h", "o"}), w2v)};
  const auto all = radix::compile(Platform::cpu(), &Mlp::forward, one, x1)(one, x1).toVector<float>();
  Mlp tp{Tensor::fromValues(g, Shape({D, H}, DType::f32).withTags({"d", "h"}).withSharding({"h"}), w1v),
         Tensor::fromValues(g, Shape({H, D}, DType::f32).withTags({"h", "o"}).withSharding({"h"}), w2v)};
  const int64_t b = B / replicas;
  Tensor x = Tensor::fromValues(g, Shape({b, D}, DType::f32).withTags({"b", "d"}), rows(xv, D, replica * b, (replica + 1) * b));
  Tensor y = radix::compile(g, &Mlp::forward, tp, x)(tp, x);
  EXPECT_EQ(tp.w1.localShape().dims(), (std::vector<int64_t>{D, H / partitions}));
  expectEqual(y.toVector<float>(), rows(all, D, replica * b, (replica + 1) * b), "replica rows");
}

TEST(Mpi, ModuleAttributes) {
  const int n = world();
  const Platform g = grid();
  Tensor w = Tensor::fromValues(g, Shape({2 * n, 2}, DType::f32).withSharding({0}), values(4 * n, 1));
  Tensor x = Tensor::fromValues(g, Shape({2 * n, 2}, DType::f32), values(4 * n, 2));
  auto exe = radix::compile(g, [](Tensor w, Tensor x) { return w.add(x); }, w, x);
  const std::string& ir = exe.mlir();
  const std::string N = std::to_string(n);
  EXPECT_NE(ir.find("mhlo.num_partitions = " + N + " : i32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("mhlo.sharding = \"{devices=[" + N + ",1]<=[" + N + "]}\""), std::string::npos) << ir;
  EXPECT_NE(ir.find("mhlo.sharding = \"{replicated}\""), std::string::npos) << ir;
  std::vector<float> want = values(4 * n, 1), xv = values(4 * n, 2);
  for (size_t i = 0; i < want.size(); ++i) want[i] += xv[i];
  expectEqual(exe(w, x).toVector<float>(), want, "add");
}

// Per-process code (shard_map style): every rank holds its own {rows, cols} values, unsharded.
struct CollectiveCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  // The expected result on rank r from all ranks' inputs.
  std::function<std::vector<float>(const std::vector<std::vector<float>>&, int r)> expect;
};

TEST(Mpi, ExplicitCollectives) {
  const int n = world();
  const Platform g = grid();
  const int me = g.partitionIndex();
  const int64_t R = 2 * n, C = 3;
  std::vector<std::vector<float>> all;
  for (int r = 0; r < n; ++r) all.push_back(values(R * C, 10 + r));
  auto reduce = [](const std::vector<std::vector<float>>& a, auto op) {
    std::vector<float> out = a[0];
    for (size_t r = 1; r < a.size(); ++r)
      for (size_t i = 0; i < out.size(); ++i) out[i] = op(out[i], a[r][i]);
    return out;
  };
  auto plus = [](float a, float b) { return a + b; };
  const std::vector<CollectiveCase> cases = {
      {"allReduce_sum", [](const Tensor& x) { return radix::allReduce(x); },
       [&](const auto& a, int) { return reduce(a, plus); }},
      {"allReduce_max", [](const Tensor& x) { return radix::allReduce(x, radix::ReduceOp::max); },
       [&](const auto& a, int) { return reduce(a, [](float x, float y) { return std::max(x, y); }); }},
      {"allReduce_min_in_call",
       [](const Tensor& x) { return radix::call("reduce_min", [](const Tensor& t) { return radix::allReduce(t, radix::ReduceOp::min); }, x); },
       [&](const auto& a, int) { return reduce(a, [](float x, float y) { return std::min(x, y); }); }},
      {"allGather_axis1", [](const Tensor& x) { return radix::allGather(x, 1); },
       [&](const auto& a, int) {
         std::vector<float> out;
         for (int64_t i = 0; i < R; ++i)
           for (int r = 0; r < n; ++r)
             for (int64_t j = 0; j < C; ++j) out.push_back(a[r][i * C + j]);
         return out;
       }},
      {"reduceScatter_axis0", [](const Tensor& x) { return radix::reduceScatter(x, 0); },
       [&](const auto& a, int r) { return rows(reduce(a, plus), C, r * (R / n), (r + 1) * (R / n)); }},
      {"allToAll_0_to_1", [](const Tensor& x) { return radix::allToAll(x, 0, 1); },
       [&](const auto& a, int r) {  // block r of every rank's rows, side by side in rank order
         std::vector<float> out;
         const int64_t b = R / n;
         for (int64_t i = 0; i < b; ++i)
           for (int q = 0; q < n; ++q)
             for (int64_t j = 0; j < C; ++j) out.push_back(a[q][(r * b + i) * C + j]);
         return out;
       }},
  };
  Tensor x = Tensor::fromValues(g, Shape({R, C}, DType::f32), all[me]);
  for (const CollectiveCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto fn = c.fn;
    Tensor y = radix::compile(g, [fn](const Tensor& x) { return fn(x); }, x)(x);
    expectEqual(y.toVector<float>(), c.expect(all, me), c.name);
  }
  // On one process each collective is the identity.
  Tensor one = Tensor::fromValues(Platform::cpu(), Shape({R, C}, DType::f32), all[me]);
  auto gathered = radix::compile(Platform::cpu(), [](const Tensor& x) { return radix::allGather(x, 0); }, one)(one);
  expectEqual(gathered.toVector<float>(), all[me], "identity");
  EXPECT_NE(errorOf([&] { radix::compile(g, [](const Tensor& x) { return radix::reduceScatter(x, 1); }, x); })
                .find("[reduceScatter]"),
            std::string::npos);
}

// Self-attention with heads split over the partitions (q, k, v column-parallel by head, the output
// projection row-parallel: one all-reduce), a residual, then a Megatron MLP (a second all-reduce).
struct Block {
  Tensor wq, wk, wv, wo, w1, w2;
  Tensor forward(const Tensor& x) const {
    Tensor q = x.dot(wq, {"d"});                             // {s, h, e}
    Tensor k = x.dot(wk, {"d"}).rename({{"s", "t"}});        // {t, h, e}
    Tensor v = x.dot(wv, {"d"}).rename({{"s", "t"}});
    Tensor p = q.dot(k, {"e"}).mulConstant(0.5).softmax("t");  // {h, s, t}
    Tensor o = p.dot(v, {"t"});                              // {h, s, e}
    Tensor y = o.dot(wo, {"h", "e"}).add(x);                 // {s, d}
    return y.dot(w1, {"d"}).relu().dot(w2, {"f"}).add(y);
  }
};

TEST(Mpi, TransformerBlockShardedHeads) {
  const int n = world();
  const Platform g = grid();
  const int64_t S = 5, D = 8, H = 2 * n, E = 4, F = 4 * n;
  auto make = [&](const Platform& p, bool shard) {
    auto t = [&](std::vector<int64_t> dims, std::vector<radix::Tag> tags, radix::Tag split, int seed) {
      Shape s = Shape(dims, DType::f32).withTags(tags);
      if (shard) s = s.withSharding({split});
      return Tensor::fromValues(p, s, values(s.count(), seed));
    };
    return Block{t({D, H, E}, {"d", "h", "e"}, "h", 20), t({D, H, E}, {"d", "h", "e"}, "h", 21),
                 t({D, H, E}, {"d", "h", "e"}, "h", 22), t({H, E, D}, {"h", "e", "d"}, "h", 23),
                 t({D, F}, {"d", "f"}, "f", 24),       t({F, D}, {"f", "d"}, "f", 25)};
  };
  const Shape xs = Shape({S, D}, DType::f32).withTags({"s", "d"});
  Block one = make(Platform::cpu(), false);
  Tensor x1 = Tensor::fromValues(Platform::cpu(), xs, values(S * D, 26));
  const auto want = radix::compile(Platform::cpu(), &Block::forward, one, x1)(one, x1).toVector<float>();
  Block tp = make(g, true);
  EXPECT_EQ(tp.wq.localShape().dims(), (std::vector<int64_t>{D, 2, E}));
  EXPECT_EQ(tp.wo.localShape().dims(), (std::vector<int64_t>{2, E, D}));
  Tensor x = Tensor::fromValues(g, xs, values(S * D, 26));
  Tensor y = radix::compile(g, &Block::forward, tp, x)(tp, x);
  EXPECT_EQ(y.localShape().dims(), (std::vector<int64_t>{S, D}));
  radix::testing::expectClose(y, want, 1e-5);  // softmax: exp and division are not exact
}

// The per-op profile (docs/profiling.md): sites named by op and the user's line, counted per
// call, kept by cached executables, nested in the trace; and no change to code compiled without it.
#include <radix/radix.h>
#include <radix/profiler.h>
#include <radix/testing.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/profiler.h"

namespace {

namespace fs = std::filesystem;
using radix::DType;
using radix::Shape;
using radix::Tensor;

radix::Platform cpu() { return radix::Platform::cpu(); }

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 7 - 3);
  return v;
}

// The lines of the ops below, as the profile must name them.
constexpr int kDotLine = __LINE__ + 3;
constexpr int kExpLine = __LINE__ + 3;
Tensor dotThenExp(Tensor a, Tensor b, Tensor c) {
  Tensor ab = a.dot(b, {"k"});
  return ab.exp().add(c);
}

struct Args {
  Tensor a, b, c;
};
Args args(int64_t m, int64_t k, int64_t n) {
  return {Tensor::fromValues(cpu(), Shape({m, k}, DType::f32).withTags({"m", "k"}), ramp(m * k, 0.1f)),
          Tensor::fromValues(cpu(), Shape({k, n}, DType::f32).withTags({"k", "n"}), ramp(k * n, 0.05f)),
          Tensor::fromValues(cpu(), Shape({m, n}, DType::f32).withTags({"m", "n"}), ramp(m * n, 1.f))};
}

const radix::ProfileRow* findRow(const std::vector<radix::ProfileRow>& rows, const std::string& location,
                                 const std::string& kind) {
  for (const radix::ProfileRow& r : rows)
    if (r.location == location && r.kind == kind) return &r;
  return nullptr;
}

std::string where(int line) { return "profile_test.cpp:" + std::to_string(line); }

TEST(Profile, TableNamesOpsAndTheirLines) {
  struct Case {
    int threads;
    int64_t m, k, n;
  };
  for (const Case& c : {Case{1, 5, 7, 3}, Case{2, 33, 17, 9}}) {
    SCOPED_TRACE("threads " + std::to_string(c.threads));
    radix::CompileOptions options;
    options.cache = false;
    options.threads = c.threads;
    options.profile = true;
    const radix::Platform platform = cpu().withOptions(options);
    Args in = args(c.m, c.k, c.n);
    radix::Exe exe = radix::compile(platform, dotThenExp, in.a, in.b, in.c);
    radix::profileReset();
    Tensor out;
    for (int i = 0; i < 3; ++i) out = exe(in.a, in.b, in.c);
    // The results are those of code compiled without profiling.
    Tensor plain = radix::testing::compileAndCall(cpu().withOptions({.cache = false, .threads = c.threads}),
                                                  dotThenExp, in.a, in.b, in.c);
    radix::testing::expectClose(out, plain.toVector<float>(), 0);

    const std::vector<radix::ProfileRow> rows = radix::profileRows();
    const radix::ProfileRow* dot = findRow(rows, where(kDotLine), "kernel");
    ASSERT_NE(dot, nullptr) << radix::profileReport();
    EXPECT_EQ(dot->op, "dotGeneral");
    EXPECT_EQ(dot->kind, "kernel");
    EXPECT_EQ(dot->calls, 3);
    EXPECT_DOUBLE_EQ(dot->flops, 3.0 * 2 * c.m * c.k * c.n);
    EXPECT_GT(dot->seconds, 0);
    const radix::ProfileRow* ew = findRow(rows, where(kExpLine), "loops");
    ASSERT_NE(ew, nullptr) << radix::profileReport();
    EXPECT_EQ(ew->op, "exp+add");  // fused into one loop nest
    EXPECT_EQ(ew->kind, "loops");
    EXPECT_EQ(ew->calls, 3);
    // ab and c read, the result written (maybe into ab's buffer): each buffer counted once.
    const double buffer = 3.0 * 4 * c.m * c.n;
    EXPECT_TRUE(ew->bytes == 2 * buffer || ew->bytes == 3 * buffer) << ew->bytes;
    for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].seconds, rows[i].seconds);

    const std::string report = radix::profileReport();
    EXPECT_NE(report.find("radix profile: "), std::string::npos) << report;
    EXPECT_NE(report.find("op  "), std::string::npos) << report;
    EXPECT_NE(report.find(where(kDotLine)), std::string::npos) << report;
    EXPECT_NE(report.find("GFLOP/s"), std::string::npos) << report;
    EXPECT_NE(report.find("GB/s"), std::string::npos) << report;
    radix::profileReset();
    EXPECT_TRUE(radix::profileRows().empty());
    EXPECT_EQ(radix::profileReport(), "");
  }
}

// Ops inside a radix::call are named by the line in the member function.
constexpr int kLayerLine = __LINE__ + 3;
struct Scale {
  Tensor w;
  Tensor forward(Tensor x) const { return x.mul(w); }
};
struct TwoScales {
  std::array<Scale, 2> layers;
  Tensor forward(Tensor x) const {
    for (const Scale& l : layers) x = radix::call(l, &Scale::forward, x);
    return x;
  }
};

TEST(Profile, OpsInsideCalledFunctions) {
  const Shape s = Shape({3, 5}, DType::f32).withTags({"a", "b"});
  TwoScales model{{Scale{Tensor::fromValues(cpu(), s, ramp(15, 1.f))}, Scale{Tensor::fromValues(cpu(), s, ramp(15, 2.f))}}};
  Tensor x = Tensor::fromValues(cpu(), s, ramp(15, 0.5f));
  radix::Exe exe = radix::compile(cpu().withOptions({.cache = false, .threads = 1, .profile = true}),
                                  &TwoScales::forward, model, x);
  radix::profileReset();
  exe(model, x);
  const std::vector<radix::ProfileRow> rows = radix::profileRows();
  const radix::ProfileRow* row = findRow(rows, where(kLayerLine), "loops");
  ASSERT_NE(row, nullptr) << radix::profileReport();
  EXPECT_EQ(row->op, "mul");
  EXPECT_EQ(row->calls, 2);  // once per layer, one function
  radix::profileReset();
}

// The final LLVM-dialect module of one compile, from its pass dumps.
std::string loweredModule(radix::CompileOptions options, const std::string& dir) {
  fs::remove_all(dir);
  options.cache = false;
  options.threads = 1;
  options.dumpDir = dir;
  options.dumpPasses = true;
  options.dumpPassRegex = "reconcile-unrealized-casts";
  Args in = args(4, 6, 5);
  radix::compile(cpu().withOptions(options), dotThenExp, in.a, in.b, in.c);
  std::string text;
  int found = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().string().find("reconcile-unrealized-casts") == std::string::npos) continue;
    std::ifstream file(entry.path());
    std::stringstream ss;
    ss << file.rdbuf();
    text = ss.str();
    ++found;
  }
  EXPECT_EQ(found, 1);
  fs::remove_all(dir);
  return text;
}

TEST(Profile, OffCompilesTheSameCode) {
  const char* env = std::getenv("RADIX_PROFILE");
  const std::string saved = env ? env : "";
  unsetenv("RADIX_PROFILE");
  const std::string base = ::testing::TempDir() + "radix_profile_off_";
  const std::string byDefault = loweredModule({}, base + "default");
  const std::string off = loweredModule({.profile = false}, base + "off");
  const std::string on = loweredModule({.profile = true}, base + "on");
  setenv("RADIX_PROFILE", "1", 1);
  const std::string fromEnv = loweredModule({}, base + "env");
  const std::string offOverEnv = loweredModule({.profile = false}, base + "env_off");
  if (env) setenv("RADIX_PROFILE", saved.c_str(), 1);
  else unsetenv("RADIX_PROFILE");
  ASSERT_FALSE(byDefault.empty());
  EXPECT_EQ(byDefault.find("radix_profile"), std::string::npos);
  EXPECT_EQ(off, byDefault);
  EXPECT_EQ(offOverEnv, byDefault);
  EXPECT_NE(on.find("llvm.call @radix_profile_begin"), std::string::npos);
  EXPECT_NE(on.find("llvm.call @radix_profile_end"), std::string::npos);
  EXPECT_EQ(fromEnv, on);
}

TEST(Profile, CachedExecutableKeepsItsSites) {
  const std::string dir = ::testing::TempDir() + "radix_profile_cache";
  fs::remove_all(dir);
  radix::CompileOptions options;
  options.cacheDir = dir;
  options.cache = true;
  options.threads = 1;
  Args in = args(6, 4, 2);
  radix::compile(cpu().withOptions(options), dotThenExp, in.a, in.b, in.c);  // an entry without profiling
  options.profile = true;
  radix::Exe cold = radix::compile(cpu().withOptions(options), dotThenExp, in.a, in.b, in.c);
  EXPECT_FALSE(cold.fromCache());  // profiling enters the key
  radix::Exe warm = radix::compile(cpu().withOptions(options), dotThenExp, in.a, in.b, in.c);
  EXPECT_TRUE(warm.fromCache());
  radix::profileReset();
  warm(in.a, in.b, in.c);
  const std::vector<radix::ProfileRow> rows = radix::profileRows();
  const radix::ProfileRow* dot = findRow(rows, where(kDotLine), "kernel");
  ASSERT_NE(dot, nullptr) << radix::profileReport();
  EXPECT_EQ(dot->calls, 1);
  EXPECT_DOUBLE_EQ(dot->flops, 2.0 * 6 * 4 * 2);
  ASSERT_NE(findRow(rows, where(kExpLine), "loops"), nullptr);
  radix::profileReset();
  fs::remove_all(dir);
}

TEST(Profile, TraceNestsOpEventsInCalls) {
  const std::string path = ::testing::TempDir() + "radix_profile_trace.json";
  Args in = args(3, 8, 4);
  radix::Exe exe = radix::compile(cpu().withOptions({.cache = false, .threads = 1, .profile = true}), dotThenExp,
                                  in.a, in.b, in.c);
  radix::startTrace(path);
  exe(in.a, in.b, in.c);
  exe(in.a, in.b, in.c);
  radix::stopTrace();
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  std::vector<std::pair<double, double>> calls;
  for (const auto& e : doc["traceEvents"])
    if (e["name"] == "exe.call") calls.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  ASSERT_EQ(calls.size(), 2u);
  int dots = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["cat"] != "op") continue;
    const double begin = e["ts"].get<double>(), end = begin + e["dur"].get<double>();
    bool inside = false;
    for (const auto& [b, f] : calls) inside = inside || (begin >= b && end <= f);
    EXPECT_TRUE(inside) << e.dump();
    if (e["name"] == "dotGeneral" && e["args"]["kind"] == "kernel") {
      ++dots;
      EXPECT_EQ(e["args"]["location"], where(kDotLine));
    }
  }
  EXPECT_EQ(dots, 2);
  radix::profileReset();
  fs::remove(path);
}

TEST(Profile, SiteTableRoundTripsAndRejectsMalformedText) {
  using radix::detail::ProfileSite;
  const std::vector<ProfileSite> sites = {{"dot", "kernel", "a.cpp:3", 120, 0}, {"exp+add", "loops", "a.cpp:4,5", 0, 96}};
  auto back = radix::detail::parseProfileSites(radix::detail::profileSitesText(sites));
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].op, "exp+add");
  EXPECT_EQ((*back)[1].location, "a.cpp:4,5");
  EXPECT_EQ((*back)[0].flops, 120);
  for (const char* bad : {"", "{}", "[[\"dot\"]]", "[[\"dot\",\"kernel\",\"a\",-1,0]]", "[[1,\"k\",\"a\",0,0]]", "[[\"d\""})
    EXPECT_FALSE(radix::detail::parseProfileSites(bad).has_value()) << bad;
}

}  // namespace

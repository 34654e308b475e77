// The on-disk executable cache, dumps, the compile log and the Perfetto trace.
#include <radix/cache.h>
#include <radix/profiler.h>
#include <radix/radix.h>
#include <radix/testing.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <xxhash.h>

#include "runtime/cache.h"
#include "mlp/mlp.h"

namespace fs = std::filesystem;

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

/// A fresh folder per test, removed afterwards.
class Cache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("radix-cache-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name())).string();
    fs::remove_all(dir);
    radix::CompileOptions options;
    options.cacheDir = dir;
    platform = radix::Platform::cpu().withOptions(options);
  }
  void TearDown() override { fs::remove_all(dir); }

  radix::Exe<Tensor> compileNN() { return radix::compile(platform, &mlp::MLP::forward, nn, x); }
  fs::path onlyEntry() {
    auto entries = radix::listCache(dir);
    EXPECT_EQ(entries.size(), 1u);
    return entries.empty() ? fs::path() : fs::path(entries[0].path);
  }

  std::string dir;
  radix::Platform platform = radix::Platform::cpu();
  mlp::MLP nn = mlp::example(radix::Platform::cpu());
  Tensor x = mlp::input(radix::Platform::cpu());
};

TEST_F(Cache, SecondCompileLoadsWithoutCompiling) {
  auto cold = compileNN();
  EXPECT_FALSE(cold.fromCache());
  const radix::CacheStats before = radix::cacheStats();
  auto warm = compileNN();
  const radix::CacheStats after = radix::cacheStats();
  EXPECT_TRUE(warm.fromCache());
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.compiles, before.compiles);  // no MLIR lowering pass, no LLVM code generation
  radix::testing::expectClose(warm(nn, x), {20, 0, 0}, 0);
  const fs::path entry = onlyEntry();
  EXPECT_EQ(entry.parent_path().filename(), "cpu");
  EXPECT_TRUE(fs::exists(entry / "module.mlir"));
  EXPECT_TRUE(fs::exists(entry / "entry.o"));
  EXPECT_TRUE(fs::exists(entry / "meta.json"));
  EXPECT_EQ(entry.filename().string().rfind("MLP_", 0), 0u);
}

TEST_F(Cache, OptionsThatChangeCodeChangeTheKey) {
  compileNN();
  radix::CompileOptions o0 = platform.options();
  o0.optLevel = 0;
  platform = platform.withOptions(o0);
  auto exe = compileNN();
  EXPECT_FALSE(exe.fromCache());
  EXPECT_EQ(radix::listCache(dir).size(), 2u);
  radix::testing::expectClose(exe(nn, x), {20, 0, 0}, 0);
}

TEST_F(Cache, DisabledCacheWritesNothing) {
  radix::CompileOptions off = platform.options();
  off.cache = false;
  platform = platform.withOptions(off);
  compileNN();
  EXPECT_FALSE(compileNN().fromCache());
  EXPECT_TRUE(radix::listCache(dir).empty());
}

TEST_F(Cache, TruncatedObjectIsAWarningAndARecompile) {
  compileNN();
  const fs::path entry = onlyEntry();
  fs::resize_file(entry / "entry.o", fs::file_size(entry / "entry.o") / 2);
  const auto before = radix::cacheStats();
  ::testing::internal::CaptureStderr();
  auto exe = compileNN();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(exe.fromCache());
  EXPECT_EQ(radix::cacheStats().corrupt, before.corrupt + 1);
  EXPECT_NE(log.find("radix: warning: cache entry"), std::string::npos) << log;
  EXPECT_NE(log.find("recompiling"), std::string::npos) << log;
  radix::testing::expectClose(exe(nn, x), {20, 0, 0}, 0);
  EXPECT_TRUE(compileNN().fromCache());  // the entry was replaced by a good one
}

TEST_F(Cache, CorruptOrForeignEntriesAreReplaced) {
  compileNN();
  const fs::path entry = onlyEntry();
  const std::string goodMeta = [&] {
    std::ifstream in(entry / "meta.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  auto expectRecompile = [&](const std::string& meta, const char* why) {
    std::ofstream(entry / "meta.json") << meta;
    ::testing::internal::CaptureStderr();
    auto exe = compileNN();
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(exe.fromCache()) << why;
    EXPECT_NE(log.find(why), std::string::npos) << log;
    radix::testing::expectClose(exe(nn, x), {20, 0, 0}, 0);
    EXPECT_TRUE(compileNN().fromCache()) << why;
  };
  expectRecompile("{not json", "corrupt");
  nlohmann::json foreign = nlohmann::json::parse(goodMeta);
  foreign["key"] = "0123456789abcdef";
  expectRecompile(foreign.dump(), "foreign");
  nlohmann::json flipped = nlohmann::json::parse(goodMeta);
  flipped["object_xxh64"] = "ffffffffffffffff";
  expectRecompile(flipped.dump(), "checksum");
  // An object replaced by garbage of the same size and a matching checksum still cannot load.
  std::string garbage(fs::file_size(entry / "entry.o"), 'x');
  std::ofstream(entry / "entry.o", std::ios::binary) << garbage;
  nlohmann::json forged = nlohmann::json::parse(goodMeta);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(garbage.data(), garbage.size(), 0)));
  forged["object_xxh64"] = hex;
  forged["object_bytes"] = garbage.size();
  expectRecompile(forged.dump(), "no object file");
}

TEST(CachePaths, LongNamesAreCut) {
  const std::string path = radix::detail::entryPath("/c", "cpu", std::string(5000, 'n'), 0x1234);
  EXPECT_LT(fs::path(path).filename().string().size(), 256u);
  EXPECT_NE(path.find("_0000000000001234"), std::string::npos);
  EXPECT_EQ(radix::detail::entryPath("/c", "cpu", "NN", 0xab), "/c/cpu/NN_00000000000000ab");
}

TEST(CachePaths, EnvironmentOrder) {
  const char* saved = std::getenv("RADIX_CACHE_DIR");
  const std::string keep = saved ? saved : "";
  setenv("RADIX_CACHE_DIR", "/tmp/a", 1);
  EXPECT_EQ(radix::cacheDir(), "/tmp/a");
  setenv("RADIX_CACHE_DIR", "off", 1);
  EXPECT_EQ(radix::cacheDir(), "");
  unsetenv("RADIX_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(radix::cacheDir(), "/tmp/xdg/radix");
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  EXPECT_EQ(radix::cacheDir(), home ? std::string(home) + "/.cache/radix" : std::string());
  if (saved) setenv("RADIX_CACHE_DIR", keep.c_str(), 1);
}

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(Cache, KeyIsStableAcrossProcessesAndConcurrentWritersAgree) {
  const std::string env = "RADIX_CACHE_DIR=" + dir + " ";
  const std::string mlp = RADIX_MLP_PATH;
  // Two processes compile the same module at once: both succeed, one good entry remains.
  ASSERT_EQ(run("(" + env + mlp + " > " + dir + ".a.log 2>&1 & " + env + mlp + " > " + dir + ".b.log 2>&1 & wait)"), 0);
  ASSERT_EQ(run(env + mlp + " > " + dir + ".a.log 2>&1") , 0);
  ASSERT_EQ(run(env + mlp + " > " + dir + ".c.log 2>&1"), 0);
  std::ifstream in(dir + ".c.log");
  std::string log(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(log.find("from the cache"), std::string::npos) << log;
  auto entries = radix::listCache(dir);
  ASSERT_EQ(entries.size(), 1u);
  for (const auto& f : fs::directory_iterator(fs::path(dir) / "cpu")) EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos);
  for (const char* s : {".a.log", ".b.log", ".c.log"}) fs::remove(dir + s);
}

TEST_F(Cache, CommandLineListsAndClears) {
  compileNN();
  const std::string cli = RADIX_CLI_PATH;
  const std::string out = dir + ".ls";
  ASSERT_EQ(run(cli + " cache ls " + dir + " > " + out), 0);
  std::ifstream in(out);
  std::string listing(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(listing.find("cpu/MLP_"), std::string::npos) << listing;
  EXPECT_NE(listing.find("1 entries"), std::string::npos) << listing;
  EXPECT_NE(listing.find("KiB"), std::string::npos) << listing;
  ASSERT_EQ(run(cli + " cache clear " + dir + " > " + out), 0);
  EXPECT_TRUE(radix::listCache(dir).empty());
  EXPECT_EQ(run(cli + " cache frobnicate 2> /dev/null"), 2);
  ASSERT_EQ(run(cli + " targets > " + out), 0);
  std::ifstream targets(out);
  const std::string list(std::istreambuf_iterator<char>(targets), {});
  EXPECT_NE(list.find("\n  x86-64-v3\n"), std::string::npos) << list;
  EXPECT_NE(list.find("\n  avx2\n"), std::string::npos) << list;
  fs::remove(out);
}

// ---- dumps, the compile log, the trace ----

TEST_F(Cache, DumpsModuleWithLocationsAndSelectedPasses) {
  radix::CompileOptions o = platform.options();
  o.cache = false;
  o.dumpDir = dir;
  o.dumpPasses = true;
  o.dumpPassRegex = "bufferize|canonicalize";
  platform = platform.withOptions(o);
  compileNN();
  std::vector<fs::path> modules;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == "module.mlir") modules.push_back(e.path());
  ASSERT_EQ(modules.size(), 1u);
  std::ifstream in(modules[0]);
  std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(text.find("examples/mlp/mlp.h\":13:"), std::string::npos) << "locations point at the user's line:\n" << text;
  EXPECT_NE(text.find("\"dotGeneral\""), std::string::npos);
  std::set<std::string> passes;
  for (const auto& e : fs::directory_iterator(modules[0].parent_path() / "passes")) passes.insert(e.path().filename().string());
  ASSERT_FALSE(passes.empty());
  bool sawBufferize = false;
  for (const std::string& p : passes) {
    EXPECT_TRUE(p.find("bufferize") != std::string::npos || p.find("canonicalize") != std::string::npos) << p;
    sawBufferize |= p.find("one-shot-bufferize") != std::string::npos;
  }
  EXPECT_TRUE(sawBufferize);
}

TEST_F(Cache, FailingPassNamesItselfAndTheDump) {
  radix::CompileOptions o = platform.options();
  o.cache = false;
  o.dumpDir = dir;
  // Bufferizing without function boundaries can't write into a donated argument.
  o.extraPasses = "one-shot-bufferize";
  platform = platform.withOptions(o);
  auto donate = [](Tensor x) { return x.exp().reuseBuffer(x); };
  try {
    radix::compile(platform, donate, Tensor(Shape({4}, DType::f32)));
    FAIL() << "expected a compile error";
  } catch (const radix::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[compile] pass one-shot-bufferize failed (IR at " + dir, 0), 0u) << what;
    EXPECT_NE(what.find("read-only"), std::string::npos) << what;
    EXPECT_TRUE(fs::exists(what.substr(what.find(dir), what.find(".mlir") + 5 - what.find(dir))));
  }
}

TEST_F(Cache, SlowCompilesLogTheirPhases) {
  setenv("RADIX_COMPILE_LOG_SECONDS", "0", 1);
  ::testing::internal::CaptureStderr();
  compileNN();
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("RADIX_COMPILE_LOG_SECONDS");
  for (const char* phase : {"radix: compiled MLP in", "trace", "canonicalize", "lower", "llvm", "load"})
    EXPECT_NE(log.find(phase), std::string::npos) << log;
}

TEST_F(Cache, TraceFileIsPerfettoJson) {
  const std::string path = dir + ".trace.json";
  radix::startTrace(path);
  auto cold = compileNN();
  auto warm = compileNN();
  warm(nn, x);
  radix::stopTrace();
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);  // throws if not valid JSON
  std::set<std::string> names;
  bool callHasBytes = false;
  for (const auto& e : doc.at("traceEvents")) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_TRUE(e.at("ts").is_number() && e.at("dur").is_number());
    names.insert(e.at("name").get<std::string>());
    if (e["name"] == "exe.call") callHasBytes = e.at("args").at("argument_bytes") == "92";  // 21 weights and 2 inputs, f32
  }
  for (const char* n : {"trace", "canonicalize", "compile", "compile.lower", "compile.llvm", "cache.lookup", "cache.store", "exe.call"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_TRUE(callHasBytes);
  fs::remove(path);
}

}  // namespace

namespace {

TEST_F(Cache, TraceFromEnvironmentIsWrittenAtExit) {
  const std::string path = dir + ".env-trace.json";
  ASSERT_EQ(run("RADIX_TRACE=" + path + " RADIX_CACHE_DIR=" + dir + " " + RADIX_MLP_PATH + " > /dev/null"), 0);
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);
  std::set<std::string> names;
  for (const auto& e : doc.at("traceEvents")) names.insert(e.at("name").get<std::string>());
  for (const char* n : {"trace", "compile", "compile.llvm", "cache.store", "exe.call"}) EXPECT_TRUE(names.count(n)) << n;
  fs::remove(path);
}

}  // namespace

namespace {

TEST_F(Cache, TargetOverridesChangeTheKeyAndStillRun) {
  compileNN();
  radix::CompileOptions generic = platform.options();
  generic.targetCpu = "x86-64";
  generic.targetFeatures = "+sse2";
  platform = platform.withOptions(generic);
  auto exe = compileNN();
  EXPECT_FALSE(exe.fromCache());
  EXPECT_EQ(radix::listCache(dir).size(), 2u);
  radix::testing::expectClose(exe(nn, x), {20, 0, 0}, 0);
  EXPECT_TRUE(compileNN().fromCache());
}

}  // namespace

namespace {

TEST_F(Cache, ThreadCountSelectsOpenMpLoopsWithEqualResults) {
  std::vector<float> a(129 * 67), b(67 * 33);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 17) - 8;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 13) - 6;
  const radix::Platform host = radix::Platform::cpu();
  Tensor ta = Tensor::fromValues(host, Shape({129, 67}, DType::f32), a);
  Tensor tb = Tensor::fromValues(host, Shape({67, 33}, DType::f32), b);
  // An integer contraction: f32 ones call the GEMM kernel (compiler/kernels), not OpenMP loops.
  auto fn = [](Tensor a, Tensor b) {
    return a.convert(DType::i32).dotGeneral(b.convert(DType::i32), {{1, 0}}, {}).convert(DType::f32).relu().sum(1);
  };
  auto run = [&](int threads, const std::string& dump) {
    radix::CompileOptions o;
    o.cache = false;
    o.threads = threads;
    o.dumpDir = dump;
    o.dumpPasses = true;
    o.dumpPassRegex = "openmp|linalg-to";
    return radix::compile(host.withOptions(o), fn, ta, tb)(ta, tb).toVector<float>();
  };
  const std::vector<float> serial = run(1, dir + "/serial"), parallel = run(2, dir + "/parallel");
  EXPECT_EQ(serial, parallel);  // integers in f32: exact either way
  std::vector<float> expected(129, 0);
  for (int i = 0; i < 129; ++i)
    for (int j = 0; j < 33; ++j) {
      float acc = 0;
      for (int k = 0; k < 67; ++k) acc += a[i * 67 + k] * b[k * 33 + j];
      expected[i] += std::max(acc, 0.f);
    }
  EXPECT_EQ(serial, expected);
  auto sawOpenMp = [](const std::string& root) {
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.path().filename().string().find("convert-scf-to-openmp") != std::string::npos) {
        std::ifstream in(e.path());
        std::string text(std::istreambuf_iterator<char>(in), {});
        return text.find("omp.parallel") != std::string::npos && text.find("num_threads") != std::string::npos;
      }
    return false;
  };
  EXPECT_TRUE(sawOpenMp(dir + "/parallel"));
  EXPECT_FALSE(sawOpenMp(dir + "/serial"));
  // Ops too small to pay for a fork-join stay serial loops even with threads.
  auto tiny = [](Tensor a) { return a.exp().sum(0); };
  radix::CompileOptions o;
  o.cache = false;
  o.threads = 2;
  o.dumpDir = dir + "/tiny";
  o.dumpPasses = true;
  o.dumpPassRegex = "openmp";
  radix::testing::expectClose(radix::testing::compileAndCall(host.withOptions(o), tiny, Tensor::fromValues(host, Shape({3}, DType::f32), {0, 0, 0})), {3}, 1e-6);
  EXPECT_FALSE(sawOpenMp(dir + "/tiny"));
}

}  // namespace

#include "gpt2.h"

namespace {

TEST_F(Cache, CachedTransformerComputesWhatTheColdOneDid) {
  // A small GPT-2-shaped model with real weights: embeddings, several radix::call functions,
  // layer norm and causal attention, loaded back from the cache and run again.
  uint64_t seed = 12345;
  auto make = [&](const Shape& s) {
    std::vector<float> v(static_cast<size_t>(s.count()));
    for (float& x : v) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<float>(static_cast<int64_t>(seed >> 40) % 1000) / 4000.0f;
    }
    return Tensor::fromValues(radix::Platform::cpu(), s, v);
  };
  const gpt2::Model model = gpt2::build(make, 2, 32, 4, 50, 16);
  const Tensor tokens = Tensor::fromValues(radix::Platform::cpu(), Shape({5}, DType::i32).withTags({"s"}),
                                           std::vector<int32_t>{3, 49, 0, 17, 3});
  auto cold = radix::compile(platform, &gpt2::Model::forward, model, tokens);
  auto warm = radix::compile(platform, &gpt2::Model::forward, model, tokens);
  ASSERT_FALSE(cold.fromCache());
  ASSERT_TRUE(warm.fromCache());
  const std::vector<float> a = cold(model, tokens).toVector<float>(), b = warm(model, tokens).toVector<float>();
  ASSERT_EQ(a.size(), 5u * 50u);
  EXPECT_EQ(a, b);
  radix::CompileOptions serial = platform.options();
  serial.threads = 1;
  Tensor c = radix::compile(platform.withOptions(serial), &gpt2::Model::forward, model, tokens)(model, tokens);
  radix::testing::expectClose(c, a, 1e-5);
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float x) { return std::isfinite(x); }));
}

}  // namespace

// `radix compile`: a model's executables written ahead of time, for this CPU or another; the
// entries load as radix::Program and make later runs warm.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io_testing.h"
#include "models_testing.h"
#include "radix/runtime.h"
#include "compiler/gpu.h"
#include "runtime/cache.h"

namespace {

using namespace radix::models::testing;

CommandResult cliIn(const std::string& cache, const std::string& args, bool withStderr = true) {
  return runCommand("RADIX_CACHE_DIR=" + cache + " " + RADIX_CLI_PATH + " " + args + (withStderr ? " 2>&1" : " 2>/dev/null"));
}

// The "step N  PATH" lines.
std::vector<std::pair<int64_t, std::string>> steps(const std::string& out) {
  std::vector<std::pair<int64_t, std::string>> r;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string word, path;
    int64_t n = 0;
    if (words >> word >> n >> path && word == "step") r.emplace_back(n, path);
  }
  return r;
}

TEST(CliCompile, WritesEveryStepAndMakesGenerateWarm) {
  radix::iotest::TempDir dir("cli-compile");
  const std::string cache = dir.path.string();
  const std::string model = testModels() + "/llama-tiny";
  const CommandResult r = cliIn(cache, "compile --model " + model + " -c 32 -t 1");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto entries = steps(r.out);
  ASSERT_EQ(entries.size(), 3u) << r.out;  // decode, the 16- and 32-token chunks
  EXPECT_EQ(entries[0].first, 1);
  EXPECT_EQ(entries[1].first, 16);
  EXPECT_EQ(entries[2].first, 32);
  EXPECT_NE(r.out.find("3 executables (3 compiled, 0 from the cache)"), std::string::npos) << r.out;
  for (const auto& [length, path] : entries) {
    EXPECT_EQ(path.rfind(cache + "/cpu/", 0), 0u) << path;
    radix::Program p = radix::Program::load(radix::Platform::cpu(), path);
    EXPECT_EQ(p.argumentPaths().front().rfind("self.", 0), 0u) << p.argumentPaths().front();
    const auto ids = std::find(p.argumentPaths().begin(), p.argumentPaths().end(), "arg0");  // after the weights
    ASSERT_NE(ids, p.argumentPaths().end());
    EXPECT_EQ(p.argumentShapes()[size_t(ids - p.argumentPaths().begin())], radix::Shape({length}, radix::DType::i32));
  }
  // Same options: everything from the cache, for compile and for generate.
  const CommandResult again = cliIn(cache, "compile --model " + model + " -c 32 -t 1");
  EXPECT_NE(again.out.find("(0 compiled, 3 from the cache)"), std::string::npos) << again.out;
  const CommandResult gen = cliIn(cache, "generate --model " + model + " --prompt Hi -n 3 --temp 0 --ids -t 1", false);
  EXPECT_EQ(gen.status, 0) << gen.out;
}

TEST(CliCompile, CompilesForAnotherCpu) {
  radix::iotest::TempDir dir("cli-compile-cross");
  const CommandResult r =
      cliIn(dir.path.string(), "compile --model " + testModels() + "/llama-tiny -c 16 -t 1 --target-cpu graniterapids");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto entries = steps(r.out);
  ASSERT_EQ(entries.size(), 2u) << r.out;
  std::string why;
  auto entry = radix::detail::readProgramEntry(entries[0].second, why);
  ASSERT_TRUE(entry) << why;
  EXPECT_EQ(entry->cpu, "graniterapids");
  EXPECT_NE(std::find(entry->features.begin(), entry->features.end(), "amx-tile"), entry->features.end());
  if (!radix::detail::missingCpuFeatures(entry->features).empty()) {
    try {
      radix::Program::load(radix::Platform::cpu(), entries[0].second);
      ADD_FAILURE() << "code for graniterapids loaded on a CPU without its features";
    } catch (const radix::Error& e) {
      EXPECT_NE(std::string(e.what()).find("which this CPU lacks"), std::string::npos) << e.what();
    }
  }
}

// The GPT-2 and Llama steps for an H100/H200, compiled on this CPU-only machine: cubins made by
// ptxas, written to the cache with the program table.
TEST(CliCompile, CudaStepsOfGpt2AndLlama) {
  if (radix::detail::findPtxas().empty()) GTEST_SKIP() << "no ptxas (the CUDA toolkit) on PATH or in /usr/local/cuda/bin";
  for (const char* model : {"gpt2-tiny", "llama-tiny"}) {
    radix::iotest::TempDir dir("cli-compile-cuda");
    const CommandResult r = cliIn(dir.path.string(), "compile --model " + testModels() + "/" + model + " -c 16 --target cuda:sm_90a");
    ASSERT_EQ(r.status, 0) << model << ": " << r.out;
    const auto entries = steps(r.out);
    ASSERT_EQ(entries.size(), 2u) << r.out;
    for (const auto& [length, path] : entries) {
      EXPECT_NE(path.find("/cuda:sm_90a/"), std::string::npos) << path;
      std::string why;
      auto entry = radix::detail::readProgramEntry(path, why);
      ASSERT_TRUE(entry) << why;
      EXPECT_EQ(entry->target, "cuda:sm_90a");
      std::ifstream in(std::filesystem::path(path) / "entry.o", std::ios::binary);
      const std::string object((std::istreambuf_iterator<char>(in)), {});
      EXPECT_NE(object.find(".nv.info."), std::string::npos) << model << " step " << length << ": no cubin in the object";
    }
  }
  const CommandResult bad = cliIn("/tmp", "compile --target tpu");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--target is cpu or cuda:sm_XX[a]"), std::string::npos) << bad.out;
}

TEST(CliCompile, BadArgumentsGiveCleanErrors) {
  radix::iotest::TempDir dir("cli-compile-bad");
  const std::string model = " --model " + testModels() + "/llama-tiny";
  const CommandResult cpu = cliIn(dir.path.string(), "compile" + model + " --target-cpu nonsense");
  EXPECT_EQ(cpu.status, 1) << cpu.out;
  EXPECT_NE(cpu.out.find("[compile] unknown target CPU \"nonsense\""), std::string::npos) << cpu.out;
  const CommandResult context = cliIn(dir.path.string(), "compile" + model + " -c -3");
  EXPECT_EQ(context.status, 2) << context.out;
  EXPECT_NE(context.out.find("[compile] -c must be >= 1"), std::string::npos) << context.out;
  const CommandResult temp = cliIn(dir.path.string(), "compile" + model + " --temp 1");
  EXPECT_EQ(temp.status, 2) << temp.out;
  const CommandResult off = runCommand(std::string("RADIX_CACHE_DIR=off ") + RADIX_CLI_PATH + " compile" + model + " 2>&1");
  EXPECT_EQ(off.status, 2) << off.out;
  EXPECT_NE(off.out.find("give --cache-dir DIR"), std::string::npos) << off.out;
}

}  // namespace

// f16 weights: a GGUF file whose matrices are F16 (as llama.cpp's converter writes one) loads as
// f16 and runs through the kernels' F16C loads with f32 accumulation; it generates what its f32
// load generates, and what the F32 file of the same weights generates within f16 rounding.
#include <gtest/gtest.h>
#include <radix/models/generate.h>
#include <radix/radix.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/kernels/kernels.h"
#include "models_testing.h"

namespace {

using radix::DType;
using radix::models::LanguageModel;
namespace kernels = radix::kernels;

// llama-tiny.gguf with F16 matrices (same seed as testModels()'s F32 one).
const std::string& f16Model() {
  static const std::string path = [] {
    const std::string dir = radix::models::testing::testModels() + "/f16";
    namespace t = radix::models::testing;
    const auto r = t::runCommand(t::kPython + " " + t::kSource + "/tools/make_test_models.py " + dir +
                                 " --size tiny --only llama-gguf --gguf-type F16 2>&1");
    if (r.status != 0) ADD_FAILURE() << "make_test_models.py --gguf-type F16 failed:\n" << r.out;
    return dir + "/llama-tiny.gguf";
  }();
  return path;
}

// Every test here feeds 8 prompt tokens into a 16-token context: one prompt bucket and one decode
// executable per weight dtype, compiled once per process (testPlatform's disk cache).
const std::vector<int32_t> kPrompt = {5, 17, 3, 42, 9, 11, 2, 30};

std::vector<float> firstLogits(LanguageModel& lm, const std::vector<int32_t>& prompt) {
  lm.reset(16);
  return lm.feed(prompt).toVector<float>();
}

uint64_t kernelCalls() {
  uint64_t n = 0;
  for (int p = 0; p < kernels::kPathCount; ++p)
    for (int i = 0; i < kernels::kIsaCount; ++i) n += kernels::callCount(kernels::Path(p), kernels::Isa(i));
  return n;
}

TEST(ModelsF16Weights, F16GgufGeneratesAsItsF32Load) {
  const radix::Platform cpu = radix::models::testing::testPlatform(1);
  const std::vector<int32_t>& prompt = kPrompt;
  LanguageModel f16 = LanguageModel::open(cpu, f16Model(), {.dtype = DType::f16, .compute = DType::f32});
  LanguageModel widened = LanguageModel::open(cpu, f16Model(), {.dtype = DType::f32});
  EXPECT_EQ(f16.dtype(), DType::f16);
  EXPECT_EQ(f16.weightBytes() * 2, widened.weightBytes() + 0) << "f16 weights should take half the bytes";
  const uint64_t before = kernelCalls();
  const auto ids16 = f16.generate(prompt, 8, {});
  EXPECT_GT(kernelCalls(), before) << "the contractions did not reach the kernels";
  const auto ids32 = widened.generate(prompt, 8, {});
  EXPECT_EQ(ids16, ids32);
  // Same weight values, f32 accumulation both ways; the f16 model keeps its KV cache in f16.
  const auto l16 = firstLogits(f16, prompt), l32 = firstLogits(widened, prompt);
  ASSERT_EQ(l16.size(), l32.size());
  float scale = 0;
  for (float x : l32) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < l16.size(); ++i) ASSERT_NEAR(l16[i], l32[i], 5e-3 * scale) << "logit " << i;
}

TEST(ModelsF16Weights, F16GgufMatchesTheF32FileWithinRounding) {
  const radix::Platform cpu = radix::models::testing::testPlatform(1);
  const std::vector<int32_t>& prompt = kPrompt;
  LanguageModel f16 = LanguageModel::open(cpu, f16Model(), {.dtype = DType::f16, .compute = DType::f32});
  LanguageModel f32 = LanguageModel::open(cpu, radix::models::testing::testModels() + "/llama-tiny.gguf", {});
  const auto a = firstLogits(f16, prompt), b = firstLogits(f32, prompt);
  ASSERT_EQ(a.size(), b.size());
  float scale = 0;
  for (float x : b) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 2e-2 * scale + 1e-3) << "logit " << i;
}

// `radix bench` (as `radix generate` did already) picks f16 weights for an F16 file by default.
TEST(ModelsF16Weights, CliBenchRunsF16WeightsByDefault) {
  const std::string cli = "RADIX_CACHE_DIR=" + radix::models::testing::testModels() + "/cache " + RADIX_CLI_PATH;
  const auto bench = radix::models::testing::runCommand(cli + " bench -m " + f16Model() + " -p 8 -n 2 -r 1 -t 1 2>&1");
  EXPECT_EQ(bench.status, 0) << bench.out;
  EXPECT_NE(bench.out.find("| f16 |"), std::string::npos) << bench.out;
}

}  // namespace

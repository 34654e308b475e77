// GPT-2 and Llama against the PyTorch references of tests/oracle/ on random models written with a
// fixed seed (tools/make_test_models.py): prefill logits, several decode steps, greedy ids.
// f32: max |error| <= 1e-4 x the logit range. bf16 (weights and activations in bf16; the oracle
// rounds the weights to bf16 and computes in f32): max |error| <= 3e-2 x the logit range
// (measured: f32 <= 1e-6, bf16 <= 1.5e-2 x the range on these models).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "models_testing.h"
#include "radix/models/generate.h"
#include "radix/testing.h"

namespace {

using namespace radix;
using namespace radix::models;
using namespace radix::models::testing;

struct Case {
  const char* name;
  const char* model;   // under testModels()
  const char* script;  // tests/oracle/...
  const char* folder;  // the HF folder the oracle reads (same weights)
  DType dtype;
  int threads;
  bool chunked;  // feeds the prompt in two calls (prefill at a nonzero position)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ModelsOracle : public ::testing::TestWithParam<Case> {};

constexpr int kSteps = 5;
const std::string kPrompt = "The quick brown fox jumps";  // 25 tokens: padded to the 32 bucket

TEST_P(ModelsOracle, LogitsAndGreedyIdsMatch) {
  const Case& c = GetParam();
  if (std::string_view(c.model).ends_with(".gguf") && !std::filesystem::exists(kSource + "/tools/gguf_writer.py"))
    GTEST_SKIP() << "tools/gguf_writer.py (branch io) is not merged yet";
  const std::vector<int32_t> prompt = byteIds(kPrompt);
  const Oracle& want = oracle(c.script, testModels() + "/" + c.folder, prompt, kSteps, c.dtype == DType::bf16 ? "bf16" : "f32");
  ASSERT_EQ(want.logits.size(), size_t(kSteps));

  LanguageModel lm = LanguageModel::open(testPlatform(c.threads), testModels() + "/" + c.model, {.dtype = c.dtype});
  lm.reset(static_cast<int64_t>(prompt.size()) + kSteps);
  Tensor logits;
  if (c.chunked) {
    (void)lm.feed(std::span(prompt).first(7));
    logits = lm.feed(std::span(prompt).subspan(7));
  } else {
    logits = lm.feed(prompt);
  }
  const double tolerance = c.dtype == DType::bf16 ? 3e-2 : 1e-4;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float>& e = want.logits[step];
    const std::vector<float> a = logits.toVector<float>();
    ASSERT_EQ(a.size(), e.size());
    const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
    double err = 0;
    for (size_t i = 0; i < a.size(); ++i) err = std::max(err, double(std::fabs(a[i] - e[i])));
    EXPECT_LE(err, tolerance * (*hi - *lo)) << "step " << step << ": max |error| " << err << ", logit range "
                                            << (*hi - *lo);
    const int32_t greedy = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
    if (c.dtype == DType::f32) EXPECT_EQ(greedy, want.greedy[step]) << "step " << step;
    if (step + 1 < kSteps) logits = lm.feed(std::span(&want.greedy[step], 1));
  }
  EXPECT_EQ(lm.position(), static_cast<int64_t>(prompt.size()) + kSteps - 1);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelsOracle,
    ::testing::Values(Case{"Gpt2HfF32", "gpt2-tiny", "gpt2_ref.py", "gpt2-tiny", DType::f32, 1, false},
                      Case{"Gpt2HfF32TwoThreadsChunked", "gpt2-tiny", "gpt2_ref.py", "gpt2-tiny", DType::f32, 2, true},
                      Case{"Gpt2HfBf16", "gpt2-tiny", "gpt2_ref.py", "gpt2-tiny", DType::bf16, 1, false},
                      Case{"Gpt2GgufF32", "gpt2-tiny.gguf", "gpt2_ref.py", "gpt2-tiny", DType::f32, 1, false},
                      Case{"LlamaHfF32", "llama-tiny", "llama_ref.py", "llama-tiny", DType::f32, 1, false},
                      Case{"LlamaHfF32TwoThreadsChunked", "llama-tiny", "llama_ref.py", "llama-tiny", DType::f32, 2, true},
                      Case{"LlamaHfBf16", "llama-tiny", "llama_ref.py", "llama-tiny", DType::bf16, 1, false},
                      Case{"LlamaGgufF32", "llama-tiny.gguf", "llama_ref.py", "llama-tiny", DType::f32, 1, false},
                      Case{"LlamaGgufF32TwoThreads", "llama-tiny.gguf", "llama_ref.py", "llama-tiny", DType::f32, 2, false}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// ---- the engine's own contracts ----

TEST(ModelsEngine, ContextPositionAndErrors) {
  const Platform cpu = testPlatform();
  LanguageModel lm = LanguageModel::open(cpu, testModels() + "/gpt2-tiny");
  lm.reset(20);
  EXPECT_EQ(lm.context(), 32);
  const std::vector<int32_t> ids = byteIds("abc");
  (void)lm.feed(ids);
  EXPECT_EQ(lm.position(), 3);
  EXPECT_EQ(radix::testing::errorOf([&] { lm.feed(std::vector<int32_t>(30, 1)); }),
            "[generate] 30 tokens at position 3 do not fit the context of 32 (reset with more room)");
  EXPECT_EQ(radix::testing::errorOf([&] { lm.feed(std::vector<int32_t>{100000}); }),
            "[generate] token id 100000 out of range for a vocabulary of 300");
  EXPECT_EQ(radix::testing::errorOf([&] { lm.reset(100000); }),
            "[generate] 100000 tokens do not fit the model's context of 128");
  EXPECT_EQ(radix::testing::errorOf([&] { LanguageModel::open(cpu, testModels() + "/missing"); }).rfind("[generate] no model at", 0), 0u);
  EXPECT_EQ(radix::testing::errorOf([&] { LanguageModel::open(cpu, testModels() + "/gpt2-tiny", {.kvDtype = DType::i32}); }),
            "[generate] the KV cache must be f32, bf16 or f16, got i32");
}

TEST(ModelsEngine, NoRecompilationPerTokenOrPromptLength) {
  LanguageModel lm = LanguageModel::open(testPlatform(), testModels() + "/llama-tiny");
  (void)lm.generate(byteIds("Hi"), 30, {});  // context 32: the 16 bucket, then decode
  EXPECT_EQ(lm.context(), 32);
  EXPECT_EQ(lm.executables(), 2u);
  (void)lm.generate(byteIds("A longer prompt"), 12, {});  // 15 tokens: the 16 bucket again
  (void)lm.generate(byteIds("Seventeen tokens!"), 10, {});  // 16 + 1: the same two
  EXPECT_EQ(lm.executables(), 2u);
  lm.reset(30);
  (void)lm.feed(byteIds("Twenty-five tokens, these"));  // 16 + 9 (padded to 16)
  EXPECT_EQ(lm.executables(), 2u);
  lm.reset(30);
  (void)lm.feed(std::vector<int32_t>(31, 65));  // 16 + 15 (padded to 16)
  EXPECT_EQ(lm.executables(), 2u);
}

TEST(ModelsEngine, SeededSamplingIsReproducibleAndGreedyIsArgmax) {
  LanguageModel lm = LanguageModel::open(testPlatform(), testModels() + "/llama-tiny");
  const std::vector<int32_t> prompt = byteIds("Hello");
  const Sampling hot{.temperature = 1.5, .topK = 50, .topP = 0.9, .seed = 7};
  const std::vector<int32_t> a = lm.generate(prompt, 6, hot);
  const std::vector<int32_t> b = lm.generate(prompt, 6, hot);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 6u);
  for (int32_t id : a) EXPECT_TRUE(id >= 0 && id < lm.vocabSize()) << id;
  const Oracle& want = oracle("llama_ref.py", testModels() + "/llama-tiny", prompt, 6, "f32");
  EXPECT_EQ(lm.generate(prompt, 6, {}), want.greedy);
}

TEST(ModelsEngine, GenerationGoesOnPastTheContextFromItsLastHalf) {
  LanguageModel lm = LanguageModel::open(testPlatform(), testModels() + "/gpt2-tiny");
  ASSERT_EQ(lm.maxContext(), 128);
  const std::vector<int32_t> prompt = byteIds("Once upon a time");
  const std::vector<int32_t> all = lm.generate(prompt, 150, {});
  ASSERT_EQ(all.size(), 150u);
  // Up to the full context, the same tokens as without a shift.
  const std::vector<int32_t> head = lm.generate(prompt, 113, {});
  EXPECT_TRUE(std::equal(head.begin(), head.end(), all.begin()));
  // With 16 + 113 tokens the last 64 are fed again from position 0; the next token is the
  // oracle's greedy continuation of those 64.
  std::vector<int32_t> history = prompt;
  history.insert(history.end(), all.begin(), all.begin() + 113);
  const std::vector<int32_t> window(history.end() - 64, history.end());
  const Oracle& want = oracle("gpt2_ref.py", testModels() + "/gpt2-tiny", window, 1, "f32");
  ASSERT_EQ(want.greedy.size(), 1u);
  EXPECT_EQ(all[113], want.greedy[0]);
}

// nn::sdpa with grouped KV heads and queries laid out {q, h, hd} (as the models lay them out):
// equal to the {h, q, hd} layout's result (before the fix, merging "h" and "hg" failed).
TEST(ModelsEngine, GroupedSdpaWithQueriesBeforeHeads) {
  const Platform cpu = Platform::cpu();
  auto values = [](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * float(i) + 1.f);
    return v;
  };
  const Tensor q = Tensor::fromValues(cpu, Shape({5, 4, 8}, DType::f32).withTags({"q", "h", "hd"}), values(160));
  const Tensor k = Tensor::fromValues(cpu, Shape({5, 2, 8}, DType::f32).withTags({"k", "h", "hd"}), values(80));
  auto both = [](Tensor q, Tensor k) {
    nn::AttentionOptions causal;
    causal.causal = true;
    const Tensor v = k.mulConstant(0.5);
    const Tensor a = nn::sdpa(q, k, v, causal);  // {q, h, hd}
    const Tensor b = nn::sdpa(q.transpose({"h", "q", "hd"}), k, v, causal).transpose({"q", "h", "hd"});
    return std::make_pair(a, b);
  };
  const auto [a, b] = radix::testing::compileAndCall(cpu, both, q, k);
  EXPECT_EQ(a.shape(), q.shape());
  radix::testing::expectClose(a, b, 1e-6);
}

TEST(ModelsEngine, Utf8StreamHoldsBackUnfinishedCharacters) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\xe4\xbd"), "a");
  EXPECT_EQ(s.push("\xa0"), "\xe4\xbd\xa0");
  EXPECT_EQ(s.push("\xf0\x9f"), "");
  EXPECT_EQ(s.push("\x98\x80!"), "\xf0\x9f\x98\x80!");
  EXPECT_EQ(s.push("\xff"), "\xff");  // invalid bytes pass through
  EXPECT_EQ(s.push("\xc3"), "");
  EXPECT_EQ(s.flush(), "\xc3");
}

}  // namespace

// The families of Llama's layout (Qwen2, Qwen3, Mistral) against their PyTorch references of
// tests/oracle/ (written from transformers' modeling code) on random tiny models of
// tools/make_test_models.py, in both file forms: prefill logits, decode steps, greedy ids
// (f32: max |error| <= 1e-4 x the logit range). The GGUF files follow llama.cpp's converter:
// qwen2/qwen3 keep rotate-half rows (NEOX RoPE), Mistral is arch "llama" with permuted rows, so
// a wrong RoPE layout fails here. The Mistral model's sliding_window (8) is smaller than the
// context (32), and the window is checked to change the logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
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
  const char* arch;    // architecture()
  bool chunked;        // feeds the prompt in two calls (prefill at a nonzero position)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr int kSteps = 5;
const std::string kPrompt = "The quick brown fox jumps";  // 25 tokens: 16 + 9 (padded to 16)

/// Max |a - e| over the logit range of e.
double relativeError(const std::vector<float>& a, const std::vector<float>& e) {
  const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
  double err = 0;
  for (size_t i = 0; i < a.size() && i < e.size(); ++i) err = std::max(err, double(std::fabs(a[i] - e[i])));
  return err / (*hi - *lo);
}

/// Prefill (whole or in two calls) then kSteps - 1 decode steps on the oracle's greedy ids:
/// the logits of each step.
std::vector<std::vector<float>> run(LanguageModel& lm, const std::vector<int32_t>& prompt,
                                    const std::vector<int32_t>& greedy, bool chunked) {
  lm.reset(static_cast<int64_t>(prompt.size()) + kSteps);
  Tensor logits;
  if (chunked) {
    (void)lm.feed(std::span(prompt).first(7));
    logits = lm.feed(std::span(prompt).subspan(7));
  } else {
    logits = lm.feed(prompt);
  }
  std::vector<std::vector<float>> out;
  for (int step = 0; step < kSteps; ++step) {
    out.push_back(logits.toVector<float>());
    if (step + 1 < kSteps) logits = lm.feed(std::span(&greedy.at(size_t(step)), 1));
  }
  return out;
}

class ModelsZoo : public ::testing::TestWithParam<Case> {};

TEST_P(ModelsZoo, LogitsAndGreedyIdsMatchTheOracle) {
  const Case& c = GetParam();
  const std::vector<int32_t> prompt = byteIds(kPrompt);
  const Oracle& want = oracle(c.script, testModels() + "/" + c.folder, prompt, kSteps, "f32");
  ASSERT_EQ(want.logits.size(), size_t(kSteps));

  LanguageModel lm = LanguageModel::open(testPlatform(), testModels() + "/" + c.model);
  EXPECT_EQ(lm.architecture(), c.arch);
  const std::vector<std::vector<float>> got = run(lm, prompt, want.greedy, c.chunked);
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float>& a = got[size_t(step)];
    ASSERT_EQ(a.size(), want.logits[size_t(step)].size());
    EXPECT_LE(relativeError(a, want.logits[size_t(step)]), 1e-4) << "step " << step;
    EXPECT_EQ(std::max_element(a.begin(), a.end()) - a.begin(), want.greedy[size_t(step)]) << "step " << step;
  }
  EXPECT_EQ(lm.position(), static_cast<int64_t>(prompt.size()) + kSteps - 1);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelsZoo,
    ::testing::Values(Case{"Qwen2Hf", "qwen2-tiny", "qwen2_ref.py", "qwen2-tiny", "qwen2", false},
                      Case{"Qwen2Gguf", "qwen2-tiny.gguf", "qwen2_ref.py", "qwen2-tiny", "qwen2", false},
                      Case{"Qwen3Hf", "qwen3-tiny", "qwen3_ref.py", "qwen3-tiny", "qwen3", false},
                      Case{"Qwen3GgufChunked", "qwen3-tiny.gguf", "qwen3_ref.py", "qwen3-tiny", "qwen3", true},
                      Case{"MistralHfChunked", "mistral-tiny", "mistral_ref.py", "mistral-tiny", "mistral", true},
                      // llama.cpp's converter writes Mistral as "llama".
                      Case{"MistralGguf", "mistral-tiny.gguf", "mistral_ref.py", "mistral-tiny", "llama", false}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// Without its window the Mistral model is Llama: the window must change the logits (else the
// oracle test above could not tell), and with sliding_window past the context Radix matches
// the Llama reference.
TEST(ModelsZooWindow, SlidingWindowChangesTheLogits) {
  const std::string folder = testModels() + "/mistral-tiny";
  const std::vector<int32_t> prompt = byteIds(kPrompt);
  const Oracle& windowed = oracle("mistral_ref.py", folder, prompt, kSteps, "f32");
  const Oracle& full = oracle("llama_ref.py", folder, prompt, kSteps, "f32");
  ASSERT_EQ(windowed.logits.size(), size_t(kSteps));
  ASSERT_EQ(full.logits.size(), size_t(kSteps));
  EXPECT_GT(relativeError(windowed.logits[0], full.logits[0]), 1e-2);

  const io::Checkpoint checkpoint = io::Checkpoint::open(folder);
  LanguageModel lm = LanguageModel::fromCheckpoint(testPlatform(), checkpoint, std::nullopt, {},
                                                   R"({"model_type": "mistral", "sliding_window": 100000})");
  const std::vector<std::vector<float>> got = run(lm, prompt, full.greedy, false);
  for (int step = 0; step < kSteps; ++step)
    EXPECT_LE(relativeError(got[size_t(step)], full.logits[size_t(step)]), 1e-4) << "step " << step;
}

// A Llama checkpoint with attention biases (Llama's attention_bias) loads them: read as
// "llama", the Qwen2 model gives Qwen2's logits (the same struct; its compile is cached).
TEST(ModelsZooLoading, LlamaLoadsTheBiasesACheckpointHas) {
  const std::string folder = testModels() + "/qwen2-tiny";
  const std::vector<int32_t> prompt = byteIds(kPrompt);
  const Oracle& want = oracle("qwen2_ref.py", folder, prompt, kSteps, "f32");
  ASSERT_EQ(want.logits.size(), size_t(kSteps));
  LanguageModel lm = LanguageModel::fromCheckpoint(testPlatform(), io::Checkpoint::open(folder), std::nullopt, {},
                                                   R"({"model_type": "llama"})");
  EXPECT_EQ(lm.architecture(), "llama");
  const std::vector<std::vector<float>> got = run(lm, prompt, want.greedy, false);
  for (int step = 0; step < kSteps; ++step)
    EXPECT_LE(relativeError(got[size_t(step)], want.logits[size_t(step)]), 1e-4) << "step " << step;
}

// The family comes from config.json's architectures when model_type is absent.
TEST(ModelsZooLoading, FamilyFromTheArchitecturesList) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(testModels()) / "qwen3-classname";
  fs::create_directories(folder);
  fs::copy_file(fs::path(testModels()) / "qwen3-tiny/model.safetensors", folder / "model.safetensors",
                fs::copy_options::overwrite_existing);
  std::ifstream in(fs::path(testModels()) / "qwen3-tiny/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config.erase("model_type");
  std::ofstream(folder / "config.json") << config.dump();
  const LanguageModel lm = LanguageModel::open(testPlatform(), folder.string());
  EXPECT_EQ(lm.architecture(), "qwen3");
  EXPECT_FALSE(lm.hasTokenizer());
}

TEST(ModelsZooLoading, ErrorsNameTheFamilyAndTheKey) {
  const Platform cpu = testPlatform();
  const io::Checkpoint qwen2 = io::Checkpoint::open(testModels() + "/qwen2-tiny");
  auto open = [&](const io::Checkpoint& c, const char* config) {
    return radix::testing::errorOf([&] { LanguageModel::fromCheckpoint(cpu, c, std::nullopt, {}, config); });
  };
  EXPECT_EQ(open(qwen2, R"({"model_type": "qwen2", "use_sliding_window": true})"),
            "[qwen2] use_sliding_window is not supported (the config sets it)");
  EXPECT_EQ(open(qwen2, R"({"model_type": "qwen3", "head_dim": 23})"),
            "[qwen3] bad config: head_dim 23 (RoPE needs it even and > 0)");
  EXPECT_EQ(open(qwen2, R"({"model_type": "mistral", "sliding_window": -1})"), "[mistral] bad config: sliding_window -1");
  const std::string unknown = open(qwen2, R"({"model_type": "gptj"})");
  EXPECT_EQ(unknown.rfind("[generate] unsupported architecture \"gptj\" in ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("(supported: gpt2, llama, mistral, qwen2, qwen3"), std::string::npos) << unknown;
  // Qwen3's q_norm is not in a Qwen2 checkpoint: the loader names the missing tensor.
  const std::string missing = open(qwen2, R"({"model_type": "qwen3"})");
  EXPECT_NE(missing.find("q_norm"), std::string::npos) << missing;
}

}  // namespace

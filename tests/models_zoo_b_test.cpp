// Phi-3 and Gemma 2 against the PyTorch references tests/oracle/{phi3,gemma2}_ref.py on random
// tiny models (tools/make_test_models.py), from HF folders and GGUF files: prefill logits, decode
// steps, greedy ids. f32: max |error| <= 1e-4 x the logit range; bf16: 3e-2 (as models_oracle_test).
//
// What the tiny models exercise: phi3-tiny has longrope with original_max_position_embeddings 16
// (prompts of 25 tokens run a 32-position cache on the long factors, prompts of 10 a 16-position
// cache on the short ones), partial rotary (12 of 16 head values) and a sliding window of 24;
// gemma2-tiny has 3 layers (sliding, global, sliding), a window of 8, head_dim 24 != 64 / 4, and
// soft caps (8 on scores, 5 on logits) that change the results. TheTestedFeaturesMatter checks that the
// oracles themselves change without those features, so that a model ignoring one cannot pass.
// The null and default soft caps and the GGUF conventions are checked on the configs alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models_testing.h"
#include "radix/models/gemma2.h"
#include "radix/models/generate.h"
#include "radix/models/phi3.h"
#include "radix/testing.h"

namespace {

using namespace radix;
using namespace radix::models;
using namespace radix::models::testing;
namespace fs = std::filesystem;

constexpr int kSteps = 5;
const std::string kLong = "The quick brown fox jumps";  // 25 tokens: 30 with the steps
const std::string kShort = "Short one!";                // 10 tokens: 15 with the steps

/// A copy of an HF test model with config.json keys replaced (null removes a feature), under
/// testModels()/<name>.
std::string variant(const std::string& from, const std::string& name, const nlohmann::json& changes) {
  const fs::path dir = fs::path(testModels()) / name;
  fs::create_directories(dir);
  for (const char* file : {"model.safetensors", "tokenizer.json"})
    fs::copy_file(fs::path(testModels()) / from / file, dir / file, fs::copy_options::overwrite_existing);
  std::ifstream in(fs::path(testModels()) / from / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  for (auto& [key, value] : changes.items()) config[key] = value;
  std::ofstream(dir / "config.json") << config.dump(2);
  return name;
}

struct Case {
  const char* name;
  const char* model;   // under testModels(), or the variant's name when `changes` is set
  const char* script;  // tests/oracle/...
  const char* folder;  // the HF folder the oracle reads (same weights)
  DType dtype;
  const std::string* prompt;
  bool chunked;              // feeds the prompt in two calls (prefill at a nonzero position)
  const char* changes = "";  // config.json changes: runs variant(folder, model, changes) instead
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// Runs `c` against its oracle: the engine's logits and greedy ids for the prompt and kSteps - 1
/// decode steps (feeding the oracle's greedy ids).
void expectMatchesOracle(const Case& c) {
  if (std::string_view(c.model).ends_with(".gguf") && !fs::exists(kSource + "/tools/gguf_writer.py"))
    GTEST_SKIP() << "tools/gguf_writer.py is not in this tree";
  const std::vector<int32_t> prompt = byteIds(*c.prompt);
  const std::string folder = *c.changes ? variant(c.folder, c.model, nlohmann::json::parse(c.changes)) : c.folder;
  const Oracle& want =
      oracle(c.script, testModels() + "/" + folder, prompt, kSteps, c.dtype == DType::bf16 ? "bf16" : "f32");
  ASSERT_EQ(want.logits.size(), size_t(kSteps));
  LanguageModel lm = LanguageModel::open(testPlatform(), testModels() + "/" + c.model, {.dtype = c.dtype});
  lm.reset(static_cast<int64_t>(prompt.size()) + kSteps);
  Tensor logits;
  if (c.chunked) {
    (void)lm.feed(std::span(prompt).first(4));
    logits = lm.feed(std::span(prompt).subspan(4));
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

class ModelsZooB : public ::testing::TestWithParam<Case> {};

TEST_P(ModelsZooB, LogitsAndGreedyIdsMatch) { expectMatchesOracle(GetParam()); }

// One case per compiled configuration (compiles are the cost): phi3's long factors from an HF
// folder, its short factors from the GGUF with a chunked prefill; gemma2 with
// query_pre_attn_scalar apart from head_dim (as the 27B) chunked, from the GGUF (whose scale
// follows head_dim), and in bf16.
INSTANTIATE_TEST_SUITE_P(
    Models, ModelsZooB,
    ::testing::Values(
        Case{"Phi3HfF32LongFactors", "phi3-tiny", "phi3_ref.py", "phi3-tiny", DType::f32, &kLong, false},
        Case{"Phi3GgufF32ShortFactorsChunked", "phi3-tiny.gguf", "phi3_ref.py", "phi3-tiny", DType::f32, &kShort, true},
        Case{"Gemma2HfF32QueryScalarChunked", "gemma2-qscale", "gemma2_ref.py", "gemma2-tiny", DType::f32, &kLong, true,
             R"({"query_pre_attn_scalar": 11})"},
        Case{"Gemma2GgufF32", "gemma2-tiny.gguf", "gemma2_ref.py", "gemma2-tiny", DType::f32, &kLong, false},
        Case{"Gemma2HfBf16", "gemma2-tiny", "gemma2_ref.py", "gemma2-tiny", DType::bf16, &kLong, false}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

/// Max |difference| between the logits of two oracle runs.
double oracleChange(const std::string& script, const std::string& a, const std::string& b, const std::string& prompt) {
  const Oracle& x = oracle(script, testModels() + "/" + a, byteIds(prompt), kSteps, "f32");
  const Oracle& y = oracle(script, testModels() + "/" + b, byteIds(prompt), kSteps, "f32");
  double d = 0;
  for (size_t s = 0; s < std::min(x.logits.size(), y.logits.size()); ++s)
    for (size_t i = 0; i < x.logits[s].size(); ++i) d = std::max(d, double(std::fabs(x.logits[s][i] - y.logits[s][i])));
  return d;
}

// Each feature the oracle cases rely on changes the logits by far more than their tolerance.
TEST(ModelsZooBConfig, TheTestedFeaturesMatter) {
  struct Row {
    const char* from;
    const char* name;
    nlohmann::json changes;
    const std::string* prompt;
  };
  const Row rows[] = {
      {"phi3-tiny", "phi3-no-window", {{"sliding_window", nullptr}}, &kLong},
      {"gemma2-tiny", "gemma2-no-window", {{"sliding_window", 4096}}, &kLong},
      {"gemma2-tiny", "gemma2-no-attn-cap", {{"attn_logit_softcapping", nullptr}}, &kLong},
  };
  for (const Row& r : rows) {
    const std::string script = std::string(r.from).starts_with("phi3") ? "phi3_ref.py" : "gemma2_ref.py";
    EXPECT_GT(oracleChange(script, r.from, variant(r.from, r.name, r.changes), *r.prompt), 1e-2) << r.name;
  }
}

// Unsupported configurations are refused with errors naming the key.
TEST(ModelsZooBConfig, UnsupportedConfigsAreErrors) {
  struct Row {
    const char* from;
    const char* name;
    nlohmann::json changes;
    const char* error;
  };
  const Row rows[] = {
      {"phi3-tiny", "phi3-yarn", {{"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}}},
       "[phi3] rope_scaling type \"yarn\" is not supported (longrope)"},
      {"phi3-tiny", "phi3-short-list", {{"rope_scaling",
         {{"type", "longrope"},
          {"short_factor", nlohmann::json::array({1.0})},
          {"long_factor", nlohmann::json::array({1.0})}}}},
       "[phi3] longrope needs rotary dims / 2 = 6 factors each, got 1 short and 1 long"},
      {"phi3-tiny", "phi3-gelu", {{"hidden_act", "gelu"}}, "[phi3] hidden_act \"gelu\" is not supported (silu)"},
      {"gemma2-tiny", "gemma2-relu", {{"hidden_activation", "relu"}},
       "[gemma2] hidden_activation \"relu\" is not supported (gelu_pytorch_tanh, gelu)"},
      {"gemma2-tiny", "gemma2-zero-cap", {{"attn_logit_softcapping", 0}},
       "[gemma2] bad config: head_dim 24, sliding_window 8, query_pre_attn_scalar 24.000000 (soft caps must be > 0)"},
  };
  for (const Row& r : rows) {
    const std::string folder = testModels() + "/" + variant(r.from, r.name, r.changes);
    EXPECT_EQ(radix::testing::errorOf([&] { LanguageModel::open(testPlatform(), folder); }), r.error) << r.name;
  }
}

// The GGUF forms read as llama.cpp's loader reads them: norms with the 1 added, the scale from
// head_dim, the longrope factors from tensors.
TEST(ModelsZooBConfig, GgufConfigsMatchTheHfOnes) {
  const gemma2::Config hf = gemma2::Config::fromCheckpoint(io::Checkpoint::open(testModels() + "/gemma2-tiny"));
  const gemma2::Config gg = gemma2::Config::fromCheckpoint(io::Checkpoint::open(testModels() + "/gemma2-tiny.gguf"));
  EXPECT_EQ(hf.normShift, 1);
  EXPECT_EQ(gg.normShift, 0);
  EXPECT_EQ(std::make_tuple(gg.headDim, gg.window, gg.queryScale, *gg.attnSoftcap, *gg.finalSoftcap),
            std::make_tuple(hf.headDim, hf.window, hf.queryScale, *hf.attnSoftcap, *hf.finalSoftcap));
  const phi3::Config p = phi3::Config::fromCheckpoint(io::Checkpoint::open(testModels() + "/phi3-tiny"));
  const phi3::Config q = phi3::Config::fromCheckpoint(io::Checkpoint::open(testModels() + "/phi3-tiny.gguf"));
  ASSERT_TRUE(p.longRope && q.longRope);
  EXPECT_EQ(std::make_tuple(q.rotaryDim, q.window, q.longRope->originalContext),
            std::make_tuple(p.rotaryDim, p.window, p.longRope->originalContext));
  EXPECT_NEAR(q.longRope->attentionFactor, p.longRope->attentionFactor, 1e-6);
  ASSERT_EQ(q.longRope->longFactor.size(), p.longRope->longFactor.size());
  for (size_t i = 0; i < p.longRope->longFactor.size(); ++i)
    EXPECT_NEAR(q.longRope->longFactor[i], p.longRope->longFactor[i], 1e-6) << i;
  // A null cap turns capping off; `extra` values (an embedded model's config) win.
  const std::string nulls = variant("gemma2-tiny", "gemma2-null-caps", {{"final_logit_softcapping", nullptr}});
  const gemma2::Config n = gemma2::Config::fromCheckpoint(io::Checkpoint::open(testModels() + "/" + nulls));
  const gemma2::Config e = gemma2::Config::fromCheckpoint(io::Checkpoint::open(testModels() + "/" + nulls),
                                                          {{"final_logit_softcapping", 30.0}});
  EXPECT_FALSE(n.finalSoftcap.has_value());
  EXPECT_EQ(n.attnSoftcap, hf.attnSoftcap);
  EXPECT_EQ(e.finalSoftcap, 30.0);
  EXPECT_EQ(phi3::Model::ggufName("layers[3].mlp.gate_up_proj.weight"), "blk.3.ffn_up.weight");
  EXPECT_EQ(gemma2::Model::ggufName("layers[0].post_feedforward_layernorm.weight"), "blk.0.post_ffw_norm.weight");
}

}  // namespace

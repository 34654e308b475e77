// GPT-2 and Llama with quantized GGUF weights (Q8_0, Q4_0, Q4_K_M and, for Llama, Q5_K_M and Q6_K,
// with llama.cpp's per-tensor mixes: Q6_K output, Q6_K attn_v/ffn_down in the last layer, Q5_K
// attn_qkv, F32 norms) against the PyTorch references of tests/oracle/ run on the weights that
// tests/oracle/ggml_quants.py (numpy decoders written from the format definitions) decodes from
// the same file. The files are written by tools/make_test_models.py --size quant --quant ...
// (widths of whole 256-blocks; tools/gguf_quant.py's quantizers).
//
// Tolerances: logits within kLogitTolerance x the reference's logit range at every step (the
// kernels may quantize activations to int8 per block, as llama.cpp does, which moves logits by up
// to a few percent; decoding itself is exact). Greedy ids: 16 steps, each fed the reference's id.
// Radix's id must be the reference's, except at a step where the reference's top-1/top-2 gap is
// below kTieGap x its logit range; there the reference's second choice is accepted too, and
// anything else fails. An f16 or bf16 KV cache rounds keys and values once, well inside that
// tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>
#include <string>
#include <vector>

#include "models_testing.h"
#include "radix/io.h"
#include "radix/models/generate.h"
#include "radix/models/llama.h"
#include "radix/testing.h"

namespace {

using namespace radix;
using namespace radix::models;
using namespace radix::models::testing;

constexpr int kSteps = 16;
constexpr double kLogitTolerance = 3e-2;
constexpr double kTieGap = 2e-2;
const std::string kPrompt = "The quick";

/// The quantized test models: tools/make_test_models.py --size quant, written once per process.
const std::string& quantModels() {
  static const std::string dir = [] {
    const std::string d = testModels() + "/quant";
    const CommandResult r = runCommand(kPython + " " + kSource + "/tools/make_test_models.py " + d +
                                       " --size quant --quant q8_0,q4_0,q4_k_m,q5_k_m,q6_k 2>&1");
    if (r.status != 0) ADD_FAILURE() << "make_test_models.py --size quant failed:\n" << r.out;
    return d;
  }();
  return dir;
}

struct Case {
  const char* name;
  const char* family;    // gpt2 or llama
  const char* fileType;  // q8_0, q4_0, q4_k_m, ...
  const char* weightType;  // what LanguageModel::weightType() says
  int threads;
  std::optional<DType> kv;  // the KV cache's dtype (nullopt: the default, f16; the reference keeps f32)
  io::Residency residency = io::Residency::automatic;  // these small files: automatic maps them
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ModelsQuant : public ::testing::TestWithParam<Case> {};

TEST_P(ModelsQuant, GreedyIdsAndLogitsMatchTheDequantizedReference) {
  const Case& c = GetParam();
  const std::string base = quantModels() + "/" + c.family + "-quant";
  const std::string file = base + "-" + c.fileType + ".gguf";
  const std::vector<int32_t> prompt = byteIds(kPrompt);
  const Oracle& want = oracle(std::string(c.family) + "_ref.py", base, prompt, kSteps, "f32", "--gguf " + file);
  ASSERT_EQ(want.logits.size(), size_t(kSteps));

  LanguageModel lm = LanguageModel::open(testPlatform(c.threads), file, {.kvDtype = c.kv, .residency = c.residency});
  EXPECT_EQ(lm.weightType(), c.weightType);
  EXPECT_EQ(lm.kvDtype(), c.kv.value_or(DType::f16));
  lm.reset(static_cast<int64_t>(prompt.size()) + kSteps);
  Tensor logits = lm.feed(prompt);
  double worst = 0;
  int ties = 0;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float>& e = want.logits[step];
    const std::vector<float> a = logits.toVector<float>();
    ASSERT_EQ(a.size(), e.size());
    const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
    const double range = *hi - *lo;
    double err = 0;
    for (size_t i = 0; i < a.size(); ++i) err = std::max(err, double(std::fabs(a[i] - e[i])));
    worst = std::max(worst, err / range);
    EXPECT_LE(err, kLogitTolerance * range) << "step " << step << ": max |error| " << err << ", logit range " << range;
    std::vector<size_t> order(e.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](size_t x, size_t y) { return e[x] > e[y]; });
    const int32_t got = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
    const double gap = e[order[0]] - e[order[1]];
    if (got != want.greedy[step]) {
      ++ties;
      EXPECT_TRUE(got == static_cast<int32_t>(order[1]) && gap < kTieGap * range)
          << "step " << step << ": Radix picks " << got << ", the reference " << want.greedy[step] << " (second "
          << order[1] << ", gap " << gap << " = " << gap / range << " of the range)";
    }
    if (step + 1 < kSteps) logits = lm.feed(std::span(&want.greedy[step], 1));
  }
  RecordProperty("max_error_over_range", std::to_string(worst));
  RecordProperty("accepted_ties", ties);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelsQuant,
    // The default f16 KV cache, an f32 one (two cases) and a bf16 one.
    ::testing::Values(Case{"Gpt2Q8_0", "gpt2", "q8_0", "Q8_0", 1}, Case{"Gpt2Q4_0", "gpt2", "q4_0", "Q4_0", 1},
                      Case{"Gpt2Q4_K_M", "gpt2", "q4_k_m", "Q4_K - Medium", 2, {}, io::Residency::copied},
                      Case{"LlamaQ8_0", "llama", "q8_0", "Q8_0", 2}, Case{"LlamaQ4_0", "llama", "q4_0", "Q4_0", 1, {}, io::Residency::copied},
                      Case{"LlamaQ4_K_M", "llama", "q4_k_m", "Q4_K - Medium", 1},
                      Case{"LlamaQ5_K_M", "llama", "q5_k_m", "Q5_K - Medium", 1},
                      Case{"LlamaQ6_K", "llama", "q6_k", "Q6_K", 2},
                      Case{"LlamaQ4_0F32Cache", "llama", "q4_0", "Q4_0", 1, DType::f32},
                      Case{"Gpt2Q4_K_MF32Cache", "gpt2", "q4_k_m", "Q4_K - Medium", 1, DType::f32},
                      Case{"Gpt2Q8_0Bf16Cache", "gpt2", "q8_0", "Q8_0", 2, DType::bf16}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// The blocks are bound from the mapped file (no copy, no f32 detour): packed tensors alias the
// checkpoint's bytes, and the model's weights take the file's tensor bytes.
TEST(ModelsQuantLoad, PackedWeightsAliasTheFileAndCountTheirElements) {
  const std::string file = quantModels() + "/llama-quant-q4_k_m.gguf";
  const Platform cpu = Platform::cpu();
  // The blocks alias the file's bytes whether they are mapped or read into memory.
  const io::Checkpoint copied = io::Checkpoint::open(file, io::Residency::copied);
  ASSERT_EQ(copied.residency(), io::Residency::copied);
  EXPECT_EQ(copied.load(cpu, "blk.1.ffn_down.weight").bufferAddress(), copied.bytes("blk.1.ffn_down.weight").data());
  EXPECT_EQ(copied.loadQuantized(cpu, "blk.1.attn_q.weight").data.toBytes(),
            io::Checkpoint::open(file).loadQuantized(cpu, "blk.1.attn_q.weight").data.toBytes());
  const io::Checkpoint ckpt = io::Checkpoint::open(file);
  const io::TensorInfo* down = ckpt.find("blk.1.ffn_down.weight");  // Q4_K_M: Q6_K in the last layer
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->type, "Q6_K");
  EXPECT_EQ(down->quant, QuantType::q6_k);
  EXPECT_EQ(ckpt.find("blk.0.ffn_down.weight")->quant, QuantType::q4_k);
  EXPECT_EQ(ckpt.find("output_norm.weight")->quant, QuantType::none);
  const Tensor packed = ckpt.load(cpu, "blk.1.ffn_down.weight");
  EXPECT_EQ(packed.shape(), Shape({256, 2 * 210}, DType::u8));  // 512 columns: two Q6_K blocks of 210 bytes
  EXPECT_EQ(packed.bufferAddress(), ckpt.bytes("blk.1.ffn_down.weight").data());
  const QuantizedTensor q = ckpt.loadQuantized(cpu, "blk.1.attn_q.weight");
  EXPECT_EQ(q.type, QuantType::q4_k);
  EXPECT_EQ(q.cols, 256);
  EXPECT_EQ(q.data.shape(), Shape({256, 144}, DType::u8));
  EXPECT_EQ(radix::testing::errorOf([&] { ckpt.loadQuantized(cpu, "output_norm.weight"); }).rfind("[checkpoint] tensor \"output_norm.weight\"", 0), 0u);

  const llama::Model m = llama::Model::load(cpu, ckpt, DType::f32);
  EXPECT_EQ(m.layers[1].mlp.down_proj.quant, QuantType::q6_k);
  EXPECT_EQ(m.layers[1].mlp.down_proj.cols, 512);
  EXPECT_EQ(m.layers[0].mlp.down_proj.quant, QuantType::q4_k);
  EXPECT_EQ(m.embed_tokens.quant, QuantType::q4_k);
  ASSERT_TRUE(m.lm_head.has_value());
  EXPECT_EQ(m.lm_head->quant, QuantType::q6_k);
  EXPECT_EQ(m.layers[0].self_attn.q_proj.weight.bufferAddress(), ckpt.bytes("blk.0.attn_q.weight").data());

  const LanguageModel lm = LanguageModel::open(cpu, file);
  const LanguageModel dense = LanguageModel::open(cpu, quantModels() + "/llama-quant.gguf");
  EXPECT_EQ(lm.weightBytes(), ckpt.totalBytes());
  EXPECT_EQ(lm.parameters(), dense.parameters());
  EXPECT_EQ(dense.weightType(), "f32");
}

// A NaN or Inf scale in an untrusted file is an error naming the tensor, at load.
TEST(ModelsQuantLoad, BadScalesAreErrorsNamingTheTensor) {
  const std::string file = quantModels() + "/llama-quant-q4_0.gguf";
  std::vector<uint8_t> bytes = readFile(file);
  const io::TensorInfo info = *io::Checkpoint::open(file).find("blk.1.attn_k.weight");
  ASSERT_EQ(info.type, "Q4_0");
  for (const uint16_t bits : {uint16_t{0x7e00}, uint16_t{0x7c00}}) {  // f16 NaN, +Inf: the second block's d
    std::vector<uint8_t> bad = bytes;
    std::memcpy(bad.data() + info.offset + 18, &bits, 2);
    const io::Checkpoint ckpt = io::Checkpoint::fromGgufBytes(bad, "bad.gguf");
    const std::string e = radix::testing::errorOf([&] { (void)LanguageModel::fromCheckpoint(Platform::cpu(), ckpt, {}); });
    EXPECT_EQ(e.rfind("[quant] blk.1.attn_k.weight", 0), 0u) << e;
  }
}

}  // namespace

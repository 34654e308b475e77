// Tensor-parallel models under mpirun (docs/sharding.md): loadInto with sharded placeholders, and
// GPT-2 / the Llama families split Megatron-style over the processes, whose greedy ids and logits
// must be those of one process. The models come from tools/make_test_models.py, written by
// tests/mpi/models.sh into $RADIX_MPI_MODELS before mpirun starts (skipped without it).
#include <gtest/gtest.h>
#include <radix/models/generate.h>
#include <radix/models/gpt2.h>
#include <radix/models/llama.h>
#include <radix/models/qwen2.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

using radix::DType;
using radix::Platform;
using radix::Shape;
using radix::Tensor;
using radix::testing::errorOf;
namespace io = radix::io;
namespace models = radix::models;

namespace {

std::string modelsDir() {
  const char* d = std::getenv("RADIX_MPI_MODELS");
  return d ? d : "";
}

#define REQUIRE_MODELS()                                                          \
  if (modelsDir().empty()) GTEST_SKIP() << "RADIX_MPI_MODELS is not set (tests/mpi/models.sh sets it)"; \
  if (Platform::cpu().processCount() != 2) GTEST_SKIP() << "the models are split over 2 processes (-np 2)"

int world() { return Platform::cpu().processCount(); }
Platform grid() { return Platform::cpu().withSharding({.numPartitions = world()}); }

// Block `part` of `parts` of axis `axis` of a row-major array of `dims`.
std::vector<float> block(const std::vector<float>& a, const std::vector<int64_t>& dims, int axis, int part, int parts) {
  int64_t outer = 1, inner = dims[axis] / parts;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o)
    out.insert(out.end(), a.begin() + (o * parts + part) * inner, a.begin() + (o * parts + part + 1) * inner);
  return out;
}

struct Placeholders {
  Tensor q, o;
};

}  // namespace

TEST(MpiModels, LoadIntoReadsTheLocalSliceOfShardedPlaceholders) {
  REQUIRE_MODELS();
  const Platform g = grid();
  const int part = g.partitionIndex();
  const io::Checkpoint ckpt = io::Checkpoint::open(modelsDir() + "/llama-tiny");
  const std::string q = "model.layers.0.self_attn.q_proj.weight", o = "model.layers.0.self_attn.o_proj.weight";
  const std::vector<float> qFull = ckpt.load(Platform::cpu(), q).toVector<float>();
  const std::vector<float> oFull = ckpt.load(Platform::cpu(), o).toVector<float>();
  // Rows of q (axis 0) and columns of o (axis 1).
  Placeholders p{Tensor(Shape({64, 64}, DType::f32).withTags({"hq", "d"}).withSharding({0})),
                 Tensor(Shape({64, 64}, DType::f32).withTags({"d", "a"}).withSharding({1}))};
  io::LoadSpec spec;
  spec.rename = [&](std::string_view path) { return path == ".q" || path == "q" ? q : o; };
  spec.ignoreExtra = {".*"};
  io::loadInto(g, p, ckpt, spec);
  EXPECT_EQ(p.q.shape().str(), Shape({64, 64}, DType::f32).withTags({"hq", "d"}).withSharding({0}).str());
  EXPECT_EQ(p.q.localShape().dims(), (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(p.o.localShape().dims(), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(p.q.localToVector<float>(), block(qFull, {64, 64}, 0, part, 2));
  EXPECT_EQ(p.o.localToVector<float>(), block(oFull, {64, 64}, 1, part, 2));
  EXPECT_EQ(p.o.toVector<float>(), oFull);  // gathered
  const Tensor local = p.o.local();
  EXPECT_EQ(local.shape().str(), "{d=64,a=32}:f32");
  EXPECT_EQ(local.toVector<float>(), block(oFull, {64, 64}, 1, part, 2));

  // Quantized blocks: rows split anywhere, a row split only between blocks.
  const io::Checkpoint q8 = io::Checkpoint::open(modelsDir() + "/llama-tiny-q8_0.gguf");
  const io::TensorInfo* info = q8.find("blk.0.attn_q.weight");
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->quant, radix::QuantType::q8_0);
  const std::vector<uint8_t> raw = q8.load(Platform::cpu(), "blk.0.attn_q.weight").toBytes();  // {64, 68}
  const int64_t rowBytes = radix::rowBytes(radix::QuantType::q8_0, 64);
  Placeholders packed{Tensor(Shape({64, rowBytes}, DType::u8).withSharding({0})),
                      Tensor(Shape({64, rowBytes}, DType::u8).withSharding({1}))};
  io::LoadSpec qspec;
  qspec.rename = [](std::string_view) { return std::string("blk.0.attn_q.weight"); };
  qspec.ignoreExtra = {".*"};
  io::loadInto(g, packed, q8, qspec);
  const std::vector<uint8_t> rowsPart = packed.q.local().toBytes(), colsPart = packed.o.local().toBytes();
  ASSERT_EQ(rowsPart.size(), raw.size() / 2);
  EXPECT_TRUE(std::equal(rowsPart.begin(), rowsPart.end(), raw.begin() + part * raw.size() / 2));
  ASSERT_EQ(colsPart.size(), raw.size() / 2);
  for (int64_t r = 0; r < 64; ++r)
    EXPECT_TRUE(std::equal(colsPart.begin() + r * rowBytes / 2, colsPart.begin() + (r + 1) * rowBytes / 2,
                           raw.begin() + r * rowBytes + part * rowBytes / 2))
        << "row " << r;

  // A Q4_K row of 64 has no block boundary inside it: a [load] error, not a wrong slice.
  const io::Checkpoint q4k = io::Checkpoint::open(modelsDir() + "/llama-tiny-q4_k_m.gguf");
  const io::TensorInfo* k = q4k.find("blk.0.attn_q.weight");
  ASSERT_NE(k, nullptr);
  if (k->quant == radix::QuantType::q4_k || k->quant == radix::QuantType::q5_k || k->quant == radix::QuantType::q6_k) {
    Placeholders cut{Tensor(Shape({64, radix::rowBytes(k->quant, 64)}, DType::u8).withSharding({1})),
                     Tensor(Shape({64, radix::rowBytes(k->quant, 64)}, DType::u8).withSharding({0}))};
    const std::string e = errorOf([&] { io::loadInto(g, cut, q4k, qspec); });
    EXPECT_NE(e.find("would cut its 256-element blocks"), std::string::npos) << e;
  }
  // An axis the partitions do not divide.
  struct Odd {
    Tensor w;
  } odd{Tensor(Shape({63, 64}, DType::f32).withSharding({0}))};
  const std::string e = errorOf([&] { io::loadInto(g, odd, ckpt, spec); });
  EXPECT_NE(e.find("[load]"), std::string::npos) << e;
}

TEST(MpiModels, WeightsAreSplitMegatronStyle) {
  REQUIRE_MODELS();
  const Platform g = grid();
  const io::Checkpoint ckpt = io::Checkpoint::open(modelsDir() + "/llama-tiny");
  const models::llama::Model m = models::llama::Model::load(g, ckpt, DType::f32);
  const models::llama::Layer& l = m.layers[0];
  // heads 4 x hd 16, kv heads 2, ffn 176: each process holds half of every split axis.
  EXPECT_EQ(l.self_attn.q_proj.weight.shape().str(), "{hq=32,d=64}:f32");
  EXPECT_EQ(l.self_attn.k_proj.weight.shape().str(), "{hkv=16,d=64}:f32");
  EXPECT_EQ(l.self_attn.o_proj.weight.shape().str(), "{d=64,a=32}:f32");
  EXPECT_EQ(l.mlp.up_proj.weight.shape().str(), "{f=88,d=64}:f32");
  EXPECT_EQ(l.mlp.down_proj.weight.shape().str(), "{d=64,f=88}:f32");
  EXPECT_TRUE(l.self_attn.o_proj.rowParallel && l.mlp.down_proj.rowParallel && !l.self_attn.q_proj.rowParallel);
  EXPECT_EQ(l.self_attn.heads, 2);
  EXPECT_EQ(l.self_attn.kvHeads, 1);
  EXPECT_EQ(m.embed_tokens.weight.shape().str(), "{voc=300,d=64}:f32");  // replicated
  // The output projection by vocabulary rows (untied here; a tied one views the embedding's rows).
  ASSERT_TRUE(m.lm_head.has_value());
  EXPECT_EQ(m.lm_head->weight.shape().str(), "{voc=150,d=64}:f32");
  EXPECT_TRUE(m.vocabParallel);
  const models::llama::Model tied = models::qwen2::load(g, io::Checkpoint::open(modelsDir() + "/qwen2-tiny"), DType::f32);
  ASSERT_TRUE(tied.lm_head.has_value());
  EXPECT_EQ(tied.lm_head->weight.shape().str(), "{voc=150,d=64}:f32");
  const std::vector<float> table = tied.embed_tokens.weight.toVector<float>(), rowsOfMine = tied.lm_head->weight.toVector<float>();
  EXPECT_TRUE(std::equal(rowsOfMine.begin(), rowsOfMine.end(), table.begin() + g.partitionIndex() * 150 * 64));

  // GPT-2's fused c_attn keeps this process's heads of q, k and v.
  const io::Checkpoint gckpt = io::Checkpoint::open(modelsDir() + "/gpt2-tiny");
  const models::gpt2::Model gm = models::gpt2::Model::load(g, gckpt, DType::f32);
  EXPECT_EQ(gm.h[0].attn.c_attn.weight.shape().str(), "{d=64,qkv=96}:f32");
  const std::vector<float> full = gckpt.load(Platform::cpu(), "transformer.h.0.attn.c_attn.weight").toVector<float>();
  const std::vector<float> mine = gm.h[0].attn.c_attn.weight.toVector<float>();
  const int part = g.partitionIndex();
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 96; ++c)
      ASSERT_EQ(mine[r * 96 + c], full[r * 192 + (c / 32) * 64 + part * 32 + c % 32]) << r << "," << c;

  // Families without a split say so.
  const std::string e = errorOf([&] { models::LanguageModel::open(g, modelsDir() + "/phi3-tiny"); });
  EXPECT_NE(e.find("[phi3] tensor parallel"), std::string::npos) << e;
}

class MpiModelsGreedy : public ::testing::TestWithParam<const char*> {};

TEST_P(MpiModelsGreedy, IdsAndLogitsMatchOneProcess) {
  REQUIRE_MODELS();
  const std::string path = modelsDir() + "/" + GetParam();
  models::LanguageModel one = models::LanguageModel::open(Platform::cpu(), path);
  models::LanguageModel split = models::LanguageModel::open(grid(), path);
  const std::vector<int32_t> prompt = {5, 17, 42, 99, 7, 3, 250, 11, 64, 128, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  // Logits of the prompt (a 16-row chunk and 3 decode steps), then 12 greedy tokens.
  one.reset(64);
  split.reset(64);
  const std::vector<float> a = one.feed(prompt).toVector<float>(), b = split.feed(prompt).toVector<float>();
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i])), scale = std::max(scale, std::abs(double(a[i])));
  // Quantized weights quantize the activations too (int8 blocks for the VNNI kernels), and a row-
  // parallel layer's kernel sees half the row: the logits then differ by that rounding, not more.
  // A wrong split (heads or blocks misplaced) moves them by the logits' own scale.
  const bool quantized = std::string(GetParam()).find("-q") != std::string::npos;
  EXPECT_LE(worst, (quantized ? 0.05 : 1e-4) * std::max(1.0, scale)) << GetParam();
  const std::vector<int32_t> want = one.generate(prompt, 12, {});
  const std::vector<int32_t> got = split.generate(prompt, 12, {});
  EXPECT_EQ(got, want) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Families, MpiModelsGreedy,
                         ::testing::Values("gpt2-tiny", "gpt2-tiny.gguf", "gpt2-tiny-q8_0.gguf", "llama-tiny",
                                           "llama-tiny.gguf", "llama-tiny-q8_0.gguf", "llama-tiny-q4_k_m.gguf",
                                           "qwen2-tiny", "qwen3-tiny", "mistral-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

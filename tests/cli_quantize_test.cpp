// `radix quantize`: the tensor types of llama.cpp's mixes (llama_tensor_get_type without an
// importance matrix, derived by hand here for an 8-layer model), the bytes (quantizeRow of the
// source rows), copied metadata, HF folders written as their GGUF counterparts, and the errors.
#include <gtest/gtest.h>

#include <radix/gguf_writer.h>
#include <radix/io.h>
#include <radix/quant.h>
#include <radix/radix.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "models_testing.h"

namespace {

using namespace radix::models::testing;
using radix::QuantType;
namespace io = radix::io;

CommandResult cli(const std::string& args) {
  return runCommand("RADIX_CACHE_DIR=off " + std::string(RADIX_CLI_PATH) + " " + args + " 2>&1");
}

constexpr int kLayers = 8;

std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.3f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

/// An 8-layer llama-named GGUF with rows of 256 and 512 (k-quant blocks), tied embeddings (no
/// output.weight), one F16 and one Q8_0 tensor among the F32 ones.
const std::string& wideModel() {
  static const std::string path = [] {
    const std::string p = testModels() + "/wide.gguf";
    io::GgufWriter w;
    w.setString("general.architecture", "llama");
    w.setU32("llama.block_count", kLayers);
    w.setString("test.kept", "yes");
    w.setU32("general.file_type", 0);
    uint32_t seed = 1;
    auto f32 = [&](const std::string& name, std::vector<int64_t> dims) {
      const size_t n = static_cast<size_t>(dims.size() == 1 ? dims[0] : dims[0] * dims[1]);
      const std::vector<float> v = randomValues(n, seed++);
      w.addTensor(name, dims, 0, n * 4, [v](std::span<uint8_t> d) { std::memcpy(d.data(), v.data(), d.size()); });
    };
    f32("token_embd.weight", {12, 256});
    for (int i = 0; i < kLayers; ++i) {
      const std::string b = "blk." + std::to_string(i) + ".";
      f32(b + "attn_norm.weight", {256});
      f32(b + "attn_q.weight", {8, 256});
      f32(b + "attn_k.weight", {4, 256});
      f32(b + "attn_v.weight", {4, 256});
      f32(b + "attn_output.weight", {8, 256});
      f32(b + "ffn_norm.weight", {256});
      f32(b + "ffn_gate.weight", {4, 256});
      f32(b + "ffn_down.weight", {2, 512});
      if (i == 2) {  // stored F16
        const std::vector<float> v = randomValues(4 * 256, seed++);
        const radix::Tensor t = radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({4 * 256}, radix::DType::f16), v);
        const std::vector<uint8_t> bytes = t.toBytes();
        w.addTensor(b + "ffn_up.weight", {4, 256}, 1, bytes.size(), [bytes](std::span<uint8_t> d) {
          std::memcpy(d.data(), bytes.data(), d.size());
        });
      } else if (i == 3) {  // stored Q8_0
        const std::vector<float> v = randomValues(4 * 256, seed++);
        std::vector<uint8_t> q(static_cast<size_t>(4 * radix::rowBytes(QuantType::q8_0, 256)));
        radix::quantizeRow(QuantType::q8_0, v.data(), 4 * 256, q.data());
        w.addTensor(b + "ffn_up.weight", {4, 256}, 8, q.size(), [q](std::span<uint8_t> d) { std::memcpy(d.data(), q.data(), d.size()); });
      } else {
        f32(b + "ffn_up.weight", {4, 256});
      }
    }
    f32("output_norm.weight", {256});
    w.write(p);
    return p;
  }();
  return path;
}

/// The f32 rows of a stored tensor (dequantized when quantized).
std::vector<float> valuesOf(const io::Checkpoint& c, const io::TensorInfo& t) {
  if (t.dtype) return c.load(radix::Platform::cpu(), t.name, radix::DType::f32).toVector<float>();
  const QuantType q = radix::parseQuantType(t.type);
  std::vector<float> out(t.bytes / static_cast<size_t>(radix::blockBytes(q)) * static_cast<size_t>(radix::blockElems(q)));
  radix::dequantizeRow(q, c.bytes(t.name).data(), static_cast<int64_t>(out.size()), out.data());
  return out;
}

/// Each output tensor: its type as the recipe picks it and its bytes (quantizeRow of the source
/// rows, or the source bytes where the source already has that type).
void expectQuantizedFrom(const io::Checkpoint& in, const io::Checkpoint& out,
                         const std::function<std::string(const std::string&)>& expectedType) {
  ASSERT_EQ(out.tensors().size(), in.tensors().size());
  for (const io::TensorInfo& src : in.tensors()) {
    SCOPED_TRACE(src.name);
    const io::TensorInfo* dst = out.find(src.name);
    ASSERT_NE(dst, nullptr);
    EXPECT_EQ(dst->dims, src.dims);
    const std::string type = expectedType(src.name);
    ASSERT_EQ(dst->type, type);
    const std::span<const uint8_t> got = out.bytes(src.name);
    if (type == src.type) {
      EXPECT_TRUE(std::equal(got.begin(), got.end(), in.bytes(src.name).begin(), in.bytes(src.name).end()));
      continue;
    }
    const QuantType q = radix::parseQuantType(type);
    const std::vector<float> x = valuesOf(in, src);
    std::vector<uint8_t> want(static_cast<size_t>(radix::rowBytes(q, static_cast<int64_t>(x.size()))));
    radix::quantizeRow(q, x.data(), static_cast<int64_t>(x.size()), want.data());
    ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
    std::vector<float> a(x.size()), b(x.size());
    radix::dequantizeRow(q, got.data(), static_cast<int64_t>(x.size()), a.data());
    radix::dequantizeRow(q, want.data(), static_cast<int64_t>(x.size()), b.data());
    EXPECT_EQ(a, b);
  }
}

int layerOf(const std::string& name) { return name.starts_with("blk.") ? std::stoi(name.substr(4)) : -1; }

TEST(CliQuantize, MixesFollowLlamaCppRecipes) {
  // use_more_bits(i, 8): i < 1 || i >= 7 || (i - 1) % 3 == 2 -> layers 0, 3, 6, 7.
  const std::set<int> moreBits = {0, 3, 6, 7};
  struct Row {
    const char* to;
    int fileType;
    const char* base;
    const char* embd;      // token_embd.weight: tied, so it takes output.weight's type
    const char* moreBitsT; // attn_v / ffn_down in moreBits layers
  };
  for (const Row& r : std::vector<Row>{{"q8_0", 7, "Q8_0", "Q8_0", "Q8_0"},
                                       {"q4_0", 2, "Q4_0", "Q6_K", "Q4_0"},
                                       {"q4_1", 3, "Q4_1", "Q6_K", "Q4_1"},
                                       {"q5_0", 8, "Q5_0", "Q6_K", "Q5_0"},
                                       {"q5_1", 9, "Q5_1", "Q6_K", "Q5_1"},
                                       {"q4_k_m", 15, "Q4_K", "Q6_K", "Q6_K"},
                                       {"q5_k_m", 17, "Q5_K", "Q6_K", "Q6_K"},
                                       {"q6_k", 18, "Q6_K", "Q6_K", "Q6_K"}}) {
    SCOPED_TRACE(r.to);
    const std::string out = testModels() + "/wide-" + r.to + ".gguf";
    const CommandResult run = cli("quantize --model " + wideModel() + " --to " + r.to + " -o " + out);
    ASSERT_EQ(run.status, 0) << run.out;
    EXPECT_NE(run.out.find("file_type " + std::to_string(r.fileType)), std::string::npos) << run.out;
    const io::Checkpoint in = io::Checkpoint::open(wideModel());
    const io::Checkpoint q = io::Checkpoint::open(out);
    EXPECT_EQ(q.meta("general.file_type")->asInt(), r.fileType);
    EXPECT_EQ(q.meta("general.quantization_version")->asInt(), 2);
    EXPECT_EQ(q.meta("test.kept")->asString(), "yes");
    EXPECT_EQ(q.meta("llama.block_count")->asInt(), kLayers);
    expectQuantizedFrom(in, q, [&](const std::string& name) -> std::string {
      if (name.ends_with("_norm.weight")) return "F32";
      if (name == "token_embd.weight") return r.embd;
      if ((name.find("attn_v") != std::string::npos || name.find("ffn_down") != std::string::npos) &&
          moreBits.count(layerOf(name)))
        return r.moreBitsT;
      return r.base;
    });
  }
}

TEST(CliQuantize, RowsThatAreNotWholeBlocksFallBackAsLlamaCpp) {
  // gpt2-tiny: width 64, ffn 256. Q4_K -> Q5_0 and Q5_K -> Q5_1 (attn_qkv's Q5_K) where rows are
  // 64; output.weight: Q8_0 (not a multiple of 256); ffn_down rows of 256 keep Q4_K, and Q6_K in
  // layer 1 = use_more_bits(1, 2) (1 >= 7*2/8).
  const std::string in = testModels() + "/gpt2-tiny.gguf", out = testModels() + "/gpt2-q4km.gguf";
  const CommandResult run = cli("quantize -m " + in + " --to Q4_K_M -o " + out);
  ASSERT_EQ(run.status, 0) << run.out;
  expectQuantizedFrom(io::Checkpoint::open(in), io::Checkpoint::open(out), [](const std::string& name) -> std::string {
    if (name.ends_with(".bias") || name.find("norm") != std::string::npos || name == "position_embd.weight") return "F32";
    if (name == "output.weight") return "Q8_0";
    if (name.find("attn_qkv") != std::string::npos) return "Q5_1";
    if (name == "blk.0.ffn_down.weight") return "Q4_K";
    if (name == "blk.1.ffn_down.weight") return "Q6_K";
    return "Q5_0";
  });
  // llama-tiny's ffn_down rows of 176: Q4_K -> Q5_0 does not fit either, so F16 (llama.cpp's last fallback).
  const std::string lin = testModels() + "/llama-tiny.gguf", lout = testModels() + "/llama-q4km.gguf";
  ASSERT_EQ(cli("quantize -m " + lin + " --to q4_k_m -o " + lout).status, 0);
  const io::Checkpoint l = io::Checkpoint::open(lout);
  EXPECT_EQ(l.find("blk.1.ffn_down.weight")->type, "F16");
  EXPECT_EQ(l.find("blk.1.ffn_up.weight")->type, "Q5_0");
  EXPECT_EQ(l.find("output.weight")->type, "Q8_0");
}

TEST(CliQuantize, HfFoldersEqualTheirGgufConversion) {
  // make_test_models.py writes each HF folder and its GGUF as llama.cpp's converter would (GPT-2's
  // Conv1D weights transposed, Llama's q/k rows permuted): the quantized files hold equal tensors.
  for (const char* model : {"gpt2-tiny", "llama-tiny"}) {
    for (const char* to : {"q4_k_m", "q6_k"}) {
      SCOPED_TRACE(std::string(model) + " " + to);
      const std::string hf = testModels() + "/" + model, gguf = hf + ".gguf";
      const std::string a = hf + "-hf-" + to + ".gguf", b = hf + "-gguf-" + to + ".gguf";
      const CommandResult ra = cli("quantize -m " + hf + " --to " + to + " -o " + a);
      ASSERT_EQ(ra.status, 0) << ra.out;
      ASSERT_EQ(cli("quantize -m " + gguf + " --to " + to + " -o " + b).status, 0);
      const io::Checkpoint fromHf = io::Checkpoint::open(a), fromGguf = io::Checkpoint::open(b);
      ASSERT_EQ(fromHf.tensors().size(), fromGguf.tensors().size());
      for (const io::TensorInfo& t : fromGguf.tensors()) {
        const io::TensorInfo* h = fromHf.find(t.name);
        ASSERT_NE(h, nullptr) << t.name;
        EXPECT_EQ(h->type, t.type) << t.name;
        EXPECT_EQ(h->dims, t.dims) << t.name;
        const auto x = fromHf.bytes(t.name), y = fromGguf.bytes(t.name);
        EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name;
      }
      const io::Checkpoint ref = io::Checkpoint::open(gguf);
      for (const auto& [key, value] : ref.metadata()) {
        if (key == "general.name" || key == "general.file_type") continue;
        const io::MetaValue* v = fromHf.meta(key);
        ASSERT_NE(v, nullptr) << key;
        EXPECT_EQ(v->str(), value.str()) << key;
      }
    }
  }
}

TEST(CliQuantize, Errors) {
  const std::string out = testModels() + "/never.gguf";
  struct Row {
    std::string args;
    int status;
    std::string message;
  };
  for (const Row& r : std::vector<Row>{
           {"quantize -m " + testModels() + "/llama-tiny.gguf --to q8_0 -o " + out, 1,
            "[quantize] tensor \"blk.0.ffn_down.weight\": rows of 176 are not a multiple of 32, which Q8_0 needs"},
           {"quantize -m " + testModels() + "/llama-tiny.gguf --to q3_k -o " + out, 2, "[quantize] --to q3_k is not one of"},
           {"quantize -m " + testModels() + "/llama-tiny.gguf --to q8_0", 2, "[quantize] -o OUT.gguf is required"},
           {"quantize -m " + testModels() + "/missing --to q8_0 -o " + out, 1, "[quantize] no model at"},
           {"quantize --to q8_0 -o " + out, 2, "[quantize] --model IN is required"},
           {"quantize --bogus", 2, "[quantize] unknown option \"--bogus\""},
           {"quantize --help", 0, "usage: radix quantize --model IN --to TYPE -o OUT.gguf"},
       }) {
    const CommandResult c = cli(r.args);
    EXPECT_EQ(c.status, r.status) << r.args << "\n" << c.out;
    EXPECT_NE(c.out.find(r.message), std::string::npos) << r.args << "\n" << c.out;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

}  // namespace

// safetensors loading: every dtype, zero-copy binding, conversions, __metadata__, HF folders,
// sharded checkpoints, loadInto's mapping and its errors, and a table of corrupt files.
#include <gtest/gtest.h>

#include <radix/io.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "io_testing.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
using radix::testing::errorOf;
using namespace radix::iotest;
namespace io = radix::io;

bool inside(const void* p, std::span<const uint8_t> range) {
  auto* b = static_cast<const uint8_t*>(p);
  return b >= range.data() && b < range.data() + range.size();
}

// ---- round trips ----

TEST(IoSafetensors, EveryDTypeRoundTripsZeroCopy) {
  struct Row {
    std::string type;
    std::optional<DType> dtype;
    size_t size;
  };
  const std::vector<Row> rows = {
      {"F64", DType::f64, 8},  {"F32", DType::f32, 4},  {"F16", DType::f16, 2},   {"BF16", DType::bf16, 2},
      {"I64", DType::i64, 8},  {"I32", DType::i32, 4},  {"I16", DType::i16, 2},   {"I8", DType::i8, 1},
      {"U8", DType::u8, 1},    {"U16", DType::u16, 2},  {"U32", DType::u32, 4},   {"U64", DType::u64, 8},
      {"BOOL", DType::bool_, 1}, {"F8_E4M3", std::nullopt, 1}, {"F8_E5M2", std::nullopt, 1},
  };
  std::vector<StTensor> tensors;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string bytes(3 * 8 * rows[r].size, '\0');  // multiples of 8 bytes: every tensor aligned
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(rows[r].type == "BOOL" ? i % 2 : (i * 7 + r) & 0x7f);
    tensors.push_back({"t." + rows[r].type, rows[r].type, {3, 8}, bytes});
  }
  TempDir dir("dtypes");
  const std::string path = dir.write("all.safetensors", safetensors(tensors, R"({"format":"pt","note":"x"})"));
  io::Checkpoint ckpt = io::Checkpoint::open(path);
  EXPECT_EQ(ckpt.format(), "safetensors");
  EXPECT_EQ(ckpt.folder(), dir.path.string());
  ASSERT_EQ(ckpt.tensors().size(), rows.size());
  ASSERT_NE(ckpt.meta("format"), nullptr);
  EXPECT_EQ(ckpt.meta("format")->asString(), "pt");
  EXPECT_EQ(ckpt.metadata().size(), 2u);
  const std::string file = readFile(path);
  for (size_t r = 0; r < rows.size(); ++r) {
    SCOPED_TRACE(rows[r].type);
    const io::TensorInfo* info = ckpt.find("t." + rows[r].type);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->type, rows[r].type);
    EXPECT_EQ(info->dtype, rows[r].dtype);
    EXPECT_EQ(info->dims, (std::vector<int64_t>{3, 8}));
    EXPECT_EQ(info->bytes, 24 * rows[r].size);
    EXPECT_EQ(info->file, path);
    EXPECT_EQ(file.substr(info->offset, info->bytes), tensors[r].data);
    auto bytes = ckpt.bytes(info->name);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), tensors[r].data);
    if (!rows[r].dtype) {
      EXPECT_NE(errorOf([&] { ckpt.load(cpu(), info->name); }).find("has no Radix dtype"), std::string::npos);
      continue;
    }
    Tensor t = ckpt.load(cpu(), info->name);
    EXPECT_EQ(t.shape(), Shape({3, 8}, *rows[r].dtype));
    EXPECT_EQ(t.bufferAddress(), bytes.data());  // zero-copy: bound to the mapping
    const auto got = t.toBytes();
    EXPECT_EQ(std::string(got.begin(), got.end()), tensors[r].data);
  }
}

TEST(IoSafetensors, ConversionsAmongFloatTypes) {
  const std::vector<float> v = {1.0f, -2.5f, 3.140625f, 0.0f, 57344.0f, -0.0009765625f};
  auto encoded = [&](DType dtype) {
    const auto b = Tensor::fromValues(cpu(), Shape({6}, dtype), v).toBytes();
    return std::string(b.begin(), b.end());
  };
  const std::string file = safetensors(
      {{"f32", "F32", {2, 3}, raw(v)}, {"f16", "F16", {2, 3}, encoded(DType::f16)}, {"bf16", "BF16", {6}, encoded(DType::bf16)}});
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "mem.safetensors");
  for (const char* name : {"f32", "f16", "bf16"})
    for (DType to : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
      SCOPED_TRACE(std::string(name) + " -> " + std::string(radix::name(to)));
      Tensor t = ckpt.load(cpu(), name, to);
      EXPECT_EQ(t.dtype(), to);
      EXPECT_EQ(t.shape().dims(), ckpt.find(name)->dims);
      const std::vector<double> got = t.toVector<double>();
      for (size_t i = 0; i < v.size(); ++i) {
        // Exact except where bf16 (8 bits of mantissa) is on either side.
        const double tol = (std::string(name) == "bf16" || to == DType::bf16) ? std::abs(v[i]) / 128 : 0.0;
        EXPECT_NEAR(got[i], v[i], tol) << i;
      }
    }
  EXPECT_NE(errorOf([&] { ckpt.load(cpu(), "f32", DType::i32); }).find("cannot be loaded as i32"), std::string::npos);
  EXPECT_EQ(errorOf([&] { ckpt.load(cpu(), "nope"); }).rfind("[checkpoint] no tensor named \"nope\" in mem.safetensors", 0), 0u);
}

TEST(IoSafetensors, InMemoryBytesAreBoundZeroCopy) {
  const std::string file = safetensors({{"w", "F32", {4}, raw(iotaFloats(4))}});
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "embedded");
  Tensor w = ckpt.load(cpu(), "w");
  EXPECT_TRUE(inside(w.bufferAddress(), span(file)));
  radix::testing::expectClose(w, iotaFloats(4), 0);
}

// ---- external memory: alignment to the element size only, and donation ----

TEST(IoSafetensors, CompiledCodeReadsDataAlignedOnlyToTheElementSize) {
  // Bytes at an address that is 4 (f32) or 2 (f16) modulo 64.
  // Small shapes, and shapes large enough for the GEMM kernels.
  for (auto [dtype, m, k, n] : {std::tuple{DType::f32, 5, 37, 19}, std::tuple{DType::f16, 5, 37, 19},
                                std::tuple{DType::f32, 67, 256, 131}, std::tuple{DType::bf16, 67, 256, 131}}) {
    SCOPED_TRACE(std::string(radix::name(dtype)) + " " + std::to_string(m));
    const size_t es = radix::sizeOf(dtype);
    std::vector<float> a = iotaFloats(m * k, 0.01f), b = iotaFloats(k * n, 0.02f);
    auto bytesOf = [&](const std::vector<float>& v) {
      Tensor t = Tensor::fromValues(cpu(), Shape({static_cast<int64_t>(v.size())}, dtype), v);
      return t.toBytes();
    };
    auto ab = bytesOf(a), bb = bytesOf(b);
    std::vector<uint8_t> arena(ab.size() + bb.size() + 256);
    uint8_t* base = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64);
    uint8_t* pa = base + es;                                      // 64k + es
    uint8_t* pb = base + 128 + 3 * es + (ab.size() / 64) * 64;   // another odd multiple
    std::memcpy(pa, ab.data(), ab.size());
    std::memcpy(pb, bb.data(), bb.size());
    auto owner = std::make_shared<int>(0);
    Tensor ta = Tensor::fromExternal(cpu(), Shape({m, k}, dtype), pa, owner);
    Tensor tb = Tensor::fromExternal(cpu(), Shape({k, n}, dtype), pb, owner);
    ASSERT_EQ(ta.bufferAddress(), pa);
    auto fn = [](Tensor x, Tensor y) {
      return x.dotGeneral(y, {{1, 0}}, {}).add(x.sum(1).broad(Shape({x.dim(0), y.dim(1)}, x.dtype())));
    };
    Tensor y = radix::testing::compileAndCall(cpu(), fn, ta, tb);
    const auto av = ta.toVector<float>(), bv = tb.toVector<float>();
    std::vector<float> want(m * n);
    for (int i = 0; i < m; ++i) {
      double rowSum = 0;
      for (int p = 0; p < k; ++p) rowSum += av[i * k + p];
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int p = 0; p < k; ++p) s += double(av[i * k + p]) * bv[p * n + j];
        want[i * n + j] = static_cast<float>(s + rowSum);
      }
    }
    radix::testing::expectClose(y, want, dtype == DType::f32 ? 1e-4 : 3e-2);
  }
  std::vector<uint8_t> odd(16);
  const void* misaligned = odd.data() + (reinterpret_cast<uintptr_t>(odd.data()) % 4 == 1 ? 0 : 1);
  EXPECT_NE(errorOf([&] { Tensor::fromExternal(cpu(), Shape({2}, DType::f32), misaligned, nullptr); })
                .find("not aligned to its element size"),
            std::string::npos);
}

TEST(IoSafetensors, DonatingAnExternalTensorCopiesItFirst) {
  TempDir dir("donate");
  const std::vector<float> v = iotaFloats(6);
  const std::string path = dir.write("w.safetensors", safetensors({{"w", "F32", {6}, raw(v)}}));
  const std::string before = readFile(path);
  io::Checkpoint ckpt = io::Checkpoint::open(path);
  Tensor mapped = ckpt.load(cpu(), "w");
  Tensor alias = ckpt.load(cpu(), "w");  // the same mapped bytes, another handle
  ASSERT_EQ(mapped.bufferAddress(), alias.bufferAddress());
  auto fn = [](Tensor x) { return x.mulConstant(2).reuseBuffer(x); };
  Tensor y = radix::testing::compileAndCall(cpu(), fn, mapped);
  std::vector<float> doubled;
  for (float x : v) doubled.push_back(2 * x);
  radix::testing::expectClose(y, doubled, 0);
  EXPECT_NE(y.bufferAddress(), alias.bufferAddress());
  EXPECT_NE(errorOf([&] { mapped.toBytes(); }).find("donated"), std::string::npos);
  radix::testing::expectClose(alias, v, 0);  // the mapping is unchanged
  EXPECT_EQ(readFile(path), before);          // and so is the file
  // Caller memory (fromSafetensorsBytes) likewise.
  const std::string bytes = safetensors({{"w", "F32", {6}, raw(v)}});
  const std::string copy = bytes;
  io::Checkpoint mem = io::Checkpoint::fromSafetensorsBytes(span(bytes), "mem");
  Tensor z = radix::testing::compileAndCall(cpu(), fn, mem.load(cpu(), "w"));
  radix::testing::expectClose(z, doubled, 0);
  EXPECT_EQ(bytes, copy);
}

// ---- residency ----

// "THPeligible: 1" in the smaps entry of the mapping holding `p`: the kernel may back it with
// 2 MiB pages (it does so at fault time when it has them free).
std::optional<bool> hugePageEligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2)  // a mapping's first line
      inside = at >= lo && at < hi;
    else if (inside && line.starts_with("THPeligible:"))
      return line.find('1') != std::string::npos;
  }
  return std::nullopt;
}

bool transparentHugePagesOff() {
  const std::string mode = readFile("/sys/kernel/mm/transparent_hugepage/enabled");
  return mode.empty() || mode.find("[never]") != std::string::npos;
}

TEST(IoResidency, CopiedFilesAreReadIntoAlignedReadOnlyMemory) {
  TempDir dir("residency");
  const std::vector<float> v = iotaFloats(3 << 20);  // 12 MiB: `automatic` copies it
  const std::vector<float> small = iotaFloats(10);
  const std::string big = dir.write("big.safetensors", safetensors({{"w", "F32", {3, 1 << 20}, raw(v)}, {"s", "F32", {10}, raw(small)}}));
  const std::string tiny = dir.write("tiny.safetensors", safetensors({{"s", "F32", {10}, raw(small)}}));
  for (io::Residency r : {io::Residency::copied, io::Residency::automatic}) {
    io::Checkpoint ckpt = io::Checkpoint::open(big, r);
    ASSERT_EQ(ckpt.residency(), io::Residency::copied);
    Tensor w = ckpt.load(cpu(), "w");
    EXPECT_EQ(w.bufferAddress(), ckpt.bytes("w").data());  // zero-copy from the copy
    EXPECT_EQ(w.toVector<float>(), v);
    EXPECT_EQ(ckpt.load(cpu(), "s").toVector<float>(), small);
    // The file's first byte (the header's size) starts a 2 MiB page.
    const uint8_t* first = ckpt.bytes("w").data() - ckpt.find("w")->offset;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (2 << 20), 0u);
    if (transparentHugePagesOff())
      GTEST_LOG_(INFO) << "transparent huge pages are off on this host: not checking that the copy may use them";
    else
      EXPECT_EQ(hugePageEligible(first), std::optional<bool>(true));
  }
  EXPECT_EQ(io::Checkpoint::open(big).residency(), io::Residency::mapped);  // Checkpoint::open's default
  EXPECT_EQ(io::Checkpoint::open(big, io::Residency::mapped).residency(), io::Residency::mapped);
  EXPECT_EQ(io::Checkpoint::open(tiny, io::Residency::automatic).residency(), io::Residency::mapped);  // under 4 MiB
  const std::string bytes = safetensors({{"s", "F32", {10}, raw(small)}});
  EXPECT_EQ(io::Checkpoint::fromSafetensorsBytes(span(bytes), "mem").residency(), io::Residency::mapped);

  // A copy does not see the file change: truncated (a mapping would fault on it) or rewritten.
  io::Checkpoint copied = io::Checkpoint::open(tiny, io::Residency::copied);
  std::filesystem::resize_file(tiny, 0);
  EXPECT_EQ(copied.load(cpu(), "s").toVector<float>(), small);
  dir.write("tiny.safetensors", safetensors({{"s", "F32", {10}, raw(iotaFloats(10, 2.0f))}}));
  EXPECT_EQ(copied.load(cpu(), "s").toVector<float>(), small);
  EXPECT_EQ(io::Checkpoint::open(tiny, io::Residency::copied).load(cpu(), "s").toVector<float>(), iotaFloats(10, 2.0f));

  // Sharded checkpoints copy each shard; errors name the file as a mapping's do.
  dir.write("sh/a.safetensors", safetensors({{"a", "F32", {2}, raw(std::vector<float>{1, 2})}}));
  dir.write("sh/b.safetensors", safetensors({{"b", "F32", {1}, raw(std::vector<float>{3})}}));
  dir.write("sh/model.safetensors.index.json", R"({"weight_map":{"a":"a.safetensors","b":"b.safetensors"}})");
  io::Checkpoint sharded = io::Checkpoint::open(dir / "sh", io::Residency::copied);
  EXPECT_EQ(sharded.residency(), io::Residency::copied);
  EXPECT_EQ(sharded.load(cpu(), "b").toVector<float>(), std::vector<float>{3});
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(dir / "none.safetensors", io::Residency::copied); }),
            "[checkpoint] " + (dir / "none.safetensors") + ": no such file or folder");
  dir.write("bad.safetensors", "xx");
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(dir / "bad.safetensors", io::Residency::copied); }).find("[safetensors] " + (dir / "bad.safetensors")),
            std::string::npos);
}

// ---- HF folders and sharded checkpoints ----

TEST(IoSafetensors, HuggingFaceFolderReadsConfigAndWeights) {
  TempDir dir("hf");
  dir.write("config.json", R"({"model_type":"gpt2","n_embd":8,"n_layer":2,"n_head":2,"n_positions":16,
    "vocab_size":11,"layer_norm_epsilon":1e-05,"activation_function":"gelu_new","task_specific_params":{"a":{"b":1}},
    "architectures":["GPT2LMHeadModel"],"bos_token_id":10,"scale_attn_weights":true,"n_inner":null})");
  dir.write("model.safetensors", safetensors({{"wte.weight", "F32", {11, 8}, raw(iotaFloats(88))},
                                               {"wpe.weight", "F32", {16, 8}, raw(iotaFloats(128))}},
                                              R"({"format":"pt"})"));
  io::Checkpoint ckpt = io::Checkpoint::open(dir.path.string());
  EXPECT_EQ(ckpt.folder(), dir.path.string());
  EXPECT_EQ(ckpt.meta("n_embd")->asInt(), 8);
  EXPECT_EQ(ckpt.meta("layer_norm_epsilon")->asFloat(), 1e-5);
  EXPECT_EQ(ckpt.meta("architectures")->asStrings(), std::vector<std::string>{"GPT2LMHeadModel"});
  EXPECT_TRUE(ckpt.meta("scale_attn_weights")->asBool());
  EXPECT_EQ(ckpt.meta("n_inner")->kind(), io::MetaValue::Kind::null);
  EXPECT_EQ(ckpt.meta("task_specific_params")->asString(), R"({"a":{"b":1}})");
  EXPECT_EQ(ckpt.meta("format"), nullptr);  // the folder's metadata is config.json
  EXPECT_EQ(errorOf([&] { ckpt.meta("n_embd")->asString(); }), "[config] \"n_embd\" is an integer (8), not a string");
  const io::ModelConfig c = io::readModelConfig(ckpt);
  EXPECT_EQ(c.architecture, "gpt2");
  EXPECT_EQ(c.nEmbd, 8);
  EXPECT_EQ(c.nLayer, 2);
  EXPECT_EQ(c.nHead, 2);
  EXPECT_EQ(c.nHeadKv, 2);
  EXPECT_EQ(c.nFf, 32);
  EXPECT_EQ(c.context, 16);
  EXPECT_EQ(c.vocab, 11);
  EXPECT_TRUE(c.tiedEmbeddings);
  radix::testing::expectClose(ckpt.load(cpu(), "wpe.weight"), iotaFloats(128), 0);
}

TEST(IoSafetensors, LlamaConfig) {
  TempDir dir("llama");
  dir.write("config.json", R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":3,"num_attention_heads":4,
    "num_key_value_heads":2,"intermediate_size":172,"max_position_embeddings":128,"rope_theta":500000.0,
    "rms_norm_eps":1e-06,"vocab_size":100,"tie_word_embeddings":false})");
  dir.write("model.safetensors", safetensors({{"model.embed_tokens.weight", "BF16", {2}, std::string(4, '\0')}}));
  const io::ModelConfig c = io::readModelConfig(io::Checkpoint::open(dir.path.string()));
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.nEmbd, 64);
  EXPECT_EQ(c.nLayer, 3);
  EXPECT_EQ(c.nHead, 4);
  EXPECT_EQ(c.nHeadKv, 2);
  EXPECT_EQ(c.nFf, 172);
  EXPECT_EQ(c.context, 128);
  EXPECT_EQ(c.ropeFreqBase, 500000.0);
  EXPECT_EQ(c.normEps, 1e-6);
  EXPECT_EQ(c.vocab, 100);
  EXPECT_FALSE(c.tiedEmbeddings);
  TempDir bad("llama-bad");
  bad.write("config.json", R"({"model_type":"llama","hidden_size":64})");
  bad.write("model.safetensors", safetensors({}));
  EXPECT_EQ(errorOf([&] { io::readModelConfig(io::Checkpoint::open(bad.path.string())); }),
            "[config] " + bad.path.string() + ": missing key \"num_hidden_layers\"");
}

TEST(IoSafetensors, FolderErrors) {
  TempDir dir("pt");
  dir.write("config.json", "{}");
  dir.write("pytorch_model.bin", "PK");
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(dir.path.string()); }).find("only safetensors weights are supported"),
            std::string::npos);
  TempDir empty("empty");
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(empty.path.string()); }).find("no weights found"), std::string::npos);
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(empty / "nothing.safetensors"); }),
            "[checkpoint] " + (empty / "nothing.safetensors") + ": no such file or folder");
  TempDir badConfig("badconfig");
  badConfig.write("config.json", "{\"n_embd\": 8,");
  badConfig.write("model.safetensors", safetensors({}));
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(badConfig.path.string()); }).rfind("[config] " + (badConfig / "config.json") + ": offset", 0), 0u);
}

TEST(IoSafetensors, ShardedCheckpoint) {
  TempDir dir("shards");
  dir.write("model-00001-of-00002.safetensors",
            safetensors({{"a", "F32", {2}, raw(std::vector<float>{1, 2})}, {"b", "F16", {1}, std::string(2, '\0')}}));
  dir.write("model-00002-of-00002.safetensors", safetensors({{"c", "I64", {3}, raw(std::vector<int64_t>{7, 8, 9})}}));
  const std::string index = R"({"metadata":{"total_size":30},"weight_map":{"a":"model-00001-of-00002.safetensors",
    "b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})";
  dir.write("model.safetensors.index.json", index);
  dir.write("config.json", R"({"hidden_size": 4})");
  for (const std::string& path : {dir.path.string(), dir / "model.safetensors.index.json"}) {
    io::Checkpoint ckpt = io::Checkpoint::open(path);
    ASSERT_EQ(ckpt.tensors().size(), 3u);
    EXPECT_EQ(ckpt.find("c")->file, dir / "model-00002-of-00002.safetensors");
    EXPECT_EQ(ckpt.load(cpu(), "c").toVector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
    EXPECT_EQ(ckpt.load(cpu(), "a").toVector<float>(), (std::vector<float>{1, 2}));
  }
  EXPECT_EQ(io::Checkpoint::open(dir.path.string()).meta("hidden_size")->asInt(), 4);

  // A tensor in two shards; weight_map disagreeing with the shards; a shard outside the folder.
  TempDir two("twoshards");
  two.write("s1.safetensors", safetensors({{"a", "F32", {1}, std::string(4, '\0')}}));
  two.write("s2.safetensors", safetensors({{"a", "F32", {1}, std::string(4, '\0')}}));
  two.write("i.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(two / "i.index.json"); }),
            "[safetensors] " + (two / "s2.safetensors") + ": tensor \"a\" is also stored in " + (two / "s1.safetensors"));
  two.write("j.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}})");
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(two / "j.index.json"); }),
            "[safetensors] " + (two / "j.index.json") + ": \"weight_map\": tensor \"b\" is not in " + (two / "s1.safetensors"));
  two.write("k.index.json", R"({"weight_map":{"a":"../s1.safetensors"}})");
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(two / "k.index.json"); }).find("not a file name inside the checkpoint's folder"),
            std::string::npos);
  two.write("l.index.json", R"({"weight_map":{}})");
  two.write("m.index.json", R"({"weight_map":{"a":"missing.safetensors"}})");
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(two / "m.index.json"); }).rfind("[safetensors] " + (two / "missing.safetensors") + ": cannot open", 0), 0u);
  two.write("n.index.json", R"({"weights":{}})");
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(two / "n.index.json"); }).find("\"weight_map\" missing"), std::string::npos);
}

// ---- loadInto ----

struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
};
struct Norm {
  Tensor weight;
  Tensor bias;
};
struct Block {
  Norm ln_1;
  Linear c_attn;
};
struct Embedding {
  Tensor weight;
};
struct TinyModel {
  Embedding wte;
  std::vector<Block> h;
  Norm ln_f;
};

TinyModel tinyModel(int layers, DType dtype = DType::f32) {
  TinyModel m;
  m.wte.weight = Tensor(Shape({10, 4}, dtype).withTags({"voc", "d"}));
  for (int i = 0; i < layers; ++i) {
    Block b;
    b.ln_1 = {Tensor(Shape({4}, dtype).withTags({"d"})), Tensor(Shape({4}, dtype).withTags({"d"}))};
    b.c_attn.weight = Tensor(Shape({4, 12}, dtype).withTags({"in", "out"}));  // Conv1D [in,out]
    if (i == 0) b.c_attn.bias = Tensor(Shape({12}, dtype).withTags({"out"}));
    m.h.push_back(b);
  }
  m.ln_f = {Tensor(Shape({4}, dtype)), Tensor(Shape({4}, dtype))};
  return m;
}

std::vector<StTensor> tinyTensors(const std::string& prefix) {
  auto f = [](int64_t n, float s) { return raw(iotaFloats(static_cast<size_t>(n), s)); };
  return {{prefix + "wte.weight", "F32", {10, 4}, f(40, 0.1f)},   {prefix + "h.0.ln_1.weight", "F32", {4}, f(4, 1)},
          {prefix + "h.0.ln_1.bias", "F32", {4}, f(4, 2)},         {prefix + "h.0.c_attn.weight", "F32", {4, 12}, f(48, 3)},
          {prefix + "h.0.c_attn.bias", "F32", {12}, f(12, 4)},     {prefix + "h.1.ln_1.weight", "F32", {4}, f(4, 5)},
          {prefix + "h.1.ln_1.bias", "F32", {4}, f(4, 6)},         {prefix + "h.1.c_attn.weight", "F32", {4, 12}, f(48, 7)},
          {prefix + "ln_f.weight", "F32", {4}, f(4, 8)},           {prefix + "ln_f.bias", "F32", {4}, f(4, 9)},
          {prefix + "h.0.attn.bias", "F32", {1}, f(1, 1)},         {prefix + "h.1.attn.masked_bias", "F32", {1}, f(1, 1)}};
}

TEST(IoLoadInto, BindsLeavesByPathKeepingTags) {
  for (const std::string prefix : {"", "transformer."}) {
    SCOPED_TRACE(prefix);
    const std::string file = safetensors(tinyTensors(prefix));
    io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "tiny");
    TinyModel m = tinyModel(2);
    io::LoadSpec spec;
    spec.ignoreExtra = {"attn\\.bias$", "attn\\.masked_bias$"};
    io::loadInto(cpu(), m, ckpt, spec);
    EXPECT_EQ(m.h[0].c_attn.weight.shape(), Shape({4, 12}, DType::f32).withTags({"in", "out"}));
    EXPECT_TRUE(inside(m.h[0].c_attn.weight.bufferAddress(), span(file)));  // zero-copy
    EXPECT_EQ(m.h[0].c_attn.weight.bufferAddress(), ckpt.bytes(prefix + "h.0.c_attn.weight").data());
    radix::testing::expectClose(m.h[1].c_attn.weight, iotaFloats(48, 7), 0);
    radix::testing::expectClose(*m.h[0].c_attn.bias, iotaFloats(12, 4), 0);
    EXPECT_FALSE(m.h[1].c_attn.bias.has_value());
    radix::testing::expectClose(m.ln_f.bias, iotaFloats(4, 9), 0);
    EXPECT_EQ(m.wte.weight.shape().str(), "{voc=10,d=4}:f32");
    // Converted on the way in.
    TinyModel half = tinyModel(2, DType::bf16);
    spec.dtype = DType::bf16;
    io::loadInto(cpu(), half, ckpt, spec);
    EXPECT_EQ(half.wte.weight.shape().str(), "{voc=10,d=4}:bf16");
    radix::testing::expectClose(half.wte.weight, iotaFloats(40, 0.1f), 1e-2);
    radix::testing::expectClose(half.h[1].c_attn.weight, iotaFloats(48, 7), 1e-2);
    // The converted copies share one chunk on 2 MiB pages (io.h's WeightArena), 64-byte aligned.
    const auto at = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.bufferAddress()); };
    EXPECT_EQ(at(half.wte.weight) >> 21, at(half.ln_f.bias) >> 21);
    EXPECT_EQ(at(half.h[1].c_attn.weight) % 64, 0u);
    if (!transparentHugePagesOff()) EXPECT_EQ(hugePageEligible(half.wte.weight.bufferAddress()), std::optional<bool>(true));
  }
}

TEST(IoLoadInto, ListsEveryProblemAtOnce) {
  std::vector<StTensor> tensors = tinyTensors("");
  tensors[3].dims = {12, 4};                                   // h.0.c_attn.weight transposed
  tensors.erase(tensors.begin() + 9);                          // ln_f.bias missing
  tensors.push_back({"lm_head.weight", "F32", {2}, raw(std::vector<float>{1, 2})});  // extra
  const std::string file = safetensors(tensors);
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "tiny.safetensors");
  TinyModel m = tinyModel(2);
  io::LoadSpec spec;
  spec.ignoreExtra = {"attn\\.bias$", "attn\\.masked_bias$"};
  const int line = __LINE__ + 1;
  const std::string e = errorOf([&] { io::loadInto(cpu(), m, ckpt, spec); });
  EXPECT_EQ(e.substr(0, e.rfind(" (at ")),
            "[load] 3 problems mapping tiny.safetensors onto the model:\n"
            "  shape: \"h.0.c_attn.weight\" for h[0].c_attn.weight: the model expects {4,12} ({in=4,out=12}:f32), "
            "the checkpoint has {12,4} F32\n"
            "  missing: \"ln_f.bias\" for ln_f.bias {4}:f32 is not in the checkpoint\n"
            "  extra: \"lm_head.weight\" {2} F32 is not claimed by the model");
  EXPECT_TRUE(e.ends_with("io_safetensors_test.cpp:" + std::to_string(line) + ")")) << e;  // the caller's line
  EXPECT_FALSE(m.wte.weight.isBound());  // nothing bound on error
  spec.ignoreExtra = {"("};
  EXPECT_NE(errorOf([&] { io::loadInto(cpu(), m, ckpt, spec); }).find("[load] LoadSpec::ignoreExtra: invalid regex"),
            std::string::npos);
}

TEST(IoLoadInto, RenameAndDefaultNames) {
  EXPECT_EQ(io::defaultStoredName("h[3].attn.c_attn.weight"), "h.3.attn.c_attn.weight");
  EXPECT_EQ(io::defaultStoredName("layers[1][2].w"), "layers.1.2.w");
  EXPECT_EQ(io::defaultStoredName("w"), "w");
  struct Llama {
    std::vector<Tensor> q;
  } m{{Tensor(Shape({2}, DType::f32)), Tensor(Shape({2}, DType::f32))}};
  const std::string file = safetensors({{"blk.0.attn_q.weight", "F32", {2}, raw(std::vector<float>{1, 2})},
                                        {"blk.1.attn_q.weight", "F32", {2}, raw(std::vector<float>{3, 4})}});
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "q");
  io::LoadSpec spec;
  spec.rename = [](std::string_view path) {  // "q[1]" -> "blk.1.attn_q.weight"
    return "blk." + std::string(path.substr(2, path.size() - 3)) + ".attn_q.weight";
  };
  io::loadInto(cpu(), m, ckpt, spec);
  radix::testing::expectClose(m.q[1], {3, 4}, 0);
}

TEST(IoLoadInto, ProgressBarWhenForced) {
  const std::string file = safetensors(tinyTensors(""));
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "tiny");
  TinyModel m = tinyModel(2);
  io::LoadSpec spec;
  spec.ignoreExtra = {"attn\\.bias$", "attn\\.masked_bias$"};
  ckpt.setProgress(io::Progress::on);
  testing::internal::CaptureStderr();
  io::loadInto(cpu(), m, ckpt, spec);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("[load] [########################] 0.0/0.0 MiB"), std::string::npos) << err;
  EXPECT_NE(err.find("MiB/s  done in"), std::string::npos) << err;
  ckpt.setProgress(io::Progress::automatic);  // stderr is not a terminal here, and the file is small
  testing::internal::CaptureStderr();
  io::loadInto(cpu(), m, ckpt, spec);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ::setenv("RADIX_PROGRESS", "on", 1);  // forced by the environment
  testing::internal::CaptureStderr();
  io::loadInto(cpu(), m, ckpt, spec);
  ::unsetenv("RADIX_PROGRESS");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("done in"), std::string::npos);
}

// ---- corrupt files: each a clear error naming the field ----

struct Corrupt {
  std::string label;
  std::string file;
  std::string expected;  // a substring of the message, after "[safetensors] bad: "
};

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

TEST(IoSafetensors, CorruptFilesGiveClearErrors) {
  const std::string d8(8, 'x');
  const std::vector<Corrupt> rows = {
      {"empty", "", "offset 0: header size: the file has 0 bytes, a safetensors file needs at least 8"},
      {"short", "abc", "offset 0: header size: the file has 3 bytes"},
      {"huge header size", le64(uint64_t{1} << 62) + "{}", "offset 0: header size 4611686018427387904 exceeds the format's limit of 100000000 bytes"},
      {"truncated header", le64(100) + "{\"a\":1}", "offset 0: header size 100 runs past the end of the file (15 bytes)"},
      {"not an object", stFile("[1,2]", ""), "offset 8: header: not a JSON object (it must start with '{')"},
      {"empty header", le64(0), "offset 8: header: not a JSON object"},
      {"bad JSON", stFile("{\"a\":", ""), "header: invalid JSON"},
      {"duplicate key", stFile("{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("a", "F32", "[1]", "[4,8]") + "}", d8),
       "offset 8: header: duplicate key \"a\""},
      {"entry not object", stFile("{\"a\":3}", ""), "tensor \"a\": not a JSON object {dtype, shape, data_offsets}"},
      {"no dtype", stFile("{\"a\":{\"shape\":[],\"data_offsets\":[0,0]}}", ""), "tensor \"a\": \"dtype\" missing or not a string"},
      {"bad dtype", stFile("{" + entry("a", "F7", "[1]", "[0,4]") + "}", "xxxx"), "tensor \"a\": unknown dtype \"F7\""},
      {"shape not array", stFile("{" + entry("a", "F32", "4", "[0,4]") + "}", "xxxx"), "tensor \"a\": \"shape\" missing or not an array"},
      {"negative dim", stFile("{" + entry("a", "F32", "[-1]", "[0,4]") + "}", "xxxx"), "tensor \"a\": \"shape\" holds -1, not a non-negative integer"},
      {"float dim", stFile("{" + entry("a", "F32", "[1.5]", "[0,4]") + "}", "xxxx"), "\"shape\" holds 1.5"},
      {"shape overflow", stFile("{" + entry("a", "F32", "[4294967296,4294967296]", "[0,4]") + "}", "xxxx"),
       "tensor \"a\": \"shape\" [4294967296,4294967296] of F32 overflows 64 bits"},
      {"offsets length", stFile("{" + entry("a", "F32", "[1]", "[0]") + "}", "xxxx"), "\"data_offsets\" missing or not an array [begin, end]"},
      {"offsets negative", stFile("{" + entry("a", "F32", "[1]", "[-4,0]") + "}", "xxxx"), "\"data_offsets\" holds -4"},
      {"end before begin", stFile("{" + entry("a", "F32", "[0]", "[4,0]") + "}", "xxxx"), "tensor \"a\": \"data_offsets\" [4, 0] end before begin"},
      {"out of bounds", stFile("{" + entry("a", "F32", "[4]", "[0,16]") + "}", d8),
       "tensor \"a\": \"data_offsets\" [0, 16] run past the data section (8 bytes)"},
      {"huge offsets", stFile("{" + entry("a", "U8", "[1]", "[18446744073709551614,18446744073709551615]") + "}", d8),
       "run past the data section"},
      {"size mismatch", stFile("{" + entry("a", "F32", "[3]", "[0,8]") + "}", d8),
       "tensor \"a\": \"data_offsets\" [0, 8] hold 8 bytes, but shape [3] of F32 needs 12"},
      {"overlap", stFile("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[1]", "[4,8]") + "}", d8),
       "tensor \"b\": \"data_offsets\" [4, 8] overlap tensor \"a\" [0, 8]"},
      {"hole", stFile("{" + entry("a", "F32", "[1]", "[4,8]") + "}", d8), "tensor \"a\": \"data_offsets\" [4, 8] leave a hole of 4 bytes"},
      {"trailing bytes", stFile("{" + entry("a", "F32", "[1]", "[0,4]") + "}", d8),
       "data section: 4 bytes after the last tensor (the format forbids trailing bytes)"},
      {"metadata not object", stFile("{\"__metadata__\":[]}", ""), "\"__metadata__\": not a JSON object of strings"},
      {"metadata not string", stFile("{\"__metadata__\":{\"k\":1}}", ""), "\"__metadata__\": value of \"k\" is not a string"},
      {"control chars in name", stFile("{\"a\\u0001\":3}", ""), "tensor \"a\\x01\": not a JSON object"},
      {"invalid UTF-8", stFile("{\"\xff\":3}", ""), "header: invalid JSON"},
      {"deep nesting", stFile("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}", ""), "tensor \"a\": not a JSON object"},
  };
  for (const Corrupt& row : rows) {
    SCOPED_TRACE(row.label);
    const std::string e = errorOf([&] { io::Checkpoint::fromSafetensorsBytes(span(row.file), "bad"); });
    EXPECT_EQ(e.rfind("[safetensors] bad: ", 0), 0u) << e;
    EXPECT_NE(e.find(row.expected), std::string::npos) << e;
  }
  // A file on disk: the error names its path.
  TempDir dir("corrupt");
  const std::string path = dir.write("x.safetensors", rows[2].file);
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(path); }).rfind("[safetensors] " + path + ": offset 0: header size", 0), 0u);
}

TEST(IoSafetensors, EmptyAndZeroSizedTensorsAreValid) {
  io::Checkpoint none = io::Checkpoint::fromSafetensorsBytes(span(stFile("{}", "")), "none");
  EXPECT_TRUE(none.tensors().empty());
  const std::string file = safetensors({{"z", "F32", {0, 3}, ""}, {"s", "F32", {}, raw(std::vector<float>{5})}, {"y", "F16", {0}, ""}});
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes(span(file), "zero");
  EXPECT_EQ(ckpt.load(cpu(), "z").shape(), Shape({0, 3}, DType::f32));
  radix::testing::expectClose(ckpt.load(cpu(), "s"), {5}, 0);
  EXPECT_EQ(ckpt.tensors().size(), 3u);
}

TEST(IoSafetensors, MisalignedDataIsCopied) {
  // A header size that is not a multiple of 8 puts the f32 data at an odd address: loaded by copy.
  std::string header = "{" + entry("a", "F32", "[2]", "[0,8]") + "}";
  while ((8 + header.size()) % 4 != 1) header += ' ';
  const std::string file = stFile(header, raw(std::vector<float>{1, 2}), false);
  std::string arena(file.size() + 64, '\0');
  char* base = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64);
  std::memcpy(base, file.data(), file.size());
  io::Checkpoint ckpt = io::Checkpoint::fromSafetensorsBytes({reinterpret_cast<const uint8_t*>(base), file.size()}, "odd");
  ASSERT_EQ(ckpt.find("a")->offset % 4, 1u);
  Tensor a = ckpt.load(cpu(), "a");
  EXPECT_FALSE(inside(a.bufferAddress(), ckpt.bytes("a")));
  radix::testing::expectClose(a, {1, 2}, 0);
}

}  // namespace

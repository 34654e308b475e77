// GGUF loading: files written by tools/gguf_writer.py (v2 and v3, every metadata type, nested
// arrays, f32/f16/bf16 and every ggml type's block layout), llama/gpt2 hyperparameters, and a
// table of corrupt files built byte by byte.
#include <gtest/gtest.h>

#include <radix/io.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io_testing.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
using radix::testing::errorOf;
using namespace radix::iotest;
namespace io = radix::io;

/// Runs a Python snippet with tools/ on the path (gguf_writer imported as *); returns its exit code.
int python(const TempDir& dir, const std::string& body) {
  const std::string script = dir.write("gen.py", "import sys\nsys.path.insert(0, '" RADIX_SOURCE_DIR "/tools')\n"
                                                 "from gguf_writer import *\nimport numpy as np\n" + body);
  return std::system(("/usr/bin/python3 " + script + " > " + (dir / "gen.log") + " 2>&1").c_str());
}

TEST(IoGguf, PythonWriterRoundTripEveryMetadataType) {
  for (auto [version, alignment] : {std::pair{2, 32}, std::pair{3, 64}, std::pair{3, 8}}) {
      SCOPED_TRACE("v" + std::to_string(version) + " alignment " + std::to_string(alignment));
      TempDir dir("gguf");
      const std::string path = dir / "m.gguf";
      ASSERT_EQ(python(dir, "w = GGUFWriter(version=" + std::to_string(version) + ", alignment=" + std::to_string(alignment) + R"()
w.add("general.architecture", "llama")
w.add("u8", Value("UINT8", 255)); w.add("i8", Value("INT8", -128)); w.add("u16", Value("UINT16", 65535))
w.add("i16", Value("INT16", -32768)); w.add("u32", Value("UINT32", 4294967295)); w.add("i32", Value("INT32", -5))
w.add("f32", Value("FLOAT32", 0.25)); w.add("b", True); w.add("s", "héllo\x00x")
w.add("u64", Value("UINT64", 2**64 - 1)); w.add("i64", Value("INT64", -2**63)); w.add("f64", Value("FLOAT64", 1e-300))
w.add("strings", ["<unk>", "a", ""]); w.add("floats", Value("ARRAY", [0.5, -1.5], elem="FLOAT32"))
w.add("ints", Value("ARRAY", [1, -2, 3], elem="INT64")); w.add("empty", Value("ARRAY", [], elem="STRING"))
w.add("nested", Value("ARRAY", [[1, 2], [3]], elem="ARRAY"))
w.add("bools", [True, False])
x = (np.arange(24, dtype=np.float32) * 0.25 - 2).reshape(2, 3, 4)
w.add_tensor("f32", x, "F32"); w.add_tensor("f16", x[0], "F16"); w.add_tensor("bf16", x.reshape(24), "BF16")
w.add_tensor("i32", np.array([[7, -8]]), "I32")
w.add_tensor_bytes("q8", [3, 64], "Q8_0", bytes(3 * 2 * 34))
w.write(")" + path + "\")\n"),
                0)
          << readFile(dir / "gen.log");
      const std::string file = readFile(path);
      io::Checkpoint ckpt = io::Checkpoint::open(path);
      EXPECT_EQ(ckpt.format(), "gguf");
      EXPECT_EQ(ckpt.folder(), dir.path.string());
      auto m = [&](const char* key) -> const io::MetaValue& {
        const io::MetaValue* v = ckpt.meta(key);
        if (!v) throw std::runtime_error(std::string("no key ") + key);
        return *v;
      };
      EXPECT_EQ(m("general.architecture").asString(), "llama");
      EXPECT_EQ(m("u8").asInt(), 255);
      EXPECT_EQ(m("i8").asInt(), -128);
      EXPECT_EQ(m("u16").asInt(), 65535);
      EXPECT_EQ(m("i16").asInt(), -32768);
      EXPECT_EQ(m("u32").asInt(), 4294967295);
      EXPECT_EQ(m("i32").asInt(), -5);
      EXPECT_EQ(m("f32").asFloat(), 0.25);
      EXPECT_EQ(m("f32").kind(), io::MetaValue::Kind::real);
      EXPECT_TRUE(m("b").asBool());
      EXPECT_EQ(m("s").asString(), std::string("h\xc3\xa9llo\0x", 8));
      EXPECT_EQ(m("u64").asFloat(), 18446744073709551615.0);
      EXPECT_EQ(errorOf([&] { m("u64").asInt(); }), "[gguf] \"u64\" is an integer (18446744073709551615), not an integer (int64)");
      EXPECT_EQ(m("i64").asInt(), INT64_MIN);
      EXPECT_EQ(m("f64").asFloat(), 1e-300);
      EXPECT_EQ(m("strings").asStrings(), (std::vector<std::string>{"<unk>", "a", ""}));
      EXPECT_EQ(m("floats").asFloats(), (std::vector<double>{0.5, -1.5}));
      EXPECT_EQ(m("ints").asInts(), (std::vector<int64_t>{1, -2, 3}));
      EXPECT_TRUE(m("empty").asArray().empty());
      ASSERT_EQ(m("nested").asArray().size(), 2u);
      EXPECT_EQ(m("nested").asArray()[1].asInts(), (std::vector<int64_t>{3}));
      EXPECT_EQ(m("bools").asArray()[1].asBool(), false);
      EXPECT_EQ(errorOf([&] { m("strings").asFloats(); }),
                "[gguf] \"strings\" is an array ([\"<unk>\", \"a\", \"\"]), not an array of numbers");
      if (alignment != 32) EXPECT_EQ(m("general.alignment").asInt(), alignment);

      ASSERT_EQ(ckpt.tensors().size(), 5u);
      const io::TensorInfo* f32 = ckpt.find("f32");
      ASSERT_NE(f32, nullptr);
      EXPECT_EQ(f32->dims, (std::vector<int64_t>{2, 3, 4}));  // ne = {4,3,2} reversed
      EXPECT_EQ(f32->type, "F32");
      EXPECT_EQ(f32->bytes, 96u);
      for (const io::TensorInfo& t : ckpt.tensors()) EXPECT_EQ(t.offset % alignment, 0u) << t.name;
      std::vector<float> x(24);
      for (int i = 0; i < 24; ++i) x[i] = i * 0.25f - 2;
      Tensor tf = ckpt.load(cpu(), "f32");
      EXPECT_EQ(tf.shape(), Shape({2, 3, 4}, DType::f32));
      EXPECT_EQ(tf.bufferAddress(), ckpt.bytes("f32").data());  // zero-copy
      radix::testing::expectClose(tf, x, 0);
      Tensor th = ckpt.load(cpu(), "f16");
      EXPECT_EQ(th.shape(), Shape({3, 4}, DType::f16));
      radix::testing::expectClose(th, std::vector<float>(x.begin(), x.begin() + 12), 0);
      radix::testing::expectClose(ckpt.load(cpu(), "bf16", DType::f32), x, 0);
      EXPECT_EQ(ckpt.load(cpu(), "i32").toVector<int32_t>(), (std::vector<int32_t>{7, -8}));
      const io::TensorInfo* q8 = ckpt.find("q8");
      EXPECT_EQ(q8->type, "Q8_0");
      EXPECT_FALSE(q8->dtype.has_value());
      EXPECT_EQ(q8->dims, (std::vector<int64_t>{3, 64}));
      EXPECT_EQ(q8->bytes, 3u * 2 * 34);
      EXPECT_EQ(ckpt.bytes("q8").size(), 204u);
      EXPECT_EQ(q8->quant, radix::QuantType::q8_0);
      const Tensor blocks = ckpt.load(cpu(), "q8");  // the packed blocks, zero-copy
      EXPECT_EQ(blocks.shape(), Shape({3, 68}, DType::u8));
      EXPECT_EQ(blocks.bufferAddress(), ckpt.bytes("q8").data());
      radix::testing::expectClose(ckpt.load(cpu(), "q8", DType::f32), std::vector<float>(192, 0.f), 0);  // zero blocks
      EXPECT_NE(errorOf([&] { ckpt.load(cpu(), "q8", DType::i32); }).find("cannot be loaded as i32"), std::string::npos);
      // In memory, the same.
      io::Checkpoint mem = io::Checkpoint::fromGgufBytes(span(file), "m.gguf");
      EXPECT_EQ(mem.tensors().size(), 5u);
      radix::testing::expectClose(mem.load(cpu(), "f32"), x, 0);
    }
}

TEST(IoGguf, EveryGgmlTypeLayoutMatchesTheWriter) {
  // The writer's table and the reader's agree on every type: one tensor of 2 rows of 512 each.
  TempDir dir("types");
  std::string body = "w = GGUFWriter()\n";
  for (const io::GgmlType& t : io::kGgmlTypes) {
    const uint64_t bytes = 2 * 512 / t.block * t.blockBytes;
    body += "w.add_tensor_bytes('" + std::string(t.name) + "', [2, 512], '" + std::string(t.name) + "', bytes(" +
            std::to_string(bytes) + "))\n";
  }
  body += "w.write('" + (dir / "t.gguf") + "')\n";
  ASSERT_EQ(python(dir, body), 0) << readFile(dir / "gen.log");
  io::Checkpoint ckpt = io::Checkpoint::open(dir / "t.gguf");
  ASSERT_EQ(ckpt.tensors().size(), std::size(io::kGgmlTypes));
  for (const io::GgmlType& t : io::kGgmlTypes) {
    const io::TensorInfo* info = ckpt.find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->type, t.name);
    EXPECT_EQ(info->bytes, 2 * 512 / t.block * t.blockBytes) << t.name;
    EXPECT_EQ(info->dtype, t.dtype) << t.name;
  }
  EXPECT_EQ(io::ggmlType("Q4_K")->blockBytes, 144u);
  EXPECT_EQ(io::ggmlType(8)->name, "Q8_0");
  EXPECT_EQ(io::ggmlType(4), nullptr);  // Q4_2, removed
}

TEST(IoGguf, ModelConfigOfLlamaAndGpt2) {
  TempDir dir("cfg");
  ASSERT_EQ(python(dir, R"(
w = GGUFWriter()
w.add("general.architecture", "llama")
w.add("llama.embedding_length", Value("UINT32", 64)); w.add("llama.block_count", Value("UINT32", 2))
w.add("llama.attention.head_count", Value("UINT32", 4)); w.add("llama.attention.head_count_kv", Value("UINT32", 2))
w.add("llama.feed_forward_length", Value("UINT32", 172)); w.add("llama.context_length", Value("UINT32", 256))
w.add("llama.rope.freq_base", 500000.0); w.add("llama.attention.layer_norm_rms_epsilon", 1e-6)
w.add("tokenizer.ggml.tokens", ["a", "b", "c"])
w.add_tensor("token_embd.weight", np.zeros((3, 64)), "F16")
w.write(")" + (dir / "llama.gguf") + R"(")
g = GGUFWriter(version=2)
g.add("general.architecture", "gpt2")
g.add("gpt2.embedding_length", Value("UINT32", 8)); g.add("gpt2.block_count", Value("UINT32", 1))
g.add("gpt2.attention.head_count", Value("UINT32", 2)); g.add("gpt2.context_length", Value("UINT32", 16))
g.add("gpt2.feed_forward_length", Value("UINT32", 32)); g.add("gpt2.attention.layer_norm_epsilon", 1e-5)
g.add_tensor("token_embd.weight", np.zeros((11, 8)), "F32"); g.add_tensor("output.weight", np.zeros((11, 8)), "F32")
g.write(")" + (dir / "gpt2.gguf") + "\")\n"),
            0)
      << readFile(dir / "gen.log");
  const io::ModelConfig l = io::readModelConfig(io::Checkpoint::open(dir / "llama.gguf"));
  EXPECT_EQ(l.architecture, "llama");
  EXPECT_EQ(l.nEmbd, 64);
  EXPECT_EQ(l.nLayer, 2);
  EXPECT_EQ(l.nHead, 4);
  EXPECT_EQ(l.nHeadKv, 2);
  EXPECT_EQ(l.nFf, 172);
  EXPECT_EQ(l.context, 256);
  EXPECT_EQ(l.ropeFreqBase, 500000.0);
  EXPECT_NEAR(l.normEps, 1e-6, 1e-12);  // stored as FLOAT32
  EXPECT_EQ(l.vocab, 3);
  EXPECT_TRUE(l.tiedEmbeddings);
  const io::ModelConfig g = io::readModelConfig(io::Checkpoint::open(dir / "gpt2.gguf"));
  EXPECT_EQ(g.architecture, "gpt2");
  EXPECT_EQ(g.nEmbd, 8);
  EXPECT_EQ(g.nHeadKv, 2);
  EXPECT_EQ(g.nFf, 32);
  EXPECT_EQ(g.vocab, 11);  // from token_embd.weight when there is no tokenizer
  EXPECT_FALSE(g.tiedEmbeddings);
  const std::string noArch = Gguf().header(0, 0).out;
  EXPECT_EQ(errorOf([&] { io::readModelConfig(io::Checkpoint::fromGgufBytes(span(noArch), "x/y.gguf")); }),
            "[config] x: missing key \"general.architecture\"");
}

// ---- corrupt files ----

struct Corrupt {
  std::string label;
  std::string file;
  std::string expected;  // a substring of the message, after "[gguf] bad.gguf: "
};

TEST(IoGguf, CorruptFilesGiveClearErrors) {
  const std::string data(32, '\x11');
  auto oneTensor = [&](const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    return Gguf().header(1, 0).tensor("w", ne, type, offset).align().raw(data).out;
  };
  const std::vector<Corrupt> rows = {
      {"empty", "", "offset 0: magic: expected \"GGUF\", found \"\""},
      {"bad magic", "GGUX\3\0\0\0", "offset 0: magic: expected \"GGUF\", found \"GGUX\""},
      {"no version", "GGUF\3", "offset 4: version: needs 4 bytes, 1 left in the file (truncated?)"},
      {"version 1", Gguf().raw("GGUF").u32(1).u32(0).u32(0).out, "offset 4: version 1 is not supported"},
      {"version 4", Gguf().header(0, 0, 4).out, "offset 4: version 4 is not supported (2 or 3)"},
      {"big-endian", Gguf().raw("GGUF").raw(std::string("\0\0\0\3", 4)).out, "offset 4: version: a big-endian GGUF file"},
      {"truncated counts", Gguf().raw("GGUF").u32(3).u32(0).out, "offset 8: tensor_count: needs 8 bytes, 4 left"},
      {"huge tensor count", Gguf().header(uint64_t{1} << 60, 0).out,
       "offset 8: tensor_count 1152921504606846976 cannot fit in the 8 bytes left (each takes at least 24)"},
      {"huge kv count", Gguf().header(0, ~uint64_t{0}).out, "offset 16: metadata_kv_count 18446744073709551615 cannot fit"},
      {"truncated key", Gguf().header(0, 1).u64(100).raw(std::string(20, 'a')).out,
       "offset 24: metadata key 0: string length 100 runs past the end of the file (20 bytes left)"},
      {"huge key length", Gguf().header(0, 1).u64(~uint64_t{0}).raw(std::string(20, 'a')).out,
       "metadata key 0: string length 18446744073709551615 runs past"},
      {"unknown value type", Gguf().header(0, 1).str("k").u32(13).u32(0).out, "offset 33: metadata \"k\": unknown value type 13"},
      {"truncated string value", Gguf().header(0, 1).str("k").u32(8).u64(10).raw("short").out,
       "offset 37: metadata \"k\": string length 10 runs past the end of the file (5 bytes left)"},
      {"truncated u32", Gguf().header(0, 1).str("k").u32(4).raw("ab").out, "offset 37: metadata \"k\": needs 4 bytes, 2 left"},
      {"bad bool", Gguf().header(0, 1).str("k").u32(7).raw("\x02").out, "metadata \"k\": BOOL value 2 is neither 0 nor 1"},
      {"huge array", Gguf().header(0, 1).str("k").u32(9).u32(4).u64(uint64_t{1} << 62).u32(1).out,
       "offset 41: metadata \"k\" (array count) 4611686018427387904 cannot fit in the 4 bytes left (each takes at least 4)"},
      {"bad array type", Gguf().header(0, 1).str("k").u32(9).u32(99).u64(0).out, "metadata \"k\": unknown array element type 99"},
      {"truncated array item", Gguf().header(0, 1).str("k").u32(9).u32(8).u64(2).str("a").u64(5).out,
       "metadata \"k\"[1]: string length 5 runs past"},
      {"deep arrays",
       [] {
         Gguf g;
         g.header(0, 1).str("k").u32(9);
         for (int i = 0; i < 20; ++i) g.u32(9).u64(1);
         return g.u32(0).u64(0).out;
       }(),
       "arrays nested deeper than 8 levels"},
      {"duplicate key", Gguf().header(0, 2).kvU32("k", 1).kvU32("k", 2).out, "offset 41: metadata \"k\": duplicate key"},
      {"alignment not power of 2", Gguf().header(0, 1).kvU32("general.alignment", 24).out,
       "metadata \"general.alignment\": 24 is not a power of two"},
      {"alignment zero", Gguf().header(0, 1).kvU32("general.alignment", 0).out, "0 is not a power of two"},
      {"alignment string", Gguf().header(0, 1).kvString("general.alignment", "32").out,
       "metadata \"general.alignment\": a STRING, expected UINT32"},
      {"too many dims", Gguf().header(1, 0).str("w").u32(5).raw(std::string(40, '\0')).out, "offset 33: tensor \"w\": n_dims 5 exceeds ggml's 4"},
      {"negative dim", Gguf().header(1, 0).tensor("w", {~uint64_t{0}}, 0, 0).out, "tensor \"w\": ne[0] = 18446744073709551615 is negative"},
      {"unknown type", oneTensor({8}, 77, 0), "offset 45: tensor \"w\": unknown or removed ggml type 77"},
      {"removed type", oneTensor({8}, 4, 0), "unknown or removed ggml type 4"},
      {"misaligned offset", oneTensor({2}, 0, 4), "offset 49: tensor \"w\": offset 4 is not a multiple of general.alignment 32"},
      {"partial block", oneTensor({16}, 8, 0), "tensor \"w\": ne[0] = 16 is not a multiple of Q8_0's block of 32"},
      {"size overflow", oneTensor({uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0), "tensor \"w\": size of F32 tensor overflows 64 bits"},
      {"out of bounds", oneTensor({16}, 0, 0), "offset 24: tensor \"w\": data [0, +64) runs past the data section (32 bytes from offset 64)"},
      {"offset past end", oneTensor({1}, 0, 64), "tensor \"w\": data [64, +4) runs past the data section"},
      {"truncated data", Gguf().header(1, 0).tensor("w", {1}, 0, 0).out, "data section: starts at 64, past the end of the file (57 bytes)"},
      {"overlap", Gguf().header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).align().raw(data).out,
       "tensor \"b\": data [0, +32) overlaps tensor \"a\" [0, +32)"},
      {"duplicate tensor", Gguf().header(2, 0).tensor("a", {1}, 0, 0).tensor("a", {1}, 0, 32).align().raw(data + data).out,
       "offset 57: tensor \"a\": duplicate tensor name"},
      {"truncated tensor info", Gguf().header(1, 0).str("w").u32(2).u64(4).out, "tensor \"w\" ne[1]: needs 8 bytes, 0 left"},
  };
  for (const Corrupt& row : rows) {
    SCOPED_TRACE(row.label);
    const std::string e = errorOf([&] { io::Checkpoint::fromGgufBytes(span(row.file), "bad.gguf"); });
    EXPECT_EQ(e.rfind("[gguf] bad.gguf: ", 0), 0u) << e;
    EXPECT_NE(e.find(row.expected), std::string::npos) << e;
  }
  TempDir dir("corrupt");
  const std::string path = dir.write("x.gguf", rows[1].file);
  EXPECT_EQ(errorOf([&] { io::Checkpoint::open(path); }), "[gguf] " + path + ": offset 0: magic: expected \"GGUF\", found \"GGUX\"");
}

TEST(IoGguf, ZeroTensorsAndEmptyTensorsAreValid) {
  io::Checkpoint none = io::Checkpoint::fromGgufBytes(span(Gguf().header(0, 1).kvString("general.name", "x").out), "none");
  EXPECT_TRUE(none.tensors().empty());
  EXPECT_EQ(none.meta("general.name")->asString(), "x");
  const std::string file = Gguf().header(2, 0).tensor("e", {0, 3}, 0, 0).tensor("s", {}, 0, 0).align().raw(std::string(32, '\0')).out;
  io::Checkpoint ckpt = io::Checkpoint::fromGgufBytes(span(file), "e");
  EXPECT_EQ(ckpt.find("e")->dims, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(ckpt.find("s")->dims, std::vector<int64_t>{});
  EXPECT_EQ(ckpt.load(cpu(), "s").shape(), Shape({}, DType::f32));
}

}  // namespace

namespace {

TEST(IoGguf, OpenSniffsTheFormatAndFindsGgufInFolders) {
  TempDir dir("sniff");
  const std::string gguf = Gguf().header(1, 1).kvString("general.architecture", "gpt2").tensor("w", {2}, 0, 0).align().raw(std::string(32, '\0')).out;
  dir.write("model.bin.x", gguf);  // unknown extension: the magic decides
  EXPECT_EQ(io::Checkpoint::open(dir / "model.bin.x").format(), "gguf");
  dir.write("w.weights", safetensors({{"w", "F32", {1}, std::string(4, '\0')}}));
  EXPECT_EQ(io::Checkpoint::open(dir / "w.weights").format(), "safetensors");
  TempDir folder("gguf-folder");
  folder.write("tiny.gguf", gguf);
  io::Checkpoint ckpt = io::Checkpoint::open(folder.path.string());
  EXPECT_EQ(ckpt.format(), "gguf");
  EXPECT_EQ(ckpt.folder(), folder.path.string());
  EXPECT_EQ(ckpt.meta("general.architecture")->asString(), "gpt2");
  EXPECT_EQ(ckpt.find("w")->dims, std::vector<int64_t>{2});
  folder.write("other.gguf", gguf);
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(folder.path.string()); }).find("found 2 candidates"), std::string::npos);
  dir.write("x.pt", "PK");
  EXPECT_NE(errorOf([&] { io::Checkpoint::open(dir / "x.pt"); }).find("only safetensors and GGUF are supported"), std::string::npos);
}

}  // namespace

namespace {

TEST(IoGguf, VocabularyFromMetadata) {
  TempDir dir("vocab");
  ASSERT_EQ(python(dir, R"(
w = GGUFWriter()
w.add("general.architecture", "gpt2")
w.add("tokenizer.ggml.model", "gpt2"); w.add("tokenizer.ggml.pre", "gpt2")
w.add("tokenizer.ggml.tokens", ["a", "b", "ab", "\u0120", "<|endoftext|>"])
w.add("tokenizer.ggml.token_type", Value("ARRAY", [1, 1, 1, 1, 3], elem="INT32"))
w.add("tokenizer.ggml.merges", ["a b"])
w.add("tokenizer.ggml.bos_token_id", Value("UINT32", 4)); w.add("tokenizer.ggml.eos_token_id", Value("UINT32", 4))
w.write(")" + (dir / "v.gguf") + R"(")
b = GGUFWriter()
b.add("tokenizer.ggml.model", "llama"); b.add("tokenizer.ggml.tokens", ["<unk>", "a"])
b.add("tokenizer.ggml.scores", Value("ARRAY", [0.0], elem="FLOAT32"))
b.write(")" + (dir / "bad.gguf") + R"(")
c = GGUFWriter()
c.add("tokenizer.ggml.model", "llama"); c.add("tokenizer.ggml.tokens", ["<unk>", "a"])
c.add("tokenizer.ggml.eos_token_id", Value("UINT32", 2))
c.write(")" + (dir / "range.gguf") + "\")\n"),
            0)
      << readFile(dir / "gen.log");
  const radix::VocabSpec spec = io::vocabFromGguf(io::Checkpoint::open(dir / "v.gguf"));
  EXPECT_EQ(spec.model, "gpt2");
  EXPECT_EQ(spec.pre, "gpt2");
  EXPECT_EQ(spec.tokens, (std::vector<std::string>{"a", "b", "ab", "\xc4\xa0", "<|endoftext|>"}));
  EXPECT_EQ(spec.types, (std::vector<int32_t>{1, 1, 1, 1, 3}));
  EXPECT_EQ(spec.merges, std::vector<std::string>{"a b"});
  EXPECT_TRUE(spec.scores.empty());
  EXPECT_EQ(spec.bos, 4);
  EXPECT_EQ(spec.eos, 4);
  EXPECT_EQ(spec.unk, -1);
  radix::Tokenizer tok = radix::Tokenizer::fromVocab(spec);
  EXPECT_EQ(tok.vocabSize(), 5);
  EXPECT_EQ(tok.encode("ab"), std::vector<int32_t>{2});
  EXPECT_EQ(errorOf([&] { io::vocabFromGguf(io::Checkpoint::open(dir / "bad.gguf")); }),
            "[gguf] " + (dir / "bad.gguf") + ": tokenizer.ggml.scores has 1 values for 2 tokens");
  EXPECT_EQ(errorOf([&] { io::vocabFromGguf(io::Checkpoint::open(dir / "range.gguf")); }),
            "[gguf] " + (dir / "range.gguf") + ": tokenizer.ggml.eos_token_id = 2 is out of range for 2 tokens");
  const std::string st = safetensors({});
  EXPECT_NE(errorOf([&] { io::vocabFromGguf(io::Checkpoint::fromSafetensorsBytes(span(st), "s")); }).find("not a GGUF checkpoint"),
            std::string::npos);
}

}  // namespace

namespace {

struct GgufBlock {
  Tensor attn_q;
};
struct GgufModel {
  Tensor token_embd;
  std::vector<GgufBlock> blk;
};

TEST(IoGguf, LoadIntoWithLlamaCppNames) {
  // ne = {4, 3} is a row-major {3, 4} tensor; the model names leaves after llama.cpp's tensors.
  std::vector<float> embd(12), q(16);
  for (int i = 0; i < 12; ++i) embd[i] = static_cast<float>(i);
  for (int i = 0; i < 16; ++i) q[i] = -static_cast<float>(i);
  const std::string file = Gguf()
                               .header(2, 0)
                               .tensor("token_embd.weight", {4, 3}, 0, 0)
                               .tensor("blk.0.attn_q.weight", {4, 4}, 1, 64)
                               .align()
                               .raw(raw(embd))
                               .align()
                               .raw(raw(Tensor::fromValues(cpu(), Shape({16}, DType::f16), q).toBytes()))
                               .out;
  io::Checkpoint ckpt = io::Checkpoint::fromGgufBytes(span(file), "llama.gguf");
  GgufModel m{Tensor(Shape({3, 4}, DType::f32).withTags({"voc", "d"})), {{Tensor(Shape({4, 4}, DType::f32).withTags({"out", "in"}))}}};
  io::LoadSpec spec;
  spec.rename = [](std::string_view path) { return io::defaultStoredName(path) + ".weight"; };
  spec.dtype = DType::f32;
  io::loadInto(cpu(), m, ckpt, spec);
  EXPECT_EQ(m.token_embd.shape().str(), "{voc=3,d=4}:f32");
  EXPECT_EQ(m.token_embd.bufferAddress(), ckpt.bytes("token_embd.weight").data());  // zero-copy
  radix::testing::expectClose(m.token_embd, embd, 0);
  EXPECT_EQ(m.blk[0].attn_q.shape().str(), "{out=4,in=4}:f32");  // f16 converted
  radix::testing::expectClose(m.blk[0].attn_q, q, 0);
}

}  // namespace

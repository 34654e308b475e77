// radix::io::GgufWriter: typed keys and tensors read back by io::Checkpoint, raw metadata copies
// that keep the stored types byte for byte, and the writer's errors.
#include <gtest/gtest.h>

#include <radix/gguf_writer.h>
#include <radix/io.h>
#include <radix/quant.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io_testing.h"

namespace {

using radix::testing::errorOf;
using namespace radix::iotest;
namespace io = radix::io;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

io::GgufWriter everyType() {
  io::GgufWriter w;
  w.setString("general.architecture", "llama");
  w.setU32("u32", 4000000000u);
  w.setI32("i32", -5);
  w.setU64("u64", 1ull << 40);
  w.setF32("f32", 0.25f);
  w.setBool("b", true);
  w.setString("s", std::string("h\xc3\xa9llo\0x", 8));
  w.setStrings("strings", {"<unk>", "", "a"});
  w.setF32s("floats", {0.5f, -1.5f});
  w.setI32s("ints", {1, -2, 3});
  w.setU32("replaced", 1);
  w.setU32("replaced", 2);
  w.setU32("gone", 3);
  w.erase("gone");
  return w;
}

TEST(IoGgufWriter, KeysAndTensorsReadBack) {
  TempDir dir("ggufw");
  io::GgufWriter w = everyType();
  std::vector<float> x = {1, -2, 3.5f, 0, 7, 8};
  w.addTensor("f32", {2, 3}, 0, 24, [&](std::span<uint8_t> d) { std::memcpy(d.data(), x.data(), 24); });
  std::vector<float> row(64);
  for (int i = 0; i < 64; ++i) row[i] = static_cast<float>(i) / 8 - 4;
  std::vector<uint8_t> q(68);
  radix::quantizeRow(radix::QuantType::q8_0, row.data(), 64, q.data());
  w.addTensor("q8", {1, 64}, 8, 68, [&](std::span<uint8_t> d) { std::memcpy(d.data(), q.data(), 68); });
  w.addTensor("empty", {0, 32}, 2, 0, [](std::span<uint8_t>) {});
  EXPECT_EQ(w.tensorCount(), 3u);
  EXPECT_TRUE(w.has("u32"));
  EXPECT_FALSE(w.has("gone"));
  const std::string path = dir / "w.gguf";
  w.write(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const io::Checkpoint c = io::Checkpoint::open(path);
  EXPECT_EQ(c.meta("general.architecture")->asString(), "llama");
  EXPECT_EQ(c.meta("u32")->asInt(), 4000000000);
  EXPECT_EQ(c.meta("i32")->asInt(), -5);
  EXPECT_EQ(c.meta("u64")->asInt(), 1ll << 40);
  EXPECT_EQ(c.meta("f32")->asFloat(), 0.25);
  EXPECT_TRUE(c.meta("b")->asBool());
  EXPECT_EQ(c.meta("s")->asString(), std::string("h\xc3\xa9llo\0x", 8));
  EXPECT_EQ(c.meta("strings")->asStrings(), (std::vector<std::string>{"<unk>", "", "a"}));
  EXPECT_EQ(c.meta("floats")->asFloats(), (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(c.meta("ints")->asInts(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(c.meta("replaced")->asInt(), 2);
  EXPECT_EQ(c.meta("gone"), nullptr);
  ASSERT_EQ(c.tensors().size(), 3u);
  EXPECT_EQ(c.find("f32")->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.load(cpu(), "f32").toVector<float>(), x);
  EXPECT_EQ(c.find("q8")->type, "Q8_0");
  const auto qb = c.bytes("q8");
  EXPECT_EQ(std::vector<uint8_t>(qb.begin(), qb.end()), q);
  EXPECT_EQ(c.find("q8")->offset % 32, 0u);
  EXPECT_EQ(c.find("empty")->bytes, 0u);
}

TEST(IoGgufWriter, CopyMetadataKeepsStoredTypesByteForByte) {
  TempDir dir("ggufw");
  const std::string a = dir / "a.gguf", b = dir / "b.gguf";
  everyType().write(a);
  io::GgufWriter copy;
  copy.copyMetadata(a, [](std::string_view) { return true; });
  copy.write(b);
  EXPECT_EQ(slurp(a), slurp(b));  // same keys, types and order: the same file
  io::GgufWriter some;
  some.copyMetadata(a, [](std::string_view k) { return k.starts_with("i") || k == "general.architecture"; });
  some.write(b);
  const io::Checkpoint c = io::Checkpoint::open(b);
  EXPECT_EQ(c.metadata().size(), 3u);  // general.architecture, i32, ints
  EXPECT_EQ(c.meta("ints")->asInts(), (std::vector<int64_t>{1, -2, 3}));
}

TEST(IoGgufWriter, Errors) {
  TempDir dir("ggufw");
  auto noop = [](std::span<uint8_t>) {};
  io::GgufWriter w;
  w.addTensor("t", {2, 32}, 8, 68, noop);
  const std::string notGguf = dir.write("x.gguf", "GGUX\x03\x00\x00\x00");
  const std::string truncated = dir.write("t.gguf", slurp([&] {
                                            const std::string p = dir / "full.gguf";
                                            everyType().write(p);
                                            return p;
                                          }()).substr(0, 60));
  struct Row {
    std::function<void()> call;
    std::string want;
  };
  for (const Row& r : std::vector<Row>{
           {[&] { w.addTensor("t", {2, 32}, 8, 68, noop); }, "[gguf] tensor \"t\": added twice"},
           {[&] { w.addTensor("u", {2, 32}, 8, 60, noop); },
            "[gguf] tensor \"u\": 60 bytes do not hold 64 Q8_0 elements in rows of 32"},
           {[&] { w.addTensor("u", {2, 33}, 8, 68, noop); },
            "[gguf] tensor \"u\": 68 bytes do not hold 66 Q8_0 elements in rows of 33"},
           {[&] { w.addTensor("u", {4}, 99, 4, noop); }, "[gguf] tensor \"u\": unknown ggml type 99"},
           {[&] { w.copyMetadata(notGguf, [](std::string_view) { return true; }); },
            "[gguf] " + notGguf + ": offset 4: magic: not a GGUF file"},
           {[&] { w.copyMetadata(truncated, [](std::string_view) { return true; }); },
            "[gguf] " + truncated + ": offset 56: string: truncated"},  // the value of general.architecture
           {[&] { w.copyMetadata(dir / "missing.gguf", [](std::string_view) { return true; }); },
            "[gguf] " + (dir / "missing.gguf") + ": cannot open"},
       })
    EXPECT_EQ(errorOf(r.call), r.want);

  // A fill that throws leaves neither the file nor its temporary.
  io::GgufWriter failing;
  failing.addTensor("t", {32}, 0, 128, [](std::span<uint8_t>) { throw radix::Error("[test] fill failed"); });
  const std::string out = dir / "failed.gguf";
  EXPECT_EQ(errorOf([&] { failing.write(out); }), "[test] fill failed");
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

}  // namespace

// Errors raised while tracing name the user's line, never a Radix header's: one row per nn layer
// (each row calls the layer on the row's own line), plus the field path of the layer where the
// layer is part of the traced arguments, and loadInto's caller.
#include <radix/io.h>
#include <radix/nn.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <functional>
#include <string>
#include <vector>

#include "io_testing.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
namespace nn = radix::nn;
using radix::testing::errorOf;

const radix::Platform& cpu() {
  static const radix::Platform p = radix::Platform::cpu();
  return p;
}

Tensor ph(std::vector<int64_t> dims, std::vector<radix::Tag> tags = {}, DType dtype = DType::f32) {
  Shape s(dims, dtype);
  return Tensor(tags.empty() ? s : s.withTags(tags));
}

/// The error of tracing fn(args...), or "(no radix::Error)".
template <class F, class... Args>
std::string traceError(const F& fn, const Args&... args) {
  return errorOf([&] { radix::compile(cpu(), fn, args...); });
}

std::string at(int line) { return "error_location_test.cpp:" + std::to_string(line) + ")"; }

void expectAtLine(const std::string& name, const std::string& error, int line, const std::string& prefix) {
  EXPECT_TRUE(error.starts_with(prefix)) << name << ": " << error;
  EXPECT_TRUE(error.ends_with(at(line))) << name << ": " << error;
  EXPECT_EQ(error.find("include/radix"), std::string::npos) << name << ": " << error;
}

struct Row {
  const char* name;
  int line;  // the line of the layer call, which the error must end with
  const char* prefix;
  std::function<std::string()> error;
};

TEST(ErrorLocation, EachNnLayerNamesTheCallersLine) {
  const Tensor x = ph({2, 3}, {"s", "d"});
  const Tensor ints = ph({2, 3}, {"s", "d"}, DType::i32);
  const nn::Linear linear3d{ph({2, 3, 4})};
  const nn::Linear linearWrongIn{ph({4, 5})};  // in = 5, x has d = 3: fails inside dotGeneral
  const nn::Embedding embedding{ph({10, 3})};
  const nn::LayerNorm layerNorm{ph({3}), ph({3})};
  const nn::LayerNorm layerNormWrong{ph({5})};  // fails inside broadcast
  const nn::RMSNorm rmsNorm{ph({3})};
  const nn::Rope rope{};
  const Tensor oddHeads = ph({5, 2, 3}, {"s", "h", "hd"});
  const Tensor offset = ph({}, {}, DType::i32);
  const Tensor q = ph({2, 5, 4}, {"h", "s", "hd"});  // "s" where sdpa wants "q"
  const nn::KvCache cache{ph({8, 2, 4}, {"k", "h", "hd"}), ph({8, 2, 4}, {"k", "h", "hd"}), offset};
  const Tensor newK = ph({1, 2, 4}, {"s", "h", "hd"});
  const nn::GeluMlp gelu{nn::Linear{ph({6, 5}), std::nullopt, "d", "f"}, nn::Linear{ph({3, 6}), std::nullopt, "f", "d"}};
  const nn::SwiGluMlp swiglu{nn::Linear{ph({6, 3}), std::nullopt, "d", "f"}, nn::Linear{ph({6, 4}), std::nullopt, "d", "f"},
                             nn::Linear{ph({3, 6}), std::nullopt, "f", "d"}};
  const nn::Activation activation{nn::ActivationKind::gelu};
  const Tensor image = ph({1, 2, 3, 4}, {"b", "c", "h", "w"});
  const Tensor ints4 = ph({1, 2, 3, 4}, {"b", "c", "h", "w"}, DType::i32);
  const nn::Conv2d conv{.weight = ph({4, 3, 3, 3})};  // 3 input channels, image has 2
  const nn::Conv1d conv1{.weight = ph({2, 2, 3}), .stride = {2}, .samePadding = true};
  const Tensor sequence = ph({1, 2, 9}, {"b", "c", "s"});
  const nn::BatchNorm batchNorm{.running_mean = ph({2}), .running_var = ph({3})};
  const nn::GroupNorm groupNorm{.groups = 3};
  const nn::MaxPool2d maxPool{.kernel = {2, 2}, .padding = {2, 0}};
  const nn::AvgPool2d avgPool{};
  const nn::AdaptiveAvgPool2d adaptive{.outputSize = {0, 1}};
  const nn::MultiHeadAttention mha{.in_proj_weight = ph({9, 3}), .heads = 2};  // 2 heads do not divide 3
  const nn::TransformerEncoderLayer encoder{.self_attn = mha};
  const Tensor tokens = ph({1, 2, 3}, {"b", "s", "d"});

  const std::vector<Row> rows = {
      {"Linear", __LINE__, "[nn.Linear]", [&] { return traceError([&](Tensor t) { return linear3d.forward(t); }, x); }},
      {"Linear_inside_op", __LINE__, "[nn.Linear]", [&] { return traceError([&](Tensor t) { return linearWrongIn.forward(t); }, x); }},
      {"Embedding", __LINE__, "[nn.Embedding]", [&] { return traceError([&](Tensor t) { return embedding.forward(t); }, x); }},
      {"LayerNorm", __LINE__, "[nn.LayerNorm]", [&] { return traceError([&](Tensor t) { return layerNorm.forward(t); }, ints); }},
      {"LayerNorm_inside_op", __LINE__, "[nn.LayerNorm]", [&] { return traceError([&](Tensor t) { return layerNormWrong.forward(t); }, x); }},
      {"RMSNorm", __LINE__, "[nn.RMSNorm]", [&] { return traceError([&](Tensor t) { return rmsNorm.forward(t); }, ints); }},
      {"Rope", __LINE__, "[nn.Rope]", [&] { return traceError([&](Tensor t, Tensor o) { return rope.forward(t, o); }, oddHeads, offset); }},
      {"sdpa", __LINE__, "[nn.sdpa]", [&] { return traceError([&](Tensor a) { return nn::sdpa(a, a, a); }, q); }},
      {"KvCache_update", __LINE__, "[nn.KvCache]", [&] { return traceError([&](nn::KvCache c, Tensor k) { return c.update(k, k).k; }, cache, newK); }},
      {"KvCache_attend", __LINE__, "[nn.KvCache]", [&] { return traceError([&](nn::KvCache c, Tensor a) { return c.attend(a); }, cache, q); }},
      {"GeluMlp", __LINE__, "[nn.Linear]", [&] { return traceError([&](Tensor t) { return gelu.forward(t); }, x); }},
      {"SwiGluMlp", __LINE__, "[nn.Linear]", [&] { return traceError([&](Tensor t) { return swiglu.forward(t); }, x); }},
      {"upsampleNearest", __LINE__, "[nn.upsampleNearest]", [&] { return traceError([&](Tensor t) { return nn::upsampleNearest(t, {{"h", 0}}); }, image); }},
      {"Activation", __LINE__, "[nn.Activation]", [&] { return traceError([&](Tensor t) { return activation.forward(t); }, ints); }},
      {"Conv2d", __LINE__, "[nn.Conv2d]", [&] { return traceError([&](Tensor t) { return conv.forward(t); }, image); }},
      {"Conv1d", __LINE__, "[nn.Conv1d]", [&] { return traceError([&](Tensor t) { return conv1.forward(t); }, sequence); }},
      {"BatchNorm", __LINE__, "[nn.BatchNorm]", [&] { return traceError([&](Tensor t) { return batchNorm.forward(t); }, image); }},
      {"GroupNorm", __LINE__, "[nn.GroupNorm]", [&] { return traceError([&](Tensor t) { return groupNorm.forward(t); }, image); }},
      {"MaxPool2d", __LINE__, "[nn.MaxPool2d]", [&] { return traceError([&](Tensor t) { return maxPool.forward(t); }, image); }},
      {"AvgPool2d", __LINE__, "[nn.AvgPool2d]", [&] { return traceError([&](Tensor t) { return avgPool.forward(t); }, ints4); }},
      {"AdaptiveAvgPool2d", __LINE__, "[nn.AdaptiveAvgPool2d]", [&] { return traceError([&](Tensor t) { return adaptive.forward(t); }, image); }},
      {"MultiHeadAttention", __LINE__, "[nn.MultiHeadAttention]", [&] { return traceError([&](Tensor t) { return mha.forward(t, {}); }, tokens); }},
      {"TransformerEncoderLayer", __LINE__, "[nn.TransformerEncoderLayer]", [&] { return traceError([&](Tensor t) { return encoder.forward(t, {}); }, tokens); }},
      // A layer's member function compiled directly: the line of radix::compile.
      {"compile_member", __LINE__, "[nn.Linear]", [&] { return errorOf([&] { radix::compile(cpu(), &nn::Linear::forward, linear3d, x); }); }},
  };
  for (const Row& row : rows) expectAtLine(row.name, row.error(), row.line, row.prefix);
}

TEST(ErrorLocation, AnEarlierOpDoesNotStandForTheLayer) {
  const nn::Linear linear{ph({4, 5})};
  int line = 0;
  const std::string error = traceError(
      [&](Tensor t) {
        Tensor y = t.addConstant(1);
        line = __LINE__ + 1;
        return linear.forward(y);
      },
      ph({2, 3}, {"s", "d"}));
  expectAtLine("after an op", error, line, "[nn.Linear]");
}

// ---- the layer's field path ----

struct Block {
  nn::Linear attn;
  Tensor forward(Tensor x) const {
    return attn.forward(x);  // kBlockLine
  }
};
constexpr int kBlockLine = __LINE__ - 3;

struct Net {
  std::vector<Block> layers;
  Tensor viaCall(Tensor x) const {
    for (const Block& b : layers) x = radix::call(b, &Block::forward, x);
    return x;
  }
  Tensor direct(Tensor x) const {
    for (const Block& b : layers) x = b.forward(x);
    return x;
  }
};

TEST(ErrorLocation, NamesTheLayersFieldPath) {
  Net net{{Block{nn::Linear{ph({3, 3})}}, Block{nn::Linear{ph({3, 3})}}, Block{nn::Linear{ph({3, 4})}}}};
  const Tensor x = ph({2, 3}, {"s", "d"});
  for (auto method : {&Net::viaCall, &Net::direct}) {
    const std::string error = errorOf([&] { radix::compile(cpu(), method, net, x); });
    expectAtLine("path", error, kBlockLine, "[nn.Linear]");
    EXPECT_NE(error.find("(in layers[2].attn, at "), std::string::npos) << error;
  }
}

// ---- loadInto ----

struct Loaded {
  Tensor w;
};

TEST(ErrorLocation, LoadIntoNamesTheCallersLine) {
  using namespace radix::iotest;
  const std::string bytes = safetensors({{"w", "F32", {2}, std::string(8, '\0')}});
  const radix::io::Checkpoint ckpt = radix::io::Checkpoint::fromSafetensorsBytes(span(bytes), "mem.safetensors");
  Loaded model{ph({3})};  // stored {2}
  const int line = __LINE__ + 1;
  const std::string error = errorOf([&] { radix::io::loadInto(cpu(), model, ckpt); });
  expectAtLine("loadInto", error, line, "[load]");
  // Tagged placeholders tag what is loaded.
  Loaded tagged{ph({2}, {"c"})};
  radix::io::loadInto(cpu(), tagged, ckpt);
  EXPECT_EQ(tagged.w.shape(), Shape({2}, DType::f32).withTags({"c"}));
}

}  // namespace

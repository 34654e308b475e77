// radix-gpu-prepare OUT TEST_MODELS: the CPU machine's half of the device check
// (tests/gpu/run.sh). Compiles each case for cuda:sm_90a into OUT/cache, runs it on the CPU for
// the expected results, and writes OUT/cases.txt and the tensors' bytes, which radix-gpu-check
// (the runtime alone) reads on the GPU machine. OUT/models.txt adds the GPT-2/Llama oracle models'
// steps (their weights, the CPU's logits and greedy ids), the bench models' steps and a bf16 GEMM.
#include <radix/io.h>
#include <radix/models/gpt2.h>
#include <radix/models/llama.h>
#include <radix/radix.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mlp/mlp.h"
#include "ops_testing.h"

namespace {

namespace fs = std::filesystem;
using namespace radix;
using Ts = std::vector<Tensor>;

struct Case {
  std::string name;
  std::vector<Shape> inputs;
  std::function<Ts(const Ts&)> fn;
  double tolerance;  // max |gpu - cpu| / (1 + |cpu|)
};

std::vector<Case> cases() {
  const Shape m(Shape({256, 384}, DType::f32));
  return {
      {"elementwise", {m, m}, [](const Ts& x) { return Ts{x[0].mul(x[1]).add(x[0].exp()).tanh()}; }, 1e-5},
      {"sum_rows", {m}, [](const Ts& x) { return Ts{x[0].sum(1)}; }, 1e-4},
      {"sum_all", {Shape({1000}, DType::f32)}, [](const Ts& x) { return Ts{x[0].sum(0)}; }, 1e-4},
      {"softmax", {m}, [](const Ts& x) { return Ts{x[0].softmax(1)}; }, 1e-5},
      {"matmul_f32", {m, Shape({384, 200}, DType::f32)},
       [](const Ts& x) { return Ts{x[0].dotGeneral(x[1], {{1, 0}}, {})}; }, 1e-4},
      {"matmul_bf16", {m.withDtype(DType::bf16), Shape({384, 200}, DType::bf16)},
       [](const Ts& x) { return Ts{x[0].dotGeneral(x[1], {{1, 0}}, {}).convert(DType::f32)}; }, 2e-2},
      {"remainder", {m, m}, [](const Ts& x) { return Ts{x[0].remainder(x[1].abs().add(Tensor::scalar(0.5f, DType::f32).broad(x[1].shape())))}; }, 1e-5},
      {"transpose_reshape", {Shape({8, 32, 48}, DType::f32)},
       [](const Ts& x) { return Ts{x[0].transpose({2, 0, 1}).reshape({48, 256})}; }, 0},
      // bf16 causal attention with grouped heads: cuDNN's graph where present, else the composition.
      {"sdpa_bf16_causal_gqa",
       {Shape({2, 8, 128, 64}, DType::bf16).withTags({"b", "h", "q", "hd"}),
        Shape({2, 2, 128, 64}, DType::bf16).withTags({"b", "h", "k", "hd"}),
        Shape({2, 2, 128, 64}, DType::bf16).withTags({"b", "h", "k", "hd"})},
       [](const Ts& x) { return Ts{nn::sdpa(x[0], x[1], x[2], {.causal = true}).convert(DType::f32)}; }, 3e-2},
  };
}

void writeBytes(const fs::path& p, const Tensor& t) {
  const std::vector<uint8_t> b = t.toBytes();
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::string dims(const Shape& s) {
  std::string out;
  for (int64_t d : s.dims()) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out.empty() ? "scalar" : out;
}

// Unbound tensors of the same shapes (tags included): what a compile for the GPU target takes.
template <class S>
S placeholdersOf(const S& s) {
  Ts shapes;
  for (const Tensor* t : detail::tensorsOf(s)) shapes.emplace_back(t->shape());
  return detail::withTensors(s, shapes);
}

models::KvState cachePlaceholders(int64_t layers, int64_t context, int64_t kvHeads, int64_t headDim, DType dtype) {
  const Shape shape = Shape({kvHeads, context, headDim}, dtype).withTags({"h", "k", "hd"});
  models::KvState c;
  for (int64_t i = 0; i < layers; ++i) c.k.emplace_back(shape), c.v.emplace_back(shape);
  return c;
}

Tensor i32s(const Platform& p, std::vector<int32_t> v, bool scalar = false) {
  const Shape s = scalar ? Shape({}, DType::i32) : Shape({static_cast<int64_t>(v.size())}, DType::i32);
  return Tensor::fromValues(p, s, v);
}

// A model's step executables for the GPU: a prompt chunk of `chunk` tokens and the decode step,
// over `cache`'s context. Returns the two entries; the arguments are the model's leaves, then
// ids, position, length, then the cache's leaves.
template <class M>
std::pair<std::string, std::string> gpuSteps(const Platform& gpu, const M& model, const models::KvState& cache,
                                             int64_t chunk) {
  const M m = placeholdersOf(model);
  const models::KvState c = placeholdersOf(cache);
  const Tensor pos{Shape({}, DType::i32)}, length{Shape({}, DType::i32)};
  const std::string prefill = compile(gpu, &M::forward, m, Tensor(Shape({chunk}, DType::i32)), pos, length, c).cacheEntry();
  const std::string decode = compile(gpu, &M::forward, m, Tensor(Shape({1}, DType::i32)), pos, length, c).cacheEntry();
  return {prefill, decode};
}

// The oracle check of a model (radix-gpu-check's "check" line): the CPU's logits and greedy ids
// for a prompt and `steps` tokens, with the weights' bytes for the GPU to load.
template <class M>
void addModelCheck(std::ofstream& list, const fs::path& out, const Platform& gpu, const std::string& name, const M& model,
                   models::KvState cache, double tolerance) {
  const Platform cpu = Platform::cpu();
  const int64_t chunk = 16, steps = 16;
  const std::vector<int32_t> prompt = {1, 7, 42, 100, 3};
  const auto [prefill, decode] = gpuSteps(gpu, model, cache, chunk);
  // The CPU's run: the prompt padded to a chunk, then one token at a time, each the argmax of
  // the logits before it.
  std::vector<int32_t> ids = prompt;
  ids.resize(static_cast<size_t>(chunk), 0);
  auto step = compile(cpu, &M::forward, model, i32s(cpu, ids), i32s(cpu, {0}, true), i32s(cpu, {0}, true), cache);
  models::StepResult r = step(model, i32s(cpu, ids), i32s(cpu, {0}, true),
                              i32s(cpu, {static_cast<int32_t>(prompt.size())}, true), cache);
  auto decodeStep = compile(cpu, &M::forward, model, i32s(cpu, {0}), i32s(cpu, {0}, true), i32s(cpu, {1}, true), r.cache);
  std::vector<int32_t> greedy;
  std::vector<float> logits;
  for (int64_t i = 0; i < steps; ++i) {
    const std::vector<float> l = r.logits.toVector<float>();
    logits.insert(logits.end(), l.begin(), l.end());
    greedy.push_back(static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()));
    if (i + 1 == steps) break;
    const int32_t at = static_cast<int32_t>(prompt.size() + static_cast<size_t>(i));
    r = decodeStep(model, i32s(cpu, {greedy.back()}), i32s(cpu, {at}, true), i32s(cpu, {1}, true), r.cache);
  }
  const std::vector<const Tensor*> weights = detail::tensorsOf(model);
  for (size_t i = 0; i < weights.size(); ++i) writeBytes(out / ("data/" + name + ".leaf" + std::to_string(i)), *weights[i]);
  const std::string logitsFile = "data/" + name + ".logits";
  std::ofstream(out / logitsFile, std::ios::binary)
      .write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  // check NAME TOLERANCE PREFILL DECODE LEAVES CHUNK NPROMPT ids... NSTEPS greedy... LOGITS
  list << "check " << name << " " << tolerance << " " << fs::relative(prefill, out).string() << " "
       << fs::relative(decode, out).string() << " " << weights.size() << " " << chunk << " " << prompt.size();
  for (int32_t id : prompt) list << " " << id;
  list << " " << steps;
  for (int32_t id : greedy) list << " " << id;
  list << " " << logitsFile << "\n";
  std::printf("prepared %-20s %s\n", name.c_str(), prefill.c_str());
}

// The speed test of a model's shapes (radix-gpu-check's "bench" line): pp`prompt` from an empty
// cache of `prompt` positions and tg`gen` from an empty cache of `gen`, as radix bench runs them;
// the GPU fills the weights with random values.
template <class M>
void addModelBench(std::ofstream& list, const fs::path& out, const Platform& gpu, const std::string& name, const M& model,
                   int64_t vocab, const std::function<models::KvState(int64_t)>& cacheOf, int64_t prompt, int64_t gen) {
  const std::string prefill = gpuSteps(gpu, model, cacheOf(prompt), prompt).first;
  const std::string decode = gpuSteps(gpu, model, cacheOf(gen), 1).second;
  // Greedy sampling on the device, as LanguageModel's: only the id comes back.
  const std::string greedy =
      compile(gpu, [](const Tensor& l, const Rng& r) { return sampleTokens(l.withTags({"voc"}), {}, r).tokens; },
              Tensor(Shape({vocab}, DType::f32)), Rng())
          .cacheEntry();
  // bench NAME PREFILL DECODE GREEDY LEAVES PROMPT GEN
  list << "bench " << name << " " << fs::relative(prefill, out).string() << " " << fs::relative(decode, out).string()
       << " " << fs::relative(greedy, out).string() << " " << detail::tensorsOf(model).size() << " " << prompt << " "
       << gen << "\n";
  std::printf("prepared %-20s %s\n", name.c_str(), decode.c_str());
}

void addModels(const fs::path& out, const Platform& gpu, const fs::path& testModels) {
  const Platform cpu = Platform::cpu();
  std::ofstream list(out / "models.txt");
  // The oracle models of tests/oracle (tools/make_test_models.py --size tiny), f32.
  {
    const io::Checkpoint ck = io::Checkpoint::open((testModels / "llama-tiny").string());
    const models::llama::Config c = models::llama::Config::fromCheckpoint(ck);
    addModelCheck(list, out, gpu, "llama-tiny", models::llama::Model::load(cpu, ck, DType::f32),
                  models::KvState::zeros(cpu, c.layers, 32, c.kvHeads, c.headDim, DType::f32), 1e-3);
  }
  {
    const io::Checkpoint ck = io::Checkpoint::open((testModels / "gpt2-tiny").string());
    const models::gpt2::Config c = models::gpt2::Config::fromCheckpoint(ck);
    addModelCheck(list, out, gpu, "gpt2-tiny", models::gpt2::Model::load(cpu, ck, DType::f32),
                  models::KvState::zeros(cpu, c.layers, 32, c.heads, c.width / c.heads, DType::f32), 1e-3);
  }
  // The bench's shapes (bench/torch_llm_peer.py's defaults): Llama-110M and GPT-2 small, f32 and
  // bf16 (weights, activations and cache).
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const std::string suffix = dtype == DType::f32 ? "-f32" : "-bf16";
    models::llama::Config l;
    l.vocab = 32000, l.width = 768, l.heads = 12, l.kvHeads = 12, l.headDim = 64, l.layers = 12, l.ffn = 2048;
    l.tied = true;
    addModelBench(list, out, gpu, "llama-110m" + suffix, models::llama::Model::placeholders(l, dtype), l.vocab,
                  [&](int64_t context) { return cachePlaceholders(l.layers, context, l.kvHeads, l.headDim, dtype); }, 512, 128);
    const models::gpt2::Config g;
    addModelBench(list, out, gpu, "gpt2-124m" + suffix, models::gpt2::Model::placeholders(g, dtype, false), g.vocab,
                  [&](int64_t context) { return cachePlaceholders(g.layers, context, g.heads, g.width / g.heads, dtype); },
                  512, 128);
  }
  // torch.matmul's shape in tests/gpu/run.sh: gemm NAME FLOPS ENTRY (random operands there).
  const Shape a({4096, 4096}, DType::bf16);
  const std::string gemm =
      compile(gpu, [](const Tensor& x, const Tensor& y) { return x.dotGeneral(y, {{1, 0}}, {}); }, Tensor(a), Tensor(a))
          .cacheEntry();
  list << "gemm gemm_bf16_4096 " << 2.0 * 4096 * 4096 * 4096 << " " << fs::relative(gemm, out).string() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: radix-gpu-prepare OUT TEST_MODELS (tools/make_test_models.py --size tiny's folder)\n");
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out / "data");
  CompileOptions cached;
  cached.cache = true;
  cached.cacheDir = (out / "cache").string();
  const Platform gpu = Platform::cudaTarget("sm_90a").withOptions(cached);
  const Platform cpu = Platform::cpu();
  std::ofstream list(out / "cases.txt");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-2.f, 2.f);
  auto add = [&](const std::string& name, const Ts& args, const std::function<Ts(const Ts&)>& fn, double tolerance) {
    const Ts expected = compile(cpu, fn, args)(args);
    Ts placeholders;
    for (const Tensor& a : args) placeholders.emplace_back(a.shape());
    const std::string entry = compile(gpu, fn, placeholders).cacheEntry();
    // name tolerance entry args... -> results...
    list << name << " " << tolerance << " " << fs::relative(entry, out).string() << " " << args.size();
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string file = "data/" + name + ".in" + std::to_string(i);
      writeBytes(out / file, args[i]);
      list << " " << file << " " << radix::name(args[i].shape().dtype()) << " " << dims(args[i].shape());
    }
    list << " " << expected.size();
    for (size_t i = 0; i < expected.size(); ++i) {
      const std::string file = "data/" + name + ".out" + std::to_string(i);
      writeBytes(out / file, expected[i]);
      list << " " << file << " " << radix::name(expected[i].shape().dtype()) << " " << dims(expected[i].shape());
    }
    list << "\n";
    std::printf("prepared %-20s %s\n", name.c_str(), entry.c_str());
  };
  for (const Case& c : cases()) {
    Ts args;
    for (const Shape& s : c.inputs) {
      std::vector<float> v(static_cast<size_t>(s.count()));
      for (float& x : v) x = uniform(rng);
      args.push_back(Tensor::fromValues(cpu, s, v));
    }
    add(c.name, args, c.fn, c.tolerance);
  }
  // The op tables (tests/ops_*_test.cpp), a program per group as the CPU suite compiles them, on
  // the suite's inputs; tolerance: the group's loosest (by dtype, 0 for integers).
  std::map<std::string, std::vector<opstest::Case>> groups;
  for (opstest::Case& c : opstest::allCases()) groups[c.group].push_back(std::move(c));
  for (const auto& [group, cases] : groups) {
    Ts args;
    std::vector<size_t> firsts;
    double tolerance = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      const opstest::Case& c = cases[k];
      firsts.push_back(args.size());
      for (size_t i = 0; i < c.inputs.size(); ++i) args.push_back(Tensor::fromValues(cpu, c.inputs[i], opstest::caseInput(c, k, i)));
      tolerance = std::max(tolerance, c.tol >= 0 ? c.tol : opstest::tolFor(c.out.dtype()));
    }
    add("ops." + group, args,
        [&cases, &firsts](const Ts& all) {
          Ts results;
          for (size_t k = 0; k < cases.size(); ++k)
            results.push_back(cases[k].op(Ts(all.begin() + static_cast<std::ptrdiff_t>(firsts[k]),
                                             all.begin() + static_cast<std::ptrdiff_t>(firsts[k] + cases[k].inputs.size()))));
          return results;
        },
        tolerance);
  }
  // A model with radix::call functions: the MLP's weights are its leading arguments.
  {
    const mlp::MLP model = mlp::example(cpu);
    Ts leaves;
    for (const mlp::Layer& l : model.layers) leaves.push_back(l.w), leaves.push_back(l.b);
    leaves.push_back(mlp::input(cpu));
    add("mlp", leaves,
        [](const Ts& x) {
          mlp::MLP m{{mlp::Layer{x[0], x[1]}, mlp::Layer{x[2], x[3]}, mlp::Layer{x[4], x[5]}}};
          return Ts{m.forward(x[6])};
        },
        0);
  }
  addModels(out, gpu, argv[2]);
  return 0;
}

// radix-gpu-prepare OUT: the CPU machine's half of the device check (tests/gpu/run.sh). Compiles
// each case for cuda:sm_90a into OUT/cache, runs it on the CPU for the expected results, and
// writes OUT/cases.txt and the tensors' bytes, which radix-gpu-check (the runtime alone) reads on
// the GPU machine.
#include <radix/radix.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mlp/mlp.h"

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: radix-gpu-prepare OUT\n");
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
  return 0;
}

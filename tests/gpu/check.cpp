// radix-gpu-check DIR: the GPU machine's half of the device check (tests/gpu/run.sh), linked
// against the runtime library alone. Loads each case that radix-gpu-prepare wrote into DIR as a
// radix::Program on Platform::cuda(), runs it on the case's inputs, compares the results with the
// CPU's and times the call; then models.txt: the GPT-2/Llama oracle models' steps against the
// CPU's logits and greedy ids, the bench models' pp/tg tokens/s and a bf16 GEMM. Exit status 0
// when every case and check matches.
#include <radix/error.h>
#include <radix/runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace radix;

Shape shapeOf(const std::string& dtype, const std::string& dims) {
  std::vector<int64_t> d;
  if (dims != "scalar") {
    std::istringstream in(dims);
    for (std::string part; std::getline(in, part, 'x');) d.push_back(std::stoll(part));
  }
  return Shape(d, parseDType(dtype));
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Tensor i32s(const Platform& p, const std::vector<int32_t>& v, bool scalar = false) {
  return Tensor::fromValues(p, scalar ? Shape({}, DType::i32) : Shape({static_cast<int64_t>(v.size())}, DType::i32), v);
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// A model's step programs (radix-gpu-prepare's gpuSteps) take the model's `leaves` weights, then
// ids, position, length, then the KV cache, whose buffers the step donates to its results
// (logits, then the cache in the same order).

// Zeroed caches for a step program's cache leaves.
std::vector<Tensor> stepCache(const Platform& gpu, const Program& p, size_t leaves) {
  std::vector<Tensor> cache;
  for (size_t i = leaves + 3; i < p.argumentShapes().size(); ++i) {
    const Shape& s = p.argumentShapes()[i];
    const std::vector<uint8_t> zeros(s.byteSize(), 0);
    cache.push_back(Tensor::fromBytes(gpu, s, zeros.data(), zeros.size()));
  }
  return cache;
}

// Runs one step; the cache takes the donated buffers back. Returns the logits.
Tensor runStep(const Program& p, const std::vector<Tensor>& weights, const Tensor& ids, const Tensor& pos,
               const Tensor& length, std::vector<Tensor>& cache) {
  std::vector<Tensor> args = weights;
  args.push_back(ids), args.push_back(pos), args.push_back(length);
  args.insert(args.end(), cache.begin(), cache.end());
  cache.clear();
  std::vector<Tensor> results = p.run(args);
  cache.assign(results.begin() + 1, results.end());
  return results.at(0);
}

// "check NAME TOLERANCE PREFILL DECODE LEAVES CHUNK NPROMPT ids... NSTEPS greedy... LOGITS": the
// prompt, then each CPU greedy id fed back (teacher forcing, so that every step is compared);
// the GPU's logits must be within TOLERANCE of the CPU's (|gpu - cpu| / (1 + |cpu|)) and its
// argmax the CPU's, except at a near tie (the CPU's top two within 1e-4 of each other).
bool runCheck(const Platform& gpu, const fs::path& dir, std::istringstream& in) {
  std::string name, prefillEntry, decodeEntry, logitsFile;
  double tolerance = 0;
  size_t leaves = 0, count = 0;
  int64_t chunk = 0;
  in >> name >> tolerance >> prefillEntry >> decodeEntry >> leaves >> chunk >> count;
  std::vector<int32_t> prompt(count), greedy;
  for (int32_t& id : prompt) in >> id;
  in >> count;
  greedy.resize(count);
  for (int32_t& id : greedy) in >> id;
  in >> logitsFile;
  const Program prefill = Program::load(gpu, (dir / prefillEntry).string());
  const Program decode = Program::load(gpu, (dir / decodeEntry).string());
  std::vector<Tensor> weights;
  for (size_t i = 0; i < leaves; ++i) {
    const std::string bytes = readFile(dir / ("data/" + name + ".leaf" + std::to_string(i)));
    weights.push_back(Tensor::fromBytes(gpu, prefill.argumentShapes().at(i), bytes.data(), bytes.size()));
  }
  const std::string expectedBytes = readFile(dir / logitsFile);
  const size_t vocab = expectedBytes.size() / sizeof(float) / greedy.size();
  std::vector<Tensor> cache = stepCache(gpu, prefill, leaves);
  std::vector<int32_t> ids = prompt;
  ids.resize(static_cast<size_t>(chunk), 0);
  Tensor logits = runStep(prefill, weights, i32s(gpu, ids), i32s(gpu, {0}, true),
                          i32s(gpu, {static_cast<int32_t>(prompt.size())}, true), cache);
  double worst = 0;
  int idsEqual = 0, ties = 0;
  for (size_t step = 0; step < greedy.size(); ++step) {
    const std::vector<float> got = logits.toVector<float>();
    std::vector<float> want(vocab);
    std::memcpy(want.data(), expectedBytes.data() + step * vocab * sizeof(float), vocab * sizeof(float));
    if (got.size() != vocab) throw Error("[check] " + name + ": logits of " + std::to_string(got.size()) + " entries");
    for (size_t k = 0; k < vocab; ++k) worst = std::max(worst, std::abs(double(got[k]) - want[k]) / (1 + std::abs(want[k])));
    std::vector<float> sorted = want;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    if (argmax(got) == greedy[step]) ++idsEqual;
    else if (sorted[0] - sorted[1] < 1e-4f * (1 + std::abs(sorted[0]))) ++ties;
    if (step + 1 == greedy.size()) break;
    logits = runStep(decode, weights, i32s(gpu, {greedy[step]}),
                     i32s(gpu, {static_cast<int32_t>(prompt.size() + step)}, true), i32s(gpu, {1}, true), cache);
  }
  const bool ok = worst <= tolerance && idsEqual + ties == static_cast<int>(greedy.size());
  std::printf("%-20s %-8s %12.3g  greedy ids %d of %zu equal (%d near ties)\n", name.c_str(), ok ? "ok" : "MISMATCH", worst,
              idsEqual, greedy.size(), ties);
  return ok;
}

// Random weights for a program's first `leaves` arguments (uniform in [-0.05, 0.05]).
std::vector<Tensor> randomWeights(const Platform& gpu, const Program& p, size_t leaves) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  std::vector<Tensor> out;
  for (size_t i = 0; i < leaves; ++i) {
    const Shape& s = p.argumentShapes().at(i);
    std::vector<float> v(static_cast<size_t>(s.count()));
    for (float& x : v) x = u(rng);
    out.push_back(Tensor::fromValues(gpu, s, v));
  }
  return out;
}

// "bench NAME PREFILL DECODE GREEDY LEAVES PROMPT GEN": ppPROMPT and tgGEN tokens/s as radix bench
// measures them (the greedy id picked on the device and copied back each step), after warm-up
// runs; 3 reps each.
void runBench(const Platform& gpu, const fs::path& dir, std::istringstream& in) {
  std::string name, prefillEntry, decodeEntry, greedyEntry;
  size_t leaves = 0;
  int64_t prompt = 0, gen = 0;
  in >> name >> prefillEntry >> decodeEntry >> greedyEntry >> leaves >> prompt >> gen;
  const Program prefill = Program::load(gpu, (dir / prefillEntry).string());
  const Program decode = Program::load(gpu, (dir / decodeEntry).string());
  const Program greedy = Program::load(gpu, (dir / greedyEntry).string());
  // Greedy leaves the generator's state as it is: zeros do.
  const Shape stateShape = greedy.argumentShapes().at(1);
  const std::vector<uint8_t> zeros(static_cast<size_t>(stateShape.count()) * 4, 0);
  const Tensor rngState = Tensor::fromBytes(gpu, stateShape, zeros.data(), zeros.size());
  const std::vector<Tensor> weights = randomWeights(gpu, prefill, leaves);
  std::mt19937 rng(2);
  std::vector<int32_t> ids(static_cast<size_t>(prompt));
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 1000);
  auto pp = [&] {
    std::vector<Tensor> cache = stepCache(gpu, prefill, leaves);
    (void)runStep(prefill, weights, i32s(gpu, ids), i32s(gpu, {0}, true),
                  i32s(gpu, {static_cast<int32_t>(prompt)}, true), cache).toVector<float>();
  };
  auto tg = [&](int64_t n) {
    std::vector<Tensor> cache = stepCache(gpu, decode, leaves);
    int32_t next = ids[0];
    for (int64_t i = 0; i < n; ++i)
      next = greedy
                 .run(std::vector<Tensor>{runStep(decode, weights, i32s(gpu, {next}), i32s(gpu, {static_cast<int32_t>(i)}, true),
                               i32s(gpu, {1}, true), cache),
                       rngState})
                 .at(0)
                 .toVector<int32_t>()
                 .at(0);
  };
  auto rate = [&](const char* test, int64_t tokens, const std::function<void()>& once) {
    once(), once();
    double best = 0, sum = 0;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      once();
      const double tps = static_cast<double>(tokens) / seconds(t0);
      best = std::max(best, tps), sum += tps;
    }
    std::printf("radix %-18s %s%-6lld %10.1f tok/s (best %.1f)\n", name.c_str(), test, static_cast<long long>(tokens),
                sum / 3, best);
  };
  rate("pp", prompt, pp);
  rate("tg", gen, [&] { tg(gen); });
}

// "gemm NAME FLOPS ENTRY": random operands, 20 timed calls after 3.
void runGemm(const Platform& gpu, const fs::path& dir, std::istringstream& in) {
  std::string name, entry;
  double flops = 0;
  in >> name >> flops >> entry;
  const Program p = Program::load(gpu, (dir / entry).string());
  const std::vector<Tensor> args = randomWeights(gpu, p, p.argumentShapes().size());
  for (int i = 0; i < 3; ++i) (void)p.run(args);
  const int reps = 20;
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) (void)p.run(args);
  const double s = seconds(t0) / reps;
  std::printf("radix %-24s %.3f ms, %.1f TFLOP/s\n", name.c_str(), s * 1e3, flops / s / 1e12);
}

// models.txt's lines; false when a check failed.
bool runModels(const Platform& gpu, const fs::path& dir) {
  std::ifstream list(dir / "models.txt");
  bool ok = true;
  for (std::string line; std::getline(list, line);) {
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    try {
      if (kind == "check") ok = runCheck(gpu, dir, in) && ok;
      else if (kind == "bench") runBench(gpu, dir, in);
      else if (kind == "gemm") runGemm(gpu, dir, in);
    } catch (const Error& e) {
      ok = ok && kind != "check";
      std::printf("%s ERROR %s\n", kind.c_str(), e.what());
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: radix-gpu-check DIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  try {
    const Platform gpu = Platform::cuda();
    std::printf("device: %s\n", std::string(gpu.target()).c_str());
    std::ifstream list(dir / "cases.txt");
    int failed = 0, total = 0;
    std::printf("%-20s %-8s %12s %12s\n", "case", "result", "max error", "ms/call");
    for (std::string line; std::getline(list, line);) {
      std::istringstream in(line);
      std::string name, entry;
      double tolerance = 0;
      size_t numArgs = 0, numResults = 0;
      in >> name >> tolerance >> entry >> numArgs;
      std::vector<Tensor> args;
      for (size_t i = 0; i < numArgs; ++i) {
        std::string file, dtype, dims;
        in >> file >> dtype >> dims;
        const std::string bytes = readFile(dir / file);
        args.push_back(Tensor::fromBytes(gpu, shapeOf(dtype, dims), bytes.data(), bytes.size()));
      }
      in >> numResults;
      std::vector<std::vector<double>> expected;
      for (size_t i = 0; i < numResults; ++i) {
        std::string file, dtype, dims;
        in >> file >> dtype >> dims;
        const std::string bytes = readFile(dir / file);
        expected.push_back(Tensor::fromBytes(Platform::cpu(), shapeOf(dtype, dims), bytes.data(), bytes.size()).toVector<double>());
      }
      ++total;
      try {
        Program p = Program::load(gpu, (dir / entry).string());
        std::vector<Tensor> results = p.run(args);
        double worst = 0;
        for (size_t r = 0; r < results.size(); ++r) {
          const std::vector<double> got = results[r].toVector<double>();
          for (size_t k = 0; k < got.size() && k < expected[r].size(); ++k)
            worst = std::max(worst, std::abs(got[k] - expected[r][k]) / (1 + std::abs(expected[r][k])));
          if (got.size() != expected[r].size()) worst = INFINITY;
        }
        const int reps = 20;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) (void)p.run(args);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
        const bool ok = worst <= tolerance || (tolerance == 0 && worst == 0);
        failed += !ok;
        std::printf("%-20s %-8s %12.3g %12.3f\n", name.c_str(), ok ? "ok" : "MISMATCH", worst, ms);
      } catch (const Error& e) {
        ++failed;
        std::printf("%-20s %-8s %s\n", name.c_str(), "ERROR", e.what());
      }
    }
    std::printf("%d of %d cases match the CPU\n", total - failed, total);
    const bool models = runModels(gpu, dir);
    return failed == 0 && total > 0 && models ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "radix-gpu-check: %s\n", e.what());
    return 1;
  }
}

// radix-gpu-check DIR: the GPU machine's half of the device check (tests/gpu/run.sh), linked
// against the runtime library alone. Loads each case that radix-gpu-prepare wrote into DIR as a
// radix::Program on Platform::cuda(), runs it on the case's inputs, compares the results with the
// CPU's and times the call. Exit status 0 when every case matches.
#include <radix/error.h>
#include <radix/runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
    return failed == 0 && total > 0 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "radix-gpu-check: %s\n", e.what());
    return 1;
  }
}

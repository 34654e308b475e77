// A job where rank 1 fails while rank 0 waits in a collective (tests/CMakeLists.txt, Mpi.failingRank.*):
// "throw" leaves the radix::Error uncaught, "exit" prints it and returns 1. Either way the job must
// end non-zero within the exit timeout, with the error on stderr, instead of hanging.
#include <radix/radix.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const bool uncaught = argc > 1 && std::strcmp(argv[1], "throw") == 0;
  radix::Platform cpu = radix::Platform::cpu();
  radix::Platform grid = cpu.withSharding({.numPartitions = cpu.processCount()});
  const int64_t n = cpu.processCount();
  radix::Tensor x = radix::Tensor::fromValues(grid, radix::Shape({2 * n}, radix::DType::f32).withSharding({0}),
                                              std::vector<float>(static_cast<size_t>(2 * n), 1.0f));
  if (grid.processIndex() != 1) {
    std::vector<float> all = x.toVector<float>();  // a gather: waits for rank 1, which never comes
    std::printf("rank %d gathered %zu values\n", grid.processIndex(), all.size());
    return 0;
  }
  auto bad = [](const radix::Tensor& t) { return t.sum(3); };  // rank 1 has no axis 3: radix::Error
  if (uncaught) {
    radix::compile(grid, bad, x);
    return 0;
  }
  try {
    radix::compile(grid, bad, x);
  } catch (const radix::Error& e) {
    std::fprintf(stderr, "rank 1 failed: %s\n", e.what());
    return 1;
  }
  return 0;
}

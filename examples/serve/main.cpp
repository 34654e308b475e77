// radix-serve: runs a program compiled ahead of time, linked against the runtime library only
// (Radix::runtime: no compiler, LLVM or MLIR in the process). docs/aot.md.
//   radix-mlp                       # compiles the MLP into the cache (or: radix compile)
//   radix-serve [CACHE_DIR]         # finds the MLP's entry there and runs it: y = [20, 0, 0]
#include <radix/error.h>
#include <radix/runtime.h>

#include <cstdio>

#include "mlp/mlp.h"

int main(int argc, char** argv) {
  try {
    const radix::Platform cpu = radix::Platform::cpu();
    radix::Program program = radix::Program::find(cpu, "MLP", {}, argc > 1 ? argv[1] : "");
    // The weights and input as at compile time; the program takes them as the struct's leaves.
    const mlp::MLP model = mlp::example(cpu);
    const std::vector<float> y = program(model, mlp::input(cpu)).at(0).toVector<float>();
    std::printf("radix-serve: %s\n", program.path().c_str());
    std::printf("y = [%g, %g, %g]  (expected [20, 0, 0])\n", y[0], y[1], y[2]);
    return (y[0] == 20 && y[1] == 0 && y[2] == 0) ? 0 : 1;
  } catch (const radix::Error& e) {
    std::fprintf(stderr, "radix-serve: %s\n", e.what());
    return 1;
  }
}

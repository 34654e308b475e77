// An outside serving program: links Radix::runtime alone (no compiler) and loads entries with
// radix::Program; here it only checks that a missing entry is a clear error.
#include <radix/error.h>
#include <radix/runtime.h>

#include <cstdio>
#include <string>

int main() {
  try {
    radix::Program::find(radix::Platform::cpu(), "Nothing", {}, "/nonexistent-radix-cache");
  } catch (const radix::Error& e) {
    std::printf("%s\n", e.what());
    return std::string(e.what()).rfind("[runtime] no loadable entry named \"Nothing\"", 0) == 0 ? 0 : 1;
  }
  return 1;
}

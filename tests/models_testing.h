#pragma once
// Helpers of the model tests (models_oracle_test.cpp, cli_generate_test.cpp): the random test
// models written once per process by tools/make_test_models.py into a temp folder, running a
// command, and the PyTorch oracles of tests/oracle/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "radix/platform.h"

namespace radix::models::testing {

inline const std::string kPython = "/usr/bin/python3";
inline const std::string kSource = RADIX_SOURCE_DIR;

/// Output and exit status of `sh -c command` (stderr kept apart unless redirected).
struct CommandResult {
  std::string out;
  int status = -1;
};

inline CommandResult runCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A temp folder removed at exit, holding gpt2-tiny/, llama-tiny/, llama-tiny.gguf and
/// gpt2-tiny.gguf (fixed seed), and cache/ for the CLI's compiled code.
inline const std::string& testModels() {
  static const std::string dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "radix-models-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return std::string();
    const std::string d = pattern;
    static struct Remove {
      std::string d;
      ~Remove() {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    } remove{d};
    const CommandResult r =
        runCommand(kPython + " " + kSource + "/tools/make_test_models.py " + d + " --size tiny 2>&1");
    if (r.status != 0) ADD_FAILURE() << "make_test_models.py failed:\n" << r.out;
    return d;
  }();
  return dir;
}

/// The host CPU with `threads` and a compile cache in the test models' folder (the suite runs
/// with RADIX_CACHE_DIR=off; models of equal shapes then compile once per process).
inline Platform testPlatform(int threads = 0) {
  CompileOptions options = Platform::cpu().options();
  options.threads = threads;
  options.cache = true;
  options.cacheDir = testModels() + "/cache";
  return Platform::cpu().withOptions(options);
}

/// What an oracle of tests/oracle/ computes: logits[0] for the prompt, logits[i] after feeding
/// greedy[i-1]; greedy[i] = argmax(logits[i]).
struct Oracle {
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> greedy;
};

/// Runs tests/oracle/<script> on an HF folder (memoized per arguments); `extra` is appended to
/// its command line ("--gguf q4_0.gguf").
inline const Oracle& oracle(const std::string& script, const std::string& folder, const std::vector<int32_t>& ids,
                            int steps, const std::string& dtype, const std::string& extra = "") {
  static std::map<std::string, Oracle> memo;
  std::string idText;
  for (int32_t id : ids) idText += (idText.empty() ? "" : " ") + std::to_string(id);
  const std::string command = kPython + " " + kSource + "/tests/oracle/" + script + " " + folder + " --ids '" + idText +
                              "' --steps " + std::to_string(steps) + " --dtype " + dtype + (extra.empty() ? "" : " " + extra);
  auto it = memo.find(command);
  if (it != memo.end()) return it->second;
  Oracle o;
  const CommandResult r = runCommand(command);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.status != 0 || j.is_discarded()) {
    ADD_FAILURE() << command << " failed (" << r.status << "):\n" << r.out;
  } else {
    o.logits = j["logits"].get<std::vector<std::vector<float>>>();
    o.greedy = j["greedy"].get<std::vector<int32_t>>();
  }
  return memo.emplace(command, std::move(o)).first->second;
}

/// Token ids of ASCII text under the test models' byte tokenizer (id = byte value).
inline std::vector<int32_t> byteIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

}  // namespace radix::models::testing

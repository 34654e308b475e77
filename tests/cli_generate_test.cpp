// `radix generate` and `radix bench` as a user runs them: greedy ids equal the PyTorch oracle's,
// seeded sampling is reproducible, the embedded default runs, bad arguments give clean errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "models_testing.h"

namespace {

using namespace radix::models::testing;

/// Runs the CLI with a compile cache in the test models' folder (repeated runs hit it).
CommandResult cli(const std::string& args, bool withStderr = false) {
  return runCommand("RADIX_CACHE_DIR=" + testModels() + "/cache " + RADIX_CLI_PATH + " " + args +
                    (withStderr ? " 2>&1" : " 2>/dev/null"));
}

std::vector<int32_t> parseIds(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

TEST(CliGenerate, GreedyIdsEqualTheOracle) {
  const bool gguf = std::filesystem::exists(kSource + "/tools/gguf_writer.py");  // branch io
  for (const char* model : {"gpt2-tiny", "llama-tiny", "llama-tiny.gguf"})
    // The weights mapped (these small files' default) or read into memory.
    for (const char* residency : {"", " --no-mmap", " --mmap"}) {
      if (!gguf && std::string_view(model).ends_with(".gguf")) continue;
      if (*residency && !std::string_view(model).starts_with("llama")) continue;
      const std::string folder = std::string(model).starts_with("gpt2") ? "gpt2-tiny" : "llama-tiny";
      const std::string script = folder == "gpt2-tiny" ? "gpt2_ref.py" : "llama_ref.py";
      const CommandResult r = cli("generate --model " + testModels() + "/" + model +
                                  " --prompt 'Hello world' -n 6 --temp 0 --ids -t 1" + residency);
      ASSERT_EQ(r.status, 0) << model << residency << ": " << r.out;
      const Oracle& want = oracle(script, testModels() + "/" + folder, byteIds("Hello world"), 6, "f32");
      EXPECT_EQ(parseIds(r.out), want.greedy) << model << residency << ": " << r.out;
    }
}

TEST(CliGenerate, SeededSamplingIsReproducible) {
  const std::string args = "generate --model " + testModels() + "/gpt2-tiny --prompt 'In the beginning' -n 8 --temp 1.2 --top-k 40 --top-p 0.95 --ids";
  const CommandResult a = cli(args + " --seed 3"), b = cli(args + " --seed 3");
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(parseIds(a.out).size(), 8u) << a.out;
}

TEST(CliGenerate, StreamsTextAndReportsSpeed) {
  const CommandResult r = cli("generate --model " + testModels() + "/llama-tiny --prompt 'Hi' -n 4 --seed 1", true);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("Hi", 0), 0u) << r.out;  // the prompt, then the generated text
  EXPECT_NE(r.out.find("prompt: 2 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("generation: 4 tokens"), std::string::npos) << r.out;
}

TEST(CliGenerate, EmbeddedDefaultRuns) {
  const CommandResult r = cli("generate --prompt 'In the beginning' -n 5 --temp 0 --ids");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(parseIds(r.out).size(), 5u) << r.out;
  if (!std::filesystem::exists(kSource + "/models/kjv/model.safetensors")) return;  // the placeholder
  // The KJV model writes words of the KJV (greedy: "... the LORD, and the LORD, ...").
  const CommandResult text = cli("generate --prompt 'In the beginning' -n 24 --temp 0");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(text.out.rfind("In the beginning", 0), 0u) << text.out;
  EXPECT_NE(text.out.find(" the LORD"), std::string::npos) << text.out;
}

TEST(CliGenerate, BadArgumentsGiveCleanErrors) {
  const std::string m = " --model " + testModels() + "/gpt2-tiny";
  // Exit status 2 for a bad command line (with the usage after the message), 1 for a failure.
  struct Case {
    std::string args, message;
    int status;
  };
  const std::vector<Case> cases = {
      {"generate -n 3", "[generate] --prompt TEXT is required", 2},
      {"generate --prompt x" + m, "[generate] -n N (tokens to generate) is required", 2},
      {"generate --prompt x -n abc" + m, "[generate] -n needs a number, got \"abc\"", 2},
      {"generate --prompt x -n 3 --frobnicate" + m, "[generate] unknown option \"--frobnicate\"", 2},
      {"generate --prompt x -n 3 --top-p 0" + m, "[generate] --top-p must be in (0, 1]", 2},
      {"generate --prompt x -n 3 --dtype f64" + m, "[generate] --dtype must be f32, bf16 or f16, got \"f64\"", 2},
      {"generate --prompt x -n 3 --kv-type q8" + m, "[generate] --kv-type must be f32, bf16 or f16, got \"q8\"", 2},
      {"bench --kv-type i8" + m, "[bench] --kv-type must be f32, bf16 or f16, got \"i8\"", 2},
      {"generate --prompt x -n 3 --model /nonexistent/model", "[generate] no model at \"/nonexistent/model\"", 1},
      {"generate --prompt \"$(head -c 200 /dev/zero | tr '\\0' a)\" -n 3" + m,
       "[generate] the prompt's 200 tokens do not fit the model's context of 128", 1},
      {"generate --prompt x -n 3 --model", "[generate] --model needs a value", 2},
      {"bench -p 16", "[bench] --model PATH is required", 2},
      {"bench -t 0" + m, "[bench] -t must be >= 1, got 0", 2},
      {"bench --model " + testModels() + "/model.safetensors", "[bench] no model at", 1},
      {"bench --model " + testModels(), "[bench] [checkpoint] ", 1},
      {"bench --model " + testModels() + "/gpt2-tiny -p -3", "[bench] -p and -n must be >= 0, one > 0", 2},
      {"bench --model " + testModels() + "/gpt2-tiny -p 200 -n 1", "[bench] -p/-n exceed the model's context of 128", 1},
  };
  for (const auto& [args, message, status] : cases) {
    const CommandResult r = cli(args, true);
    EXPECT_EQ(r.status, status) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind(message, 0), 0u) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("usage: radix ") != std::string::npos, status == 2) << args << ": " << r.out;
  }
}

TEST(CliBench, PrintsLlamaBenchRows) {
  const CommandResult r = cli("bench --model " + testModels() + "/gpt2-tiny -p 16 -n 4 -r 1 -t 1 --no-mmap");
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(rows[0], "| model | size | params | dtype | threads | test | t/s |");
  EXPECT_EQ(rows[2].rfind("| gpt2 | 0.5 MiB | 0.13 M | f32 | 1 | pp16 | ", 0), 0u) << rows[2];
  EXPECT_EQ(rows[3].rfind("| gpt2 | 0.5 MiB | 0.13 M | f32 | 1 | tg4 | ", 0), 0u) << rows[3];
}

}  // namespace

// `radix chat`, `radix generate --chat`, `radix info` and the CLI's conventions (--help, exit
// statuses), run as a user runs them, on the tiny test models and chat variants of them written
// here: llama-tiny with ChatML's <|im_start|> / <|im_end|> as special tokens 297 / 298 and a chat
// template (chat-llama/, an HF folder) and the same as an F16 GGUF (chat-llama-f16.gguf).
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "models_testing.h"

namespace {

using namespace radix::models::testing;
namespace fs = std::filesystem;

constexpr int32_t kImStart = 297, kImEnd = 298, kEndOfText = 299;

/// ChatML, as Qwen's templates render it without tools.
const std::string kChatMl =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// Writes chat-llama/ and chat-llama-f16.gguf next to the test models (once per process).
const std::string& chatModels() {
  static const std::string dir = [] {
    const std::string d = testModels();
    const std::string script = d + "/make_chat_models.py";
    std::ofstream(script) << R"PY(
import json, shutil, struct, sys
import numpy as np
sys.path.insert(0, sys.argv[1] + "/tools")
from gguf_writer import GGUFWriter, Value
models, template = sys.argv[2], open(sys.argv[3]).read()
special = {297: "<|im_start|>", 298: "<|im_end|>"}

folder = models + "/chat-llama"
shutil.copytree(models + "/llama-tiny", folder, dirs_exist_ok=True)
tok = json.load(open(folder + "/tokenizer.json"))
vocab = tok["model"]["vocab"]
names = {i: t for t, i in vocab.items()}
for i, name in special.items():
    del vocab[names[i]]
    vocab[name] = i
    tok["added_tokens"].append({"id": i, "content": name, "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": False, "special": True})
json.dump(tok, open(folder + "/tokenizer.json", "w"))
json.dump({"chat_template": template, "eos_token": "<|endoftext|>"}, open(folder + "/tokenizer_config.json", "w"))

# llama-tiny.gguf again with F16 matrices, the special tokens and the template.
types = ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
         "UINT64", "INT64", "FLOAT64"]
formats = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
data = open(models + "/llama-tiny.gguf", "rb").read()
pos = 0
def take(fmt):
    global pos
    (v,) = struct.unpack_from(fmt, data, pos)
    pos += struct.calcsize(fmt)
    return v
def string():
    global pos
    n = take("<Q")
    pos += n
    return data[pos - n:pos].decode()
def scalar(t):
    return string() if t == 8 else take(formats[t])
assert data[:4] == b"GGUF"
pos = 8
tensors, kvs = take("<Q"), take("<Q")
w = GGUFWriter(version=3, alignment=32)
for _ in range(kvs):
    key, t = string(), take("<I")
    if t == 9:
        elem, n = take("<I"), take("<Q")
        value = Value("ARRAY", [scalar(elem) for _ in range(n)], elem=types[elem])
    else:
        value = Value(types[t], scalar(t))
    for i, name in special.items():
        if key == "tokenizer.ggml.tokens":
            value.value[i] = name
        if key == "tokenizer.ggml.token_type":
            value.value[i] = 3
    w.add(key, value)
w.add("tokenizer.chat_template", template)
infos = []
for _ in range(tensors):
    name, n = string(), take("<I")
    dims = [take("<Q") for _ in range(n)][::-1]
    infos.append((name, dims, take("<I"), take("<Q")))
start = (pos + 31) // 32 * 32
for name, dims, t, offset in infos:
    assert t == 0, name
    a = np.frombuffer(data, "<f4", int(np.prod(dims)), start + offset).reshape(dims)
    w.add_tensor(name, a, "F16" if len(dims) >= 2 else "F32")
w.write(models + "/chat-llama-f16.gguf")
)PY";
    std::ofstream(d + "/chatml.jinja") << kChatMl;
    const CommandResult r =
        runCommand(kPython + " " + script + " " + kSource + " " + d + " " + d + "/chatml.jinja 2>&1");
    if (r.status != 0) ADD_FAILURE() << "make_chat_models.py failed:\n" << r.out;
    return d;
  }();
  return dir;
}

/// stdout, stderr and exit status of the CLI (compile cache in the test models' folder).
struct CliRun {
  std::string out, err;
  int status = -1;
};

CliRun radix(const std::string& args, const std::string& stdinText = "") {
  static int serial = 0;
  const std::string err = testModels() + "/stderr-" + std::to_string(++serial);
  std::string command = "RADIX_CACHE_DIR=" + testModels() + "/cache " + RADIX_CLI_PATH + " " + args + " 2>" + err;
  if (!stdinText.empty()) {
    const std::string in = testModels() + "/stdin-" + std::to_string(serial);
    std::ofstream(in) << stdinText;
    command += " <" + in;
  } else {
    command += " </dev/null";
  }
  const CommandResult r = runCommand(command);
  std::ifstream e(err);
  std::stringstream text;
  text << e.rdbuf();
  return {r.out, text.str(), r.status};
}

std::vector<int32_t> parseIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

/// The ids of ChatML text under the test tokenizer: bytes, and the two special tokens whole.
std::vector<int32_t> chatIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 12, "<|im_start|>") == 0) ids.push_back(kImStart), i += 12;
    else if (text.compare(i, 10, "<|im_end|>") == 0) ids.push_back(kImEnd), i += 10;
    else ids.push_back(static_cast<unsigned char>(text[i++]));
  }
  return ids;
}

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// ---- conventions ----

TEST(CliConventions, HelpPrintsUsageOnStdoutAndExitsZero) {
  for (const std::string command : {"generate", "chat", "info", "bench", "quantize", "cache", "targets", "version"})
    for (const std::string flag : {"--help", "-h"}) {
      const CliRun r = radix(command + " " + flag);
      EXPECT_EQ(r.status, 0) << command << " " << flag;
      EXPECT_EQ(r.out.rfind("usage: radix " + command, 0), 0u) << command << " " << flag << ": " << r.out;
      EXPECT_EQ(r.err, "") << command << " " << flag;
    }
  // --help anywhere among a command's flags; `radix help COMMAND`; the whole usage.
  const CliRun late = radix("generate -n 3 --help"), help = radix("help chat");
  EXPECT_EQ(late.status, 0);
  EXPECT_EQ(late.out.rfind("usage: radix generate", 0), 0u) << late.out;
  EXPECT_NE(late.out.find("--chat"), std::string::npos) << late.out;
  EXPECT_EQ(help.status, 0);
  EXPECT_EQ(help.out.rfind("usage: radix chat", 0), 0u) << help.out;
  for (const std::string flag : {"--help", "-h"}) {
    const CliRun r = radix(flag);
    EXPECT_EQ(r.status, 0) << flag;
    for (const char* command : {"generate", "chat", "info", "bench", "quantize", "cache", "targets", "version"})
      EXPECT_NE(r.out.find("radix " + std::string(command)), std::string::npos) << flag << ": " << command;
  }
}

TEST(CliConventions, BadCommandLinesExitTwoWithTheUsageOnStderr) {
  const std::string m = " --model " + testModels() + "/llama-tiny";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "usage: radix generate"},
      {"frobnicate", "radix: unknown command \"frobnicate\""},
      {"--frobnicate", "radix: unknown option \"--frobnicate\""},
      {"help frobnicate", "radix: unknown command \"frobnicate\""},
      {"generate --frobnicate", "[generate] unknown option \"--frobnicate\""},
      {"generate -p x -n 3 --system hi" + m, "[generate] --system and --template need --chat"},
      {"generate --prompt", "[generate] --prompt needs a value"},
      {"generate -p x -n 3 --dtype", "[generate] --dtype needs a value"},
      {"generate -p x -n 3 --compute f8", "[generate] --compute must be f32, bf16 or f16, got \"f8\""},
      {"chat --frobnicate", "[chat] unknown option \"--frobnicate\""},
      {"chat --system", "[chat] --system needs a value"},
      {"chat -n 0" + m, "[chat] -n must be >= 1, got 0"},
      {"chat -n x" + m, "[chat] -n needs a number, got \"x\""},
      {"chat --temp -1" + m, "[chat] --temp must be >= 0"},
      {"chat --ctx 8" + m, "[chat] --ctx must be >= 16, got 8"},
      {"info", "[info] --model PATH is required"},
      {"info --model", "[info] --model needs a value"},
      {"info --frobnicate", "[info] unknown option \"--frobnicate\""},
      {"bench --frobnicate", "[bench] unknown option \"--frobnicate\""},
      {"quantize --to q8_0 -o x.gguf", "[quantize] --model IN is required"},
      {"quantize -m x --to q2_k -o x.gguf", "[quantize] --to q2_k is not one of q8_0, q4_0, q4_1, q5_0, q5_1, q4_k_m, q5_k_m, q6_k"},
      {"bench -p", "[bench] -p needs a value"},
      {"bench -t 1,x" + m, "[bench] -t needs a number, got \"x\""},
      {"cache", "[cache] ls or clear is required"},
      {"cache frobnicate", "[cache] unknown action \"frobnicate\" (ls, clear)"},
      {"cache ls a b", "[cache] unexpected argument \"b\""},
      {"cache ls --all", "[cache] unknown option \"--all\""},
      {"targets --all", "[targets] unknown option \"--all\""},
      {"version 2", "[version] unknown option \"2\""},
  };
  for (const auto& [args, message] : cases) {
    const CliRun r = radix(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(firstLine(r.err).rfind(message, 0), 0u) << args << ": " << r.err;
    const std::string command = args.substr(0, args.find(' '));
    const bool known = command != "frobnicate" && command != "--frobnicate" && command != "help" && !command.empty();
    // The command's usage line (all of them for a bad command).
    EXPECT_NE(r.err.find("usage: radix " + (known ? command : "generate")), std::string::npos) << args << ": " << r.err;
  }
}

// ---- info ----

TEST(CliInfo, DescribesTheTestModels) {
  chatModels();
  // llama-tiny: vocab 300, width 64, 2 layers, 4 heads of 16, 2 KV heads, ffn 176, untied output.
  const int64_t llamaParameters = 2 * 300 * 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 176 + 2 * 64) + 64;
  const std::string llama = "width:         64\nlayers:        2\nheads:         4\nkv heads:      2\n"
                            "head dim:      16\nffn:           176\nvocab:         300\ncontext:       256\n"
                            "rope base:     10000\nnorm eps:      1e-05\n";
  struct Case {
    std::string model, format, config, tensors, chatTemplate;
    int64_t parameters;
  };
  const std::vector<Case> cases = {
      {"llama-tiny", "HF folder (safetensors)", llama, "21 (F32 21)", "none", llamaParameters},
      {"llama-tiny.gguf", "gguf", llama, "21 (F32 21)", "none", llamaParameters},
      {"chat-llama-f16.gguf", "gguf", llama, "21 (F16 16, F32 5)", "yes, " + std::to_string(kChatMl.size()) + " bytes",
       llamaParameters},
      {"chat-llama", "HF folder (safetensors)", llama, "21 (F32 21)",
       "yes, " + std::to_string(kChatMl.size()) + " bytes", llamaParameters},
      {"gpt2-tiny", "HF folder (safetensors)",
       "width:         64\nlayers:        2\nheads:         4\nkv heads:      4\nhead dim:      16\n"
       "vocab:         300\ncontext:       128\nnorm eps:      1e-05\n",
       // The HF GPT-2 layout stores attn.bias / attn.masked_bias buffers: not parameters.
       "32 (F32 32)", "none", 300 * 64 + 128 * 64 + 2 * (4 * 64 + 64 * 192 + 192 + 64 * 64 + 64 + 2 * 64 * 256 + 256 + 64) + 2 * 64},
  };
  for (const Case& c : cases) {
    const std::string path = testModels() + "/" + c.model;
    const CliRun r = radix("info --model " + path);
    ASSERT_EQ(r.status, 0) << c.model << ": " << r.err;
    EXPECT_NE(r.out.find("format:        " + c.format + "\narchitecture:  " +
                         (c.model.starts_with("gpt2") ? "gpt2" : "llama") + "\n" + c.config),
              std::string::npos)
        << c.model << ":\n" << r.out;
    EXPECT_NE(r.out.find("\ntensors:       " + c.tensors + "\n"), std::string::npos) << c.model << ":\n" << r.out;
    EXPECT_NE(r.out.find("\nparameters:    " + std::to_string(c.parameters) + " ("), std::string::npos)
        << c.model << ":\n" << r.out;
    uintmax_t bytes = 0;
    if (fs::is_directory(path)) bytes = fs::file_size(path + "/model.safetensors");
    else bytes = fs::file_size(path);
    EXPECT_NE(r.out.find("\nfile size:     " + std::to_string(bytes) + " bytes"), std::string::npos)
        << c.model << ":\n" << r.out;
    EXPECT_NE(r.out.find("\ntokenizer:     bpe, 300 tokens"), std::string::npos) << c.model << ":\n" << r.out;
    EXPECT_NE(r.out.find("\neos:           299 \"<|endoftext|>\"\n"), std::string::npos) << c.model << ":\n" << r.out;
    EXPECT_NE(r.out.find("\nchat template: " + c.chatTemplate + "\n"), std::string::npos) << c.model << ":\n" << r.out;
    const bool chat = c.model.starts_with("chat");
    EXPECT_EQ(r.out.find("298 \"<|im_end|>\"") != std::string::npos, chat) << c.model << ":\n" << r.out;  // an EOG
  }
}

TEST(CliInfo, DescribesTheOtherFamilies) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      // Qwen3: head_dim 24 != width / heads, rope theta 1e6.
      {"qwen3-tiny", {"architecture:  qwen3\n", "\nhead dim:      24\n", "\nrope base:     1000000\n",
                      "\nnorm eps:      1e-06\n", "\nsliding window: 4096 (unused: use_sliding_window is false)\n"}},
      {"qwen3-tiny.gguf", {"architecture:  qwen3\n", "\nhead dim:      24\n", "\nrope base:     1000000\n"}},
      {"mistral-tiny.gguf", {"architecture:  llama\n", "\nsliding window: 8\n", "\ntensors:       21 (F32 21)\n"}},
  };
  for (const auto& [model, lines] : cases) {
    if (!fs::exists(testModels() + "/" + model)) continue;  // before modelsA's families
    const CliRun r = radix("info --model " + testModels() + "/" + model);
    ASSERT_EQ(r.status, 0) << model << ": " << r.err;
    for (const std::string& want : lines) EXPECT_NE(r.out.find(want), std::string::npos) << model << ": " << want << " in:\n" << r.out;
  }
}

TEST(CliInfo, DescribesArchitecturesRadixCannotRun) {
  // A GGUF of an unknown architecture with a Q8_0 matrix, and no tokenizer.
  const std::string path = testModels() + "/frobnet.gguf";
  const CommandResult w = runCommand(
      kPython + " -c \"import sys; sys.path.insert(0, '" + kSource + "/tools'); import numpy as np; "
      "from gguf_writer import GGUFWriter, Value; g = GGUFWriter(); "
      "g.add('general.architecture', 'frobnet'); g.add('frobnet.embedding_length', Value('UINT32', 32)); "
      "g.add('frobnet.block_count', Value('UINT32', 3)); g.add('frobnet.attention.head_count', [4, 4, 2]); "
      "g.add('frobnet.context_length', Value('UINT32', 512)); "
      "g.add_tensor('token_embd.weight', np.zeros((10, 32), np.float32), 'F32'); "
      "g.add_tensor_bytes('blk.0.w', [2, 32], 'Q8_0', bytes(68)); g.write('" + path + "')\" 2>&1");
  ASSERT_EQ(w.status, 0) << w.out;
  const CliRun r = radix("info --model " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* want : {"architecture:  frobnet\nwidth:         32\nlayers:        3\nheads:         [4, 4, 2]\n",
                           "\ncontext:       512\n", "\ntensors:       2 (F32 1, Q8_0 1)\n", "\nparameters:    384 (",
                           "\ntokenizer:     none (", "\nchat template: none\n"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in:\n" << r.out;
  const CliRun run = radix("generate --model " + path + " -p x -n 1");
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("frobnet"), std::string::npos) << run.err;
  const CliRun missing = radix("info --model /nonexistent/model");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(firstLine(missing.err), "[info] no model at \"/nonexistent/model\" (give an HF folder or a .gguf file)");
}

// ---- dtypes ----

TEST(CliGenerate, F16GgufKeepsItsDtype) {
  const std::string model = chatModels() + "/chat-llama-f16.gguf";
  const Oracle& want = oracle("llama_ref.py", testModels() + "/llama-tiny", byteIds("Hello world"), 6, "f32");
  // bf16 weights in f32 contractions: what the oracle's --dtype bf16 computes.
  const Oracle& bf16 = oracle("llama_ref.py", testModels() + "/llama-tiny", byteIds("Hello world"), 6, "bf16");
  struct Case {
    std::string flags, dtypes;
    const Oracle& want;
  };
  for (const Case& c : {Case{"", "f16 weights, f32 compute", want}, Case{"--dtype f16", "f16 weights, f32 compute", want},
                        Case{"--dtype f32", "f32 weights, f32 compute", want},
                        Case{"--dtype f16 --compute f16", "f16 weights, f16 compute", want},
                        Case{"--dtype bf16", "bf16 weights, f32 compute", bf16},
                        Case{"--kv-type f16", "f16 weights, f32 compute, f16 KV cache", want}}) {
    const CliRun r = radix("generate --model " + model + " --prompt 'Hello world' -n 6 --temp 0 --ids -t 1 " + c.flags);
    ASSERT_EQ(r.status, 0) << c.flags << ": " << r.err;
    EXPECT_NE(r.err.find("[generate] llama, " + c.dtypes + ", load"), std::string::npos) << c.flags << ": " << r.err;
    // The random test model's logits are far apart: f16 rounding keeps the greedy ids.
    EXPECT_EQ(parseIds(r.out), c.want.greedy) << c.flags;
  }
  // Stored f32 stays f32.
  const CliRun f32 = radix("generate --model " + testModels() + "/llama-tiny.gguf --prompt Hi -n 2 --temp 0 --ids");
  EXPECT_NE(f32.err.find("llama, f32 weights, f32 compute"), std::string::npos) << f32.err;
}

// ---- chat ----

TEST(CliChat, GenerateChatRendersTheTemplate) {
  const std::string render = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
                             "<|im_start|>assistant\n";
  const std::vector<int32_t> promptIds = chatIds(render);
  const Oracle& want = oracle("llama_ref.py", testModels() + "/llama-tiny", promptIds, 8, "f32");
  for (const std::string model : {"chat-llama", "chat-llama-f16.gguf"}) {
    const std::string m = "--model " + chatModels() + "/" + model + " -n 8 --temp 0 --ids -t 1 ";
    const CliRun chat = radix("generate " + m + "--chat --system 'Be brief.' --prompt 'Hi there' --verbose");
    ASSERT_EQ(chat.status, 0) << model << ": " << chat.err;
    std::string idsText;
    for (int32_t id : promptIds) idsText += " " + std::to_string(id);
    EXPECT_EQ(firstLine(chat.err), "[generate] prompt ids:" + idsText) << model;
    // The same ids through a plain prompt (special tokens matched whole) generate the same reply,
    // up to the first end-of-generation token, where --chat stops.
    const CliRun plain = radix("generate " + m + "--prompt '" + render + "'");
    ASSERT_EQ(plain.status, 0) << model << ": " << plain.err;
    const std::vector<int32_t> reply = parseIds(chat.out), all = parseIds(plain.out);
    ASSERT_LE(reply.size(), all.size()) << model;
    EXPECT_EQ(reply, std::vector<int32_t>(all.begin(), all.begin() + static_cast<ptrdiff_t>(reply.size()))) << model;
    if (reply.size() < all.size()) EXPECT_TRUE(all[reply.size()] == kImEnd || all[reply.size()] == kEndOfText);
    if (model == "chat-llama") EXPECT_EQ(all, want.greedy);
  }
  // Without a template: a clear error naming --template; a template file given instead.
  const CliRun none = radix("generate --model " + testModels() + "/llama-tiny --chat -p Hi -n 2");
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("has no chat template"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("--template FILE"), std::string::npos) << none.err;
  const CliRun given = radix("generate --model " + testModels() + "/llama-tiny --chat -p Hi -n 2 --ids --temp 0 "
                          "--verbose --template " + chatModels() + "/chatml.jinja");
  EXPECT_EQ(given.status, 0) << given.err;
  // llama-tiny has no <|im_start|> token: the template's markers are plain text there.
  EXPECT_NE(given.err.find("[generate] prompt ids: 60 124 105 109"), std::string::npos) << given.err;
}

/// The "[chat] turn N: K tokens kept in the cache, P prefilled, G generated" lines of --verbose.
struct Turn {
  int64_t kept = 0, prefilled = 0, generated = 0;
  bool stopped = false;
};

std::vector<Turn> turns(const std::string& text) {
  std::vector<Turn> out;
  static const std::regex line(
      R"(\[chat\] turn (\d+): (\d+) tokens kept in the cache, (\d+) prefilled, (\d+) generated( \(end of generation\))?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
    out.push_back({std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4]), (*it)[5].matched});
  return out;
}

/// Checks that turn 2 kept turn 1's tokens and fed only the new text: turn 1's prompt, its reply
/// (all but the last token when it ran to -n), then the user's second message.
void expectIncremental(const std::vector<Turn>& t, const std::string& firstRender, const std::string& secondUser) {
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].kept, 0);
  EXPECT_EQ(t[0].prefilled, static_cast<int64_t>(chatIds(firstRender).size()));
  EXPECT_GT(t[0].generated, 0);
  EXPECT_EQ(t[1].kept, t[0].prefilled + t[0].generated - (t[0].stopped ? 0 : 1));
  // The new text: (the reply's unfed last token) <|im_end|>\n<|im_start|>user\n...<|im_start|>assistant\n
  const int64_t fresh =
      static_cast<int64_t>(chatIds("<|im_end|>\n<|im_start|>user\n" + secondUser + "<|im_end|>\n<|im_start|>assistant\n").size());
  if (t[0].stopped) EXPECT_EQ(t[1].prefilled, fresh);
  else EXPECT_TRUE(t[1].prefilled > fresh && t[1].prefilled <= fresh + 16) << t[1].prefilled << " vs " << fresh;
}

TEST(CliChat, ReadsOneMessagePerLineWithoutATty) {
  const std::string m = "chat --model " + chatModels() + "/chat-llama -n 6 --temp 0 -t 1 --verbose";
  const CliRun r = radix(m, "Hello\n\nHow are you\n");  // the empty line is skipped
  ASSERT_EQ(r.status, 0) << r.err;
  expectIncremental(turns(r.err), "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "How are you");
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // a line per reply
  EXPECT_EQ(r.out.find("> "), std::string::npos) << r.out;  // no prompt without a tty

  // Qwen2.5's template (a default system message, `{%-` trimming) keeps the prefix property too.
  const std::string qwen = kSource + "/tests/fuzz/chat_template/Qwen-Qwen2.5-7B-Instruct.jinja";
  if (fs::exists(qwen)) {
    const CliRun q = radix(m + " --template " + qwen, "Hello\nHow are you\n");
    ASSERT_EQ(q.status, 0) << q.err;
    expectIncremental(turns(q.err),
                      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                      "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
                      "How are you");
  }

  // A system message comes first in the render.
  const CliRun s = radix(m + " --system 'Be brief.'", "Hello\n");
  ASSERT_EQ(s.status, 0) << s.err;
  ASSERT_EQ(turns(s.err).size(), 1u) << s.err;
  EXPECT_EQ(turns(s.err)[0].prefilled,
            static_cast<int64_t>(chatIds("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
                                         "<|im_start|>assistant\n").size()));

  // A template whose render of turn 2 does not extend turn 1's (only the last message): the
  // conversation is prefilled again.
  const std::string last = chatModels() + "/last.jinja";
  std::ofstream(last) << "{% for m in messages %}{% if loop.last %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                         "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  const CliRun again = radix(m + " --template " + last, "Hello\nHow are you\n");
  ASSERT_EQ(again.status, 0) << again.err;
  const std::vector<Turn> t = turns(again.err);
  ASSERT_EQ(t.size(), 2u) << again.err;
  EXPECT_EQ(t[1].kept, 0);
  EXPECT_EQ(t[1].prefilled, static_cast<int64_t>(chatIds("<|im_start|>user\nHow are you<|im_end|>\n<|im_start|>assistant\n").size()));

  // A conversation outgrowing --ctx drops its oldest turns and is prefilled again.
  const CliRun small = radix(m + " --ctx 32", "Hello\nHow are you\n");
  ASSERT_EQ(small.status, 0) << small.err;
  const std::vector<Turn> s2 = turns(small.err);
  ASSERT_EQ(s2.size(), 2u) << small.err;
  EXPECT_EQ(s2[1].kept, 0);
  EXPECT_EQ(s2[1].prefilled, static_cast<int64_t>(chatIds("<|im_start|>user\nHow are you<|im_end|>\n<|im_start|>assistant\n").size()));

  // Errors: a message longer than the context; --ctx beyond the model's; no template; a template
  // file that is missing.
  const CliRun longer = radix(m + " --ctx 32", std::string(40, 'a') + "\n");
  EXPECT_EQ(longer.status, 1);
  const size_t longIds = chatIds("<|im_start|>user\n" + std::string(40, 'a') + "<|im_end|>\n<|im_start|>assistant\n").size();
  EXPECT_EQ(firstLine(longer.err),
            "[chat] the conversation's " + std::to_string(longIds) + " tokens do not fit the context of 32 (--ctx)");
  const CliRun beyond = radix(m + " --ctx 1024", "Hello\n");
  EXPECT_EQ(beyond.status, 1);
  EXPECT_EQ(firstLine(beyond.err), "[chat] --ctx 1024 exceeds the model's context of 256");
  const CliRun none = radix("chat --model " + testModels() + "/llama-tiny", "Hello\n");
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(firstLine(none.err), "[chat] \"" + testModels() + "/llama-tiny\" has no chat template (tokenizer_config.json's "
                                  "chat_template or GGUF's tokenizer.chat_template); give one with --template FILE");
  const CliRun missing = radix("chat --model " + chatModels() + "/chat-llama --template /nonexistent.jinja", "Hello\n");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(firstLine(missing.err), "[chat] cannot read the template file \"/nonexistent.jinja\"");
}

/// Reads the pty until `want` appears in `seen` (or the child closes it); false on EOF.
bool readUntil(int fd, std::string& seen, const std::string& want, size_t from) {
  char buf[4096];
  // Polls in steps; a generous cap keeps a broken binary from hanging the suite.
  for (int waited = 0; seen.find(want, from) == std::string::npos; ) {
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (ready == 0) {
      if ((waited += 200) > 300000) return false;
      continue;
    }
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;  // EIO: the child exited
    seen.append(buf, static_cast<size_t>(n));
  }
  return true;
}

TEST(CliChat, TalksOnATerminalAndEndsAtCtrlD) {
  const std::string cmd = "RADIX_CACHE_DIR=" + testModels() + "/cache exec " + RADIX_CLI_PATH + " chat --model " +
                          chatModels() + "/chat-llama-f16.gguf -n 6 --temp 0 -t 1 --verbose";
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string seen;
  auto say = [&](const std::string& text) { ASSERT_EQ(write(master, text.data(), text.size()), ssize_t(text.size())); };
  ASSERT_TRUE(readUntil(master, seen, "> ", 0)) << seen;
  EXPECT_NE(seen.find("[chat] llama, f16 weights, f32 compute; Ctrl-D ends"), std::string::npos) << seen;
  say("Hello\n");
  ASSERT_TRUE(readUntil(master, seen, "[chat] turn 1:", 0)) << seen;
  ASSERT_TRUE(readUntil(master, seen, "\n> ", seen.find("[chat] turn 1:"))) << seen;
  say("How are you\n");
  ASSERT_TRUE(readUntil(master, seen, "[chat] turn 2:", 0)) << seen;
  ASSERT_TRUE(readUntil(master, seen, "\n> ", seen.find("[chat] turn 2:"))) << seen;
  say("\x04");  // Ctrl-D: end of input
  readUntil(master, seen, "\x01never", 0);  // to EOF
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << seen;
  std::string text = seen;
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());  // the pty writes \r\n
  expectIncremental(turns(text), "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "How are you");
}

}  // namespace

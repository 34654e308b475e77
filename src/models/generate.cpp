// LanguageModel: loads checkpoints of the registered families (families() below), runs bucketed
// steps over an in-place KV cache, samples. See include/radix/models/generate.h for the
// execution scheme.
#include "radix/models/generate.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <chrono>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "radix/models/gemma2.h"
#include "radix/models/gpt2.h"
#include "radix/models/llama.h"
#include "radix/models/mistral.h"
#include "radix/models/phi3.h"
#include "radix/models/qwen2.h"
#include "radix/models/qwen3.h"
#include "radix/module.h"

namespace radix::models {

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error("[generate] " + what); }

/// Parameter count and bytes of every distinct Tensor leaf.
struct Counter {
  std::set<const void*> seen;
  int64_t parameters = 0;
  uint64_t bytes = 0;
  void tensor(const Tensor& t) {
    if (t.isBound() && !seen.insert(t.bufferAddress()).second) return;
    parameters += t.shape().count();
    bytes += t.shape().byteSize();
  }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

int64_t nextPowerOfTwo(int64_t n) { return n <= 1 ? 1 : int64_t{1} << (64 - std::countl_zero(uint64_t(n - 1))); }

/// A tokenizer from GGUF metadata (tokenizer.ggml.*), or nullopt when it has none.
std::optional<Tokenizer> ggufTokenizer(const io::Checkpoint& c) {
  const io::MetaValue* model = c.meta("tokenizer.ggml.model");
  const io::MetaValue* tokens = c.meta("tokenizer.ggml.tokens");
  if (model == nullptr || tokens == nullptr) return std::nullopt;
  VocabSpec spec;
  spec.model = model->asString();
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.pre")) spec.pre = v->asString();
  spec.tokens = tokens->asStrings();
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.scores"))
    for (double x : v->asFloats()) spec.scores.push_back(static_cast<float>(x));
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.token_type"))
    for (int64_t x : v->asInts()) spec.types.push_back(static_cast<int32_t>(x));
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.merges")) spec.merges = v->asStrings();
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.bos_token_id")) spec.bos = static_cast<int32_t>(v->asInt());
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.eos_token_id")) spec.eos = static_cast<int32_t>(v->asInt());
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.unknown_token_id")) spec.unk = static_cast<int32_t>(v->asInt());
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.add_space_prefix")) spec.addSpacePrefix = v->asBool();
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.add_bos_token")) spec.addBos = v->asBool();
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.eot_token_id")) spec.eot = static_cast<int32_t>(v->asInt());
  if (const io::MetaValue* v = c.meta("tokenizer.ggml.eom_token_id")) spec.eom = static_cast<int32_t>(v->asInt());
  return Tokenizer::fromVocab(spec);
}

/// llama.cpp's names of its file types (general.file_type, LLAMA_FTYPE_*), as llama-bench prints them.
std::string fileTypeName(int64_t ftype) {
  static const std::pair<int64_t, const char*> kNames[] = {
      {0, "all F32"},       {1, "F16"},           {2, "Q4_0"},          {3, "Q4_1"},          {7, "Q8_0"},
      {8, "Q5_0"},          {9, "Q5_1"},          {10, "Q2_K - Medium"}, {11, "Q3_K - Small"}, {12, "Q3_K - Medium"},
      {13, "Q3_K - Large"}, {14, "Q4_K - Small"}, {15, "Q4_K - Medium"}, {16, "Q5_K - Small"}, {17, "Q5_K - Medium"},
      {18, "Q6_K"},         {21, "Q2_K - Small"}, {32, "BF16"}};
  for (const auto& [id, text] : kNames)
    if (id == ftype) return text;
  return "file type " + std::to_string(ftype);
}

/// Whether some 2-D tensor is in a GGUF block type (Q8_0, Q4_K, ...).
bool hasQuantizedMatrices(const io::Checkpoint& c) {
  for (const io::TensorInfo& t : c.tensors())
    if (t.dims.size() >= 2 && !t.dtype) return true;
  return false;
}

/// What the weights are stored in: for a GGUF with quantized tensors, its file type's name
/// ("Q4_K - Medium"), else the types of its 2-D tensors ("Q8_0", "Q4_K + Q6_K"); else `dtype`.
std::string weightTypeOf(const io::Checkpoint& c, DType dtype) {
  if (!hasQuantizedMatrices(c)) return std::string(name(dtype));
  std::map<std::string, uint64_t> bytes;
  for (const io::TensorInfo& t : c.tensors())
    if (t.dims.size() >= 2) bytes[t.type] += t.bytes;
  if (const io::MetaValue* v = c.meta("general.file_type"); v && v->kind() == io::MetaValue::Kind::integer)
    return fileTypeName(v->asInt());
  std::vector<std::pair<uint64_t, std::string>> byBytes;
  for (const auto& [type, n] : bytes) byBytes.push_back({n, type});
  std::sort(byBytes.rbegin(), byBytes.rend());
  std::string out;
  for (const auto& [n, type] : byBytes) out += (out.empty() ? "" : " + ") + type;
  return out;
}

}  // namespace

// ---- the implementation behind LanguageModel ----

struct LanguageModel::Impl {
  Platform platform;
  std::string arch;
  std::optional<Tokenizer> tokenizer;
  DType dtype = DType::f32, compute = DType::f32, kv = DType::f32;
  std::string weightType;
  int64_t parameters = 0;
  uint64_t bytes = 0;
  int64_t vocab = 0, maxContext = 0, layers = 0, kvHeads = 0, headDim = 0;
  int64_t context = 0, position = 0;
  std::optional<KvState> cache;
  std::map<std::tuple<double, int64_t, double>, Exe<SampledTokens>> samplers;

  explicit Impl(const Platform& p) : platform(p) {}
  virtual ~Impl() = default;
  /// Runs one step of `ids.dim(0)` tokens of which `length` are real, at `position`.
  virtual Tensor step(const Tensor& ids, const Tensor& position, const Tensor& length) = 0;
  /// Compiles the steps of `ids[i].dim(0)` tokens that do not exist yet, on up to one thread per
  /// core.
  virtual void ensureMany(const std::vector<Tensor>& ids, const Tensor& position, const Tensor& length) = 0;
  /// The chunk lengths (buckets) that feeding `n` tokens at `position` runs.
  std::vector<int64_t> chunks(int64_t n, int64_t from) const {
    std::vector<int64_t> out;
    for (int64_t rest = n, pos = from; rest > 0;) {
      // 1 (decode); 16 (padded) for 2..16 tokens; else the largest power of two <= rest, so that
      // only a last chunk of <= 16 tokens is padded. Halved until it fits the context.
      int64_t bucket = rest == 1 ? 1 : rest <= 16 ? 16 : nextPowerOfTwo(rest + 1) / 2;
      while (bucket > context - pos) bucket /= 2;
      out.push_back(bucket);
      rest -= std::min(rest, bucket);
      pos += bucket;
    }
    return out;
  }
  /// Compiles the steps of these lengths (zero ids; distinct position and length buffers, as
  /// feed() passes them: a compile ties arguments that share a buffer).
  void ensureSteps(const std::vector<int64_t>& lengths) {
    const Tensor position = Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{0});
    const Tensor length = Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{1});
    std::vector<Tensor> ids;
    for (const int64_t b : lengths)
      ids.push_back(Tensor::fromValues(platform, Shape({b}, DType::i32), std::vector<int32_t>(size_t(b), 0)));
    ensureMany(ids, position, length);
  }
  /// Forgets the executables (the context changed).
  virtual void clear() = 0;
  virtual size_t executables() const = 0;
  virtual std::vector<std::pair<int64_t, std::string>> cacheEntries() const = 0;
};

namespace {

template <class M>
struct ModelImpl final : LanguageModel::Impl {
  M model;
  std::map<int64_t, Exe<StepResult>> steps;  // by step length

  ModelImpl(const Platform& p, M m) : Impl(p), model(std::move(m)) {}

  // Compiles are independent, and a cold `radix compile` or first prompt waits for several: one
  // thread per core shares them (not across processes: a sharded compile is a collective).
  void ensureMany(const std::vector<Tensor>& ids, const Tensor& pos, const Tensor& length) override {
    std::vector<const Tensor*> missing;
    for (const Tensor& t : ids)
      if (!steps.contains(t.dim(0)) &&
          std::none_of(missing.begin(), missing.end(), [&](const Tensor* m) { return m->dim(0) == t.dim(0); }))
        missing.push_back(&t);
    const size_t workers = platform.processCount() > 1 ? 1
                           : std::min<size_t>(missing.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::optional<Exe<StepResult>>> built(missing.size());
    std::vector<std::exception_ptr> errors(missing.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < missing.size();) {
        try {
          built[i].emplace(compile(platform, &M::forward, model, *missing[i], pos, length, *cache));
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < missing.size(); ++i) {
      if (errors[i]) std::rethrow_exception(errors[i]);
      steps.emplace(missing[i]->dim(0), std::move(*built[i]));
    }
  }
  Tensor step(const Tensor& ids, const Tensor& pos, const Tensor& length) override {
    if (!steps.contains(ids.dim(0))) ensureMany({ids}, pos, length);
    StepResult r = steps.at(ids.dim(0))(model, ids, pos, length, *cache);
    cache = std::move(r.cache);
    return r.logits;
  }
  void clear() override { steps.clear(); }
  size_t executables() const override { return steps.size(); }
  std::vector<std::pair<int64_t, std::string>> cacheEntries() const override {
    std::vector<std::pair<int64_t, std::string>> out;
    for (const auto& [length, exe] : steps) out.emplace_back(length, exe.cacheEntry());
    return out;
  }
};

template <class M>
std::shared_ptr<LanguageModel::Impl> makeImpl(const Platform& platform, M model) {
  auto impl = std::make_shared<ModelImpl<M>>(platform, std::move(model));
  Counter counter;
  detail::visitLeaves(counter, std::as_const(impl->model));
  impl->parameters = counter.parameters;
  impl->bytes = counter.bytes;
  // Packed weights count their logical elements, not their bytes.
  forEachLayer(impl->model, [&](const std::string&, const auto& layer) {
    if (layer.quant != QuantType::none) impl->parameters += layer.weight.dim(0) * layer.cols - layer.weight.shape().count();
  });
  return impl;
}

/// What the engine reads from a family's config: the vocabulary, the longest context and the
/// KV cache's shape.
struct CacheDims {
  int64_t vocab, positions, layers, kvHeads, headDim;
};
CacheDims cacheDims(const gpt2::Config& c) { return {c.vocab, c.positions, c.layers, c.heads, c.width / c.heads}; }
CacheDims cacheDims(const llama::Config& c) { return {c.vocab, c.positions, c.layers, c.kvHeads, c.headDim}; }
CacheDims cacheDims(const phi3::Config& c) { return {c.vocab, c.positions, c.layers, c.kvHeads, c.headDim}; }
CacheDims cacheDims(const gemma2::Config& c) { return {c.vocab, c.positions, c.layers, c.kvHeads, c.headDim}; }

using Loader = std::shared_ptr<LanguageModel::Impl> (*)(const Platform&, const io::Checkpoint&, const LoadOptions&,
                                                       const ConfigValues&);

/// A family's loader from its config reader, config(checkpoint, extra), and its model loader,
/// load(platform, checkpoint, dtype, compute, extra); the model's forward is a step.
template <auto readConfig, auto loadModel>
std::shared_ptr<LanguageModel::Impl> loadFamily(const Platform& platform, const io::Checkpoint& checkpoint,
                                                const LoadOptions& options, const ConfigValues& extra) {
  const CacheDims d = cacheDims(readConfig(checkpoint, extra));
  std::shared_ptr<LanguageModel::Impl> impl =
      makeImpl(platform, loadModel(platform, checkpoint, options.dtype, options.compute, extra));
  impl->vocab = d.vocab, impl->maxContext = d.positions, impl->layers = d.layers;
  impl->kvHeads = d.kvHeads / tensorParallel(platform), impl->headDim = d.headDim;  // this process's heads
  return impl;
}

/// The architectures LanguageModel runs. `names`: HF config.json model_type and GGUF
/// general.architecture spellings; the first is architecture()'s. Adding a family: its header
/// in radix/models/ (a struct over radix::nn, config() and load()), and one line here.
struct Family {
  std::vector<std::string_view> names;
  Loader load;
};

const std::vector<Family>& families() {
  static const std::vector<Family> kFamilies = {
      {{"gpt2"}, loadFamily<&gpt2::Config::fromCheckpoint, &gpt2::Model::load>},
      {{"llama"}, loadFamily<&llama::config, &llama::load>},
      // llama.cpp's converter writes Mistral as "llama" (with its q/k permutation).
      {{"mistral"}, loadFamily<&mistral::config, &mistral::load>},
      {{"qwen2"}, loadFamily<&qwen2::config, &qwen2::load>},
      {{"qwen3"}, loadFamily<&qwen3::config, &qwen3::load>},
      {{"phi3"}, loadFamily<&phi3::Config::fromCheckpoint, &phi3::Model::load>},
      {{"gemma2"}, loadFamily<&gemma2::Config::fromCheckpoint, &gemma2::Model::load>},
  };
  return kFamilies;
}

const Family* findFamily(std::string_view name) {
  for (const Family& f : families())
    for (std::string_view n : f.names)
      if (n == name) return &f;
  return nullptr;
}

/// "Qwen2ForCausalLM" -> "qwen2", "GPT2LMHeadModel" -> "gpt2": HF class names are the
/// model_type in CamelCase plus a head's name.
std::string typeOfClass(std::string name) {
  for (std::string_view head : {"ForCausalLM", "LMHeadModel", "Model"})
    if (name.ends_with(head)) {
      name.resize(name.size() - head.size());
      break;
    }
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

/// The family of a checkpoint, from GGUF's general.architecture, config.json's model_type or
/// architectures, or the tensor names.
const Family& familyOf(const io::Checkpoint& c, const std::string& configType) {
  std::string arch = configType;
  if (arch.empty())
    if (const io::MetaValue* v = c.meta("general.architecture"); v && v->kind() == io::MetaValue::Kind::string)
      arch = v->asString();
  if (arch.empty())
    if (const io::MetaValue* v = c.meta("model_type"); v && v->kind() == io::MetaValue::Kind::string)
      arch = v->asString();
  if (arch.empty())
    if (const io::MetaValue* v = c.meta("architectures"); v && v->kind() == io::MetaValue::Kind::array) {
      const std::vector<std::string> names = v->asStrings();
      if (!names.empty()) arch = typeOfClass(names[0]);
    }
  if (arch.empty()) {
    if (findTensor(c, {"wte.weight"})) arch = "gpt2";
    if (findTensor(c, {"embed_tokens.weight"})) arch = "llama";
  }
  if (const Family* f = findFamily(arch)) return *f;
  std::string supported;
  for (const Family& f : families())
    for (std::string_view n : f.names) supported += (supported.empty() ? "" : ", ") + std::string(n);
  fail("unsupported architecture \"" + arch + "\" in " + c.folder() + " (supported: " + supported + ")");
}

}  // namespace

LanguageModel LanguageModel::fromCheckpoint(const Platform& platform, const io::Checkpoint& checkpoint,
                                            std::optional<Tokenizer> tokenizer, const LoadOptions& options,
                                            std::string_view configJson) {
  auto floating = [](DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; };
  if (!floating(options.dtype)) fail("weights must be f32, bf16 or f16");
  if (options.kvDtype && !floating(*options.kvDtype))
    fail("the KV cache must be f32, bf16 or f16, got " + std::string(name(*options.kvDtype)));
  ConfigValues extra;
  std::string configType;
  if (!configJson.empty()) {
    nlohmann::json j = nlohmann::json::parse(configJson, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail("the config.json given is not a JSON object");
    for (auto& [key, value] : j.items()) {
      if (value.is_number()) extra[key] = value.get<double>();
      if (value.is_boolean()) extra[key] = value.get<bool>() ? 1 : 0;
    }
    if (j.contains("model_type") && j["model_type"].is_string()) configType = j["model_type"].get<std::string>();
  }
  const Family& family = familyOf(checkpoint, configType);
  std::shared_ptr<Impl> impl = family.load(platform, checkpoint, options, extra);
  const std::string arch(family.names.front());
  impl->arch = arch;
  impl->tokenizer = std::move(tokenizer);
  impl->dtype = options.dtype;
  impl->compute = options.compute.value_or(options.dtype);
  // Quantized weights under f32 activations keep an f16 cache by default, as llama.cpp does.
  impl->kv = options.kvDtype.value_or(
      impl->compute == DType::f32 && hasQuantizedMatrices(checkpoint) ? DType::f16 : impl->compute);
  impl->weightType = weightTypeOf(checkpoint, options.dtype);
  return LanguageModel(std::move(impl));
}

LanguageModel LanguageModel::open(const Platform& platform, const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("no model at \"" + path + "\" (give an HF folder or a .gguf file)");
  io::Residency residency = options.residency;
  if (residency == io::Residency::automatic && (platform.target() != "cpu" || platform.processCount() > 1))
    residency = io::Residency::mapped;
  const io::Checkpoint checkpoint = io::Checkpoint::open(path, residency);
  std::optional<Tokenizer> tokenizer;
  if (isGguf(checkpoint)) {
    tokenizer = ggufTokenizer(checkpoint);
  } else {
    const fs::path folder = checkpoint.folder();
    for (const char* name : {"tokenizer.json", "vocab.json", "tokenizer.model"})
      if (fs::exists(folder / name, ec)) {
        tokenizer = Tokenizer::fromFile(folder.string());
        break;
      }
  }
  return fromCheckpoint(platform, checkpoint, std::move(tokenizer), options);
}

const std::string& LanguageModel::architecture() const { return impl_->arch; }
int64_t LanguageModel::parameters() const { return impl_->parameters; }
uint64_t LanguageModel::weightBytes() const { return impl_->bytes; }
DType LanguageModel::dtype() const { return impl_->dtype; }
const std::string& LanguageModel::weightType() const { return impl_->weightType; }
DType LanguageModel::computeDtype() const { return impl_->compute; }
DType LanguageModel::kvDtype() const { return impl_->kv; }
int64_t LanguageModel::vocabSize() const { return impl_->vocab; }
int64_t LanguageModel::maxContext() const { return impl_->maxContext; }
bool LanguageModel::hasTokenizer() const { return impl_->tokenizer.has_value(); }
const Tokenizer& LanguageModel::tokenizer() const {
  if (!impl_->tokenizer) fail("this " + impl_->arch + " model has no tokenizer (no tokenizer files next to it)");
  return *impl_->tokenizer;
}
size_t LanguageModel::executables() const { return impl_->executables(); }
std::vector<std::pair<int64_t, std::string>> LanguageModel::cacheEntries() const { return impl_->cacheEntries(); }
int64_t LanguageModel::context() const { return impl_->context; }
int64_t LanguageModel::position() const { return impl_->position; }

void LanguageModel::reset(int64_t tokens) {
  Impl& m = *impl_;
  if (tokens < 1) fail("a sequence needs room for at least 1 token, got " + std::to_string(tokens));
  if (tokens > m.maxContext)
    fail(std::to_string(tokens) + " tokens do not fit the model's context of " + std::to_string(m.maxContext));
  const int64_t context = std::min(std::max<int64_t>(16, nextPowerOfTwo(tokens)), m.maxContext);
  if (context != m.context) {
    m.clear();
    m.cache.reset();
    m.cache = KvState::zeros(m.platform, m.layers, context, m.kvHeads, m.headDim, m.kv);
    m.context = context;
  }
  // Stale entries past the position are masked (and overwritten before they become visible).
  m.position = 0;
}

Tensor LanguageModel::feed(std::span<const int32_t> ids) {
  Impl& m = *impl_;
  if (m.context == 0) fail("feed() before reset()");
  if (ids.empty()) fail("no tokens to feed");
  for (int32_t id : ids)
    if (id < 0 || id >= m.vocab)
      fail("token id " + std::to_string(id) + " out of range for a vocabulary of " + std::to_string(m.vocab));
  const int64_t n = static_cast<int64_t>(ids.size());
  if (m.position + n > m.context)
    fail(std::to_string(n) + " tokens at position " + std::to_string(m.position) + " do not fit the context of " +
         std::to_string(m.context) + " (reset with more room)");
  Tensor logits;
  size_t done = 0;
  for (const int64_t bucket : m.chunks(n, m.position)) {
    const int64_t take = std::min(n - static_cast<int64_t>(done), bucket);
    std::vector<int32_t> padded(static_cast<size_t>(bucket), 0);
    std::copy_n(ids.begin() + static_cast<ptrdiff_t>(done), take, padded.begin());
    const Tensor t = Tensor::fromValues(m.platform, Shape({bucket}, DType::i32), padded);
    const Tensor pos = Tensor::fromValues(m.platform, Shape({}, DType::i32), std::vector<int32_t>{int32_t(m.position)});
    const Tensor len = Tensor::fromValues(m.platform, Shape({}, DType::i32), std::vector<int32_t>{int32_t(take)});
    logits = m.step(t, pos, len);
    m.position += take;
    done += static_cast<size_t>(take);
  }
  return logits;
}

void LanguageModel::prepare(int64_t promptTokens) {
  Impl& m = *impl_;
  if (m.context == 0) fail("prepare() before reset()");
  if (promptTokens < 1 || promptTokens > m.context)
    fail(std::to_string(promptTokens) + " prompt tokens do not fit the context of " + std::to_string(m.context));
  std::vector<int64_t> buckets = m.chunks(promptTokens, 0);
  buckets.push_back(1);
  m.ensureSteps(buckets);
}

void LanguageModel::prepareAll() {
  Impl& m = *impl_;
  if (m.context == 0) fail("prepareAll() before reset()");
  std::vector<int64_t> buckets = {1};
  for (int64_t b = std::min<int64_t>(16, m.context); b <= m.context; b *= 2)
    for (int64_t chunk : m.chunks(b, 0)) buckets.push_back(chunk);
  m.ensureSteps(buckets);
}

namespace {
// Greedy on the host where the logits are host memory; on a device, the compiled sampler's
// argmax, so that only the id comes back.
bool sampledOnHost(const LanguageModel::Impl& m, const Sampling& s) {
  return s.temperature == 0 && m.platform.target() == "cpu";
}

// The first index of the largest of x[0, n), NaN never winning (0 when all are NaN): eight
// running maxima, then the first element that matches.
int64_t argmax(const float* x, int64_t n) {
  float best[8];
  std::fill(best, best + 8, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) best[l] = x[i + l] > best[l] ? x[i + l] : best[l];
  float top = *std::max_element(best, best + 8);
  for (; i < n; ++i) top = x[i] > top ? x[i] : top;
  for (i = 0; i < n; ++i)
    if (x[i] == top) return i;
  return 0;
}
}  // namespace

int32_t LanguageModel::sample(const Tensor& logits, const Sampling& s, Rng& rng) {
  Impl& m = *impl_;
  if (s.temperature < 0 || s.topK < 0 || !(s.topP > 0 && s.topP <= 1))
    fail("sampling needs temperature >= 0, top-k >= 0 and top-p in (0, 1]");
  if (sampledOnHost(m, s)) {
    // In place: a copy of the logits each token is a 128 KB+ malloc and free (glibc then
    // consolidates its free lists every time).
    if (logits.dtype() == DType::f32 && logits.localShape() == logits.shape())
      return static_cast<int32_t>(argmax(static_cast<const float*>(logits.bufferAddress()), logits.shape().count()));
    const std::vector<float> v = logits.toVector<float>();
    return static_cast<int32_t>(argmax(v.data(), static_cast<int64_t>(v.size())));
  }
  const auto key = std::make_tuple(s.temperature, s.topK, s.topP);
  const SamplingOptions options{.temperature = s.temperature, .topK = s.topK, .topP = s.topP};
  auto fn = [options](Tensor l, Rng r) { return sampleTokens(l.withTags({"voc"}), options, r); };
  auto it = m.samplers.find(key);
  if (it == m.samplers.end()) it = m.samplers.emplace(key, compile(m.platform, fn, logits, rng)).first;
  SampledTokens out = it->second(logits, rng);
  rng = out.rng;
  return out.tokens.toVector<int32_t>().at(0);
}

void LanguageModel::prepareSampler(const Sampling& sampling) {
  if (sampledOnHost(*impl_, sampling)) return;
  Rng scratch = Rng::init(impl_->platform, sampling.seed);
  (void)sample(Tensor::fromValues(impl_->platform, Shape({impl_->vocab}, DType::f32).withTags({"voc"}),
                                  std::vector<float>(size_t(impl_->vocab), 0.f)),
               sampling, scratch);
}

std::vector<int32_t> LanguageModel::generate(std::span<const int32_t> prompt, int64_t n, const Sampling& sampling,
                                             const std::function<void(int32_t)>& onToken, GenerateStats* stats,
                                             bool stopAtEos) {
  using Clock = std::chrono::steady_clock;
  if (prompt.empty()) fail("the prompt has no tokens");
  if (n < 0) fail("cannot generate a negative number of tokens");
  const int64_t promptLength = static_cast<int64_t>(prompt.size());
  if (promptLength >= impl_->maxContext)
    fail(std::to_string(promptLength) + " prompt tokens do not fit the model's context of " +
         std::to_string(impl_->maxContext) + " with room to generate");
  reset(std::min(promptLength + std::max<int64_t>(n, 1), impl_->maxContext));
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  Rng rng = Rng::init(impl_->platform, sampling.seed);
  const int32_t eos = impl_->tokenizer ? impl_->tokenizer->eos() : -1;
  prepare(promptLength);
  if (promptLength + n > context()) impl_->ensureSteps(impl_->chunks(context() / 2, 0));  // a context shift's chunks
  prepareSampler(sampling);
  const auto t0 = Clock::now();
  Tensor logits = feed(prompt);
  std::vector<int32_t> out;
  int32_t next = n > 0 ? sample(logits, sampling, rng) : 0;
  const auto t1 = Clock::now();
  int64_t steps = 0;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(next);
    if (onToken) onToken(next);
    if (i + 1 == n || (stopAtEos && next == eos)) break;
    history.push_back(next);
    if (position() == context()) {
      // The context is full: start over from its last half (a context shift, as llama.cpp's).
      const int64_t keep = context() / 2;
      impl_->position = 0;
      logits = feed(std::span<const int32_t>(history).last(static_cast<size_t>(keep)));
    } else {
      logits = feed(std::span<const int32_t>(&next, 1));
    }
    ++steps;
    next = sample(logits, sampling, rng);
  }
  const auto t2 = Clock::now();
  if (stats) {
    stats->promptTokens = static_cast<int64_t>(prompt.size());
    stats->generatedTokens = static_cast<int64_t>(out.size());
    stats->decodeSteps = steps;
    stats->promptSeconds = std::chrono::duration<double>(t1 - t0).count();
    stats->generateSeconds = std::chrono::duration<double>(t2 - t1).count();
  }
  return out;
}

// ---- UTF-8 streaming ----

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  // Find where the last (possibly unfinished) sequence starts, within the last 4 bytes.
  size_t keep = 0;
  const size_t n = pending_.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    const auto c = static_cast<unsigned char>(pending_[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    const size_t need = c >= 0xF8 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back) keep = back;
    break;
  }
  std::string ready = pending_.substr(0, n - keep);
  pending_.erase(0, n - keep);
  return ready;
}

std::string Utf8Stream::flush() { return std::exchange(pending_, {}); }

}  // namespace radix::models

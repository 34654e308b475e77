// The radix CLI's shared pieces (tools/cli.h): model options and loading.
#include "cli.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <span>

#include "radix/collectives.h"
#include "radix/io.h"
#include "radix/module.h"
#include "radix/tokenizer.h"

extern "C" {
extern const unsigned char radix_default_config[], radix_default_config_end[];
extern const unsigned char radix_default_model[], radix_default_model_end[];
extern const unsigned char radix_default_tokenizer[], radix_default_tokenizer_end[];
}

namespace radix::cli {

DType parseDtype(std::string_view verb, std::string_view flag, std::string_view text) {
  if (text == "f32") return DType::f32;
  if (text == "bf16") return DType::bf16;
  if (text == "f16") return DType::f16;
  throw UsageError{"[" + std::string(verb) + "] " + std::string(flag) + " must be f32, bf16 or f16, got \"" +
                   std::string(text) + "\""};
}

int parseDevice(std::string_view verb, std::string_view d) {
  if (d == "cpu") return -1;
  if (d == "cuda") return 0;
  if (d.starts_with("cuda:") && d.size() > 5 && d.size() < 9 && d.find_first_not_of("0123456789", 5) == std::string_view::npos)
    return std::stoi(std::string(d.substr(5)));
  throw UsageError{"[" + std::string(verb) + "] --device is cpu, cuda or cuda:N, got \"" + std::string(d) + "\""};
}

Platform platformWith(int threads) {
  Platform cpu = Platform::cpu();
  // Under mpirun -np N the processes run one tensor-parallel model (docs/sharding.md); only the
  // first prints.
  if (const int ranks = cpu.processCount(); ranks > 1) {
    cpu = cpu.withSharding({.numPartitions = ranks});
    if (cpu.processIndex() != 0 && !std::freopen("/dev/null", "w", stdout))
      throw Error("[platform] cannot silence rank " + std::to_string(cpu.processIndex()) + "'s stdout");
  }
  CompileOptions options = cpu.options();
  options.threads = threads;
  return cpu.withOptions(options);
}

bool runOption(Args& args, std::string_view flag, RunOptions& o) {
  if (flag == "--model" || flag == "-m") o.model = std::string(args.value(flag));
  else if (flag == "--temp") o.sampling.temperature = args.number<double>(flag);
  else if (flag == "--top-k") o.sampling.topK = args.number<int64_t>(flag);
  else if (flag == "--top-p") o.sampling.topP = args.number<double>(flag);
  else if (flag == "--seed") o.sampling.seed = args.number<uint64_t>(flag), o.seeded = true;
  else if (flag == "-t" || flag == "--threads") o.threads = args.number<int>(flag);
  else if (flag == "--dtype") o.dtype = parseDtype(args.verb, flag, args.value(flag));
  else if (flag == "--compute") o.compute = parseDtype(args.verb, flag, args.value(flag));
  else if (flag == "--kv-type") o.kv = parseDtype(args.verb, flag, args.value(flag));
  else if (flag == "--system") o.system = std::string(args.value(flag));
  else if (flag == "--template") o.templateFile = std::string(args.value(flag));
  else if (flag == "--verbose" || flag == "-v") o.verbose = true;
  else if (flag == "--device") o.cudaDevice = parseDevice(args.verb, args.value(flag));
  else if (flag == "--mmap") o.residency = io::Residency::mapped;
  else if (flag == "--no-mmap") o.residency = io::Residency::copied;
  else return false;
  return true;
}

void checkRunOptions(const std::string& verb, RunOptions& o) {
  const std::string v = "[" + verb + "] ";
  if (o.threads < 0) throw UsageError{v + "-t must be >= 1, got " + std::to_string(o.threads)};
  if (o.sampling.temperature < 0) throw UsageError{v + "--temp must be >= 0"};
  if (o.sampling.topK < 0) throw UsageError{v + "--top-k must be >= 0"};
  if (!(o.sampling.topP > 0 && o.sampling.topP <= 1)) throw UsageError{v + "--top-p must be in (0, 1]"};
  if (!o.seeded) o.sampling.seed = std::random_device{}();
  // A tensor-parallel job samples the same tokens on every rank: rank 0's seed.
  const Platform cpu = platformWith(o.threads);
  if (!o.seeded && cpu.processCount() > 1) {
    const bool first = cpu.processIndex() == 0;
    const std::vector<int32_t> halves = {first ? static_cast<int32_t>(o.sampling.seed & 0xffff) : 0,
                                         first ? static_cast<int32_t>((o.sampling.seed >> 16) & 0xffff) : 0};
    const Tensor mine = Tensor::fromValues(cpu, Shape({2}, DType::i32), halves);
    const std::vector<int32_t> seed =
        compile(cpu, [](const Tensor& t) { return allReduce(t, ReduceOp::sum); }, mine)(mine).toVector<int32_t>();
    o.sampling.seed = static_cast<uint64_t>(seed[0]) | static_cast<uint64_t>(seed[1]) << 16;
  }
}

namespace {

/// The floating-point dtype holding most of the weight matrices' elements; f32 when none has one
/// (quantized-only files).
DType storedDtype(const io::Checkpoint& checkpoint) {
  std::map<DType, int64_t> elements;
  for (const io::TensorInfo& t : checkpoint.tensors()) {
    if (!t.dtype || t.dims.size() < 2) continue;
    if (*t.dtype != DType::f32 && *t.dtype != DType::f16 && *t.dtype != DType::bf16) continue;
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    elements[*t.dtype] += n;
  }
  DType best = DType::f32;
  int64_t most = 0;
  for (const auto& [dtype, n] : elements)
    if (n > most) best = dtype, most = n;
  return best;
}

models::LanguageModel embeddedModel(const Platform& cpu, const models::LoadOptions& options) {
  auto span = [](const unsigned char* begin, const unsigned char* end) {
    return std::span<const uint8_t>(begin, static_cast<size_t>(end - begin));
  };
  auto text = [](const unsigned char* begin, const unsigned char* end) {
    return std::string_view(reinterpret_cast<const char*>(begin), static_cast<size_t>(end - begin));
  };
  io::Checkpoint checkpoint =
      io::Checkpoint::fromSafetensorsBytes(span(radix_default_model, radix_default_model_end), "embedded model");
  Tokenizer tokenizer =
      Tokenizer::fromJson(text(radix_default_tokenizer, radix_default_tokenizer_end), "embedded tokenizer.json");
  return models::LanguageModel::fromCheckpoint(cpu, checkpoint, std::move(tokenizer), options,
                                               text(radix_default_config, radix_default_config_end));
}

}  // namespace

models::LoadOptions chooseDtypes(const RunOptions& o) {
  models::LoadOptions load;
  if (o.dtype) {
    load.dtype = *o.dtype;
  } else if (o.model) {
    std::error_code ec;
    // A missing path is LanguageModel::open's error to give.
    if (std::filesystem::exists(*o.model, ec)) load.dtype = storedDtype(io::Checkpoint::open(*o.model));
  }
  load.compute = o.compute.value_or(DType::f32);
  load.kvDtype = o.kv;
  if (o.residency) load.residency = *o.residency;
  return load;
}

Platform platformFor(const RunOptions& o) {
  const Platform cpu = !o.cudaArch.empty() ? Platform::cudaTarget(o.cudaArch)
                       : o.cudaDevice >= 0 ? Platform::cuda(o.cudaDevice)
                                           : platformWith(o.threads);
  if (o.targetCpu.empty() && o.targetFeatures.empty() && o.cacheDir.empty()) return cpu;
  CompileOptions options = cpu.options();
  options.targetCpu = o.targetCpu;
  options.targetFeatures = o.targetFeatures;
  options.cacheDir = o.cacheDir;
  if (!o.cacheDir.empty()) options.cache = true;
  return cpu.withOptions(options);
}

models::LanguageModel openModel(const RunOptions& o, const models::LoadOptions& load) {
  const Platform cpu = platformFor(o);
  return o.model ? models::LanguageModel::open(cpu, *o.model, load) : embeddedModel(cpu, load);
}

std::string dtypesText(const models::LanguageModel& lm) {
  std::string text = lm.weightType() + " weights, " + std::string(name(lm.computeDtype())) + " compute";
  if (lm.kvDtype() != lm.computeDtype()) text += ", " + std::string(name(lm.kvDtype())) + " KV cache";
  return text;
}

}  // namespace radix::cli

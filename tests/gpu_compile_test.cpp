// The CUDA target without a GPU (docs/gpu.md): programs of each op family compile to host code
// that embeds sm_90a cubins (assembled by ptxas), written to the cache; Platform::cuda on a
// machine without the driver is a clear [platform] error.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io_testing.h"
#include "mlp/mlp.h"
#include "ops_testing.h"
#include "radix/runtime.h"
#include "compiler/gpu.h"
#include "runtime/cache.h"
#include "compiler/kernels/conv.h"
#include "runtime/cudnn.h"
#include "runtime/elf.h"

namespace {

namespace fs = std::filesystem;
using namespace radix;
using opstest::expectError;

constexpr uint16_t kEmCuda = 190;

Platform cudaIn(const fs::path& dir) {
  CompileOptions o;
  o.cache = true;
  o.cacheDir = dir.string();
  return Platform::cudaTarget("sm_90a").withOptions(o);
}

// The cubins embedded in an object: ELF images for the CUDA machine inside the host object.
std::vector<std::string> embeddedCubins(const std::string& object) {
  std::vector<std::string> out;
  for (size_t at = object.find("\x7f" "ELF", 1); at != std::string::npos; at = object.find("\x7f" "ELF", at + 1)) {
    if (object.size() - at < sizeof(Elf64_Ehdr)) break;
    Elf64_Ehdr eh;
    std::memcpy(&eh, object.data() + at, sizeof eh);
    if (eh.e_machine != kEmCuda) continue;
    // The image ends with its section table.
    const size_t end = eh.e_shoff + size_t(eh.e_shnum) * eh.e_shentsize;
    if (end <= object.size() - at) out.push_back(object.substr(at, end));
  }
  return out;
}

// Kernels in a cubin: its ".text.<kernel>" sections.
size_t kernelCount(const std::string& cubin) {
  size_t n = 0;
  for (size_t at = cubin.find(".text."); at != std::string::npos; at = cubin.find(".text.", at + 1)) ++n;
  return n;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Compiles fn on the CUDA target and checks the entry: the program table says cuda:sm_90a and
// the object carries at least `kernels` cubins for sm_90.
template <class R, class F, class... Args>
void expectCubins(const char* what, size_t kernels, const F& fn, const Args&... args) {
  if (detail::findPtxas().empty()) GTEST_SKIP() << "no ptxas (the CUDA toolkit) on PATH or in /usr/local/cuda/bin";
  radix::iotest::TempDir dir(std::string("gpu-") + what);
  const Platform gpu = cudaIn(dir.path);
  Exe<R> exe = compile(gpu, fn, args...);
  ASSERT_FALSE(exe.cacheEntry().empty()) << what;
  std::string why;
  auto entry = detail::readProgramEntry(exe.cacheEntry(), why);
  ASSERT_TRUE(entry) << what << ": " << why;
  EXPECT_EQ(entry->target, "cuda:sm_90a") << what;
  EXPECT_EQ(entry->cpu, "x86-64") << what << ": the host side is baseline x86-64";
  const std::vector<std::string> cubins = embeddedCubins(readFile(fs::path(exe.cacheEntry()) / "entry.o"));
  ASSERT_EQ(cubins.size(), 1u) << what << ": one cubin holds every kernel";
  EXPECT_GE(kernelCount(cubins[0]), kernels) << what;
  for (const std::string& c : cubins) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, c.data(), sizeof eh);
    // EF_CUDA_SM: bits 8..15 from ELF ABI version 8 (CUDA 12.8's ptxas on), bits 0..7 before.
    const unsigned sm = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
    EXPECT_EQ(sm, 90u) << what << ": the cubin is for SM " << sm;
  }
  // A compile-only target: running says so, naming the entry.
  expectError([&] { (void)exe(args...); }, "[exe]", "without a device (Platform::cudaTarget compiles only)");
  // The runtime loads the entry on a device-less CUDA platform: the object's constructors register
  // its cubin (lazily: no driver is needed until a launch); the CPU platform refuses it.
  const std::string object = readFile(fs::path(exe.cacheEntry()) / "entry.o");
  std::string refused;
  EXPECT_EQ(detail::LinkedObject::link(object, refused), nullptr);
  EXPECT_EQ(refused, "unsupported (entry.o has static constructors or destructors)");
  Program p = Program::load(Platform::cudaTarget("sm_90a"), exe.cacheEntry());
  expectError([&] { (void)p(args...); }, "[exe]", "without a device (Platform::cudaTarget compiles only)");
  expectError([&] { Program::load(Platform::cpu(), exe.cacheEntry()); }, "[runtime] the entry was compiled for target \"cuda:sm_90a\"",
              "not for this platform's \"cpu\"");
  // A second compile hits the cache.
  EXPECT_TRUE(compile(gpu, fn, args...).fromCache()) << what;
}

TEST(GpuCompile, ElementwiseReductionsContractionsAndRowOps) {
  const Tensor a(Shape({64, 300}, DType::f32)), b(Shape({64, 300}, DType::f32));
  expectCubins<Tensor>("elementwise", 1, [](const Tensor& x, const Tensor& y) { return x.mul(y).add(x.exp()).tanh(); }, a, b);
  expectCubins<Tensor>("reduction", 1, [](const Tensor& x) { return x.sum(1); }, a);
  const Tensor w(Shape({300, 70}, DType::f32));
  expectCubins<Tensor>("matmul", 2, [](const Tensor& x, const Tensor& y) { return x.dotGeneral(y, {{1, 0}}, {}); }, a, w);
  expectCubins<Tensor>("softmax", 3, [](const Tensor& x) { return x.softmax(1); }, a);
  const Tensor h(Shape({64, 300}, DType::bf16));
  expectCubins<Tensor>("bf16", 1, [](const Tensor& x) { return x.mul(x).convert(DType::f32); }, h);
}

TEST(GpuCompile, ModelWithRadixCallsAndTiedWeights) {
  const mlp::MLP model = mlp::placeholders();
  expectCubins<Tensor>("mlp", 1, &mlp::MLP::forward, model, Tensor(Shape({2}, DType::f32)));
}

TEST(GpuCompile, PlatformErrors) {
  try {
    const Platform gpu = Platform::cuda();
    GTEST_SKIP() << "this machine has a CUDA device: " << gpu.target();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[platform] CUDA is not available: ", 0), 0u) << what;
  }
  expectError([] { Platform::cudaTarget("sm90"); }, "[platform] a CUDA target is sm_<digits>[a]", "\"sm90\"");
  expectError([] { Platform::cudaTarget("sm_"); }, "[platform]", "");
  EXPECT_EQ(Platform::cudaTarget("sm_89").target(), "cuda:sm_89");
  EXPECT_FALSE(Platform::cudaTarget("sm_90a").canRun());
  EXPECT_TRUE(Platform::cpu().canRun());
}

}  // namespace

namespace {

// radix-split-reductions, the CUDA path's split of reductions with few outputs (gpu.cpp), run on
// the CPU through CompileOptions::extraPasses: the same numbers as the whole reductions, for
// sums, maxima, means, softmax and layer norm rows, a whole-tensor sum, and the ops it must
// leave alone (a column reduction, an argmax, short rows).
TEST(GpuCompile, SplitReductionsKeepTheNumbers) {
  using radix::Tensor;
  radix::CompileOptions whole, split;
  whole.cache = split.cache = false;
  split.extraPasses = "convert-elementwise-to-linalg,func.func(linalg-generalize-named-ops,radix-split-reductions)";
  const radix::Platform a = radix::Platform::cpu().withOptions(whole), b = radix::Platform::cpu().withOptions(split);
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"sum of rows", [](const Tensor& x) { return x.sum(1); }},
      {"max of rows", [](const Tensor& x) { return x.max(1); }},
      {"mean of rows", [](const Tensor& x) { return x.mean(1); }},
      {"softmax", [](const Tensor& x) { return x.softmax(1); }},
      {"layer norm", [](const Tensor& x) {
         const Tensor m = x.mean(1).broad(x.shape());
         const Tensor c = x.sub(m);
         return c.div(c.mul(c).mean(1).addConstant(1e-5).sqrt().broad(x.shape()));
       }},
      {"whole sum", [](const Tensor& x) { return x.sum(0).sum(0); }},
      {"column sum (left whole)", [](const Tensor& x) { return x.sum(0); }},
      {"argmax (left whole)", [](const Tensor& x) { return x.argMax(1).indices; }},
  };
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{3, 4096}, {5, 1000}, {2, 100}}) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 1009) / 200.f - 2.5f;
    const Tensor xa = Tensor::fromValues(a, radix::Shape({rows, cols}, radix::DType::f32), v);
    const Tensor xb = Tensor::fromValues(b, radix::Shape({rows, cols}, radix::DType::f32), v);
    for (const auto& [name, fn] : ops) {
      SCOPED_TRACE(std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(cols));
      const std::vector<double> want = radix::compile(a, fn, xa)(xa).toVector<double>();
      const std::vector<double> got = radix::compile(b, fn, xb)(xb).toVector<double>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
    }
  }
  // The split happened: a 3 x 4096 row sum reduces 64 chunks of 64 per row first.
  radix::iotest::TempDir dump("split-reductions");
  split.dumpDir = dump.path.string();
  split.dumpPasses = true;
  split.dumpPassRegex = "radix-split-reductions";
  const radix::Platform c = radix::Platform::cpu().withOptions(split);
  const Tensor x = Tensor::fromValues(c, radix::Shape({3, 4096}, radix::DType::f32), std::vector<float>(3 * 4096, 1.f));
  EXPECT_EQ(radix::compile(c, ops[0].second, x)(x).toVector<float>(), (std::vector<float>{4096, 4096, 4096}));
  const std::string text = radix::iotest::passDump(dump.path, "radix-split-reductions");
  EXPECT_NE(text.find("tensor<3x4096xf32> into tensor<3x64x64xf32>"), std::string::npos) << text;
}

}  // namespace

// The graphs radix_cuda_attention and radix_cuda_conv build, descriptor by descriptor, in the
// real cuDNN of the CUDA toolkit: every tensor and operation must finalize (attribute names,
// types and values as cuDNN 9 takes them). Planning needs a GPU; the fake cuDNN (FakeCuda.*)
// runs the graphs.
TEST(GpuCompile, GraphsFinalizeInCudnn) {
  const char* root = std::getenv("RADIX_CUDA_PATH");
  const std::string path = std::string(root && *root ? root : "/usr/local/cuda") + "/lib64/libcudnn.so.9";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) GTEST_SKIP() << "no cuDNN at " << path << " (the CUDA toolkit's)";
  radix::detail::cuda::Dnn dnn;
  ASSERT_EQ(radix::detail::cuda::bindDnn(lib, dnn), "");
  using radix::detail::cuda::AttentionShape;
  std::vector<AttentionShape> shapes;
  AttentionShape prefill;  // causal, grouped heads, no offset
  prefill.batch = 2, prefill.hq = 12, prefill.hk = 4, prefill.nq = prefill.nk = 512, prefill.hd = 64;
  prefill.strides = {{{512 * 12 * 64, 64, 12 * 64}, {512 * 4 * 64, 64, 4 * 64}, {512 * 4 * 64, 64, 4 * 64},
                      {512 * 12 * 64, 64, 12 * 64}}};
  prefill.causal = true;
  shapes.push_back(prefill);
  AttentionShape decode = prefill;  // at a runtime offset, with key lengths too
  decode.nq = 1, decode.nk = 2048, decode.offset = true, decode.lengths = true, decode.lengthStride = 1;
  shapes.push_back(decode);
  for (const AttentionShape& s : shapes) {
    radix::detail::cuda::DnnGraph g(dnn);
    radix::detail::cuda::buildAttention(g, s);
    EXPECT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g.operations(), s.lengths ? 18u : 15u);
  }
  // A 3x3 convolution, padded by 1, stride 2, 2 groups, bf16 NCHW {2, 8, 15, 17} -> {2, 6, 8, 9}.
  using namespace radix::kernels;
  std::vector<int64_t> conv = {int64_t(Elem::bf16), 2, 0, 2, 8, 6, 2};
  conv.insert(conv.end(), {15, 3, 8, 2, 1, 1, 1, 17, 3, 9, 2, 1, 1, 1});
  conv.insert(conv.end(), {8 * 15 * 17, 15 * 17, 17, 1, 4 * 9, 9, 3, 1, 6 * 8 * 9, 8 * 9, 9, 1});
  radix::detail::cuda::DnnGraph g(dnn);
  radix::detail::cuda::buildConvolution(g, conv.data());
  EXPECT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g.operations(), 1u);
}

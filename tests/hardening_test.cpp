// Bad and edge inputs, as a hostile user would try them: one row per misuse, each run in a forked
// child so that a crash, a hang or a sanitizer report is a failed row and not the end of the run.
// A row expects a radix::Error whose message starts with the op's name, or the defined result.
#include <fcntl.h>
#include <radix/cache.h>
#include <radix/radix.h>
#include <radix/testing.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mlp/mlp.h"
#include "ops_testing.h"

namespace fs = std::filesystem;

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

const radix::Platform& cpu() {
  static const radix::Platform platform = radix::Platform::cpu();
  return platform;
}

/// What a row does in the child: throw radix::Error for an expected error, or check the result and
/// throw std::runtime_error when it is wrong.
struct Row {
  std::string name;
  std::function<void()> run;
  std::string prefix;  // "" when the row must succeed
  std::string part = {};
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

/// Runs f in a forked child (stderr captured, 120 s alarm); returns "ok", "error: <what>",
/// "other: <what>", or how the child died, followed by its stderr.
std::string inChild(const std::function<void()>& f) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    alarm(120);
    std::string outcome;
    try {
      f();
      outcome = "ok";
    } catch (const radix::Error& e) {
      outcome = std::string("error: ") + e.what();
    } catch (const std::exception& e) {
      outcome = std::string("other: ") + e.what();
    }
    outcome = "\n@@" + outcome;
    if (write(fds[1], outcome.data(), outcome.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const size_t at = out.rfind("\n@@");
  const std::string log = at == std::string::npos ? out : out.substr(0, at);
  if (WIFSIGNALED(status)) return "crashed with signal " + std::to_string(WTERMSIG(status)) + "\n" + log;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || at == std::string::npos)
    return "died with exit status " + std::to_string(WEXITSTATUS(status)) + "\n" + log;
  return out.substr(at + 3) + (log.empty() ? "" : "\n" + log);
}

void expectRow(const std::function<void()>& run, const std::string& prefix, const std::string& part) {
  const std::string outcome = inChild(run);
  const std::string first = outcome.substr(0, outcome.find('\n'));
  if (prefix.empty()) {
    EXPECT_EQ(first, "ok") << outcome;
  } else {
    EXPECT_TRUE(first.starts_with("error: " + prefix)) << "expected a radix::Error starting with " << prefix
                                                        << "\ngot: " << outcome;
    EXPECT_NE(first.find(part), std::string::npos) << "expected the message to contain: " << part << "\ngot: " << outcome;
  }
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

template <class T>
std::string str(const std::vector<T>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

template <class T>
void expectValues(const std::vector<T>& got, const std::vector<T>& want) {
  check(got == want, "got " + str(got) + ", expected " + str(want));
}

radix::Platform withThreads(int threads) {
  radix::CompileOptions o;
  o.threads = threads;
  return cpu().withOptions(o);
}

// ---- rows ----

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

template <class T>
Row binaryValues(std::string name, DType dtype, std::vector<T> a, std::vector<T> b, std::vector<T> want,
                 Tensor (*op)(const Tensor&, const Tensor&)) {
  return {name, [=] {
            const Shape s({static_cast<int64_t>(a.size())}, dtype);
            auto fn = [op](const Tensor& x, const Tensor& y) { return op(x, y); };
            Tensor r = radix::testing::compileAndCall(cpu(), fn, Tensor::fromValues(cpu(), s, a), Tensor::fromValues(cpu(), s, b));
            expectValues(r.toVector<T>(), want);
          }, ""};
}

Tensor divOp(const Tensor& x, const Tensor& y) { return x.div(y); }

std::vector<Row> integerRows() {
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  return {
      binaryValues<int32_t>("div_i32_by_zero_and_int_min_by_minus_one", DType::i32, {7, -7, 0, kMin32, kMin32, 9},
                            {0, 0, 0, -1, 0, -2}, {-1, -1, -1, kMin32, -1, -4}, divOp),
      binaryValues<int8_t>("div_i8_by_zero_and_min_by_minus_one", DType::i8, {5, -128, -128}, {0, -1, 1}, {-1, -128, -128}, divOp),
      binaryValues<int64_t>("div_i64_by_zero_and_min_by_minus_one", DType::i64, {5, min64}, {0, -1}, {-1, min64}, divOp),
      binaryValues<uint8_t>("div_u8_by_zero_is_all_ones", DType::u8, {7, 200, 0}, {0, 0, 3}, {255, 255, 0}, divOp),
      binaryValues<uint32_t>("div_u32_by_zero_is_all_ones", DType::u32, {7, 0}, {0, 0}, {0xffffffffu, 0xffffffffu}, divOp),
  };
}

std::vector<Row> zeroSizeRows() {
  auto dotZero = [](int threads) {
    return [threads] {
      auto fn = [](const Tensor& a, const Tensor& b) { return a.dotGeneral(b, {{1, 0}}, {}); };
      Tensor a = Tensor::fromValues(cpu(), Shape({2, 0}, DType::f32), std::vector<float>{});
      Tensor b = Tensor::fromValues(cpu(), Shape({0, 2}, DType::f32), std::vector<float>{});
      Tensor r = radix::testing::compileAndCall(withThreads(threads), fn, a, b);
      check(r.shape() == Shape({2, 2}, DType::f32), "shape " + r.shape().str());
      expectValues(r.toVector<float>(), {0, 0, 0, 0});
    };
  };
  return {
      {"dotGeneral_zero_size_contraction_threads1", dotZero(1), ""},
      {"dotGeneral_zero_size_contraction_threads_default", dotZero(0), ""},
      {"mul_zero_by_one_is_zero_size", [] {
         auto fn = [](const Tensor& a, const Tensor& b) { return a.mul(b); };
         Tensor r = radix::testing::compileAndCall(cpu(), fn, Tensor::fromValues(cpu(), Shape({0}, DType::f32), std::vector<float>{}),
                                                   Tensor::fromValues(cpu(), Shape({1}, DType::f32), std::vector<float>{2}));
         check(r.shape() == Shape({0}, DType::f32), "shape " + r.shape().str());
       }, ""},
      {"sum_over_zero_size_axis_is_zero", [] {
         auto fn = [](const Tensor& a) { return a.sum(1); };
         Tensor r = radix::testing::compileAndCall(cpu(), fn, Tensor::fromValues(cpu(), Shape({3, 0}, DType::f32), std::vector<float>{}));
         expectValues(r.toVector<float>(), {0, 0, 0});
       }, ""},
      {"add_zero_size", [] {
         auto fn = [](const Tensor& a) { return a.add(a).transpose({1, 0}); };
         Tensor r = radix::testing::compileAndCall(cpu(), fn, Tensor::fromValues(cpu(), Shape({0, 3}, DType::f32), std::vector<float>{}));
         check(r.shape() == Shape({3, 0}, DType::f32), "shape " + r.shape().str());
       }, ""},
  };
}

std::vector<Row> overflowRows() {
  const int64_t big = int64_t{1} << 40, b31 = int64_t{1} << 31;
  return {
      {"shape_count_overflows", [=] { Shape({big, big}, DType::f32); }, "[shape]", "larger than 2^62 bytes"},
      {"fromValues_of_overflowing_shape", [=] { Tensor::fromValues(cpu(), Shape({big, big, 0, big}, DType::f32), std::vector<float>{}); }, ""},
      {"broadcast_to_2p31_squared", [=] {
         auto fn = [=](const Tensor& x) { return x.broad(Shape({b31, b31}, DType::f32)); };
         radix::compile(cpu(), fn, Tensor(Shape({1}, DType::f32)));
       }, "[shape]", "{2147483648,2147483648}:f32"},
      {"withDtype_overflows", [] { Shape({int64_t{1} << 61}, DType::u8).withDtype(DType::f64); }, "[withDtype]", "larger than 2^62"},
      {"reshape_count_overflows", [=] {
         auto fn = [=](const Tensor& x) { return x.reshape({big, big}); };
         radix::compile(cpu(), fn, Tensor(Shape({4}, DType::f32)));
       }, "[reshape]", "1099511627776"},
      {"huge_buffer_is_an_allocation_error", [] {
         Tensor::fromBytes(cpu(), Shape({int64_t{1} << 60}, DType::f32), nullptr, size_t{1} << 62);
       }, "[buffer]", "out of memory"},
  };
}

std::vector<Row> optionRows() {
  auto options = [](auto set) {
    return [set] {
      radix::CompileOptions o;
      set(o);
      cpu().withOptions(o);
    };
  };
  auto sharding = [](int partitions) {
    return [partitions] { cpu().withSharding(radix::Sharding{.numReplicas = 1, .numPartitions = partitions}); };
  };
  return {
      {"targetCpu_unknown", options([](radix::CompileOptions& o) { o.targetCpu = "no-such-cpu"; }), "[compile]",
       "unknown target CPU \"no-such-cpu\""},
      {"targetFeature_unknown", options([](radix::CompileOptions& o) { o.targetFeatures = "+avx2,+no-such-feature"; }), "[compile]",
       "+no-such-feature"},
      {"targetCpu_known", options([](radix::CompileOptions& o) { o.targetCpu = "x86-64"; }), ""},
      {"threads_negative", options([](radix::CompileOptions& o) { o.threads = -5; }), "[platform]", "got -5"},
      {"threads_huge", options([](radix::CompileOptions& o) { o.threads = 1 << 30; }), "[platform]", "threads"},
      {"optLevel_out_of_range", options([](radix::CompileOptions& o) { o.optLevel = 7; }), "[platform]", "got 7"},
      {"numPartitions_INT_MAX", sharding(INT_MAX), "[platform]", "2147483647"},
      {"numPartitions_zero", sharding(0), "[platform]", "numPartitions"},
      {"numPartitions_outside_mpirun", sharding(2), "[platform]", "run under mpirun -np 2"},
      {"partitions_do_not_divide_the_sharded_axis", [] {
         auto fn = [](const Tensor& x) { return x.addConstant(1); };
         radix::compile(cpu().withSharding({.numReplicas = 1, .numPartitions = 4, .enabled = false}), fn,
                        Tensor(Shape({3, 8}, DType::f32).withSharding({0})));
       }, "[compile]", "axis 0 of size 3 is sharded over 4 partitions"},
  };
}

std::vector<Row> dtypeRows() {
  return {
      {"sizeOf_invalid_dtype", [] { radix::sizeOf(static_cast<DType>(200)); }, "[dtype]", "invalid DType 200"},
      {"name_of_invalid_dtype", [] { check(radix::name(static_cast<DType>(13)) == "invalid", "name"); }, ""},
      {"shape_of_invalid_dtype", [] { Shape({2}, static_cast<DType>(13)); }, "[shape]", "invalid DType 13"},
      {"parseDType_unknown", [] { radix::parseDType("f8"); }, "[dtype]", "\"f8\""},
      {"convert_to_invalid_dtype", [] {
         auto fn = [](const Tensor& x) { return x.convert(static_cast<DType>(13)); };
         radix::compile(cpu(), fn, Tensor(Shape({3}, DType::f32)));
       }, "[convert]", "invalid DType 13"},
  };
}

std::vector<Row> hostRows() {
  return {
      {"fromValues_nan_and_inf_into_i32_saturate", [] {
         Tensor t = Tensor::fromValues(cpu(), Shape({5}, DType::i32), std::vector<double>{kNaN, kInf, -kInf, 1e30, -2.9});
         expectValues(t.toVector<int32_t>(), {0, kMax32, kMin32, kMax32, -2});
       }, ""},
      {"fromValues_out_of_range_into_u8_saturate", [] {
         Tensor t = Tensor::fromValues(cpu(), Shape({4}, DType::u8), std::vector<int>{-1, 300, 255, 7});
         expectValues(t.toVector<int>(), {0, 255, 255, 7});
         Tensor f = Tensor::fromValues(cpu(), Shape({3}, DType::u8), std::vector<float>{-1.5f, 300.f, NAN});
         expectValues(f.toVector<int>(), {0, 255, 0});
       }, ""},
      {"toVector_int32_of_nan_and_huge", [] {
         Tensor t = Tensor::fromValues(cpu(), Shape({3}, DType::f32), std::vector<float>{NAN, 3e9f, -3e9f});
         expectValues(t.toVector<int32_t>(), {0, kMax32, kMin32});
       }, ""},
      {"fromValues_double_beyond_float_is_inf", [] {
         Tensor t = Tensor::fromValues(cpu(), Shape({2}, DType::f32), std::vector<double>{1e300, -1e300});
         expectValues(t.toVector<float>(), {INFINITY, -INFINITY});
       }, ""},
      {"every_host_type_round_trips", [] {
         const Shape s({3}, DType::i16);
         expectValues(Tensor::fromValues(cpu(), s, std::vector<int16_t>{-3, 0, 300}).toVector<int16_t>(), {-3, 0, 300});
         expectValues(Tensor::fromValues(cpu(), s.withDtype(DType::u16), std::vector<uint16_t>{1, 60000, 7}).toVector<uint16_t>(),
                      {1, 60000, 7});
         expectValues(Tensor::fromValues(cpu(), s.withDtype(DType::i8), std::vector<int8_t>{-128, 0, 127}).toVector<int8_t>(),
                      {-128, 0, 127});
         expectValues(Tensor::fromValues(cpu(), s.withDtype(DType::bool_), std::vector<bool>{true, false, true}).toVector<bool>(),
                      {true, false, true});
         expectValues(Tensor::fromValues(cpu(), s.withDtype(DType::bf16), std::vector<int8_t>{-2, 0, 5}).toVector<double>(),
                      {-2, 0, 5});
         expectValues(Tensor::fromValues(cpu(), s.withDtype(DType::u64), std::vector<uint64_t>{~0ull, 0, 5}).toVector<uint64_t>(),
                      {~0ull, 0, 5});
       }, ""},
      {"fromValues_count_mismatch", [] { Tensor::fromValues(cpu(), Shape({3}, DType::f32), std::vector<float>{1}); },
       "[fromValues]", "1 values for {3}:f32"},
      {"addConstant_nan_and_huge_on_integers_saturate", [] {
         auto fn = [](const Tensor& x) { return std::pair{x.addConstant(kNaN), x.addConstant(1e30)}; };
         Tensor x = Tensor::fromValues(cpu(), Shape({2}, DType::i32), std::vector<int>{0, -5});
         auto [a, b] = radix::testing::compileAndCall(cpu(), fn, x);
         expectValues(a.toVector<int32_t>(), {0, -5});
         expectValues(b.toVector<int32_t>(), {kMax32, kMax32 - 5});
       }, ""},
  };
}

// ---- cache files as untrusted input ----

/// A fresh cache folder with one compiled MLP entry; `tamper` edits it; the next compile must
/// warn with `why`, recompile, compute the right result, and leave a repaired entry.
Row cacheRow(std::string name, std::function<void(const fs::path& entry)> tamper, std::string why) {
  return {name, [=] {
            const fs::path dir = fs::temp_directory_path() / ("radix-hardening-" + std::to_string(getpid()));
            fs::remove_all(dir);
            radix::CompileOptions o;
            o.cacheDir = dir.string();
            const radix::Platform p = cpu().withOptions(o);
            mlp::MLP nn = mlp::example(cpu());
            Tensor x = mlp::input(cpu());
            const std::vector<float> want = radix::compile(p, &mlp::MLP::forward, nn, x)(nn, x).toVector<float>();
            auto entries = radix::listCache(dir.string());
            check(entries.size() == 1, "one entry expected");
            tamper(entries[0].path);
            ::testing::internal::CaptureStderr();
            auto exe = radix::compile(p, &mlp::MLP::forward, nn, x);
            const std::string log = ::testing::internal::GetCapturedStderr();
            check(!exe.fromCache(), "the tampered entry was used");
            check(log.find("radix: warning: cache entry") != std::string::npos && log.find(why) != std::string::npos,
                  "expected a warning naming \"" + why + "\", got: " + log);
            expectValues(exe(nn, x).toVector<float>(), want);
            check(radix::compile(p, &mlp::MLP::forward, nn, x).fromCache(), "the entry was not repaired");
            fs::remove_all(dir);
          }, ""};
}

nlohmann::json readMeta(const fs::path& entry) {
  std::ifstream in(entry / "meta.json");
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

void writeMeta(const fs::path& entry, const nlohmann::json& meta) { std::ofstream(entry / "meta.json") << meta.dump(); }

std::function<void(const fs::path&)> setMeta(const char* field, nlohmann::json value) {
  return [=](const fs::path& entry) {
    nlohmann::json meta = readMeta(entry);
    meta[field] = value;
    writeMeta(entry, meta);
  };
}

std::function<void(const fs::path&)> replaceBy(const char* file, std::function<void(const fs::path&)> make) {
  return [=](const fs::path& entry) {
    fs::remove(entry / file);
    make(entry / file);
  };
}

/// Another model's object, with meta.json's checksum fields patched to match it.
void foreignObject(const fs::path& entry) {
  const fs::path other = entry.parent_path().parent_path().parent_path() / ("radix-hardening-other-" + std::to_string(getpid()));
  radix::CompileOptions o;
  o.cacheDir = other.string();
  auto fn = [](const Tensor& a) { return a.mulConstant(3); };
  radix::compile(cpu().withOptions(o), fn, Tensor(mlp::input(cpu()).shape()));
  const fs::path otherEntry = radix::listCache(other.string()).at(0).path;
  fs::copy_file(otherEntry / "entry.o", entry / "entry.o", fs::copy_options::overwrite_existing);
  std::ifstream in(entry / "entry.o", std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(bytes.data(), bytes.size(), 0)));
  nlohmann::json meta = readMeta(entry);
  meta["object_xxh64"] = hex;
  meta["object_bytes"] = bytes.size();
  writeMeta(entry, meta);
  fs::remove_all(other);
}

std::vector<Row> cacheRows() {
  auto toDevZero = [](const fs::path& p) { fs::create_symlink("/dev/zero", p); };
  return {
      cacheRow("result_alias_out_of_range", setMeta("result_alias", {5}), "result_alias out of range"),
      cacheRow("result_alias_self", setMeta("result_alias", {0}), "result_alias out of range"),
      cacheRow("result_alias_huge", setMeta("result_alias", {int64_t{1} << 40}), "result_alias out of range"),
      cacheRow("result_alias_too_many", setMeta("result_alias", {-1, -1}), "result count differs"),
      cacheRow("result_alias_not_integers", setMeta("result_alias", {"x"}), "non-integer"),
      cacheRow("key_is_a_number", setMeta("key", 12), "wrong type"),
      cacheRow("radix_is_null", setMeta("radix", nullptr), "wrong type"),
      cacheRow("object_bytes_is_a_string", setMeta("object_bytes", "12"), "wrong type"),
      cacheRow("object_bytes_negative", setMeta("object_bytes", -1), "wrong type"),
      cacheRow("meta_is_an_array", [](const fs::path& e) { std::ofstream(e / "meta.json") << "[1,2]"; }, "not a JSON object"),
      cacheRow("meta_is_empty", [](const fs::path& e) { std::ofstream(e / "meta.json"); }, "corrupt"),
      cacheRow("object_symlinked_to_dev_zero", replaceBy("entry.o", toDevZero), "symbolic link"),
      cacheRow("meta_symlinked_to_dev_zero", replaceBy("meta.json", toDevZero), "symbolic link"),
      cacheRow("meta_is_a_fifo", replaceBy("meta.json", [](const fs::path& p) { mkfifo(p.c_str(), 0600); }), "not a regular file"),
      cacheRow("object_is_a_folder", replaceBy("entry.o", [](const fs::path& p) { fs::create_directory(p); }), "not a regular file"),
      cacheRow("object_is_missing", replaceBy("entry.o", [](const fs::path&) {}), "missing"),
      cacheRow("object_from_another_model_with_patched_checksum", foreignObject, "foreign"),
      cacheRow("object_is_garbage_with_patched_checksum", [](const fs::path& e) {
        std::ofstream(e / "entry.o", std::ios::binary) << std::string(4096, 'x');
        nlohmann::json meta = readMeta(e);
        const std::string g(4096, 'x');
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(g.data(), g.size(), 0)));
        meta["object_xxh64"] = hex;
        meta["object_bytes"] = g.size();
        writeMeta(e, meta);
      }, "no object file"),
  };
}

std::vector<Row> litterRows() {
  return {
      {"jit_leaves_no_perf_or_debug_files", [] {
         auto count = [](const fs::path& d) {
           std::error_code ec;
           size_t n = 0;
           for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) ++n;
           return n;
         };
         const fs::path tmpJit = "/tmp/.debug/jit";
         const size_t before = count(tmpJit);
         radix::CompileOptions o;
         o.cache = false;
         auto fn = [](const Tensor& a) { return a.addConstant(1); };
         radix::compile(cpu().withOptions(o), fn, Tensor(Shape({3}, DType::f32)));
         check(count(tmpJit) == before, "the JIT wrote into " + tmpJit.string());
       }, ""},
  };
}

std::vector<Row> allRows() {
  std::vector<Row> out;
  for (auto rows : {integerRows, zeroSizeRows, overflowRows, optionRows, dtypeRows, hostRows, cacheRows, litterRows})
    for (Row& r : rows()) out.push_back(std::move(r));
  return out;
}

class Hardening : public ::testing::TestWithParam<Row> {};

TEST_P(Hardening, ForkedRow) {
  const Row& r = GetParam();
  expectRow(r.run, r.prefix, r.part);
}

INSTANTIATE_TEST_SUITE_P(Hardening, Hardening, ::testing::ValuesIn(allRows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// Every op's error row (shape, axis, dtype, tag) once more in a forked child: a crash there would
// otherwise end the whole Ops run.
TEST(HardeningOps, EveryOpErrorRowInAForkedChild) {
  const std::vector<opstest::ErrorCase> cases = opstest::allErrorCases();
  EXPECT_GT(cases.size(), 40u);
  for (const opstest::ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    expectRow([&c] {
      opstest::Ts args;
      for (const Shape& s : c.inputs) args.emplace_back(s);
      radix::compile(cpu(), c.op, args);
    }, c.prefix, c.part);
  }
}

}  // namespace

// radix-bench-cpu: Radix against oneDNN, OpenBLAS, PyTorch and a STREAM triad, side by side, with
// 1 and 2 threads, in one run. One line per figure: each implementation's rate, Radix / best peer
// (GEMMs, GFLOP/s) or Radix / triad (bandwidth-bound figures, GB/s), and Radix's error against a
// reference.
//
//   build/bin/radix-bench-cpu                    # everything, 1 and 2 threads (several minutes)
//   build/bin/radix-bench-cpu --quick            # fewer reps, tighter time caps
//   build/bin/radix-bench-cpu --filter gemv,softmax --threads 2
//   build/bin/radix-bench-cpu --help
//
// Method. Every implementation runs in its own child process (a "worker", bench_worker.h), one
// per implementation and thread count, started with OMP_NUM_THREADS / OPENBLAS_NUM_THREADS /
// MKL_NUM_THREADS set to the thread count before it loads its libraries (libgomp reads
// OMP_NUM_THREADS at load time; oneDNN and PyTorch use libgomp, OpenBLAS its pthreads, Radix's
// compiled code LLVM's libomp: no process holds two OpenMP runtimes). Radix gets
// CompileOptions::threads = T, PyTorch torch.set_num_threads(T). The driver runs one worker at a
// time and interleaves them: after warm-up calls (a first one, then two per weight copy, so that
// weights packed once are packed), round r runs one rep of every worker (in an order rotated each
// round), r = 1..N; a rep is `iters` back-to-back calls (iters makes a rep last >= 30 ms) after
// one untimed call (calls under 30 ms), and the figure is the best rep. With T > 1 the driver
// waits after each rep until the worker's process stops using CPU (OpenMP threads spin for a
// while after a parallel region), so that no worker competes with the next one for the 2 cores.
// Each worker reports the CPU time of its reps too: cpu/wall ~ T shows the threads really ran
// (printed in the thread summary).
//
// Weight-streaming figures (gemv, and the GEMMs with M <= 64) cycle through copies of the weight
// (>= 256 MiB in all, bench::weightCopies) so that it comes from memory, as in decoding: with 2
// threads, each half of a 64 MB matrix can otherwise stay in its core's L3 slice (oneDNN's GEMV
// then showed 40 GB/s against a 9 GB/s triad).
//
// Time caps, for a slow Radix: a worker's reps stop once they used --cap seconds (it keeps at
// least one); a call that takes longer than --max-call seconds is killed (the worker restarts for
// the next figure) and printed as ">Ns"; a call predicted (from the worker's rate on an earlier
// figure of the same kind) to take longer than --max-call is skipped and printed as "skip".
//
// Correctness: inputs are the same in every worker (bench::benchValue); err = max|x - ref| /
// max|ref|, and above 1e-4 (f32), 1e-2 (bf16 outputs) or 1e-6 (i8: exact s32) the line says
// WRONG (exit status 1). A GEMM output must match 256 sampled entries computed in double here
// and, over all entries, the closest peer among those that match the samples; the other figures'
// outputs are compared, all entries, with a reference computed in double here. A peer that
// disagrees gets a warning line.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <radix/nn.h>
#include <radix/radix.h>
#include <radix/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench_worker.h"
#include "resnet18.h"

#ifndef RADIX_BENCH_SOURCE_DIR
#define RADIX_BENCH_SOURCE_DIR "bench"
#endif

extern char** environ;

namespace {

using bench::Figure;

// ------------------------------------------------------------------------------------------
// Workers that live in this binary: Radix (through the public API only) and the STREAM triad.

class RadixBackend : public bench::Backend {
 public:
  explicit RadixBackend(int threads) : threads_(threads) {
    radix::CompileOptions options;
    options.threads = threads;
    // RADIX_BENCH_TARGET=cpu[:features] compiles for another target than the host (the paths a
    // CPU without some feature takes, e.g. "sapphirerapids:-amx-tile").
    if (const char* target = std::getenv("RADIX_BENCH_TARGET")) {
      const std::string t = target;
      options.targetCpu = t.substr(0, t.find(':'));
      if (t.find(':') != std::string::npos) options.targetFeatures = t.substr(t.find(':') + 1);
    }
    platform_ = radix::Platform::cpu().withOptions(options);
  }

  static std::string features() {
    std::string out;
    for (const std::string& f : radix::hostVectorFeatures()) out += (out.empty() ? "" : " ") + f;
    return out;
  }

  std::string info() override {
    const char* omp = std::getenv("OMP_NUM_THREADS");
    return "Radix " RADIX_VERSION " CompileOptions::threads=" + std::to_string(threads_) +
           " OMP_NUM_THREADS=" + (omp ? omp : "unset") + " host=" + radix::hostTargetCpu() + " (" + features() + ")";
  }

  std::string setup(const Figure& f) override {
    using radix::DType;
    using radix::Shape;
    using radix::Tensor;
    run_ = nullptr;
    out_ = Tensor();
    const DType dtype = radix::parseDType(f.dtype);
    const auto& d = f.dims;
    auto input = [&](std::vector<int64_t> dims, uint32_t seed, float scale = 1.0f, float offset = 0.0f) {
      int64_t n = 1;
      for (int64_t x : dims) n *= x;
      return Tensor::fromValues(platform_, Shape(dims, dtype), bench::benchValues(n, seed, scale, offset));
    };
    if (f.kind == "gemm" && f.dtype == "i8") {  // u8 x s8 -> s32
      std::vector<float> av(d[0] * d[2]), bv(d[2] * d[1]);
      for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(bench::benchU8(i, bench::kSeedA));
      for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(bench::benchI8(i, bench::kSeedB));
      std::vector<Tensor> weights;
      for (int i = 0; i < bench::weightCopies(f); ++i)
        weights.push_back(Tensor::fromValues(platform_, Shape({d[2], d[1]}, DType::i8), bv));
      const Tensor x = Tensor::fromValues(platform_, Shape({d[0], d[2]}, DType::u8), av);
      auto exe = radix::compile(
          platform_, [](const Tensor& w, const Tensor& a) { return a.dotGeneral(w, {{1, 0}}, {}, DType::i32); },
          weights[0], x);
      auto call = std::make_shared<size_t>(0);
      run_ = [exe, weights, x, call] { return exe(weights[(*call)++ % weights.size()], x); };
    } else if (f.kind == "gemm" || f.kind == "gemv") {
      const bool gemv = f.kind == "gemv";
      // The weight (gemv's W, gemm's B) in bench::weightCopies copies, one per call in turn.
      std::vector<Tensor> weights;
      for (int i = 0; i < bench::weightCopies(f); ++i)
        weights.push_back(gemv ? input({d[0], d[1]}, bench::kSeedW) : input({d[2], d[1]}, bench::kSeedB));
      const Tensor x = gemv ? input({d[1]}, bench::kSeedX) : input({d[0], d[2]}, bench::kSeedA);
      auto exe = gemv ? radix::compile(platform_, [](const Tensor& w, const Tensor& v) { return w.dotGeneral(v, {{1, 0}}, {}); },
                                       weights[0], x)
                      : radix::compile(platform_, [](const Tensor& w, const Tensor& a) { return a.dotGeneral(w, {{1, 0}}, {}); },
                                       weights[0], x);
      auto call = std::make_shared<size_t>(0);
      run_ = [exe, weights, x, call] { return exe(weights[(*call)++ % weights.size()], x); };
    } else if (f.kind == "softmax") {
      const Tensor x = input({d[0], d[1]}, bench::kSeedSoftmax, bench::kActivationScale);
      auto exe = radix::compile(platform_, [](const Tensor& t) { return t.softmax(1); }, x);
      run_ = [exe, x] { return exe(x); };
    } else if (f.kind == "rmsnorm") {
      const Tensor x = input({d[0], d[1]}, bench::kSeedRms, bench::kActivationScale);
      const radix::nn::RMSNorm norm{input({d[1]}, bench::kSeedRmsWeight, 0.5f, 1.0f), bench::kRmsEps};
      auto exe = radix::compile(platform_, &radix::nn::RMSNorm::forward, norm, x);
      run_ = [exe, norm, x] { return exe(norm, x); };
    } else if (f.kind == "tanh") {
      const Tensor x = input({d[0]}, bench::kSeedTanh, bench::kActivationScale);
      auto exe = radix::compile(platform_, [](const Tensor& t) { return t.tanh(); }, x);
      run_ = [exe, x] { return exe(x); };
    } else if (f.kind == "attention") {  // causal sdpa, {h, n, hd}; d[3] = 1: the composition of ops
      if (d.size() > 3 && d[3] != 0)
        setenv("RADIX_ATTENTION", "composed", 1);
      else
        unsetenv("RADIX_ATTENTION");
      auto qkv = [&](uint32_t seed, const char* seq) {
        return Tensor::fromValues(platform_, Shape({d[0], d[1], d[2]}, dtype).withTags({"h", seq, "hd"}),
                                  bench::benchValues(d[0] * d[1] * d[2], seed));
      };
      const Tensor q = qkv(bench::kSeedQ, "q"), k = qkv(bench::kSeedK, "k"), v = qkv(bench::kSeedV, "k");
      auto exe = radix::compile(
          platform_,
          [](const Tensor& a, const Tensor& b, const Tensor& c) { return radix::nn::sdpa(a, b, c, {.causal = true}); }, q,
          k, v);
      run_ = [exe, q, k, v] { return exe(q, k, v); };
    } else if (f.kind == "gelu") {
      const Tensor x = input({d[0]}, bench::kSeedGelu, bench::kActivationScale);
      auto exe = radix::compile(platform_, [](const Tensor& t) { return t.gelu(); }, x);
      run_ = [exe, x] { return exe(x); };
    } else if (f.kind == "conv") {  // NCHW input, OIHW weight (bench::convFigure)
      const bench::Conv c = bench::convOf(f);
      const Tensor x = input({c.batch, c.cin, c.hw, c.hw}, bench::kSeedA);
      const Tensor w = input({c.cout, c.cin, c.k, c.k}, bench::kSeedB);
      Tensor::ConvOptions o;
      o.strides = {c.stride, c.stride};
      o.padding = {{c.pad, c.pad}, {c.pad, c.pad}};
      auto exe = radix::compile(platform_, [o](const Tensor& a, const Tensor& k) { return a.conv2d(k, o); }, x, w);
      run_ = [exe, x, w] { return exe(x, w); };
    } else if (f.kind == "resnet18" && dtype == DType::f32) {
      const resnet::ResNet model = bench::resnet18(platform_);
      const Tensor x = input({d[0], 3, d[1], d[1]}, bench::kSeedA);
      auto exe = radix::compile(platform_, &resnet::ResNet::forward, model, x);
      run_ = [exe, model, x] { return exe(model, x); };
    } else {
      return "no " + f.kind + " figure in Radix's worker";
    }
    return "";
  }

  void run() override { out_ = run_(); }
  std::vector<float> output() override { return out_.toVector<float>(); }

 private:
  int threads_;
  radix::Platform platform_ = radix::Platform::cpu();
  std::function<radix::Tensor()> run_;
  radix::Tensor out_;
};

// STREAM triad a[i] = b[i] + s*c[i] (12 B/elem counted), split over T std::threads, compiled with
// -O3 -march=native (bench/CMakeLists.txt).
__attribute__((noinline)) void triadKernel(float* __restrict a, const float* __restrict b,
                                           const float* __restrict c, float s, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
}

class TriadBackend : public bench::Backend {
 public:
  explicit TriadBackend(int threads) : threads_(std::max(1, threads)) {
    for (int t = 1; t < threads_; ++t) pool_.emplace_back([this, t] { serveThread(t); });
  }
  ~TriadBackend() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (auto& th : pool_) th.join();
    release();
  }

  std::string info() override { return "STREAM triad, " + std::to_string(threads_) + " std::threads, -O3 -march=native"; }

  std::string setup(const Figure& f) override {
    if (f.kind != "triad" || f.dtype != "f32") return "the triad worker only runs \"triad f32 n\"";
    release();
    n_ = static_cast<size_t>(f.dims[0]);
    const size_t bytes = (n_ * sizeof(float) + 63) / 64 * 64;
    a_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    b_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    c_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!a_ || !b_ || !c_) throw std::runtime_error("out of memory");
    parallel([&](size_t lo, size_t hi) {  // first touch by the thread that will stream the range
      for (size_t i = lo; i < hi; ++i) {
        a_[i] = 0.0f;
        b_[i] = bench::benchValue(i, bench::kSeedTriadB);
        c_[i] = bench::benchValue(i, bench::kSeedTriadC);
      }
    });
    return "";
  }

  void run() override {
    parallel([&](size_t lo, size_t hi) { triadKernel(a_, b_, c_, bench::kTriadScalar, lo, hi); });
  }

  std::vector<float> output() override { return std::vector<float>(a_, a_ + n_); }

 private:
  // A persistent pool (threads sleep on a condition variable between calls, so that they neither
  // spin while other workers run nor vanish before the driver counts the threads that ran).
  std::pair<size_t, size_t> range(int t) const {
    const size_t chunk = (n_ / threads_ + 15) / 16 * 16;
    return {std::min(n_, chunk * t), t == threads_ - 1 ? n_ : std::min(n_, chunk * (t + 1))};
  }
  void parallel(const std::function<void(size_t, size_t)>& body) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      pending_ = threads_ - 1;
      ++generation_;
    }
    wake_.notify_all();
    body(range(0).first, range(0).second);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }
  void serveThread(int t) {
    uint64_t seen = 0;
    while (true) {
      const std::function<void(size_t, size_t)>* body;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (quit_) return;
        body = body_;
      }
      (*body)(range(t).first, range(t).second);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  void release() {
    std::free(a_);
    std::free(b_);
    std::free(c_);
    a_ = b_ = c_ = nullptr;
  }

  int threads_;
  size_t n_ = 0;
  float *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
  std::vector<std::thread> pool_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t, size_t)>* body_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool quit_ = false;
};

// ------------------------------------------------------------------------------------------
// The driver.

struct Options {
  std::vector<int> threads{1, 2};
  int reps = 5;
  double cap = 8;       // seconds of reps per worker and figure
  double maxCall = 60;  // seconds one call may take
  double minRep = 0.03;
  std::vector<std::string> filters;
  std::vector<std::string> peers{"onednn", "openblas", "torch"};
  bool radix = true;
  std::string python = "/usr/bin/python3";
  std::string torchScript = RADIX_BENCH_SOURCE_DIR "/torch_peer.py";
  bool verbose = false;
};

double now() { return bench::wallSeconds(); }

/// /proc/loadavg's first three fields and a newline: other jobs on the machine skew the figures.
std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  const unsigned cpus = std::thread::hardware_concurrency();
  std::string out = a + " " + b + " " + c + " (" + std::to_string(cpus) + " CPUs)";
  if (std::atof(a.c_str()) > cpus - 0.5) out += ": BUSY MACHINE, the figures (2-thread ones most) are not representative";
  return out + "\n";
}

std::string selfDir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
}

/// utime + stime of a process (all its threads), in clock ticks.
long long processTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(s.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state; utime is 14, stime 15
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) {
      stime = std::atoll(field.c_str());
      break;
    }
  }
  return utime + stime;
}

/// utime + stime of each thread of a process, by thread id (a thread whose count grows ran).
std::map<long, long long> taskTicks(pid_t pid) {
  std::map<long, long long> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const std::string tid = entry.path().filename().string();
    const long long ticks = processTicks(static_cast<pid_t>(std::atol(tid.c_str())));
    if (ticks >= 0) out[std::atol(tid.c_str())] = ticks;
  }
  return out;
}

/// A child process speaking bench_worker.h's protocol.
class Worker {
 public:
  Worker(std::string name, int threads, std::vector<std::string> argv, std::map<std::string, std::optional<std::string>> env,
         std::string logPath)
      : name_(std::move(name)), threads_(threads), argv_(std::move(argv)), env_(std::move(env)), log_(std::move(logPath)) {}
  ~Worker() { stop(); }

  const std::string& name() const { return name_; }
  int threads() const { return threads_; }
  bool alive() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  /// Why the worker could not start or died (its stderr's last lines).
  const std::string& failure() const { return failure_; }
  const std::string& info() const { return info_; }

  bool start() {
    if (pid_ > 0) return true;
    if (access(argv_[0].c_str(), X_OK) != 0) {
      failure_ = argv_[0] + " not found (not built?)";
      return false;
    }
    int toChild[2], fromChild[2];
    if (pipe2(toChild, O_CLOEXEC) != 0 || pipe2(fromChild, O_CLOEXEC) != 0) {
      failure_ = "pipe failed";
      return false;
    }
    std::vector<std::string> envStrings;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      const std::string key = entry.substr(0, entry.find('='));
      if (!env_.count(key)) envStrings.push_back(entry);
    }
    for (const auto& [key, value] : env_)
      if (value) envStrings.push_back(key + "=" + *value);
    std::vector<char*> argv, envp;
    for (auto& a : argv_) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : envStrings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      dup2(toChild[0], 0);
      dup2(fromChild[1], 1);
      const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) dup2(log, 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(toChild[0]);
    close(fromChild[1]);
    if (pid < 0) {
      close(toChild[1]);
      close(fromChild[0]);
      failure_ = "fork failed";
      return false;
    }
    pid_ = pid;
    in_ = toChild[1];
    out_ = fromChild[0];
    buffer_.clear();
    const auto reply = request("info", 120);
    if (!reply || reply->rfind("info ", 0) != 0) {
      if (failure_.empty()) failure_ = "no answer to info";
      stop();
      return false;
    }
    info_ = reply->substr(5);
    return true;
  }

  /// Sends a command and waits for its one-line reply; on timeout or EOF the worker is killed and
  /// nullopt returned (failure() says why).
  std::optional<std::string> request(const std::string& command, double timeout) {
    if (pid_ <= 0 && !start()) return std::nullopt;
    const std::string line = command + "\n";
    if (write(in_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      die("the worker exited");
      return std::nullopt;
    }
    const double deadline = now() + timeout;
    while (true) {
      const size_t eol = buffer_.find('\n');
      if (eol != std::string::npos) {
        std::string reply = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 1);
        return reply;
      }
      const double left = deadline - now();
      if (left <= 0) {
        die("timed out after " + std::to_string(static_cast<int>(timeout)) + " s");
        timedOut_ = true;
        return std::nullopt;
      }
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1) <= 0) continue;
      char chunk[4096];
      const ssize_t n = read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        die("the worker exited");
        return std::nullopt;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// True (once) when the last request failed by timing out.
  bool takeTimedOut() { return std::exchange(timedOut_, false); }

  /// Waits until the process stops using CPU (its OpenMP threads stop spinning), up to 0.5 s.
  void settle() const {
    if (pid_ <= 0) return;
    long long before = processTicks(pid_);
    for (int i = 0; i < 33; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      const long long after = processTicks(pid_);
      if (after == before) return;
      before = after;
    }
  }

  void stop() {
    if (pid_ <= 0) return;
    const ssize_t ignored = write(in_, "quit\n", 5);
    (void)ignored;
    close(in_);
    close(out_);
    for (int i = 0; i < 50; ++i) {  // up to 0.5 s to exit on its own
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  void die(const std::string& why) {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      close(in_);
      close(out_);
      pid_ = -1;
    }
    std::ifstream in(log_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > 600) text = "..." + text.substr(text.size() - 600);
    failure_ = why + (text.empty() ? "" : "; stderr: " + bench::oneLine(text));
  }

  std::string name_;
  int threads_;
  std::vector<std::string> argv_;
  std::map<std::string, std::optional<std::string>> env_;
  std::string log_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buffer_, failure_, info_;
  bool timedOut_ = false;
};

struct FigureSpec {
  std::string name;  // shown, and matched by --filter
  std::string spec;  // sent to the workers: "<kind> <dtype> dims..."
  bool gemm;         // GFLOP/s against peers; else GB/s against the triad
  double work;       // flops, or bytes moved
  double tolerance;
  std::vector<std::string> peers;
};

std::vector<FigureSpec> figures() {
  std::vector<FigureSpec> out;
  const std::vector<std::array<int64_t, 3>> gemms = {
      {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {1, 4096, 4096}, {64, 4096, 4096}, {61, 1023, 517}};
  for (const char* dtype : {"f32", "bf16"}) {
    const bool f32 = std::string(dtype) == "f32";
    for (const auto& [m, n, k] : gemms) {
      const std::string dims = std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k);
      std::string name = std::string("gemm ") + dtype + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
      if (n == 4096 && k == 4096 && m < 4096) name += " (mlp)";
      if (m % 8 != 0 && m != 1) name += " (odd)";  // edge tiles in every dimension
      out.push_back({name, std::string("gemm ") + dtype + " " + dims, true, 2.0 * m * n * k, f32 ? 1e-4 : 1e-2,
                     {"onednn", "openblas", "torch"}});
    }
  }
  // int8: u8 activations x s8 weights -> s32 (oneDNN's int8 matmul; GOP/s in the GFLOP/s column).
  const std::vector<std::array<int64_t, 3>> int8Gemms = {{1024, 1024, 1024}, {64, 4096, 4096}, {61, 1023, 517}};
  for (const auto& [m, n, k] : int8Gemms) {
    std::string name = "gemm i8 " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    if (n == 4096) name += " (mlp)";
    if (m % 8 != 0) name += " (odd)";
    out.push_back({name, "gemm i8 " + std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k), true,
                   2.0 * m * n * k, 1e-6, {"onednn"}});
  }
  const double n16m = 16.0 * 1024 * 1024, sq = 4096.0 * 4096;
  out.push_back({"gemv f32 4096x4096", "gemv f32 4096 4096", false, sq * 4, 1e-4, {"onednn", "openblas", "torch"}});
  out.push_back({"gemv bf16 4096x4096", "gemv bf16 4096 4096", false, sq * 2, 1e-2, {"onednn", "torch"}});
  out.push_back({"softmax f32 4096x4096", "softmax f32 4096 4096", false, sq * 8, 1e-4, {"onednn", "torch"}});
  out.push_back({"rmsnorm f32 4096x4096", "rmsnorm f32 4096 4096", false, sq * 8, 1e-4, {"torch"}});
  out.push_back({"tanh f32 16M", "tanh f32 16777216", false, n16m * 8, 1e-4, {"onednn", "torch"}});
  out.push_back({"gelu f32 16M", "gelu f32 16777216", false, n16m * 8, 1e-4, {"onednn", "torch"}});
  // Causal attention at 512 tokens, 12 heads x 64: GFLOP/s = 2 h n^2 hd (the visible half of both
  // products); the peers are unfused (oneDNN matmul + softmax + matmul; PyTorch 1.13 has no
  // scaled_dot_product_attention, so matmul + masked softmax + matmul too).
  for (const char* dtype : {"f32", "bf16"}) {
    const double flops = 2.0 * 12 * 512 * 512 * 64, tol = std::string(dtype) == "f32" ? 1e-4 : 2e-2;
    out.push_back({std::string("attention ") + dtype + " 12x512x64", std::string("attention ") + dtype + " 12 512 64 0",
                   true, flops, tol, {"onednn", "torch"}});
    out.push_back({std::string("attention ") + dtype + " 12x512x64 composed",
                   std::string("attention ") + dtype + " 12 512 64 1", true, flops, tol * 3, {}});
  }
  // ResNet-18's convolutions (NCHW, batch 1 and 8): 3x3 s1 at 56^2, 3x3 s2 (layer2's first),
  // the 1x1 s2 downsample and the 7x7 s2 stem; then the whole model.
  const std::vector<std::pair<std::string, bench::Conv>> convs = {
      {"3x3s1 64c 56", {1, 64, 56, 64, 3, 1, 1}},
      {"3x3s2 64-128c 56", {1, 64, 56, 128, 3, 2, 1}},
      {"1x1s2 64-128c 56", {1, 64, 56, 128, 1, 2, 0}},
      {"7x7s2 stem 224", {1, 3, 224, 64, 7, 2, 3}},
  };
  for (const char* dtype : {"f32", "bf16"})
    for (int64_t batch : {1, 8})
      for (auto [name, c] : convs) {
        c.batch = batch;
        out.push_back({"conv " + std::string(dtype) + " " + name + " b" + std::to_string(batch), bench::convSpec(c, dtype),
                       true, c.flops(), std::string(dtype) == "f32" ? 1e-4 : 1e-2, {"onednn", "torch"}});
      }
  for (int64_t batch : {1, 8})
    out.push_back({"resnet18 f32 224 b" + std::to_string(batch), "resnet18 f32 " + std::to_string(batch) + " 224", true,
                   bench::resnet18Flops(batch, 224), 1e-3, {"torch"}});
  out.push_back({"triad f32 16M", "triad f32 16777216", false, n16m * 12, 1e-6, {}});
  return out;
}

const char* kTriadSpec = "triad f32 16777216";
const double kTriadBytes = 16.0 * 1024 * 1024 * 12;

/// One implementation's measurement of one figure at one thread count.
struct Measure {
  std::string text;  // "n/a", "skip", ">60s" when there is no time
  double seconds = 0;
  double cpu = 0;
  int threads = 0;  // most threads seen using CPU in one rep
  int reps = 0;
  std::string note;
  std::string dump;
  bool ok() const { return seconds > 0; }
};

std::vector<float> readFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  in.seekg(0);
  std::vector<float> v(size / sizeof(float));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

/// The double-precision reference of a non-GEMM figure (over all elements), or for a GEMM the
/// entries at `samples` (row-major indices).
std::vector<double> reference(const Figure& f, const std::vector<int64_t>& samples) {
  const auto& d = f.dims;
  std::vector<double> out;
  if (f.kind == "gemm") {
    const int64_t n = d[1], k = d[2];
    const bool i8 = f.dtype == "i8";
    for (int64_t idx : samples) {
      const int64_t i = idx / n, j = idx % n;
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += i8 ? double(bench::benchU8(i * k + p, bench::kSeedA)) * bench::benchI8(p * n + j, bench::kSeedB)
                : double(bench::benchValue(i * k + p, bench::kSeedA)) * bench::benchValue(p * n + j, bench::kSeedB);
      out.push_back(s);
    }
  } else if (f.kind == "conv") {
    const bench::Conv c = bench::convOf(f);
    const int64_t o = c.out();
    for (int64_t idx : samples) {
      const int64_t x = idx % o, y = idx / o % o, oc = idx / (o * o) % c.cout, b = idx / (o * o * c.cout);
      double s = 0;
      for (int64_t ic = 0; ic < c.cin; ++ic)
        for (int64_t i = 0; i < c.k; ++i)
          for (int64_t j = 0; j < c.k; ++j) {
            const int64_t h = y * c.stride + i - c.pad, w = x * c.stride + j - c.pad;
            if (h < 0 || w < 0 || h >= c.hw || w >= c.hw) continue;
            s += double(bench::benchValue(((b * c.cin + ic) * c.hw + h) * c.hw + w, bench::kSeedA)) *
                 bench::benchValue(((oc * c.cin + ic) * c.k + i) * c.k + j, bench::kSeedB);
          }
      out.push_back(s);
    }
  } else if (f.kind == "gemv") {
    const int64_t n = d[0], k = d[1];
    const std::vector<float> w = bench::benchValues(n * k, bench::kSeedW), x = bench::benchValues(k, bench::kSeedX);
    out.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(w[i * k + p]) * x[p];
      out[i] = s;
    }
  } else if (f.kind == "softmax" || f.kind == "rmsnorm") {
    const int64_t rows = d[0], cols = d[1];
    const bool softmax = f.kind == "softmax";
    const std::vector<float> x =
        bench::benchValues(rows * cols, softmax ? bench::kSeedSoftmax : bench::kSeedRms, bench::kActivationScale);
    const std::vector<float> w = bench::benchValues(cols, bench::kSeedRmsWeight, 0.5f, 1.0f);
    out.resize(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = &x[r * cols];
      double* y = &out[r * cols];
      if (softmax) {
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(row[c]));
        for (int64_t c = 0; c < cols; ++c) s += y[c] = std::exp(row[c] - m);
        for (int64_t c = 0; c < cols; ++c) y[c] /= s;
      } else {
        double s = 0;
        for (int64_t c = 0; c < cols; ++c) s += double(row[c]) * row[c];
        const double inv = 1.0 / std::sqrt(s / cols + bench::kRmsEps);
        for (int64_t c = 0; c < cols; ++c) y[c] = row[c] * inv * w[c];
      }
    }
  } else if (f.kind == "tanh" || f.kind == "gelu") {
    const bool tanh = f.kind == "tanh";
    const std::vector<float> x =
        bench::benchValues(f.elements(), tanh ? bench::kSeedTanh : bench::kSeedGelu, bench::kActivationScale);
    out.resize(x.size());
    const double c = std::sqrt(2.0 / M_PI);
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      out[i] = tanh ? std::tanh(v) : 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
    }
  } else if (f.kind == "attention") {
    const int64_t h = d[0], n = d[1], hd = d[2];
    const std::vector<float> q = bench::benchValues(h * n * hd, bench::kSeedQ), k = bench::benchValues(h * n * hd, bench::kSeedK),
                             v = bench::benchValues(h * n * hd, bench::kSeedV);
    out.assign(h * n * hd, 0.0);
    std::vector<double> p(n);
    for (int64_t head = 0; head < h; ++head)
      for (int64_t i = 0; i < n; ++i) {
        const float* qi = &q[(head * n + i) * hd];
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double s = 0;
          for (int64_t e = 0; e < hd; ++e) s += double(qi[e]) * k[(head * n + j) * hd + e];
          p[j] = s / std::sqrt(double(hd));
          m = std::max(m, p[j]);
        }
        for (int64_t j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - m);
        double* o = &out[(head * n + i) * hd];
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t e = 0; e < hd; ++e) o[e] += p[j] / sum * v[(head * n + j) * hd + e];
      }
  } else if (f.kind == "triad") {
    out.resize(f.elements());
    for (int64_t i = 0; i < f.elements(); ++i)
      out[i] = double(bench::benchValue(i, bench::kSeedTriadB)) + bench::kTriadScalar * bench::benchValue(i, bench::kSeedTriadC);
  }
  return out;
}

/// max|x - ref| / max|ref| over `samples` (all elements when empty); inf on NaN or a size mismatch.
/// `worst` receives the index of x where the difference is largest.
template <class Ref>
double relativeError(const std::vector<float>& x, const Ref& ref, size_t refSize, const std::vector<int64_t>& samples,
                     size_t* worst = nullptr) {
  const size_t count = samples.empty() ? refSize : samples.size();
  if (samples.empty() && x.size() != refSize) return INFINITY;
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t at = samples.empty() ? i : static_cast<size_t>(samples[i]);
    if (at >= x.size()) return INFINITY;
    const double r = ref(i), diff = std::fabs(double(x[at]) - r);
    if (!(diff <= maxDiff)) {
      maxDiff = std::isnan(diff) ? INFINITY : diff;
      if (worst) *worst = at;
    }
    maxRef = std::max(maxRef, std::fabs(r));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

class Driver {
 public:
  explicit Driver(Options options) : options_(std::move(options)) {
    char dir[] = "/tmp/radix-bench-XXXXXX";
    if (access("/dev/shm", W_OK) == 0) std::strcpy(dir, "/dev/shm/rbench-XXXXXX");
    if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    tmp_ = dir;
  }
  ~Driver() {
    workers_.clear();
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }

  int run() {
    std::vector<FigureSpec> chosen;
    for (const FigureSpec& f : figures()) {
      bool match = options_.filters.empty();
      for (const auto& s : options_.filters) match = match || f.name.find(s) != std::string::npos;
      if (match) chosen.push_back(f);
    }
    if (chosen.empty()) {
      std::fprintf(stderr, "radix-bench-cpu: no figure matches the filter (see --list)\n");
      return 2;
    }
    std::printf("radix-bench-cpu: best of %d interleaved reps (>= %.0f ms each) after a warm-up; caps: %.0f s of reps per"
                " worker and figure, %.0f s per call\n",
                options_.reps, options_.minRep * 1e3, options_.cap, options_.maxCall);
    std::printf("GEMM MxNxK: C[M,N] = A[M,K] B[K,N], GFLOP/s = 2MNK/s, bf16 in and out with f32 accumulation,"
                " i8: u8 A x s8 B -> s32 C (GOP/s); GB/s: gemv weight bytes, softmax/rmsnorm/tanh/gelu 8 B/elem,"
                " triad 12 B/elem\n");
    std::printf("attention HxNxD: causal softmax(q k^T / sqrt(D)) v, q, k, v {H, N, D}, GFLOP/s = 2 H N^2 D / s\n");
    std::printf("n/a: the implementation has no such kernel or is missing (--verbose says why); skip: predicted to take"
                " > %.0f s per call; >Ns: killed after N s; *: one rep only\n",
                options_.maxCall);
    std::printf("load average at the start: %s", loadAverage().c_str());
    for (int t : options_.threads) printInfo(t);
    std::printf("\n%-2s %-28s %-7s %9s %9s %9s %9s %9s  %-17s %-10s %s\n", "T", "figure", "unit", "radix", "onednn",
                "openblas", "torch", "triad", "radix/best peer", "radix/triad", "check (radix vs reference)");
    std::fflush(stdout);
    int wrong = 0;
    for (const FigureSpec& f : chosen)
      for (int t : options_.threads) wrong += measureFigure(f, t);
    printThreadSummary(chosen);
    std::printf("load average at the end: %s", loadAverage().c_str());
    if (wrong) std::printf("\n%d result(s) WRONG\n", wrong);
    return wrong ? 1 : 0;
  }

 private:
  Worker* worker(const std::string& name, int threads) {
    const std::string key = name + "@" + std::to_string(threads);
    auto it = workers_.find(key);
    if (it != workers_.end()) return it->second.get();
    const std::string t = std::to_string(threads);
    std::map<std::string, std::optional<std::string>> env = {
        {"OMP_NUM_THREADS", t}, {"OPENBLAS_NUM_THREADS", t}, {"MKL_NUM_THREADS", t}};
    std::vector<std::string> argv;
    const std::string self = selfDir();
    if (name == "radix" || name == "triad") {
      argv = {self + "/radix-bench-cpu", "--worker", name, "--threads", t};
    } else if (name == "onednn") {
      argv = {self + "/radix-bench-peer-onednn"};
    } else if (name == "openblas") {
      argv = {self + "/radix-bench-peer-openblas"};
      env["OPENBLAS_CORETYPE"] = std::nullopt;  // let OpenBLAS pick its kernel for this CPU itself
      env["OPENBLAS_L2_SIZE"] = std::nullopt;
    } else if (name == "torch") {
      argv = {options_.python, options_.torchScript, "--threads", t};
    }
    auto w = std::make_unique<Worker>(name, threads, argv, env, tmp_ + "/" + key + ".log");
    Worker* raw = w.get();
    workers_[key] = std::move(w);
    return raw;
  }

  std::vector<std::string> implementations() const {
    std::vector<std::string> out;
    if (options_.radix) out.push_back("radix");
    for (const auto& p : options_.peers) out.push_back(p);
    return out;
  }

  void printInfo(int threads) {
    for (const std::string& name : implementations()) {
      Worker* w = worker(name, threads);
      if (w->start())
        std::printf("  %-8s T=%d pid %-7d %s\n", name.c_str(), threads, w->pid(), w->info().c_str());
      else
        std::printf("  %-8s T=%d n/a: %s\n", name.c_str(), threads, w->failure().c_str());
    }
    Worker* triad = worker("triad", threads);
    if (triad->start()) std::printf("  %-8s T=%d pid %-7d %s\n", "triad", threads, triad->pid(), triad->info().c_str());
    std::fflush(stdout);
  }

  /// Measures one figure at one thread count and prints its line; returns 1 when Radix is wrong.
  int measureFigure(const FigureSpec& f, int threads) {
    std::istringstream specIn(f.spec);
    const Figure figure = bench::parseFigure(specIn);
    // Participants: Radix, the peers that apply, and the triad (the roof) for bandwidth figures.
    std::vector<std::string> names;
    if (figure.kind == "triad") {
      names = {"triad"};
    } else {
      if (options_.radix) names.push_back("radix");
      for (const auto& p : f.peers)
        if (std::find(options_.peers.begin(), options_.peers.end(), p) != options_.peers.end()) names.push_back(p);
      if (!f.gemm) names.push_back("triad");
    }
    std::map<std::string, Measure> results;
    struct Live {
      Worker* w;
      double work;
      double warm;
      int iters;
      double spent;
    };
    std::vector<Live> live;
    for (const auto& name : names) {
      Measure& m = results[name];
      Worker* w = worker(name, threads);
      const bool roof = name == "triad";
      const std::string spec = roof ? kTriadSpec : f.spec;
      const double work = roof ? kTriadBytes : f.work;
      const auto setup = w->request("setup " + spec, 600);
      if (!setup || setup->rfind("ok", 0) != 0) {
        m.text = "n/a";
        m.note = setup ? setup->substr(std::min<size_t>(3, setup->size())) : w->failure();
        continue;
      }
      // The best rate seen for this figure (at another thread count), else for this kind and
      // dtype, predicts this call.
      const std::string rateKey = name + ":" + figure.kind + ":" + figure.dtype, figureKey = name + ":" + f.spec;
      const std::string& predictor = rates_.count(figureKey) ? figureKey : rateKey;
      if (rates_.count(predictor) && work / rates_[predictor] > options_.maxCall) {
        m.text = "skip";
        m.note = "predicted " + std::to_string(static_cast<int>(work / rates_[predictor])) + " s per call";
        continue;
      }
      const auto t = timed(*w, 1, options_.maxCall + 5);
      if (!t) {
        m.text = w->takeTimedOut() ? ">" + std::to_string(static_cast<int>(options_.maxCall)) + "s" : "n/a";
        m.note = w->failure();
        rates_[rateKey] = std::max(rates_[rateKey], work / (options_.maxCall + 5));
        rates_[figureKey] = std::max(rates_[figureKey], work / (options_.maxCall + 5));
        continue;
      }
      // Into the steady state of a model that calls again with the same weights: Radix packs a B
      // whole on its second use (packed.h), as the packed oneDNN peer reorders once before timing.
      // Their rate, not the first call's, sets the rep's length.
      const int again = 2 * bench::weightCopies(figure);
      double perCall = t->wall;
      if (t->wall * again < std::max(options_.cap, 10.0)) {
        const auto steady = timed(*w, again, t->wall * again * 5 + 30);
        if (!steady) {
          m.text = "n/a";
          m.note = w->failure();
          continue;
        }
        perCall = steady->wall;
      }
      m.seconds = t->wall;
      m.cpu = t->cpu;
      m.threads = t->threads;
      m.reps = 1;  // the warm-up stands in until a timed rep is faster
      const int iters = static_cast<int>(std::clamp(std::ceil(options_.minRep / perCall), 1.0, 100000.0));
      live.push_back({w, work, t->wall, iters, t->wall > options_.cap ? options_.cap : 0.0});
    }
    // Interleaved rounds; a worker whose reps used up the cap stops (it keeps at least one rep).
    std::map<std::string, int> timedReps;
    for (int round = 0; round < options_.reps; ++round) {
      for (size_t j = 0; j < live.size(); ++j) {
        Live& l = live[(j + round) % live.size()];
        Measure& m = results[l.w->name()];
        if (!l.w->alive() || l.spent >= options_.cap) continue;
        // One untimed call first where calls are short: after the settle wait the machine is idle,
        // and the first call after idle ran 2-4x slower for every implementation on a KVM guest
        // (oneDNN bf16 1024^3, 1 thread: 5.7-7.5 ms, then 2.45).
        if (l.warm < options_.minRep && !l.w->request("run 1", l.warm * 5 + 30)) {
          m.note = l.w->failure();
          continue;
        }
        const auto t = timed(*l.w, l.iters, l.iters * l.warm * 5 + 30);
        if (!t) {
          m.note = l.w->failure();
          continue;
        }
        l.spent += t->wall * l.iters;
        if (timedReps[l.w->name()]++ == 0 || t->wall < m.seconds) {  // the first timed rep replaces the warm-up
          m.seconds = t->wall;
          m.cpu = t->cpu;
        }
        m.threads = std::max(m.threads, t->threads);
        m.reps = timedReps[l.w->name()];
      }
    }
    for (auto& l : live) {
      Measure& m = results[l.w->name()];
      for (const std::string& key : {l.w->name() + ":" + figure.kind + ":" + figure.dtype, l.w->name() + ":" + f.spec}) {
        double& rate = rates_[key];
        rate = std::max(rate, l.work / m.seconds);
      }
      if (!l.w->alive()) continue;
      const std::string path = tmp_ + "/" + l.w->name() + ".out";
      const auto dumped = l.w->request("dump " + path, 120);
      if (dumped && *dumped == "ok") m.dump = path;
    }
    const int wrong = printLine(f, figure, threads, names, results);
    for (auto& [name, m] : results) {
      std::error_code ec;
      if (!m.dump.empty()) std::filesystem::remove(m.dump, ec);
      if (m.ok()) measured_[f.name][threads][name] = m;
    }
    return wrong;
  }

  struct Rep {
    double wall;  // seconds per call
    double cpu;   // process CPU seconds per call
    int threads;  // threads of the worker that used CPU during the rep
  };

  /// One rep of `iters` calls, or nullopt.
  std::optional<Rep> timed(Worker& w, int iters, double timeout) {
    const std::map<long, long long> before = taskTicks(w.pid());
    const auto reply = w.request("run " + std::to_string(iters), timeout);
    const std::map<long, long long> after = w.alive() ? taskTicks(w.pid()) : std::map<long, long long>{};
    if (w.threads() > 1) w.settle();
    if (!reply || reply->rfind("time ", 0) != 0) return std::nullopt;
    std::istringstream in(reply->substr(5));
    Rep rep{0, 0, 0};
    in >> rep.wall >> rep.cpu;
    if (!(rep.wall > 0)) return std::nullopt;
    for (const auto& [tid, ticks] : after) {
      auto it = before.find(tid);
      rep.threads += ticks > (it == before.end() ? 0 : it->second);
    }
    return rep;
  }

  int printLine(const FigureSpec& f, const Figure& figure, int threads, const std::vector<std::string>& names,
                std::map<std::string, Measure>& results) {
    auto rate = [&](const std::string& name) -> double {
      auto it = results.find(name);
      if (it == results.end() || !it->second.ok()) return 0;
      return (name == "triad" ? kTriadBytes : f.work) / it->second.seconds / 1e9;
    };
    auto cell = [&](const std::string& name) -> std::string {
      auto it = results.find(name);
      if (it == results.end()) return "-";
      if (!it->second.ok()) return it->second.text.empty() ? "n/a" : it->second.text;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f%s", rate(name), it->second.reps <= 1 ? "*" : "");
      return buf;
    };
    // Radix / best peer (and / triad).
    std::string best;
    for (const auto& p : {"onednn", "openblas", "torch"})
      if (rate(p) > 0 && (best.empty() || rate(p) > rate(best))) best = p;
    char ratio[64] = "-", roof[32] = "-";
    const bool isTriad = figure.kind == "triad";
    if (rate("radix") > 0 && !best.empty()) std::snprintf(ratio, sizeof ratio, "%.3f %s", rate("radix") / rate(best), best.c_str());
    if (!f.gemm && !isTriad && rate("radix") > 0 && rate("triad") > 0)
      std::snprintf(roof, sizeof roof, "%.3f", rate("radix") / rate("triad"));

    // Correctness. GEMMs: an output must match the double entries at 256 sampled positions and,
    // over all entries, at least one peer that itself matches those samples (so that one wrong
    // peer cannot make a right Radix look wrong). The rest: all entries against double.
    std::vector<int64_t> samples;
    std::vector<double> sampledRef;
    std::vector<std::pair<std::string, std::vector<float>>> peerValues;
    const std::vector<double>* ref = nullptr;
    const bool sampled = figure.kind == "gemm" || figure.kind == "conv" || figure.kind == "resnet18";
    if (sampled) {
      // Row-major m x n over the output (conv: all of it as one row; resnet18: no double reference).
      const int64_t m = figure.kind == "gemm" ? figure.dims[0] : 1;
      const int64_t n = figure.kind == "gemm" ? figure.dims[1]
                        : figure.kind == "conv" ? bench::convOf(figure).outputs()
                                                : figure.dims[0] * 1000;
      samples = {0, n - 1, (m - 1) * n, m * n - 1};
      for (uint64_t i = 0; samples.size() < 256; ++i) samples.push_back(static_cast<int64_t>(
          (uint64_t(bench::benchValue(i, 99) * 128 + 128) * 1000003ull + i * 7919ull * 104729ull) % uint64_t(m * n)));
      if (figure.kind == "resnet18") samples.clear();
      sampledRef = reference(figure, samples);
      for (const auto& p : {"onednn", "openblas", "torch"}) {
        auto it = results.find(p);
        if (it == results.end() || it->second.dump.empty()) continue;
        std::vector<float> v = readFloats(it->second.dump);
        const double e = samples.empty() ? 0 : relativeError(v, [&](size_t i) { return sampledRef[i]; }, samples.size(), samples);
        if (e > f.tolerance)
          std::printf("   warning: %s differs from the double reference on 256 sampled entries: err %.2e\n", p, e);
        else
          peerValues.emplace_back(p, std::move(v));
      }
    } else {
      auto key = f.spec;
      if (!references_.count(key)) references_[key] = reference(figure, {});
      ref = &references_[key];
    }
    struct Verdict {
      bool bad;
      double err;
      std::string against;
    };
    auto verdictOf = [&](const std::string& name, const Measure& m) -> Verdict {
      const std::vector<float> v = readFloats(m.dump);
      if (ref) {
        const double e = relativeError(v, [&](size_t i) { return (*ref)[i]; }, ref->size(), {});
        return {!(e <= f.tolerance), e, "double"};
      }
      const double onSamples =
          samples.empty() ? 0 : relativeError(v, [&](size_t i) { return sampledRef[i]; }, samples.size(), samples);
      Verdict best{!(onSamples <= f.tolerance), onSamples, samples.empty() ? "no peer" : "double (256 samples)"};
      if (best.bad) return best;
      bool first = true;
      size_t worst = 0;
      for (const auto& [peer, values] : peerValues) {
        if (peer == name) continue;
        size_t at = 0;
        const double e = relativeError(v, [&](size_t i) { return double(values[i]); }, values.size(), {}, &at);
        if (first || e < best.err) {
          best = {!(e <= f.tolerance), e, peer};
          worst = at;
        }
        first = false;
      }
      if (best.bad && worst < v.size() && !samples.empty()) {
        // Disagreeing with every peer: the entry where they differ most, in double, says who is wrong.
        const double exact = reference(figure, {static_cast<int64_t>(worst)})[0];
        double scale = 0;
        for (double r : sampledRef) scale = std::max(scale, std::fabs(r));
        const double e = std::fabs(double(v[worst]) - exact) / (scale > 0 ? scale : 1);
        const int64_t n = figure.kind == "gemm" ? figure.dims[1] : std::numeric_limits<int64_t>::max();
        if (e <= f.tolerance)
          return {false, e, "double at [" + std::to_string(worst / n) + "," + std::to_string(worst % n) + "], where " +
                                best.against + " is off by " + std::to_string(best.err)};
        best.err = std::max(best.err, e);
      }
      return best;
    };
    std::string check = "-";
    int wrong = 0;
    const std::string checked = isTriad ? "triad" : "radix";
    for (const auto& name : names) {
      const Measure& m = results[name];
      if (m.dump.empty() || (name == "triad" && !isTriad)) continue;
      const Verdict v = verdictOf(name, m);
      if (name == checked) {
        char buf[192];
        std::snprintf(buf, sizeof buf, "%s err %.1e vs %s", v.bad ? "WRONG" : "ok", v.err, v.against.c_str());
        check = buf;
        wrong += v.bad;
      } else if (v.bad) {
        std::printf("   warning: %s differs from %s: err %.2e\n", name.c_str(), v.against.c_str(), v.err);
      }
    }
    std::printf("%-2d %-28s %-7s %9s %9s %9s %9s %9s  %-17s %-10s %s\n", threads, f.name.c_str(), f.gemm ? "GFLOP/s" : "GB/s",
                isTriad ? "-" : cell("radix").c_str(), cell("onednn").c_str(), cell("openblas").c_str(),
                cell("torch").c_str(), f.gemm ? "-" : cell("triad").c_str(), ratio, roof, check.c_str());
    if (options_.verbose)
      for (const auto& name : names) {
        const Measure& m = results[name];
        if (!m.note.empty() || m.ok())
          std::printf("   %-8s reps %d threads %d cpu/wall %.2f %s\n", name.c_str(), m.reps, m.threads,
                      m.ok() ? m.cpu / m.seconds : 0.0, m.note.c_str());
      }
    std::fflush(stdout);
    return wrong;
  }

  /// Per figure: T2/T1 speedup and cpu/wall at the largest T of every implementation, so that a
  /// thread setting that did not take effect shows (speedup ~1, cpu/wall ~1).
  void printThreadSummary(const std::vector<FigureSpec>& chosen) {
    if (options_.threads.size() < 2) return;
    const int t1 = options_.threads.front(), t2 = options_.threads.back();
    std::printf("\nthreads: speedup of T=%d over T=%d (threads that used CPU in a rep at T=%d->T=%d, from"
                " /proc/PID/task/*/stat;\n  cpu/wall = process CPU time / wall time of the best rep, ~T on an idle"
                " machine)\n",
                t2, t1, t1, t2);
    for (const FigureSpec& f : chosen) {
      auto it = measured_.find(f.name);
      if (it == measured_.end()) continue;
      std::string line;
      for (const auto& name : {"radix", "onednn", "openblas", "torch", "triad"}) {
        const auto a = it->second[t1].find(name), b = it->second[t2].find(name);
        if (a == it->second[t1].end() || b == it->second[t2].end()) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf, "  %s %.2fx (%d->%d, %.2f->%.2f)", name, a->second.seconds / b->second.seconds,
                      a->second.threads, b->second.threads, a->second.cpu / a->second.seconds,
                      b->second.cpu / b->second.seconds);
        line += buf;
      }
      if (!line.empty()) std::printf("%-28s%s\n", f.name.c_str(), line.c_str());
    }
  }

  Options options_;
  std::string tmp_;
  std::map<std::string, std::unique_ptr<Worker>> workers_;
  std::map<std::string, double> rates_;  // best work per second, by worker:kind:dtype and worker:spec
  std::map<std::string, std::vector<double>> references_;
  std::map<std::string, std::map<int, std::map<std::string, Measure>>> measured_;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

const char* kUsage =
    "usage: radix-bench-cpu [--quick] [--threads 1,2] [--reps N] [--cap S] [--max-call S]\n"
    "                       [--filter SUBSTR[,SUBSTR...]] [--peers onednn,openblas,torch] [--no-radix]\n"
    "                       [--python PATH] [--torch-script PATH] [--list] [--verbose]\n"
    "  --quick      3 reps, 2 s of reps per worker and figure, 20 s per call at most\n"
    "  --filter     only the figures whose name contains one of the substrings (see --list)\n"
    "  --peers      the peers to run (default all; empty string for none)\n"
    "  --verbose    per implementation: reps, cpu/wall, why n/a\n"
    "internal: radix-bench-cpu --worker radix|triad --threads T (speaks bench_worker.h's protocol)\n";

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Options options;
  std::string workerKind;
  int workerThreads = 1;
  bool quick = false, list = false;
  std::optional<int> reps;
  std::optional<double> cap, maxCall;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "radix-bench-cpu: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--worker") workerKind = value();
    else if (a == "--threads") {
      const std::string v = value();
      options.threads.clear();
      for (const auto& t : split(v)) options.threads.push_back(std::max(1, std::atoi(t.c_str())));
      workerThreads = options.threads.empty() ? 1 : options.threads.front();
    } else if (a == "--quick") quick = true;
    else if (a == "--reps") reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--cap") cap = std::atof(value().c_str());
    else if (a == "--max-call") maxCall = std::atof(value().c_str());
    else if (a == "--filter") options.filters = split(value());
    else if (a == "--peers") options.peers = split(value());
    else if (a == "--no-radix") options.radix = false;
    else if (a == "--python") options.python = value();
    else if (a == "--torch-script") options.torchScript = value();
    else if (a == "--verbose") options.verbose = true;
    else if (a == "--list") list = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "radix-bench-cpu: unknown argument %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  for (const auto& p : options.peers)
    if (p != "onednn" && p != "openblas" && p != "torch") {
      std::fprintf(stderr, "radix-bench-cpu: unknown peer %s (onednn, openblas, torch)\n", p.c_str());
      return 2;
    }
  if (quick) {
    options.reps = 3;
    options.cap = 2;
    options.maxCall = 20;
    options.minRep = 0.02;
  }
  if (reps) options.reps = *reps;
  if (cap) options.cap = *cap;
  if (maxCall) options.maxCall = *maxCall;
  try {
    if (workerKind == "radix") {
      RadixBackend backend(workerThreads);
      return bench::serve(backend);
    }
    if (workerKind == "triad") {
      TriadBackend backend(workerThreads);
      return bench::serve(backend);
    }
    if (!workerKind.empty()) {
      std::fprintf(stderr, "radix-bench-cpu: unknown worker %s\n", workerKind.c_str());
      return 2;
    }
    if (list) {
      for (const FigureSpec& f : figures()) std::printf("%s\n", f.name.c_str());
      return 0;
    }
    Driver driver(options);
    return driver.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "radix-bench-cpu: %s\n", e.what());
    return 1;
  }
}

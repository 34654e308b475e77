// radix-bench-cpu's OpenBLAS peer (a child process; see bench_worker.h): cblas_sgemm for f32
// GEMM, cblas_sgemv for f32 GEMV. Debian's OpenBLAS 0.3.21 (pthreads) has no sbgemm, so bf16 is
// n/a. The driver starts it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset and
// OPENBLAS_NUM_THREADS set; `info` reports the kernel (core) OpenBLAS picked.
#include <cblas.h>

#include <functional>

#include "bench_worker.h"

extern "C" {
// Declared by OpenBLAS's cblas.h; repeated so that another cblas.h on the include path still works.
char* openblas_get_corename(void);
char* openblas_get_config(void);
int openblas_get_num_threads(void);
}

namespace {

using bench::Figure;

class OpenBlas : public bench::Backend {
 public:
  std::string info() override {
    return std::string("OpenBLAS core=") + openblas_get_corename() + " threads=" +
           std::to_string(openblas_get_num_threads()) + " config=" + openblas_get_config();
  }

  std::string setup(const Figure& f) override {
    run_ = nullptr;
    copies_.clear();
    const auto& d = f.dims;
    if (f.dtype != "f32") return "Debian's OpenBLAS 0.3.21 has no " + f.dtype + " GEMM (no sbgemm)";
    if (f.kind == "gemm") {
      const int m = static_cast<int>(d[0]), n = static_cast<int>(d[1]), k = static_cast<int>(d[2]);
      a_ = bench::benchValues(int64_t{m} * k, bench::kSeedA);
      copies_.assign(bench::weightCopies(f), bench::benchValues(int64_t{k} * n, bench::kSeedB));
      c_.assign(static_cast<size_t>(m) * n, 0.0f);
      run_ = [=, this] {
        const float* b = copies_[call_++ % copies_.size()].data();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a_.data(), k, b, n, 0.0f, c_.data(), n);
      };
      return "";
    }
    if (f.kind == "gemv") {
      const int n = static_cast<int>(d[0]), k = static_cast<int>(d[1]);
      copies_.assign(bench::weightCopies(f), bench::benchValues(int64_t{n} * k, bench::kSeedW));
      b_ = bench::benchValues(k, bench::kSeedX);
      c_.assign(n, 0.0f);
      run_ = [=, this] {
        const float* w = copies_[call_++ % copies_.size()].data();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, b_.data(), 1, 0.0f, c_.data(), 1);
      };
      return "";
    }
    return "no " + f.kind + " in BLAS";
  }

  void run() override { run_(); }
  std::vector<float> output() override { return c_; }

 private:
  std::function<void()> run_;
  std::vector<float> a_, b_, c_;
  std::vector<std::vector<float>> copies_;  // of the weight, cycled through (bench::weightCopies)
  size_t call_ = 0;
};

}  // namespace

int main() {
  OpenBlas backend;
  return bench::serve(backend);
}

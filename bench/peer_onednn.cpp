// radix-bench-cpu's oneDNN peer (a child process; see bench_worker.h): dnnl_sgemm for f32 GEMM
// and GEMV, the matmul primitive for bf16 (bf16 in and out, f32 accumulation; plain weights, or
// with RADIX_BENCH_ONEDNN_WEIGHTS=packed its own layout reordered once), and the softmax
// and eltwise (tanh, gelu_tanh) primitives, causal attention unfused (matmul, softmax, matmul),
// and the convolution (NCHW, weights reordered once). Plain row-major layouts, as Radix gets them.
// oneDNN runs on libgomp, which reads OMP_NUM_THREADS when it loads: the driver sets it.
#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <functional>

#include "bench_worker.h"

namespace {

using bench::Figure;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

class OneDnn : public bench::Backend {
 public:
  std::string info() override {
    const dnnl_version_t* v = dnnl_version();
    // libgomp is loaded by libdnnl; ask it how many threads a parallel region gets.
    auto maxThreads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    char buf[160];
    std::snprintf(buf, sizeof buf, "oneDNN %d.%d.%d cpu_runtime=%s omp_get_max_threads=%d", v->major, v->minor,
                  v->patch, v->cpu_runtime == DNNL_RUNTIME_OMP ? "omp" : "other", maxThreads ? maxThreads() : -1);
    return buf;
  }

  std::string setup(const Figure& f) override {
    run_ = nullptr;
    copies_.clear();
    weiBf16_.clear();
    outF32_.clear();
    outBf16_.clear();
    outS32_.clear();
    weiS8_.clear();
    bf16Out_ = false;
    const auto& d = f.dims;
    if (f.kind == "gemm" && f.dtype == "f32") {
      const int64_t m = d[0], n = d[1], k = d[2];
      a_ = bench::benchValues(m * k, bench::kSeedA);
      copies_.assign(bench::weightCopies(f), bench::benchValues(k * n, bench::kSeedB));
      outF32_.assign(m * n, 0.0f);
      run_ = [=, this] {
        const float* b = next(copies_).data();
        check(dnnl_sgemm('N', 'N', m, n, k, 1.0f, a_.data(), k, b, n, 0.0f, outF32_.data(), n));
      };
      return "";
    }
    if (f.kind == "gemv" && f.dtype == "f32") {  // y[1,N] = x[1,K] W[N,K]^T
      const int64_t n = d[0], k = d[1];
      copies_.assign(bench::weightCopies(f), bench::benchValues(n * k, bench::kSeedW));
      b_ = bench::benchValues(k, bench::kSeedX);
      outF32_.assign(n, 0.0f);
      run_ = [=, this] {
        const float* w = next(copies_).data();
        check(dnnl_sgemm('N', 'T', 1, n, k, 1.0f, b_.data(), k, w, k, 0.0f, outF32_.data(), n));
      };
      return "";
    }
    if ((f.kind == "gemm" || f.kind == "gemv") && f.dtype == "bf16") {
      const bool gemv = f.kind == "gemv";
      const int64_t m = gemv ? 1 : d[0], n = gemv ? d[0] : d[1], k = gemv ? d[1] : d[2];
      // gemv: src = x [1,K], weights = W^T, i.e. W [N,K] row-major seen as {K,N} with tag ba.
      dnnl::memory::desc src({m, k}, dt::bf16, tag::ab), wei({k, n}, dt::bf16, gemv ? tag::ba : tag::ab),
          dst({m, n}, dt::bf16, tag::ab);
      srcBf16_ = toBf16(bench::benchValues(m * k, gemv ? bench::kSeedX : bench::kSeedA));
      weiBf16_.assign(bench::weightCopies(f), toBf16(bench::benchValues(k * n, gemv ? bench::kSeedW : bench::kSeedB)));
      outBf16_.assign(m * n, 0);
      bf16Out_ = true;
      std::vector<void*> weights;
      for (auto& w : weiBf16_) weights.push_back(w.data());
      matmul(src, srcBf16_.data(), wei, weights, dst, outBf16_.data());
      return "";
    }
    if (f.kind == "gemm" && f.dtype == "i8") {  // u8 x s8 -> s32
      const int64_t m = d[0], n = d[1], k = d[2];
      dnnl::memory::desc src({m, k}, dt::u8, tag::ab), wei({k, n}, dt::s8, tag::ab), dst({m, n}, dt::s32, tag::ab);
      srcU8_.resize(m * k);
      for (int64_t i = 0; i < m * k; ++i) srcU8_[i] = static_cast<uint8_t>(bench::benchU8(i, bench::kSeedA));
      std::vector<int8_t> w(k * n);
      for (int64_t i = 0; i < k * n; ++i) w[i] = static_cast<int8_t>(bench::benchI8(i, bench::kSeedB));
      weiS8_.assign(bench::weightCopies(f), w);
      outS32_.assign(m * n, 0);
      std::vector<void*> weights;
      for (auto& copy : weiS8_) weights.push_back(copy.data());
      matmul(src, srcU8_.data(), wei, weights, dst, outS32_.data());
      return "";
    }
    if (f.kind == "attention") return setupAttention(f);
    if (f.kind == "conv") {
      // NCHW source and destination as Radix gets them; the weights in the layout oneDNN
      // prefers, reordered once here (as a framework does at load time).
      const bench::Conv c = bench::convOf(f);
      const bool bf16 = f.dtype == "bf16";
      const dt type = bf16 ? dt::bf16 : dt::f32;
      const int64_t o = c.out();
      dnnl::memory::desc src({c.batch, c.cin, c.hw, c.hw}, type, tag::nchw), dst({c.batch, c.cout, o, o}, type, tag::nchw);
      dnnl::memory::desc weiPlain({c.cout, c.cin, c.k, c.k}, type, tag::oihw), weiAny({c.cout, c.cin, c.k, c.k}, type, tag::any);
      auto pd = dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                          weiAny, dst, {c.stride, c.stride}, {c.pad, c.pad}, {c.pad, c.pad}),
          engine_);
      const std::vector<float> x = bench::benchValues(c.batch * c.cin * c.hw * c.hw, bench::kSeedA);
      const std::vector<float> w = bench::benchValues(c.cout * c.cin * c.k * c.k, bench::kSeedB);
      if (bf16) {
        srcBf16_ = toBf16(x);
        weiBf16_.assign(1, toBf16(w));
        outBf16_.assign(c.outputs(), 0);
        bf16Out_ = true;
      } else {
        a_ = x;
        b_ = w;
        outF32_.assign(c.outputs(), 0.0f);
      }
      void* srcData = bf16 ? static_cast<void*>(srcBf16_.data()) : a_.data();
      void* weiData = bf16 ? static_cast<void*>(weiBf16_[0].data()) : b_.data();
      void* dstData = bf16 ? static_cast<void*>(outBf16_.data()) : outF32_.data();
      auto srcMem = std::make_shared<dnnl::memory>(src, engine_, srcData);
      auto dstMem = std::make_shared<dnnl::memory>(dst, engine_, dstData);
      dnnl::memory plainW(weiPlain, engine_, weiData);
      auto weiMem = std::make_shared<dnnl::memory>(pd.weights_desc(), engine_);
      dnnl::reorder(plainW, *weiMem).execute(stream_, plainW, *weiMem);
      stream_.wait();
      auto prim = std::make_shared<dnnl::convolution_forward>(pd);
      run_ = [=, this] {
        prim->execute(stream_, {{DNNL_ARG_SRC, *srcMem}, {DNNL_ARG_WEIGHTS, *weiMem}, {DNNL_ARG_DST, *dstMem}});
        stream_.wait();
      };
      return "";
    }
    if (f.dtype != "f32") return "no " + f.dtype + " " + f.kind + " here";
    if (f.kind == "softmax" || f.kind == "tanh" || f.kind == "gelu") {
      const bool softmax = f.kind == "softmax";
      const dnnl::memory::dims dims = softmax ? dnnl::memory::dims{d[0], d[1]} : dnnl::memory::dims{d[0]};
      dnnl::memory::desc md(dims, dt::f32, softmax ? tag::ab : tag::a);
      const uint32_t seed = softmax ? bench::kSeedSoftmax : f.kind == "tanh" ? bench::kSeedTanh : bench::kSeedGelu;
      a_ = bench::benchValues(f.elements(), seed, bench::kActivationScale);
      outF32_.assign(f.elements(), 0.0f);
      std::shared_ptr<dnnl::primitive> prim;
      if (softmax) {
        prim = std::make_shared<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(
            dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), engine_));
      } else {
        const auto alg = f.kind == "tanh" ? dnnl::algorithm::eltwise_tanh : dnnl::algorithm::eltwise_gelu_tanh;
        prim = std::make_shared<dnnl::eltwise_forward>(dnnl::eltwise_forward::primitive_desc(
            dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, alg, md, 0.0f, 0.0f), engine_));
      }
      auto src = std::make_shared<dnnl::memory>(md, engine_, a_.data());
      auto dst = std::make_shared<dnnl::memory>(md, engine_, outF32_.data());
      run_ = [=, this] {
        prim->execute(stream_, {{DNNL_ARG_SRC, *src}, {DNNL_ARG_DST, *dst}});
        stream_.wait();
      };
      return "";
    }
    return "no " + f.kind + " in oneDNN 2.6";
  }

  // Causal attention, unfused: S = Q Kᵀ · scale + mask (matmul with output scale and a binary-add
  // post-op; f32 S), softmax over keys in place, P (bf16 for bf16) · V.
  std::string setupAttention(const Figure& f) {
    const int64_t h = f.dims[0], n = f.dims[1], hd = f.dims[2];
    const bool bf16 = f.dtype == "bf16";
    if (!bf16 && f.dtype != "f32") return "no " + f.dtype + " attention here";
    const dt in = bf16 ? dt::bf16 : dt::f32;
    dnnl::memory::desc qmd({h, n, hd}, in, tag::abc), kmd({h, hd, n}, in, tag::acb), smd({h, n, n}, dt::f32, tag::abc),
        pmd({h, n, n}, in, tag::abc), vmd({h, n, hd}, in, tag::abc), omd({h, n, hd}, in, tag::abc);
    mask_.assign(h * n * n, 0.0f);
    for (int64_t b = 0; b < h; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) mask_[(b * n + i) * n + j] = -INFINITY;
    auto values = [&](uint32_t seed) { return bench::benchValues(h * n * hd, seed); };
    a_ = values(bench::kSeedQ), b_ = values(bench::kSeedK), c_ = values(bench::kSeedV);
    if (bf16) srcBf16_ = toBf16(a_), kBf16_ = toBf16(b_), vBf16_ = toBf16(c_);
    scores_.assign(h * n * n, 0.0f);
    probs_.assign(bf16 ? h * n * n : 0, 0);
    outF32_.assign(bf16 ? 0 : h * n * hd, 0.0f);
    outBf16_.assign(bf16 ? h * n * hd : 0, 0);
    bf16Out_ = bf16;
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(hd))});
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, smd);
    attr.set_post_ops(ops);
    auto qk = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(qmd, kmd, smd), attr, engine_));
    auto softmax = std::make_shared<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, smd, 2), engine_));
    auto pv = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(bf16 ? pmd : smd, vmd, omd), engine_));
    void* qp = bf16 ? static_cast<void*>(srcBf16_.data()) : a_.data();
    void* kp = bf16 ? static_cast<void*>(kBf16_.data()) : b_.data();
    void* vp = bf16 ? static_cast<void*>(vBf16_.data()) : c_.data();
    void* op = bf16 ? static_cast<void*>(outBf16_.data()) : outF32_.data();
    auto q = std::make_shared<dnnl::memory>(qmd, engine_, qp), k = std::make_shared<dnnl::memory>(kmd, engine_, kp),
         v = std::make_shared<dnnl::memory>(vmd, engine_, vp), o = std::make_shared<dnnl::memory>(omd, engine_, op),
         s = std::make_shared<dnnl::memory>(smd, engine_, scores_.data()),
         mask = std::make_shared<dnnl::memory>(smd, engine_, mask_.data());
    std::shared_ptr<dnnl::memory> p = bf16 ? std::make_shared<dnnl::memory>(pmd, engine_, probs_.data()) : s;
    auto toP = bf16 ? std::make_shared<dnnl::reorder>(*s, *p) : nullptr;
    run_ = [=, this] {
      qk->execute(stream_, {{DNNL_ARG_SRC, *q}, {DNNL_ARG_WEIGHTS, *k}, {DNNL_ARG_DST, *s},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, *mask}});
      softmax->execute(stream_, {{DNNL_ARG_SRC, *s}, {DNNL_ARG_DST, *s}});
      if (toP) toP->execute(stream_, *s, *p);
      pv->execute(stream_, {{DNNL_ARG_SRC, *p}, {DNNL_ARG_WEIGHTS, *v}, {DNNL_ARG_DST, *o}});
      stream_.wait();
    };
    return "";
  }

  void run() override { run_(); }

  // run_ = one matmul per call, cycling through the weight copies. RADIX_BENCH_ONEDNN_WEIGHTS=packed:
  // the weights in the layout oneDNN picks (tag::any), reordered once here, as a framework does at
  // load time; default: the plain weights.
  void matmul(const dnnl::memory::desc& src, void* srcData, const dnnl::memory::desc& wei,
              const std::vector<void*>& weights, const dnnl::memory::desc& dst, void* dstData) {
    const char* mode = std::getenv("RADIX_BENCH_ONEDNN_WEIGHTS");
    const bool packed = mode && std::string(mode) == "packed";
    const dnnl::memory::desc weiAny(wei.dims(), wei.data_type(), tag::any);
    auto pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, packed ? weiAny : wei, dst), engine_);
    auto prim = std::make_shared<dnnl::matmul>(pd);
    auto srcMem = std::make_shared<dnnl::memory>(src, engine_, srcData);
    auto dstMem = std::make_shared<dnnl::memory>(dst, engine_, dstData);
    auto weiMems = std::make_shared<std::vector<dnnl::memory>>();
    for (void* w : weights) {
      if (!packed) {
        weiMems->emplace_back(wei, engine_, w);
        continue;
      }
      dnnl::memory plain(wei, engine_, w);
      weiMems->emplace_back(pd.weights_desc(), engine_);
      dnnl::reorder(plain, weiMems->back()).execute(stream_, plain, weiMems->back());
      stream_.wait();
    }
    run_ = [=, this] {
      prim->execute(stream_, {{DNNL_ARG_SRC, *srcMem}, {DNNL_ARG_WEIGHTS, next(*weiMems)}, {DNNL_ARG_DST, *dstMem}});
      stream_.wait();
    };
  }

  std::vector<float> output() override {
    if (!outS32_.empty()) return std::vector<float>(outS32_.begin(), outS32_.end());
    if (!bf16Out_) return outF32_;
    std::vector<float> out(outBf16_.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = bench::fromBf16(outBf16_[i]);
    return out;
  }

 private:
  template <class T>
  T& next(std::vector<T>& copies) {
    return copies[call_++ % copies.size()];
  }
  static void check(dnnl_status_t s) {
    if (s != dnnl_success) throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(s));
  }
  static std::vector<uint16_t> toBf16(const std::vector<float>& v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = bench::toBf16(v[i]);
    return out;
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::function<void()> run_;
  std::vector<float> a_, b_, c_, outF32_, mask_, scores_;
  std::vector<uint16_t> srcBf16_, outBf16_, kBf16_, vBf16_, probs_;
  std::vector<std::vector<uint16_t>> weiBf16_;
  std::vector<uint8_t> srcU8_;
  std::vector<std::vector<int8_t>> weiS8_;
  std::vector<int32_t> outS32_;
  std::vector<std::vector<float>> copies_;  // of the weight, cycled through (bench::weightCopies)
  size_t call_ = 0;
  bool bf16Out_ = false;
};

}  // namespace

int main() {
  try {
    OneDnn backend;
    return bench::serve(backend);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "radix-bench-peer-onednn: %s\n", e.what());
    return 1;
  }
}

#pragma once
// cuDNN's graph API (the backend descriptors), loaded at run time (cudnn.cpp): no cuDNN headers,
// the few enum values it needs are written here (cudnn_graph_v9.h's). A DnnGraph builds one
// operation graph, finds an engine for it and runs it; radix_cuda_attention builds the attention
// graph with it.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace radix::detail::cuda {

/// cuDNN's entry points; `problem` says why they could not be loaded ("" when loaded).
struct Dnn {
  std::string problem;
  int (*create)(void**) = nullptr;
  int (*setStream)(void*, void*) = nullptr;
  int (*createDescriptor)(int, void**) = nullptr;
  int (*setAttribute)(void*, int, int, int64_t, const void*) = nullptr;
  int (*getAttribute)(void*, int, int, int64_t, int64_t*, void*) = nullptr;
  int (*finalize)(void*) = nullptr;
  int (*execute)(void*, void*, void*) = nullptr;
  int (*destroyDescriptor)(void*) = nullptr;
};

/// The process's cuDNN: $RADIX_LIBCUDNN, else libcudnn.so.9.
const Dnn& dnn();
/// Binds `out`'s entry points in a dlopen'ed cuDNN; what it lacks ("" when nothing).
std::string bindDnn(void* lib, Dnn& out);

// cudnnBackendDescriptorType_t
constexpr int kPointwise = 0, kConvolution = 1, kOperationConvForward = 10, kEngineConfig = 3, kEngineHeur = 4, kExecutionPlan = 5, kOperationPointwise = 13,
              kOperationGraph = 15, kVariantPack = 16, kTensor = 17, kMatmul = 18, kOperationMatmul = 19,
              kReduction = 21, kOperationReduction = 22;
// cudnnBackendAttributeType_t
constexpr int kTypeHandle = 0, kTypeDataType = 1, kTypeBoolean = 2, kTypeInt64 = 3, kTypeFloat = 4, kTypeVoidPtr = 6,
              kTypeConvolutionMode = 7, kTypeHeurMode = 8, kTypePointwiseMode = 14, kTypeBackendDescriptor = 15, kTypeReductionOperator = 18;
// cudnnBackendAttributeName_t
constexpr int kPointwiseMode = 0, kPointwiseMathPrec = 1, kPointwiseAxis = 9;
constexpr int kConvCompType = 100, kConvMode = 101, kConvDilations = 102, kConvFilterStrides = 103,
              kConvPostPaddings = 104, kConvPrePaddings = 105, kConvSpatialDims = 106;
constexpr int kOpConvAlpha = 700, kOpConvBeta = 701, kOpConvDesc = 702, kOpConvW = 703, kOpConvX = 704, kOpConvY = 705;
constexpr int kEngineHeurMode = 200, kEngineHeurGraph = 201, kEngineHeurResults = 202;
constexpr int kPlanHandle = 400, kPlanEngineConfig = 401, kPlanWorkspaceSize = 402;
constexpr int kOpPointwiseDescriptor = 750, kOpPointwiseX = 751, kOpPointwiseB = 752, kOpPointwiseY = 753,
              kOpPointwiseAlpha1 = 754, kOpPointwiseAlpha2 = 755, kOpPointwiseT = 758;
constexpr int kOperationGraphHandle = 800, kOperationGraphOps = 801;
constexpr int kTensorByteAlignment = 900, kTensorDataType = 901, kTensorDimensions = 902, kTensorStrides = 903,
              kTensorUniqueId = 906, kTensorIsVirtual = 907, kTensorIsByValue = 908;
constexpr int kVariantPackIds = 1000, kVariantPackPointers = 1001, kVariantPackWorkspace = 1003;
constexpr int kMatmulCompType = 1500, kOpMatmulA = 1520, kOpMatmulB = 1521, kOpMatmulC = 1522, kOpMatmulDesc = 1523;
constexpr int kReductionOperator = 1600, kReductionCompType = 1601, kOpReductionX = 1610, kOpReductionY = 1611,
              kOpReductionDesc = 1612;
// cudnnDataType_t, cudnnPointwiseMode_t, cudnnReduceTensorOp_t, cudnnBackendHeurMode_t
constexpr int kFloat = 0, kHalf = 2, kInt32 = 4, kBfloat16 = 9, kBoolean = 11;
constexpr int kAdd = 0, kMul = 1, kDiv = 6, kSub = 9, kExp = 13, kLog = 15, kCmpGe = 303, kCmpLt = 304,
              kLogicalAnd = 400, kGenIndex = 501, kBinarySelect = 601;
constexpr int kReduceAdd = 0, kReduceMax = 3;
constexpr int kCrossCorrelation = 1;  // cudnnConvolutionMode_t
constexpr int kHeurModeFallback = 2, kHeurModeA = 3;

/// One operation graph: its tensors (numbered 1, 2, ... as their unique ids), its operations,
/// and once planned the execution plan. The first failing call is kept in error(); later calls
/// do nothing.
class DnnGraph {
 public:
  enum class Kind { device, virtualTensor, byValue };
  explicit DnnGraph(const Dnn& dnn) : dnn_(dnn) {}
  ~DnnGraph();
  DnnGraph(const DnnGraph&) = delete;
  DnnGraph& operator=(const DnnGraph&) = delete;

  /// A tensor's unique id: tensor(kBfloat16, {1, 12, 512, 64}, {393216, 32768, 64, 1}) -> 1
  int64_t tensor(int dataType, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                 Kind kind = Kind::device);
  /// y = mode(x, b, t) computed in `precision`; b, t 0 for none; axis for kGenIndex.
  /// pointwise(kMul, kFloat, scores, scale, 0, scaled)
  void pointwise(int mode, int precision, int64_t x, int64_t b, int64_t t, int64_t y, int64_t axis = -1);
  /// c = a · b over the last two dims (leading dims broadcast): matmul(q, kT, scores)
  void matmul(int64_t a, int64_t b, int64_t c);
  /// y = reduce(x) over the dims where y has size 1: reduction(kReduceMax, scores, rowMax)
  void reduction(int reduceOp, int64_t x, int64_t y);
  /// Per spatial axis: stride, dilation, zeros before and after.
  struct ConvWindow {
    std::vector<int64_t> strides, dilations, before, after;
  };
  /// y = beta · y + the cross-correlation of x {n, c, spatial...} with w {k, c / groups,
  /// window...} (groups implied by c). convolution(x, w, y, {{2, 2}, {1, 1}, {1, 1}, {1, 1}}, 0)
  void convolution(int64_t x, int64_t w, int64_t y, const ConvWindow& window, float beta);
  /// Finalizes the graph and keeps the first engine configuration that plans; false (and
  /// error()) when none does.
  bool plan(void* handle);
  /// Executes the plan: `pointers` for the non-virtual tensors in the order they were made.
  /// False when the variant pack could not be made; an execution failure is recorded.
  bool run(void* handle, const std::vector<const void*>& pointers, void* workspace);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int64_t workspaceBytes() const { return workspace_; }
  size_t operations() const { return ops_.size(); }
  /// Leaves the descriptors alive at destruction (graphs kept until the process ends).
  void keepAtExit() { keep_ = true; }

 private:
  void* create(int type);
  void set(void* d, int attribute, int type, int64_t count, const void* values);
  // `attribute` of d: the tensor descriptor of unique id uid (tensor()'s result).
  void setTensor(void* d, int attribute, int64_t uid);
  void finalize(void* d, const char* what);
  void fail(const std::string& what);

  const Dnn& dnn_;
  std::vector<void*> owned_, tensors_, ops_;
  std::vector<int64_t> bound_;  // unique ids of the non-virtual tensors
  void* plan_ = nullptr;
  int64_t workspace_ = 0;
  bool keep_ = false;
  std::string error_;
};

/// What radix_cuda_attention computes, read from radix_kernel_attention's argument array
/// (compiler/kernels/attention.h), the two batch axes merged.
struct AttentionShape {
  int64_t batch = 1, hq = 1, hk = 1, nq = 1, nk = 1, hd = 1;
  std::array<std::array<int64_t, 3>, 4> strides{};  // q, k, v, out: batch, head, position
  bool causal = false, offset = false, lengths = false;
  int64_t lengthStride = 0;
  float scale = 1;
};
/// The shape of a call cuDNN's flash attention can take, else nullopt (f32 or f16 inputs, a
/// head dim not a multiple of 8 or over 256, a window, a soft cap, batch axes that do not merge).
/// Buffer slots are read only for whether they are set: the compiler asks with them zero.
std::optional<AttentionShape> attentionShape(const int64_t* args);
/// The attention graph of cudnn-frontend's SDPA: Q·Kᵀ, the scale, the masks (causal: key j for
/// query i when j <= i + offset; lengths: j < lengths[b]), softmax with statistics, ·V.
void buildAttention(DnnGraph& g, const AttentionShape& s);
/// radix_cuda_conv's graph from its descriptor (kernels/conv.h's kCudaConv* words): x, w, y
/// (y f32), one convolution; a 1-D convolution gets a unit spatial axis in front (cuDNN's
/// tensors have 4 dims or more).
void buildConvolution(DnnGraph& g, const int64_t* words);
/// The variant pack's pointers for buildAttention's graph, in its tensors' order.
std::vector<const void*> attentionPointers(const int64_t* args, const AttentionShape& s, const float* scale,
                                           const float* negInf, const int32_t* fixedOffset);

}  // namespace radix::detail::cuda

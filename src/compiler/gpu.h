#pragma once
// The CUDA lowering (compiler/gpu.cpp, docs/gpu.md).
#include <functional>
#include <string>
#include <string_view>

namespace mlir {
class ModuleOp;
}

namespace radix::detail {

/// Runs a textual pass pipeline on the module being lowered (`what` names it in errors).
using PipelineRunner = std::function<void(const std::string& pipeline, const char* what)>;

/// "sm_90a" for the target "cuda:sm_90a"; "" for a target that is not CUDA.
std::string cudaArch(std::string_view target);
/// The folder of the ptxas that code generation runs (PATH, else $RADIX_CUDA_PATH/bin or
/// /usr/local/cuda/bin, which is then added to PATH); "" when there is none.
std::string findPtxas();
/// Registers the CUDA path's passes (radix-split-reductions), once per process.
void registerGpuPasses();
/// Registers LLVM's NVPTX back end, once per process.
void initNvptxOnce();
/// Lowers a bufferized module (the compiler's ABI already in place) to LLVM dialect host code
/// that launches kernels embedded as cubins for `target` ("cuda:sm_90a"). Throws
/// radix::Error("[compile] cuda:...") for what the GPU path cannot take yet.
void lowerForCuda(mlir::ModuleOp module, const std::string& target, const PipelineRunner& runPipeline);

}  // namespace radix::detail

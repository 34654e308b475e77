#pragma once
// Passes of the fast CPU elementwise/reduction path (fast_ewise.cpp), named in the lowering
// pipeline: radix-fuse-rows, radix-lower-rows{parallel=0|1}, radix-math-approx.

namespace radix::detail {

/// Registers the passes with MLIR's pass registry (once per process).
void registerFastEwisePasses();

}  // namespace radix::detail

#pragma once
/// Radix: write models as plain C++ structs of Tensors, trace them into MLIR, compile once,
/// cache on disk, run fast.
#include "radix/collectives.h"
#include "radix/control.h"
#include "radix/dtype.h"
#include "radix/error.h"
#include "radix/module.h"
#include "radix/nn.h"
#include "radix/platform.h"
#include "radix/random.h"
#include "radix/shape.h"
#include "radix/tensor.h"

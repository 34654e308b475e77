#pragma once
/// radix::nn: common layers as plain structs of Tensors, built from the public Tensor ops only
/// (nothing here knows about MLIR). A layer's `forward` takes exactly its inputs, so that
/// `radix::compile(cpu, &nn::LayerNorm::forward, ln, x)` and `radix::call(ln, &nn::LayerNorm::forward, x)`
/// work as for any model.
///
/// Axis tags: "s" sequence, "d" model width, "voc" vocabulary, "h" heads, "hd" head width,
/// "q" and "k" query and key positions in attention; "b" batch, "c" channels, "h" and "w" image
/// rows and columns in CNN layers.
///
/// This umbrella includes every family; each lives in include/radix/nn/ (linear, norm, rope,
/// attention, activation, resize, testing; conv and pool for CNNs, encoder for multi-head attention
/// and transformer encoder layers).
#include "radix/nn/activation.h"
#include "radix/nn/attention.h"
#include "radix/nn/common.h"
#include "radix/nn/conv.h"
#include "radix/nn/encoder.h"
#include "radix/nn/linear.h"
#include "radix/nn/norm.h"
#include "radix/nn/pool.h"
#include "radix/nn/resize.h"
#include "radix/nn/rope.h"
#include "radix/nn/testing.h"

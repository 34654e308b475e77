#pragma once
/// radix::nn activations and MLPs.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "radix/nn/linear.h"

namespace radix::nn {

// ---- activations and MLPs ----

/// x if x >= 0, else alpha * (e^x - 1) (float only): elu({3}, 1.0) -> {3}
inline Tensor elu(const Tensor& x, double alpha, Loc loc = Loc::current()) {
  return detail::inLayer("nn.elu", loc, [&] { return x.ge(0).select(x, x.expm1().mulConstant(alpha)); });
}

/// The activations nn::Activation chooses from.
enum class ActivationKind { relu, sigmoid, tanh, silu, gelu, geluErf, quickGelu, leakyRelu, elu };

/// An activation chosen by configuration (a compile-time constant of the trace), as ZML's
/// nn.Activation: Activation{ActivationKind::leakyRelu, 0.1}.forward({3}) -> {3}
struct Activation {
  ActivationKind kind = ActivationKind::gelu;
  double alpha = 0.01;  // leakyRelu's slope, elu's scale

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.Activation", *this, loc, [&] {
      switch (kind) {
        case ActivationKind::relu: return x.relu();
        case ActivationKind::sigmoid: return x.sigmoid();
        case ActivationKind::tanh: return x.tanh();
        case ActivationKind::silu: return x.silu();
        case ActivationKind::gelu: return x.gelu();
        case ActivationKind::geluErf: return x.geluErf();
        case ActivationKind::quickGelu: return x.quickGelu();
        case ActivationKind::leakyRelu: return x.leakyRelu(alpha);
        case ActivationKind::elu: return elu(x, alpha, loc);
      }
      throw Error("[nn.Activation] unknown kind " + std::to_string(static_cast<int>(kind)));
    });
  }
};

/// down(gelu(up(x))) with the tanh approximation of GELU (GPT-2). Give `up` an `out` tag for the
/// hidden axis (such as "f") and `down` the same tag as `in`.
/// GeluMlp{Linear{w1, b1, "d", "f"}, Linear{w2, b2, "f", "d"}}.forward({s=3,d=8}) -> {s=3,d=8}
struct GeluMlp {
  Linear up, down;

  Tensor forward(Tensor x, Loc loc = Loc::current()) const { return down.forward(up.forward(x, loc).gelu(), loc); }
};

/// down(silu(gate(x)) * up(x)) (Llama's SwiGLU MLP).
/// SwiGluMlp{gate, up, down}.forward({s=3,d=8}) -> {s=3,d=8}
struct SwiGluMlp {
  Linear gate, up, down;

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return down.forward(gate.forward(x, loc).silu().mul(up.forward(x, loc)), loc);
  }
};

}  // namespace radix::nn

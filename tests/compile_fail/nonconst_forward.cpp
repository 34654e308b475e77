// Must not compile: forward is not const. With -DRADIX_EXPECT_OK it is, and compiles.
#include <radix/radix.h>

#ifdef RADIX_EXPECT_OK
#define RADIX_CONST const
#else
#define RADIX_CONST
#endif

struct Layer {
  radix::Tensor w;
  radix::Tensor forward(radix::Tensor x) RADIX_CONST { return x.mul(w); }
};

struct Model {
  Layer layer;
  radix::Tensor forward(radix::Tensor x) const { return radix::call(layer, &Layer::forward, x); }
  radix::Tensor direct(radix::Tensor x) RADIX_CONST { return x.add(layer.w); }
};

int main() {
  radix::Platform cpu = radix::Platform::cpu();
  radix::Tensor x(radix::Shape({3}, radix::DType::f32));
  Model m{Layer{x}};
  radix::compile(cpu, &Model::forward, m, x);
  radix::compile(cpu, &Model::direct, m, x);
}

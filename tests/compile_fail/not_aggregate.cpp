// Must not compile: a model struct with a constructor and a private field is not an aggregate.
// With -DRADIX_EXPECT_OK it is one, and compiles (so that the failure is the one expected).
#include <radix/radix.h>

struct Model {
#ifdef RADIX_EXPECT_OK
  radix::Tensor w;
#else
  explicit Model(radix::Tensor weight) : w(weight) {}
  radix::Tensor forward(radix::Tensor x) const { return x.mul(w); }

 private:
  radix::Tensor w;

 public:
#endif
  radix::Tensor apply(radix::Tensor x) const { return x.mul(w); }
};

int main() {
  radix::Platform cpu = radix::Platform::cpu();
  radix::Tensor x(radix::Shape({3}, radix::DType::f32));
  Model m{x};
  radix::compile(cpu, &Model::apply, m, x);
}

// Shape ops: broadcasts, reshapes, transposes; and buffer donation (reuseBuffer).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"

namespace radix {

using namespace ops;

Tensor Tensor::broadcast(const Shape& target, const std::vector<int64_t>& axes, Loc l) const {
  const char* op = "broadcast";
  TraceContext& c = detail::currentTrace(op);
  if (static_cast<int64_t>(axes.size()) != rank())
    throw opError(op, std::to_string(axes.size()) + " axes for " + shape_.str());
  std::vector<bool> used(target.rank(), false);
  std::vector<int64_t> resolved;
  for (int64_t i = 0; i < rank(); ++i) {
    int64_t t = target.axis(axes[i], op);
    if (used[t]) throw opError(op, "axis " + std::to_string(t) + " of " + target.str() + " is targeted twice");
    used[t] = true;
    if (shape_.dim(i) != target.dim(t) && shape_.dim(i) != 1)
      throw opError(op, "can't broadcast axis " + std::to_string(i) + " of " + shape_.str() + " to axis " +
                            std::to_string(t) + " of " + target.str());
    resolved.push_back(t);
  }
  auto loc = c.loc(l, op);
  Shape out = target.withDtype(dtype());
  return c.wrap(broadcastValue(c, loc, c.value(*this, op), shape_, out, resolved), out);
}

Tensor Tensor::broad(const Shape& target, Loc l) const {
  const char* op = "broad";
  std::vector<int64_t> axes;
  if (rank() > target.rank()) throw opError(op, "can't broadcast " + shape_.str() + " to smaller " + target.str());
  if (rank() == target.rank() || rank() == 0) {
    for (int64_t i = 0; i < rank(); ++i) {
      if (!shape_.tag(i).empty() && !target.tag(i).empty() && !(shape_.tag(i) == target.tag(i)))
        throw opError(op, "tags differ at axis " + std::to_string(i) + ": " + shape_.str() + " to " + target.str());
      axes.push_back(i);
    }
  } else if (shape_.isTagged()) {
    for (int64_t i = 0; i < rank(); ++i) {
      if (shape_.tag(i).empty()) throw opError(op, "axis " + std::to_string(i) + " of " + shape_.str() + " has no tag to map into " + target.str());
      int64_t t = target.hasTag(shape_.tag(i));
      if (t < 0) throw opError(op, "no axis tagged " + quote(shape_.tag(i).name()) + " in " + target.str());
      axes.push_back(t);
    }
  } else {
    for (int64_t i = 0; i < rank(); ++i) axes.push_back(target.rank() - rank() + i);
  }
  return renamingErrors(op, [&] { return broadcast(target, axes, l); });
}

Tensor Tensor::reshape(const std::vector<int64_t>& dims, Loc l) const {
  const char* op = "reshape";
  TraceContext& c = detail::currentTrace(op);
  Shape out(dims, dtype());
  if (out.count() != shape_.count())
    throw opError(op, "can't reshape " + shape_.str() + " (" + std::to_string(shape_.count()) + " elements) to " + out.str());
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::transpose(const std::vector<Axis>& permutation, Loc l) const {
  const char* op = "transpose";
  TraceContext& c = detail::currentTrace(op);
  if (static_cast<int64_t>(permutation.size()) != rank())
    throw opError(op, std::to_string(permutation.size()) + " axes in the permutation of " + shape_.str());
  std::vector<int64_t> perm, dims;
  std::vector<Tag> tags;
  std::vector<bool> seen(rank(), false);
  for (const Axis& a : permutation) {
    int64_t i = shape_.axis(a, op);
    if (seen[i]) throw opError(op, "axis " + a.str() + " appears twice in the permutation of " + shape_.str());
    seen[i] = true;
    perm.push_back(i);
    dims.push_back(shape_.dim(i));
    tags.push_back(shape_.tag(i));
  }
  Shape out = Shape(dims, dtype()).withTags(tags);
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  if (std::is_sorted(perm.begin(), perm.end())) return c.wrap(x, out);
  auto init = emptyLike(c, loc, out);
  return c.wrap(mlir::linalg::TransposeOp::create(c.builder(), loc, x, init, perm).getResult()[0], out);
}

Tensor Tensor::reuseBuffer(const Tensor& origin, Loc) const {
  const char* op = "reuseBuffer";
  TraceContext& c = detail::currentTrace(op);
  c.value(*this, op);
  c.value(origin, op);
  if (!shape_.sameDimsAndDtype(origin.shape_))
    throw opError(op, "result " + shape_.str() + " can't take the buffer of " + origin.shape_.str());
  const int32_t source = origin.donation_ >= 0 ? origin.donation_ : origin.argument_;
  if (source < 0)
    throw opError(op, "origin " + origin.shape_.str() + " is not an argument of the traced function (nor reuses one)");
  Tensor t = *this;
  t.donation_ = source;
  return t;
}

}  // namespace radix

// Control flow: radix::whileLoop as scf.while and radix::ifElse as scf.if on tensors. The blocks
// are traced detached, in region scopes that see the enclosing function's values, and moved into
// the op once its result types are known.
#include "radix/control.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "ops/common.h"

namespace radix::detail {

using ops::opError;

namespace {

bool sameShape(const Shape& a, const Shape& b) {
  if (!a.sameDimsAndDtype(b)) return false;
  for (int64_t i = 0; i < a.rank(); ++i)
    if (!(a.tag(i) == b.tag(i))) return false;
  return true;
}

}  // namespace

void checkSameLeaves(const char* op, const char* what, const char* reference, const std::vector<std::string>& a,
                     const std::vector<std::string>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "nothing", y = i < b.size() ? b[i] : "nothing";
    if (x != y)
      throw opError(op, std::string(what) + " differs from " + reference + " at leaf " + std::to_string(i) + ": " + x +
                            " instead of " + y + " (structures and non-Tensor leaves must be equal)");
  }
}

struct RegionTrace::State {
  Kind kind;
  const char* op;
  TraceContext& c;
  mlir::Location loc;
  std::vector<mlir::Value> operands;  // while: the initial state
  std::vector<Shape> shapes;           // while: the state's shapes; if: the first branch's results
  std::vector<mlir::Type> types;
  mlir::Value pred;                    // if: the predicate as i1
  std::vector<mlir::Block*> blocks;    // detached until finish()
  bool open = false;

  State(Kind k, const std::source_location& where)
      : kind(k), op(k == Kind::whileLoop ? "whileLoop" : "ifElse"), c(currentTrace(op)), loc(c.loc(where, op)) {}

  void checkPredicate(const Tensor& pred, const char* what) {
    c.value(pred, op);
    if (pred.rank() != 0 || pred.dtype() != DType::bool_)
      throw opError(op, std::string(what) + " must be a bool scalar {}:bool, got " + pred.shape().str() +
                            " (convert to DType::bool_ or compare)");
  }

  mlir::Value scalarOf(const Tensor& t) {
    return mlir::tensor::ExtractOp::create(c.builder(), loc, c.value(t, op), mlir::ValueRange{});
  }
};

RegionTrace::RegionTrace(Kind kind, std::source_location loc) : state_(std::make_unique<State>(kind, loc)) {}

RegionTrace::~RegionTrace() {
  if (state_->open) state_->c.endRegion();
  for (mlir::Block* block : state_->blocks) {
    block->dropAllDefinedValueUses();
    block->dropAllReferences();
    delete block;
  }
}

void RegionTrace::begin(const std::vector<const Tensor*>& init) {
  State& s = *state_;
  for (const Tensor* t : init) {
    s.operands.push_back(s.c.value(*t, s.op));
    s.shapes.push_back(t->shape());
    s.types.push_back(s.c.tensorType(t->shape()));
  }
}

void RegionTrace::begin(const Tensor& pred) {
  State& s = *state_;
  s.checkPredicate(pred, "the predicate");
  s.pred = s.scalarOf(pred);
}

std::vector<Tensor> RegionTrace::open() {
  State& s = *state_;
  auto* block = new mlir::Block();
  s.blocks.push_back(block);
  std::vector<Tensor> arguments;
  if (s.kind == Kind::whileLoop) {
    for (mlir::Type type : s.types) block->addArgument(type, s.loc);
  }
  s.c.beginRegion(block);
  s.open = true;
  if (s.kind == Kind::whileLoop)
    for (size_t i = 0; i < s.shapes.size(); ++i) arguments.push_back(s.c.wrap(block->getArgument(i), s.shapes[i]));
  return arguments;
}

void RegionTrace::closeCondition(const Tensor& pred) {
  State& s = *state_;
  s.checkPredicate(pred, "cond's result");
  mlir::Value flag = s.scalarOf(pred);
  mlir::scf::ConditionOp::create(s.c.builder(), s.loc, flag, s.blocks.back()->getArguments());
  s.c.endRegion();
  s.open = false;
}

void RegionTrace::closeYield(const std::vector<const Tensor*>& results) {
  State& s = *state_;
  const bool isWhile = s.kind == Kind::whileLoop;
  const bool first = !isWhile && s.blocks.size() == 1;
  const char* what = isWhile ? "body's result" : first ? "onTrue's result" : "onFalse's result";
  const char* reference = isWhile ? "the initial state" : "onTrue's";
  std::vector<mlir::Value> values;
  for (size_t i = 0; i < results.size(); ++i) {
    const Shape& shape = results[i]->shape();
    values.push_back(s.c.value(*results[i], s.op));
    if (first) {
      s.shapes.push_back(shape);
      s.types.push_back(values.back().getType());
    } else if (i >= s.shapes.size() || !sameShape(shape, s.shapes[i])) {
      throw opError(s.op, std::string(what) + " Tensor " + std::to_string(i) + " is " + shape.str() + " but " +
                              reference + " is " + (i < s.shapes.size() ? s.shapes[i].str() : "absent"));
    }
  }
  if (results.size() != s.shapes.size())
    throw opError(s.op, std::string(what) + " has " + std::to_string(results.size()) + " Tensors, " + reference +
                            " has " + std::to_string(s.shapes.size()));
  mlir::scf::YieldOp::create(s.c.builder(), s.loc, values);
  s.c.endRegion();
  s.open = false;
}

std::vector<Tensor> RegionTrace::finish() {
  State& s = *state_;
  mlir::Operation* op;
  if (s.kind == Kind::whileLoop) {
    auto loop = mlir::scf::WhileOp::create(s.c.builder(), s.loc, s.types, s.operands);
    loop.getBefore().push_back(s.blocks[0]);
    loop.getAfter().push_back(s.blocks[1]);
    op = loop;
  } else {
    auto branch = mlir::scf::IfOp::create(s.c.builder(), s.loc, s.types, s.pred, false, false);
    branch.getThenRegion().push_back(s.blocks[0]);
    branch.getElseRegion().push_back(s.blocks[1]);
    op = branch;
  }
  s.blocks.clear();
  std::vector<Tensor> results;
  for (size_t i = 0; i < s.shapes.size(); ++i) results.push_back(s.c.wrap(op->getResult(i), s.shapes[i]));
  return results;
}

}  // namespace radix::detail

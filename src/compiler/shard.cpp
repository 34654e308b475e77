// Sharded compilation. The sharding flags of @main's arguments and results become shard dialect
// annotations; MLIR's sharding-propagation and shard-partition rewrite @main into the program of
// one partition; each shard collective left by the partitioner becomes a private function that
// calls the MPI runtime (src/runtime/mpi.cpp) on its buffers. MLIR 22's convert-shard-to-mpi is
// not used: it lowers only all_reduce and mis-handles OpenMPI's handles (shared/spmd/README.md).
#include "compiler/shard.h"

#include <cstdio>
#include <sstream>

#include "runtime/cache.h"
#include "compiler/compiler.h"
#include "compiler/module_rewrites.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/error.h"
#include "runtime/mpi.h"
#include "runtime/profiler.h"
#include "runtime/runtime.h"

namespace radix::detail {

namespace {

constexpr const char* kGrid = "radix_grid";

mlir::Value shardingOf(mlir::OpBuilder& b, mlir::Location loc, const Shape& shape, const std::string& what) {
  mlir::MLIRContext* ctx = b.getContext();
  const int64_t axis = shardedAxis(shape, "compile");
  std::vector<mlir::shard::GridAxesAttr> split;
  if (axis >= 0) {
    split.assign(static_cast<size_t>(axis + 1), mlir::DenseI16ArrayAttr::get(ctx, {}));
    split[static_cast<size_t>(axis)] = mlir::DenseI16ArrayAttr::get(ctx, {0});
  } else if (shape.rank() > 0) {
    split.push_back(mlir::DenseI16ArrayAttr::get(ctx, {}));
  }
  return mlir::shard::ShardingOp::create(b, loc, kGrid, split).getResult();
}

// radix::DType of an element type (integers are signless in the IR: signed).
int32_t dtypeOf(mlir::Type t) {
  DType d = DType::f32;
  if (t.isF32()) d = DType::f32;
  else if (t.isF64()) d = DType::f64;
  else if (t.isF16()) d = DType::f16;
  else if (t.isBF16()) d = DType::bf16;
  else if (t.isInteger(1)) d = DType::bool_;
  else if (t.isInteger(8)) d = DType::i8;
  else if (t.isInteger(16)) d = DType::i16;
  else if (t.isInteger(32)) d = DType::i32;
  else if (t.isInteger(64)) d = DType::i64;
  else throw Error("[compile] sharded collectives do not handle element type " + [&] {
      std::string s;
      llvm::raw_string_ostream os(s);
      t.print(os);
      return s;
    }());
  return static_cast<int32_t>(d);
}

int32_t reductionCode(mlir::shard::ReductionKind kind) {
  switch (kind) {
    case mlir::shard::ReductionKind::Sum: return RADIX_MPI_SUM;
    case mlir::shard::ReductionKind::Max: return RADIX_MPI_MAX;
    case mlir::shard::ReductionKind::Min: return RADIX_MPI_MIN;
    case mlir::shard::ReductionKind::Product: return RADIX_MPI_PROD;
    default: throw Error("[compile] sharded all_reduce: unsupported reduction kind");
  }
}

int64_t product(llvm::ArrayRef<int64_t> dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

class CollectiveLowering {
 public:
  CollectiveLowering(mlir::ModuleOp module, int partitions) : module_(module), partitions_(partitions), b_(module.getContext()) {}

  mlir::func::FuncOp declare(const char* name, unsigned i64s, unsigned i32s, bool returnsI64 = false) {
    if (auto f = module_.lookupSymbol<mlir::func::FuncOp>(name)) return f;
    mlir::OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(module_.getBody());
    std::vector<mlir::Type> in(i64s, b_.getI64Type());
    in.insert(in.end(), i32s, b_.getI32Type());
    std::vector<mlir::Type> out;
    if (returnsI64) out.push_back(b_.getI64Type());
    auto f = mlir::func::FuncOp::create(b_, module_.getLoc(), name, b_.getFunctionType(in, out));
    f.setPrivate();
    return f;
  }

  // The op's result computed by a private function (tensor in, tensor out) whose body calls the
  // runtime on the argument's buffer and a fresh one; function arguments are never freed by the
  // callee, so the buffers outlive the call.
  void replace(mlir::Operation* op, mlir::Value input, mlir::RankedTensorType resultType, const char* runtime,
               const std::vector<int64_t>& i64Args, const std::vector<int32_t>& i32Args) {
    auto inType = mlir::cast<mlir::RankedTensorType>(input.getType());
    mlir::func::FuncOp callee = declare(runtime, 2 + static_cast<unsigned>(i64Args.size()),
                                        static_cast<unsigned>(i32Args.size()) + 1);
    const std::string name = std::string("radix_collective_") + std::to_string(counter_++);
    mlir::func::FuncOp fn;
    {
      mlir::OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToEnd(module_.getBody());
      mlir::Location loc = op->getLoc();
      fn = mlir::func::FuncOp::create(b_, loc, name, b_.getFunctionType({inType}, {resultType}));
      fn.setPrivate();
      mlir::Block* block = fn.addEntryBlock();
      b_.setInsertionPointToStart(block);
      auto inMem = mlir::MemRefType::get(inType.getShape(), inType.getElementType());
      auto outMem = mlir::MemRefType::get(resultType.getShape(), resultType.getElementType());
      mlir::Value in = mlir::bufferization::ToBufferOp::create(b_, loc, inMem, block->getArgument(0), /*read_only=*/true);
      mlir::Value out = mlir::memref::AllocOp::create(b_, loc, outMem, b_.getI64IntegerAttr(64));
      auto pointer = [&](mlir::Value m) {
        mlir::Value index = mlir::memref::ExtractAlignedPointerAsIndexOp::create(b_, loc, m);
        return mlir::arith::IndexCastOp::create(b_, loc, b_.getI64Type(), index).getResult();
      };
      std::vector<mlir::Value> operands{pointer(in), pointer(out)};
      for (int64_t v : i64Args) operands.push_back(mlir::arith::ConstantIntOp::create(b_, loc, v, 64));
      for (int32_t v : i32Args) operands.push_back(mlir::arith::ConstantIntOp::create(b_, loc, v, 32));
      operands.push_back(mlir::arith::ConstantIntOp::create(b_, loc, partitions_, 32));
      mlir::func::CallOp::create(b_, loc, callee, operands);
      mlir::Value result = mlir::bufferization::ToTensorOp::create(b_, loc, resultType, out, /*restrict=*/true);
      mlir::func::ReturnOp::create(b_, loc, result);
    }
    b_.setInsertionPoint(op);
    auto call = mlir::func::CallOp::create(b_, op->getLoc(), fn, mlir::ValueRange{input});
    op->getResult(0).replaceAllUsesWith(call.getResult(0));
    op->erase();
  }

  mlir::Value partitionIndex(mlir::Location loc) {
    mlir::func::FuncOp callee = declare("radix_mpi_partition_index", 0, 1, true);
    mlir::Value p = mlir::arith::ConstantIntOp::create(b_, loc, partitions_, 32);
    mlir::Value index = mlir::func::CallOp::create(b_, loc, callee, mlir::ValueRange{p}).getResult(0);
    return mlir::arith::IndexCastOp::create(b_, loc, b_.getIndexType(), index);
  }

  /// Lowers the shard ops of `root` (a function, or the whole module: its grids stay).
  void run(mlir::Operation* root) {
    std::vector<mlir::Operation*> ops;
    root->walk([&](mlir::Operation* op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "shard" && !mlir::isa<mlir::shard::GridOp>(op))
        ops.push_back(op);
    });
    for (mlir::Operation* op : ops) lower(op);
  }

 private:
  void checkAxes(mlir::Operation* op, llvm::ArrayRef<int16_t> axes) {
    if (axes.size() != 1 || axes[0] != 0)
      throw Error("[compile] sharded " + op->getName().getStringRef().str() + " over grid axes other than [0]");
  }

  void lower(mlir::Operation* op) {
    b_.setInsertionPoint(op);
    if (auto o = mlir::dyn_cast<mlir::shard::AllReduceOp>(op)) {
      auto in = mlir::cast<mlir::RankedTensorType>(o.getInput().getType());
      auto out = mlir::cast<mlir::RankedTensorType>(o.getResult().getType());
      if (o.getGridAxes().empty() || in != out) {
        if (in != out)
          throw Error("[compile] sharded all_reduce with differing input and result types");
        o.getResult().replaceAllUsesWith(o.getInput());
        o->erase();
        return;
      }
      checkAxes(op, o.getGridAxes());
      replace(op, o.getInput(), out, "radix_mpi_all_reduce", {in.getNumElements()},
              {dtypeOf(in.getElementType()), reductionCode(o.getReduction())});
    } else if (auto o = mlir::dyn_cast<mlir::shard::AllGatherOp>(op)) {
      checkAxes(op, o.getGridAxes());
      auto in = mlir::cast<mlir::RankedTensorType>(o.getInput().getType());
      const size_t axis = static_cast<size_t>(o.getGatherAxis().getSExtValue());
      const auto dims = in.getShape();
      replace(op, o.getInput(), mlir::cast<mlir::RankedTensorType>(o.getResult().getType()), "radix_mpi_all_gather",
              {product(dims, 0, axis), product(dims, axis, dims.size())}, {dtypeOf(in.getElementType())});
    } else if (auto o = mlir::dyn_cast<mlir::shard::ReduceScatterOp>(op)) {
      checkAxes(op, o.getGridAxes());
      auto out = mlir::cast<mlir::RankedTensorType>(o.getResult().getType());
      const size_t axis = static_cast<size_t>(o.getScatterAxis().getSExtValue());
      const auto dims = out.getShape();
      replace(op, o.getInput(), out, "radix_mpi_reduce_scatter", {product(dims, 0, axis), product(dims, axis, dims.size())},
              {dtypeOf(out.getElementType()), reductionCode(o.getReduction())});
    } else if (auto o = mlir::dyn_cast<mlir::shard::AllToAllOp>(op)) {
      checkAxes(op, o.getGridAxes());
      auto in = mlir::cast<mlir::RankedTensorType>(o.getInput().getType());
      auto out = mlir::cast<mlir::RankedTensorType>(o.getResult().getType());
      const size_t split = static_cast<size_t>(o.getSplitAxis().getSExtValue());
      const size_t concat = static_cast<size_t>(o.getConcatAxis().getSExtValue());
      const auto id = in.getShape();
      const auto od = out.getShape();
      // in: [A, P, B] over the split axis; out: [C1, P, C2] over the concat axis.
      replace(op, o.getInput(), out, "radix_mpi_all_to_all",
              {product(id, 0, split), product(id, split, id.size()) / partitions_, product(od, 0, concat),
               product(od, concat, od.size()) / partitions_},
              {dtypeOf(in.getElementType())});
    } else if (auto o = mlir::dyn_cast<mlir::shard::ProcessMultiIndexOp>(op)) {
      for (mlir::Value r : o->getResults()) r.replaceAllUsesWith(partitionIndex(o.getLoc()));
      o->erase();
    } else if (auto o = mlir::dyn_cast<mlir::shard::ProcessLinearIndexOp>(op)) {
      o->getResult(0).replaceAllUsesWith(partitionIndex(o.getLoc()));
      o->erase();
    } else if (auto o = mlir::dyn_cast<mlir::shard::GridShapeOp>(op)) {
      for (mlir::Value r : o->getResults())
        r.replaceAllUsesWith(mlir::arith::ConstantIndexOp::create(b_, o.getLoc(), partitions_).getResult());
      o->erase();
    } else if (mlir::isa<mlir::shard::ShardingOp>(op) && op->use_empty()) {
      op->erase();
    } else if (auto o = mlir::dyn_cast<mlir::shard::ShardOp>(op)) {
      o.getResult().replaceAllUsesWith(o.getSrc());
      o->erase();
    } else {
      std::string text;
      llvm::raw_string_ostream os(text);
      op->print(os);
      throw Error("[compile] the sharded program needs " + op->getName().getStringRef().str() +
                  ", which Radix's MPI runtime does not implement: " + text);
    }
  }

  mlir::ModuleOp module_;
  int partitions_;
  mlir::OpBuilder b_;
  int counter_ = 0;
};

// For each group of a reshape's reassociation, the one dim of the group that carries the other
// side's size (the rest are unit dims); nullopt for a reshape that moves data.
std::optional<std::vector<int64_t>> unitDimPicks(llvm::ArrayRef<int64_t> small, llvm::ArrayRef<int64_t> big,
                                                 llvm::ArrayRef<mlir::ReassociationIndices> groups) {
  std::vector<int64_t> picks;
  for (size_t i = 0; i < groups.size(); ++i) {
    int64_t pick = -1;
    for (int64_t j : groups[i]) {
      if (big[j] == small[i] && pick < 0) pick = j;
      else if (big[j] != 1) return std::nullopt;
    }
    if (pick < 0) return std::nullopt;
    picks.push_back(pick);
  }
  return picks;
}

/// Reshapes that only add or drop unit dims (keepdim reductions, broadcasts) become copies as
/// linalg.generic, which has the sharding interface that tensor reshapes lack.
void unitReshapesToGenerics(mlir::func::FuncOp fn) {
  std::vector<mlir::Operation*> reshapes;
  fn.walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp>(op)) reshapes.push_back(op);
  });
  mlir::OpBuilder b(fn.getContext());
  for (mlir::Operation* op : reshapes) {
    const bool expand = mlir::isa<mlir::tensor::ExpandShapeOp>(op);
    auto src = mlir::cast<mlir::RankedTensorType>(op->getOperand(0).getType());
    auto dst = mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    if (!src.hasStaticShape() || !dst.hasStaticShape()) continue;
    auto groups = expand ? mlir::cast<mlir::tensor::ExpandShapeOp>(op).getReassociationIndices()
                         : mlir::cast<mlir::tensor::CollapseShapeOp>(op).getReassociationIndices();
    mlir::RankedTensorType big = expand ? dst : src, small = expand ? src : dst;
    auto picks = unitDimPicks(small.getShape(), big.getShape(), groups);
    if (!picks) continue;
    const unsigned loops = static_cast<unsigned>(big.getRank());
    std::vector<mlir::AffineExpr> exprs;
    for (int64_t j : *picks) exprs.push_back(b.getAffineDimExpr(static_cast<unsigned>(j)));
    auto smallMap = mlir::AffineMap::get(loops, 0, exprs, b.getContext());
    auto bigMap = b.getMultiDimIdentityMap(loops);
    b.setInsertionPoint(op);
    mlir::Value init = mlir::tensor::EmptyOp::create(b, op->getLoc(), dst.getShape(), dst.getElementType());
    std::vector<mlir::utils::IteratorType> iterators(loops, mlir::utils::IteratorType::parallel);
    auto generic = mlir::linalg::GenericOp::create(
        b, op->getLoc(), mlir::TypeRange{dst}, mlir::ValueRange{op->getOperand(0)}, mlir::ValueRange{init},
        llvm::ArrayRef<mlir::AffineMap>{expand ? smallMap : bigMap, expand ? bigMap : smallMap}, iterators,
        [](mlir::OpBuilder& nb, mlir::Location loc, mlir::ValueRange args) {
          mlir::linalg::YieldOp::create(nb, loc, args[0]);
        });
    op->getResult(0).replaceAllUsesWith(generic.getResult(0));
    op->erase();
  }
}

// The constant a value is filled with (linalg.fill of a constant into tensor.empty), or null.
mlir::Attribute fillConstant(mlir::Value v) {
  auto fill = v.getDefiningOp<mlir::linalg::FillOp>();
  if (!fill || !fill.getOutputs()[0].getDefiningOp<mlir::tensor::EmptyOp>()) return {};
  mlir::Attribute a;
  if (!mlir::matchPattern(fill.getInputs()[0], mlir::m_Constant(&a))) return {};
  return a;
}

/// A split reduction's destination is its init on partition 0 and the neutral element elsewhere
/// (scf.if on the partition index). When the init is itself that neutral fill, both branches fill
/// alike: one fill before the branch, so that the contraction keeps a plain zero init (and its
/// fast kernel).
void foldEqualFillBranches(mlir::func::FuncOp fn) {
  std::vector<mlir::scf::IfOp> ifs;
  fn.walk([&](mlir::scf::IfOp op) { ifs.push_back(op); });
  mlir::OpBuilder b(fn.getContext());
  for (mlir::scf::IfOp op : ifs) {
    if (op.getNumResults() == 0 || op.getElseRegion().empty()) continue;
    auto thenYield = op.thenYield(), elseYield = op.elseYield();
    bool equal = true;
    for (unsigned i = 0; i < op.getNumResults() && equal; ++i) {
      mlir::Attribute a = fillConstant(thenYield.getOperand(i)), e = fillConstant(elseYield.getOperand(i));
      equal = a && a == e && thenYield.getOperand(i).getType() == elseYield.getOperand(i).getType();
    }
    if (!equal) continue;
    b.setInsertionPoint(op);
    for (unsigned i = 0; i < op.getNumResults(); ++i) {
      auto type = mlir::cast<mlir::RankedTensorType>(op.getResult(i).getType());
      mlir::Value scalar = mlir::arith::ConstantOp::create(b, op.getLoc(), mlir::cast<mlir::TypedAttr>(fillConstant(thenYield.getOperand(i))));
      mlir::Value empty = mlir::tensor::EmptyOp::create(b, op.getLoc(), type.getShape(), type.getElementType());
      op.getResult(i).replaceAllUsesWith(
          mlir::linalg::FillOp::create(b, op.getLoc(), mlir::ValueRange{scalar}, mlir::ValueRange{empty}).getResult(0));
    }
    op->erase();
  }
}

/// The copies that keep elementwise producers out of contractions (src/ops/contract.cpp), put
/// back after partitioning: fused, a contraction would miss its kernel.
void copyContractionOperands(mlir::func::FuncOp fn) {
  std::vector<mlir::linalg::LinalgOp> contractions;
  fn.walk([&](mlir::linalg::LinalgOp op) {
    if (op.getNumReductionLoops() > 0 && op.hasPureTensorSemantics()) contractions.push_back(op);
  });
  mlir::OpBuilder b(fn.getContext());
  for (mlir::linalg::LinalgOp op : contractions) {
    for (mlir::OpOperand* in : op.getDpsInputOperands()) {
      auto producer = in->get().getDefiningOp<mlir::linalg::LinalgOp>();
      auto type = mlir::dyn_cast<mlir::RankedTensorType>(in->get().getType());
      if (!producer || producer.getNumReductionLoops() > 0 || mlir::isa<mlir::linalg::FillOp>(producer) || !type ||
          type.getNumElements() == 0)
        continue;
      b.setInsertionPoint(op);
      in->set(mlir::bufferization::AllocTensorOp::create(b, op->getLoc(), type, mlir::ValueRange{}, in->get()).getResult());
    }
  }
}

}  // namespace

void partitionForProcesses(mlir::ModuleOp module, const Signature& signature, int numPartitions,
                           const RunPipeline& runPipeline) {
  mlir::MLIRContext* ctx = module.getContext();
  ctx->getOrLoadDialect<mlir::shard::ShardDialect>();
  // Nothing sharded and no collectives (a tensor-parallel model's sampler): every process runs
  // the whole program on its own replicated values.
  bool anySharded = false;
  for (const std::vector<Shape>* shapes : {&signature.argShapes, &signature.resultShapes})
    for (const Shape& s : *shapes) anySharded |= s.shardingMask() != 0;
  bool anyCollective = false;
  module.walk([&](mlir::Operation* op) {
    anyCollective |= op->getDialect() && op->getDialect()->getNamespace() == "shard" && !mlir::isa<mlir::shard::GridOp>(op);
  });
  if (!anySharded && !anyCollective) return;
  CollectiveLowering lowering(module, numPartitions);
  // Explicit collectives (radix/collectives.h) make per-process code, as shard_map does: nothing
  // to partition (the partitioner knows no collective ops), only the collectives to lower, where
  // they are (radix::call functions stay functions, elementwise ops stay as traced, so the
  // module compiles as it would on one process).
  if (anyCollective) {
    auto refuse = [](const std::vector<Shape>& shapes, const char* what) {
      for (size_t i = 0; i < shapes.size(); ++i)
        if (shapes[i].shardingMask() != 0)
          throw Error(std::string("[compile] explicit collectives (allReduce, allGather, ...) are for per-process "
                                  "code, whose arguments and results are not sharded: ") +
                      what + " " + std::to_string(i) + " is " + shapes[i].str() + " sharded");
    };
    refuse(signature.argShapes, "argument");
    refuse(signature.resultShapes, "result");
    lowering.run(module);
    if (auto grid = module.lookupSymbol<mlir::shard::GridOp>(kGrid)) grid->erase();
    runPipeline("canonicalize,cse", "collective cleanup");
    return;
  }
  // Propagation sees one function, with elementwise ops as linalg (which has the sharding interface).
  runPipeline("inline,symbol-dce,convert-elementwise-to-linalg,canonicalize,cse", "sharding preparation");
  auto main = module.lookupSymbol<mlir::func::FuncOp>(kTracedEntry);
  if (!main) throw Error("[compile] sharded module without @main (Radix bug)");
  // Copies that keep producers out of a contraction's fusion have no sharding interface: the
  // partitioner sees the value itself.
  dropFusionBarriers(main);

  mlir::OpBuilder b(ctx);
  unitReshapesToGenerics(main);
  auto grid = module.lookupSymbol<mlir::shard::GridOp>(kGrid);
  if (!grid) {
    b.setInsertionPointToStart(module.getBody());
    grid = mlir::shard::GridOp::create(b, module.getLoc(), kGrid, llvm::ArrayRef<int64_t>{numPartitions});
    grid.setPrivate();
  }

  mlir::Block& entry = main.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (unsigned a = 0; a < entry.getNumArguments(); ++a) {
    mlir::BlockArgument arg = entry.getArgument(a);
    mlir::Value sharding = shardingOf(b, arg.getLoc(), signature.argShapes[a], "argument");
    auto annotated = mlir::shard::ShardOp::create(b, arg.getLoc(), arg, sharding);
    arg.replaceAllUsesExcept(annotated.getResult(), annotated);
  }
  auto ret = mlir::cast<mlir::func::ReturnOp>(entry.getTerminator());
  b.setInsertionPoint(ret);
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    mlir::Value sharding = shardingOf(b, ret.getLoc(), signature.resultShapes[i], "result");
    ret.setOperand(i, mlir::shard::ShardOp::create(b, ret.getLoc(), ret.getOperand(i), sharding).getResult());
  }

  // Partitioning must be nested in func.func (at module level it does not schedule).
  runPipeline("func.func(sharding-propagation,cse,shard-partition,canonicalize,cse)", "sharding partition");

  {
    mlir::SymbolTableCollection symbols;
    mlir::RewritePatternSet patterns(ctx);
    mlir::shard::populateAllSliceOpLoweringPatterns(patterns, symbols);
    if (mlir::failed(mlir::applyPatternsGreedily(module, std::move(patterns))))
      throw Error("[compile] lowering shard.all_slice did not converge");
  }
  main = module.lookupSymbol<mlir::func::FuncOp>(kTracedEntry);
  foldEqualFillBranches(main);
  copyContractionOperands(main);
  lowering.run(main);
  grid->erase();
  std::string leftover;
  module.walk([&](mlir::Operation* op) {
    if (leftover.empty() && op->getDialect() && op->getDialect()->getNamespace() == "shard")
      leftover = op->getName().getStringRef().str();
  });
  if (!leftover.empty()) throw Error("[compile] the sharded program still holds " + leftover + " after lowering");
  runPipeline("canonicalize,cse", "sharding cleanup");
}

CompiledCode compileOnRoot(uint64_t key, const std::string& name,
                           const std::function<CompiledCode(std::string& object)>& compileHere,
                           const std::function<std::string(const std::vector<int32_t>&)>& keyText) {
  const int rank = mpi::worldRank();
  // Every rank must have traced the same module: SPMD programs, one compile per grid.
  const uint64_t rootKey = static_cast<uint64_t>(mpi::broadcastInt(static_cast<int64_t>(key)));
  std::string header, object;
  CompiledCode code;
  if (rank == 0) {
    std::string failure;
    try {
      code = compileHere(object);
    } catch (const Error& e) {
      failure = e.what();
    }
    std::ostringstream os;
    if (failure.empty()) {
      os << "ok";
      for (int32_t a : code.resultAlias) os << " " << a;
    } else {
      os << "error " << failure;
    }
    header = os.str();
    mpi::broadcastFromRoot(header);
    if (!failure.empty()) throw Error(failure);
    mpi::broadcastFromRoot(object);
    return code;
  }
  mpi::broadcastFromRoot(header);
  if (header.rfind("error ", 0) == 0) throw Error(header.substr(6));
  mpi::broadcastFromRoot(object);
  if (rootKey != key)
    throw Error("[compile] " + name + ": rank " + std::to_string(rank) +
                " traced another module than rank 0; a sharded program must trace the same module on every process");
  std::istringstream is(header.substr(2));
  for (int32_t a; is >> a;) code.resultAlias.push_back(a);
  std::string why;
  auto loaded = loadObject(object, keyText(code.resultAlias), why);
  if (!loaded) throw Error("[compile] " + name + ": the object compiled by rank 0 does not load here: " + why);
  code.entry = reinterpret_cast<PackedEntry>(loaded->entry);
  code.owner = loaded->owner;
  if (loaded->profileSites)
    if (auto sites = parseProfileSites(*loaded->profileSites)) code.profile = makeProfileTable(std::move(*sites));
  return code;
}

}  // namespace radix::detail

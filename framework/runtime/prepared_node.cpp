#include "framework/runtime/prepared_node.h"

#include "framework/ops/op_registry.h"

namespace tr {

PreparedNode prepare_node(const Node& n, const ComputationGraph& cg, const PlanSet& ps, const MemoryPlan& plan,
                          const DeviceContext& ctx, StreamKind stream) {
  PreparedNode p;
  p.node_ = &n;
  p.dims_ = plan.dims;
  p.env_ = &ctx.env(stream);
  p.stream_ = stream;
  const bool cuda = ctx.backend() == Backend::Cuda;
  if (n.kind == Node::Kind::Compute) {
    const OpDef& def = op_def(n.op);
    p.fn_ = cuda ? def.cuda : def.cpu;
    if (!p.fn_) throw Error(cat("op ", def.name, " has no ", cuda ? "CUDA" : "CPU", " implementation (", n.label, ")"));
    auto ref = [&](TensorId t) {
      TensorRef r;
      r.data = ctx.ptr_at(plan.offset_of(t));
      r.dtype = cg.tensor(t).dtype;
      r.shape = plan.shape_of(t);
      TR_CHECK(plan.offset_of(t) >= 0 && r.shape.rank > 0, n.label, ": tensor ", cg.tensor(t).name, " not planned for ",
               variant_name(plan.variant));
      return r;
    };
    for (TensorId t : n.in) p.in_.push_back(ref(t));
    for (TensorId t : n.out) p.out_.push_back(ref(t));
    return p;
  }
  const RangeDef& def = range_def(n.range_op);
  p.range_fn_ = cuda ? def.cuda : def.cpu;
  if (!p.range_fn_)
    throw Error(cat("range op ", def.name, " has no ", cuda ? "CUDA" : "CPU", " implementation (", n.label, ")"));
  p.segs_.reserve(n.operands.size());
  for (const RangeRef& r : n.operands) {
    ResolvedRange rr = ps.resolve(cg, r, plan);
    RangeOperand op;
    op.data = ctx.ptr_at(rr.offset);
    op.dtype = rr.dtype;
    op.elems = rr.elems;
    p.segs_.push_back(std::move(rr.segs));
    op.segs = p.segs_.back().data();
    op.n_segs = static_cast<int>(p.segs_.back().size());
    p.operands_.push_back(op);
  }
  return p;
}

void PreparedNode::run() const {
  if (fn_) {
    OpCall c;
    c.in = in_.data();
    c.n_in = static_cast<int>(in_.size());
    c.out = out_.data();
    c.n_out = static_cast<int>(out_.size());
    c.attrs = &node_->attrs;
    c.variant = &dims_;
    c.env = env_;
    fn_(c);
  } else {
    RangeCall c;
    c.ops = operands_.data();
    c.n_ops = static_cast<int>(operands_.size());
    c.attrs = &node_->range_attrs;
    c.env = env_;
    range_fn_(c);
  }
}

}  // namespace tr

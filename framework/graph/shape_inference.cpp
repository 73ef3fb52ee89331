#include "framework/graph/shape_inference.h"

#include "framework/ops/op_registry.h"

namespace tr {

std::vector<GraphId> graphs_of(const ComputationGraph& cg, Variant v) {
  std::vector<GraphId> out;
  for (int i = 0; i < kGraphIdCount; ++i) {
    const GraphId g = static_cast<GraphId>(i);
    if (!cg.has(g)) continue;
    if (is_train(v) ? used_in_train(g) : used_in_val(g)) out.push_back(g);
  }
  return out;
}

std::vector<Shape> infer_shapes(const ComputationGraph& cg, Variant v, const VariantDims& d) {
  std::vector<Shape> shapes(static_cast<size_t>(cg.num_tensors()));
  for (TensorId t = 0; t < cg.num_tensors(); ++t)
    if (cg.tensor(t).role != Role::Activation) shapes[static_cast<size_t>(t)] = cg.tensor(t).fixed_shape;

  for (GraphId g : graphs_of(cg, v)) {
    for (const Node& n : cg.nodes(g)) {
      if (n.kind != Node::Kind::Compute) continue;
      std::vector<Shape> in;
      for (TensorId t : n.in) {
        const Shape& s = shapes[static_cast<size_t>(t)];
        TR_CHECK(s.rank > 0, n.label, ": input ", cg.tensor(t).name, " has no shape yet in ", variant_name(v));
        in.push_back(s);
      }
      std::vector<Shape> out(n.out.size());
      ShapeCtx ctx{in.data(), static_cast<int>(in.size()), &n.attrs, &d};
      try {
        op_def(n.op).shapes(ctx, out.data(), static_cast<int>(out.size()));
      } catch (const UserError& e) {
        throw UserError(cat("variant ", variant_name(v), ", node ", n.label, ": ", e.what()));
      }
      for (size_t k = 0; k < n.out.size(); ++k) {
        Shape& dst = shapes[static_cast<size_t>(n.out[k])];
        const TensorInfo& ti = cg.tensor(n.out[k]);
        if (ti.role != Role::Activation || dst.rank > 0) {
          TR_CHECK(dst == out[k], n.label, ": output ", ti.name, " shape ", out[k].str(), " != ", dst.str());
        } else {
          dst = out[k];
        }
      }
    }
  }
  return shapes;
}

}  // namespace tr

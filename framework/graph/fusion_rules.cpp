// Note [fusion] (fusion.h): each rule's pattern, guard and rewrite, over
// operands by name (node_operands.h).
#include "framework/graph/fusion_rules.h"

#include <algorithm>
#include <set>

#include "framework/graph/node_operands.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/kernels/pool_window.h"

namespace tr {
namespace {

// Whether nodes (first, last) leave every tensor of `moved` alone.
bool clear_between(const Fuser& f, size_t first, size_t last, const Node& moved) {
  std::set<TensorId> ts(moved.in.begin(), moved.in.end());
  ts.insert(moved.out.begin(), moved.out.end());
  for (size_t k = first + 1; k < last; ++k)
    if (touches(f.cg, f.nodes[k], ts)) return false;
  return true;
}

// Whether n writes any of ts: an output, or any operand of a range op (which may
// write its regions: counted as a write whenever it touches).
bool writes(const ComputationGraph& cg, const Node& n, const std::set<TensorId>& ts) {
  for (TensorId t : n.out)
    if (ts.count(t)) return true;
  return n.kind == Node::Kind::Range && touches(cg, n, ts);
}

bool is_compute(const Node& n, OpKind k) { return n.kind == Node::Kind::Compute && n.op == k; }

bool is_pool2(const Node& n, OpKind k) {
  return is_compute(n, k) && PoolWindow{n.attrs.kernel, n.attrs.stride, n.attrs.pad}.is_2x2();
}

// Whether the node reads t as its input `name` (false when its kind has no such input present).
bool reads_as(const Node& n, std::string_view name, TensorId t) {
  const int k = operand_index(n.op, Side::In, name, n.attrs);
  return k >= 0 && size_t(k) < n.in.size() && n.in[size_t(k)] == t;
}

// The node before nodes[later], on its graph's own stream and of kind `op`, whose
// output `out` is nodes[later]'s input `in` and which only nodes[later] reads; or
// -1. (It may have been merged into another node already: callers check drop.)
int sole_producer(const Fuser& f, size_t later, std::string_view in, OpKind op, std::string_view out) {
  const TensorId t = input_of(f.nodes[later], in);
  const auto it = f.producer.find(t);
  if (it == f.producer.end() || it->second >= later) return -1;
  const Node& p = f.nodes[it->second];
  if (!is_compute(p, op) || !on_own_stream(p) || output_of(p, out) != t || f.readers[size_t(t)] != 1) return -1;
  return int(it->second);
}

// Whether nodes[reader] is the one reader of t in this graph, and every other
// graph that reads t writes it too (its own copy of the forward, as the
// inference graphs have): then merging t's producer into that reader leaves
// no node anywhere without its input. (Fuser::readers counts every graph.)
bool read_only_by(const Fuser& f, TensorId t, size_t reader) {
  auto writes_t = [t](const Node& n) { return std::find(n.out.begin(), n.out.end(), t) != n.out.end(); };
  for (size_t k = 0; k < f.nodes.size(); ++k)  // a range op over t's whole region counts as a reader
    if (k != reader && !f.drop[k] && !writes_t(f.nodes[k]) && touches(f.cg, f.nodes[k], {t})) return false;
  for (int g = 0; g < kGraphIdCount; ++g) {
    bool reads = false, writes = false;
    for (const Node& n : f.cg.nodes(GraphId(g))) {
      writes = writes || writes_t(n);
      reads = reads || (!writes_t(n) && touches(f.cg, n, {t}));
    }
    if (reads && !writes) return false;
  }
  return true;
}

// The first node after `from` of kind `op` that reads t as its input `name`,
// when it runs on its graph's own stream; nodes.size() otherwise.
size_t reader_after(const std::vector<Node>& nodes, size_t from, OpKind op, std::string_view name, TensorId t) {
  for (size_t i = from + 1; i < nodes.size(); ++i)
    if (is_compute(nodes[i], op) && reads_as(nodes[i], name, t)) return on_own_stream(nodes[i]) ? i : nodes.size();
  return nodes.size();
}

std::string joined(const Node& a, const Node& b) { return a.label + "+" + b.label; }

// ---------------------------------------------------------------- pass 0: node pairs

// p = GlobalMaxPoolFwd(x), z = FcFwd(p, w), dl, metrics = SoftmaxXent(z, labels),
// dp = FcBwdData(dl, w, p), dx = GlobalMaxPoolBwd(dp, x, p) -> ClassifierHead
// in the pool's place.
bool fuse_head(Fuser& f, size_t i) {
  std::vector<Node>& nodes = f.nodes;
  const Node& pool = nodes[i];
  if (!is_compute(pool, OpKind::GlobalMaxPoolFwd)) return false;
  const TensorId x = input_of(pool, "x"), p = output_of(pool, "y");
  const size_t fc = reader_after(nodes, i, OpKind::FcFwd, "x", p);
  if (fc == nodes.size() || nodes[fc].attrs.has_bias) return false;
  const TensorId w = input_of(nodes[fc], "w"), z = output_of(nodes[fc], "y");
  const Shape& ws = f.cg.tensor(w).fixed_shape;
  if (ws.rank != 2 || ws[0] < 1 || ws[0] > kSmallFcMaxOutputs || f.readers[size_t(z)] != 1) return false;
  const size_t s = reader_after(nodes, fc, OpKind::SoftmaxXent, "logits", z);
  if (s == nodes.size() || !nodes[s].attrs.with_grad) return false;
  const TensorId labels = input_of(nodes[s], "labels");
  const TensorId dl = output_of(nodes[s], "dlogits"), metrics = output_of(nodes[s], "metrics");
  const size_t d = reader_after(nodes, s, OpKind::FcBwdData, "dy", dl);
  if (d == nodes.size() || input_of(nodes[d], "w") != w || nodes[d].attrs.scale != nodes[fc].attrs.scale) return false;
  const TensorId dp = output_of(nodes[d], "dx");
  if (f.readers[size_t(dp)] != 1) return false;
  const size_t b = reader_after(nodes, d, OpKind::GlobalMaxPoolBwd, "dy", dp);
  if (b == nodes.size() || input_of(nodes[b], "x") != x || input_of(nodes[b], "y") != p) return false;
  const TensorId dx = output_of(nodes[b], "dx");
  // Between the pool and its backward, the nodes that stay behind the fused one
  // may read what it now writes earlier (p, dlogits: the fc's weight gradient),
  // but nothing may write what it reads or writes, or read what vanishes or
  // comes out only at the end.
  const std::set<TensorId> gone = {z, dp, dx, metrics}, kept = {x, w, labels, p, dl};
  for (size_t k = i + 1; k < b; ++k) {
    if (k == fc || k == s || k == d) continue;
    if (touches(f.cg, nodes[k], gone) || writes(f.cg, nodes[k], kept)) return false;
  }
  Node head = pool;
  head.attrs = nodes[fc].attrs;
  head.attrs.label_smoothing = nodes[s].attrs.label_smoothing;
  head.attrs.with_grad = true;
  set_operands(head, OpKind::ClassifierHead, {{"x", x}, {"w", w}, {"labels", labels}},
               {{"p", p}, {"dlogits", dl}, {"metrics", metrics}, {"dx", dx}});
  head.label = pool.label + "+" + nodes[fc].label + "+" + nodes[s].label + "+" + nodes[d].label + "+" + nodes[b].label;
  nodes[i] = head;
  f.drop[fc] = f.drop[s] = f.drop[d] = f.drop[b] = true;
  return true;
}

// y, batch, affine = BnReluApply(x, sums, gamma, beta), then the head of y
// (Note [the head's BatchNorm]) -> BnReluClassifierHead, when only the head's
// pool and pool backward (both inside it) read y.
bool fuse_head_bn(Fuser& f, size_t i) {
  Node& head = f.nodes[i];
  if (!is_compute(head, OpKind::ClassifierHead)) return false;
  const TensorId y = input_of(head, "x");
  const auto it = f.producer.find(y);
  if (it == f.producer.end() || it->second >= i || f.drop[it->second]) return false;
  const Node& bn = f.nodes[it->second];
  if (!is_compute(bn, OpKind::BnReluApply) || !on_own_stream(bn) || output_of(bn, "y") != y ||
      f.readers[size_t(y)] != 2 || !clear_between(f, it->second, i, bn))
    return false;
  Node fused = head;
  fused.attrs.eps = bn.attrs.eps;
  fused.attrs.relu = bn.attrs.relu;
  fused.attrs.bn_rank_local = bn.attrs.bn_rank_local;
  set_operands(fused, OpKind::BnReluClassifierHead,
               {{"x", input_of(bn, "x")},
                {"w", input_of(head, "w")},
                {"labels", input_of(head, "labels")},
                {"sums", input_of(bn, "sums")},
                {"gamma", input_of(bn, "gamma")},
                {"beta", input_of(bn, "beta")}},
               {{"p", output_of(head, "p")},
                {"dlogits", output_of(head, "dlogits")},
                {"metrics", output_of(head, "metrics")},
                {"dx", output_of(head, "dx")},
                {"batch", output_of(bn, "batch")},
                {"affine", output_of(bn, "affine")}});
  fused.label = joined(bn, head);
  head = fused;
  f.drop[it->second] = true;
  return true;
}

// t = BnReluApply(x, sums, gamma, beta) without ReLU, y = Add(t, r) [+ ReLU]
// -> y = BnAddReluApply(x, sums, gamma, beta, r) in the Add's place.
bool fuse_bn_add(Fuser& f, size_t i) {
  Node& add = f.nodes[i];
  if (!is_compute(add, OpKind::Add)) return false;
  for (const auto& [bn_side, residual_side] : {std::pair{"a", "b"}, {"b", "a"}}) {
    const int a = sole_producer(f, i, bn_side, OpKind::BnReluApply, "y");
    if (a < 0) continue;
    const Node& bn = f.nodes[size_t(a)];
    if (f.drop[size_t(a)] || bn.attrs.relu || !clear_between(f, size_t(a), i, bn)) return false;
    Node fused = bn;
    fused.attrs.relu = add.attrs.relu;
    set_operands(fused, OpKind::BnAddReluApply,
                 {{"x", input_of(bn, "x")},
                  {"sums", input_of(bn, "sums")},
                  {"gamma", input_of(bn, "gamma")},
                  {"beta", input_of(bn, "beta")},
                  {"residual", input_of(add, residual_side)}},
                 {{"y", output_of(add, "y")}, {"batch", output_of(bn, "batch")}, {"affine", output_of(bn, "affine")}});
    fused.label = joined(bn, add);
    add = fused;
    f.drop[size_t(a)] = true;
    return true;
  }
  return false;
}

// s = Add(a, b), the gradient fan-in, then g = ReluBwd(s, y) -> g = ReluBwdAdd(a, y, b).
bool fuse_add_relu_bwd(Fuser& f, size_t i) {
  Node& relu = f.nodes[i];
  if (!is_compute(relu, OpKind::ReluBwd)) return false;
  const int a = sole_producer(f, i, "dy", OpKind::Add, "y");  // the sum must be the gradient, not y
  if (a < 0 || f.drop[size_t(a)]) return false;
  const Node& add = f.nodes[size_t(a)];
  if (add.attrs.relu || !clear_between(f, size_t(a), i, add)) return false;
  Node fused = relu;
  set_operands(fused, OpKind::ReluBwdAdd,
               {{"dy", input_of(add, "a")}, {"y", input_of(relu, "y")}, {"dy2", input_of(add, "b")}},
               {{"dx", output_of(relu, "dx")}});
  fused.label = joined(add, relu);
  relu = fused;
  f.drop[size_t(a)] = true;
  return true;
}

// g = ReluBwd(a, y) or ReluBwdAdd(a, y, b), then the first BatchNorm backward
// reduce of g (Note [the ReLU's gradient in the reduce]) -> the reduce with the
// ReLU's gradient in front, in the ReLU's place, g still stored for its other
// readers. The nodes in between may read g, but none may write what the reduce
// reads, or touch what it writes.
bool fuse_relu_grad_reduce(Fuser& f, size_t i) {
  const Node& relu = f.nodes[i];
  const bool two = is_compute(relu, OpKind::ReluBwdAdd);
  if (!two && !is_compute(relu, OpKind::ReluBwd)) return false;
  const TensorId g = output_of(relu, "dx");
  const size_t r = reader_after(f.nodes, i, OpKind::BnReluBwdReduce, "dy", g);
  if (r == f.nodes.size() || f.drop[r]) return false;
  const Node& reduce = f.nodes[r];
  const std::set<TensorId> read(reduce.in.begin(), reduce.in.end());
  const std::set<TensorId> written(reduce.out.begin(), reduce.out.end());
  for (size_t k = i + 1; k < r; ++k)
    if (writes(f.cg, f.nodes[k], read) || touches(f.cg, f.nodes[k], written)) return false;
  Node fused = reduce;
  const std::initializer_list<Named> out = {{"dgamma", output_of(reduce, "dgamma")},
                                            {"dbeta", output_of(reduce, "dbeta")},
                                            {"dsums", output_of(reduce, "dsums")},
                                            {"g", g}};
  const TensorId a = input_of(relu, "dy"), affine = input_of(reduce, "affine"), x = input_of(reduce, "x");
  const TensorId batch = input_of(reduce, "batch"), y = input_of(relu, "y");
  if (two)
    set_operands(fused, OpKind::ReluBwdAddBnReduce,
                 {{"a", a}, {"affine", affine}, {"x", x}, {"batch", batch}, {"y", y}, {"b", input_of(relu, "dy2")}},
                 out);
  else
    set_operands(fused, OpKind::ReluBwdBnReduce, {{"a", a}, {"affine", affine}, {"x", x}, {"batch", batch}, {"y", y}},
                 out);
  fused.label = joined(relu, reduce);
  f.nodes[i] = fused;
  f.drop[r] = true;
  return true;
}

// Whether every reader of y, in every graph, is a 2x2 MaxPoolArgmaxFwd of y, or
// the MaxPoolArgmaxBwd of such a pool (which reads y as its x, for the shape
// only: pool.h): then nothing needs y stored.
bool read_only_by_pools(const ComputationGraph& cg, TensorId y) {
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& n : cg.nodes(GraphId(g))) {
      bool reads = false;
      for (TensorId t : n.in) reads |= t == y;
      for (const RangeRef& r : n.operands) reads |= r.is_tensor && r.tensor == y;
      if (!reads) continue;
      const bool pool_fwd = is_pool2(n, OpKind::MaxPoolArgmaxFwd);
      const bool pool_bwd = is_compute(n, OpKind::MaxPoolArgmaxBwd) && reads_as(n, "x", y) && !reads_as(n, "dy", y) &&
                            !reads_as(n, "argmax", y);
      if (!(pool_fwd || pool_bwd)) return false;
    }
  return true;
}

// y, batch, affine = BnReluApply(x, sums, gamma, beta), p, argmax =
// MaxPoolArgmaxFwd(y) 2x2/s2 -> p, argmax, batch, affine = BnReluPool(x, sums,
// gamma, beta) in the pool's place, when only pools read y: y is never stored.
bool fuse_bn_pool(Fuser& f, size_t i) {
  Node& pool = f.nodes[i];
  if (!is_pool2(pool, OpKind::MaxPoolArgmaxFwd)) return false;
  const TensorId y = input_of(pool, "x");
  const auto it = f.producer.find(y);
  if (it == f.producer.end() || it->second >= i || f.drop[it->second]) return false;
  const Node& bn = f.nodes[it->second];
  if (!is_compute(bn, OpKind::BnReluApply) || !on_own_stream(bn) || output_of(bn, "y") != y ||
      !read_only_by_pools(f.cg, y) || !clear_between(f, it->second, i, bn))
    return false;
  Node fused = bn;
  fused.attrs.kernel = pool.attrs.kernel;
  fused.attrs.stride = pool.attrs.stride;
  fused.attrs.pad = pool.attrs.pad;
  set_operands(fused, OpKind::BnReluPool,
               {{"x", input_of(bn, "x")},
                {"sums", input_of(bn, "sums")},
                {"gamma", input_of(bn, "gamma")},
                {"beta", input_of(bn, "beta")}},
               {{"p", output_of(pool, "y")},
                {"argmax", output_of(pool, "argmax")},
                {"batch", output_of(bn, "batch")},
                {"affine", output_of(bn, "affine")}});
  fused.label = joined(bn, pool);
  f.unstored[y] = input_of(bn, "x");
  pool = fused;
  f.drop[it->second] = true;
  return true;
}

// y, argmax = MaxPoolArgmaxFwd(x) 2x2/s2, then sums = BnStats(y) -> y, argmax,
// sums = MaxPoolStatsFwd(x) in the pool's place: y keeps its other readers.
bool fuse_pool_stats(Fuser& f, size_t i) {
  const Node& stats = f.nodes[i];
  if (!is_compute(stats, OpKind::BnStats)) return false;
  const TensorId y = input_of(stats, "x");
  const auto it = f.producer.find(y);
  if (it == f.producer.end() || it->second >= i) return false;
  Node& pool = f.nodes[it->second];
  if (!is_pool2(pool, OpKind::MaxPoolArgmaxFwd) || !on_own_stream(pool) || output_of(pool, "y") != y ||
      !clear_between(f, it->second, i, stats))
    return false;
  Node fused = pool;
  set_operands(fused, OpKind::MaxPoolStatsFwd, {{"x", input_of(pool, "x")}},
               {{"y", y}, {"argmax", output_of(pool, "argmax")}, {"sums", output_of(stats, "sums")}});
  fused.label = joined(pool, stats);
  pool = fused;
  f.drop[i] = true;
  return true;
}

// ---------------------------------------------------------------- pass 1: a BatchNorm's phases

// Whether every node that reads t, in every graph, is `a` or a copy of it: the
// first layer's forward is emitted into the A and B graphs alike, and each
// copy fuses the same way (a copy fused already no longer reads t).
bool read_only_by(const ComputationGraph& cg, TensorId t, const Node& a) {
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& n : cg.nodes(GraphId(g))) {
      bool reads = std::find(n.in.begin(), n.in.end(), t) != n.in.end();
      for (const RangeRef& r : n.operands) reads |= r.is_tensor && r.tensor == t;
      if (reads && !(n.kind == a.kind && n.op == a.op && n.in == a.in && n.out == a.out)) return false;
    }
  return true;
}

// The node that made the apply's statistics (`sums`, its input of that name),
// when it may move into the apply at nodes[i]: no other reader of the sums, and
// nothing in between touches its tensors. Its index, or -1.
int phase_producer(const Fuser& f, size_t i, std::string_view sums_name) {
  const Node& a = f.nodes[i];
  const TensorId sums = input_of(a, sums_name);
  const auto it = f.producer.find(sums);
  if (it == f.producer.end() || it->second >= i || f.drop[it->second] || !read_only_by(f.cg, sums, a)) return -1;
  const Node& p = f.nodes[it->second];
  if (!on_own_stream(p) || !clear_between(f, it->second, i, p)) return -1;
  return int(it->second);
}

// sums = BnStats(x), then y, batch, affine = BnReluApply(x, sums, gamma, beta)
// -> y, batch, affine, sums = BnStatsReluApply(x, gamma, beta).
bool fuse_stats_apply(Fuser& f, size_t i) {
  Node& a = f.nodes[i];
  if (!is_compute(a, OpKind::BnReluApply)) return false;
  const int k = phase_producer(f, i, "sums");
  if (k < 0) return false;
  const Node& p = f.nodes[size_t(k)];
  if (!is_compute(p, OpKind::BnStats) || input_of(p, "x") != input_of(a, "x")) return false;
  Node fused = a;
  set_operands(fused, OpKind::BnStatsReluApply,
               {{"x", input_of(a, "x")}, {"gamma", input_of(a, "gamma")}, {"beta", input_of(a, "beta")}},
               {{"y", output_of(a, "y")},
                {"batch", output_of(a, "batch")},
                {"affine", output_of(a, "affine")},
                {"sums", input_of(a, "sums")}});
  fused.label = joined(p, a);
  a = fused;
  f.drop[size_t(k)] = true;
  return true;
}

// p, argmax, sums = MaxPoolStatsFwd(x), then y, batch, affine = BnReluApply(p,
// sums, gamma, beta) -> PoolBnReluApply(x, gamma, beta) in the apply's place.
bool fuse_pool_bn(Fuser& f, size_t i) {
  Node& a = f.nodes[i];
  if (!is_compute(a, OpKind::BnReluApply)) return false;
  const int k = phase_producer(f, i, "sums");
  if (k < 0) return false;
  const Node& p = f.nodes[size_t(k)];
  if (!is_pool2(p, OpKind::MaxPoolStatsFwd) || output_of(p, "sums") != input_of(a, "sums") ||
      output_of(p, "y") != input_of(a, "x"))
    return false;
  Node fused = p;
  fused.attrs.eps = a.attrs.eps;
  fused.attrs.relu = a.attrs.relu;
  fused.attrs.bn_rank_local = a.attrs.bn_rank_local;
  set_operands(fused, OpKind::PoolBnReluApply,
               {{"x", input_of(p, "x")}, {"gamma", input_of(a, "gamma")}, {"beta", input_of(a, "beta")}},
               {{"p", output_of(p, "y")},
                {"argmax", output_of(p, "argmax")},
                {"sums", output_of(p, "sums")},
                {"y", output_of(a, "y")},
                {"batch", output_of(a, "batch")},
                {"affine", output_of(a, "affine")}});
  fused.label = joined(p, a);
  a = fused;
  f.drop[size_t(k)] = true;
  return true;
}

// dgamma, dbeta, dsums = BnReluBwdReduce(dy, affine, x, batch), then dx =
// BnReluBwdApply(dy, affine, x, batch, gamma, dsums) -> dx, dgamma, dbeta,
// dsums = BnReluBwdReduceApply(dy, affine, x, batch, gamma).
bool fuse_bwd_phases(Fuser& f, size_t i) {
  Node& a = f.nodes[i];
  if (!is_compute(a, OpKind::BnReluBwdApply)) return false;
  const int k = phase_producer(f, i, "dsums");
  if (k < 0) return false;
  const Node& p = f.nodes[size_t(k)];
  if (!is_compute(p, OpKind::BnReluBwdReduce) || output_of(p, "dsums") != input_of(a, "dsums")) return false;
  for (const char* name : {"dy", "affine", "x", "batch"})
    if (input_of(p, name) != input_of(a, name)) return false;
  Node fused = a;
  set_operands(fused, OpKind::BnReluBwdReduceApply,
               {{"dy", input_of(a, "dy")},
                {"affine", input_of(a, "affine")},
                {"x", input_of(a, "x")},
                {"batch", input_of(a, "batch")},
                {"gamma", input_of(a, "gamma")}},
               {{"dx", output_of(a, "dx")},
                {"dgamma", output_of(p, "dgamma")},
                {"dbeta", output_of(p, "dbeta")},
                {"dsums", input_of(a, "dsums")}});
  fused.label = joined(p, a);
  a = fused;
  f.drop[size_t(k)] = true;
  return true;
}

// ---------------------------------------------------------------- pass 0: a transformer's MLP

// Whether cuBLASLt's GELU epilogue takes the layer (fc_gelu.h): more than
// kSmallFcMaxOutputs outputs (cuBLAS, not the small-fc kernels) and a GELU
// over a multiple of 8 channels (the epilogue's aux matrix).
bool gelu_epilogue_fits(const Shape& w, int64_t gelu_channels) {
  return w.rank == 2 && w[0] > kSmallFcMaxOutputs && gelu_channels % 8 == 0;
}

// pre = FcFwd(x, w [, b]), then y = GeluFwd(pre) -> pre, y = FcGeluFwd(x, w [, b])
// in the fc's place (y comes out earlier; nothing in between may touch pre or y).
bool fuse_fc_gelu(Fuser& f, size_t i) {
  const Node& gelu = f.nodes[i];
  if (!is_compute(gelu, OpKind::GeluFwd)) return false;
  const TensorId pre = input_of(gelu, "x");
  const auto it = f.producer.find(pre);
  if (it == f.producer.end() || it->second >= i || f.drop[it->second]) return false;
  Node& fc = f.nodes[it->second];
  if (!is_compute(fc, OpKind::FcFwd) || !on_own_stream(fc) || output_of(fc, "y") != pre) return false;
  const Shape& w = f.cg.tensor(input_of(fc, "w")).fixed_shape;
  if (!gelu_epilogue_fits(w, w[0]) || !clear_between(f, it->second, i, gelu)) return false;
  Node fused = fc;
  const TensorId x = input_of(fc, "x"), wt = input_of(fc, "w"), y = output_of(gelu, "y");
  if (fc.attrs.has_bias)
    set_operands(fused, OpKind::FcGeluFwd, {{"x", x}, {"w", wt}, {"b", input_of(fc, "b")}}, {{"pre", pre}, {"y", y}});
  else set_operands(fused, OpKind::FcGeluFwd, {{"x", x}, {"w", wt}}, {{"pre", pre}, {"y", y}});
  fused.label = joined(fc, gelu);
  fc = fused;
  f.drop[i] = true;
  return true;
}

// g = FcBwdData(dy, w, y), the gradient of the GELU's output y, then
// dx = GeluBwd(g, pre) -> dx = FcBwdDataGelu(dy, w, pre) in the GeluBwd's
// place, when only the GeluBwd reads g.
bool fuse_fc_gelu_bwd(Fuser& f, size_t i) {
  Node& gelu = f.nodes[i];
  if (!is_compute(gelu, OpKind::GeluBwd)) return false;
  const int k = sole_producer(f, i, "dy", OpKind::FcBwdData, "dx");
  if (k < 0 || f.drop[size_t(k)]) return false;
  const Node& data = f.nodes[size_t(k)];
  const TensorId pre = input_of(gelu, "x");
  const Shape& w = f.cg.tensor(input_of(data, "w")).fixed_shape;
  if (w.rank != 2 || !gelu_epilogue_fits(w, w[1]) || !clear_between(f, size_t(k), i, data)) return false;
  Node fused = data;
  set_operands(fused, OpKind::FcBwdDataGelu, {{"dy", input_of(data, "dy")}, {"w", input_of(data, "w")}, {"pre", pre}},
               {{"dx", output_of(gelu, "dx")}});
  fused.label = joined(data, gelu);
  gelu = fused;
  f.drop[size_t(k)] = true;
  return true;
}

// pre = FcFwd(x, w [, b]), then y = Add(r, pre) or Add(pre, r) without ReLU
// -> y = FcResidualFwd(x, w, r [, b]) in the Add's place, when only the Add
// reads pre and nothing in between touches the fc's tensors.
bool fuse_fc_residual(Fuser& f, size_t i) {
  Node& add = f.nodes[i];
  if (!is_compute(add, OpKind::Add) || add.attrs.relu) return false;
  for (std::string_view side : {"b", "a"}) {  // the residual joins put the branch second
    const TensorId pre = input_of(add, side);
    const auto it = f.producer.find(pre);
    if (it == f.producer.end() || it->second >= i || f.drop[it->second]) continue;
    const size_t k = it->second;
    const Node& fc = f.nodes[k];
    if (!is_compute(fc, OpKind::FcFwd) || !on_own_stream(fc) || !read_only_by(f, pre, i)) continue;
    const Shape& w = f.cg.tensor(input_of(fc, "w")).fixed_shape;
    if (w.rank != 2 || w[0] <= kSmallFcMaxOutputs || !clear_between(f, k, i, fc)) continue;
    const TensorId r = input_of(add, side == "b" ? "a" : "b");
    Node fused = fc;
    if (fc.attrs.has_bias)
      set_operands(fused, OpKind::FcResidualFwd,
                   {{"x", input_of(fc, "x")}, {"w", input_of(fc, "w")}, {"r", r}, {"b", input_of(fc, "b")}},
                   {{"y", output_of(add, "y")}});
    else
      set_operands(fused, OpKind::FcResidualFwd, {{"x", input_of(fc, "x")}, {"w", input_of(fc, "w")}, {"r", r}},
                   {{"y", output_of(add, "y")}});
    fused.label = joined(fc, add);
    add = fused;
    f.drop[k] = true;
    return true;
  }
  return false;
}

// dx = LayerNormBwd(dy, x, gamma, stats), then s = Add(r, dx) or Add(dx, r)
// without ReLU (the gradient fan-in at a transformer block's input) ->
// dx', dgamma, dbeta = LayerNormBwdAdd(dy, x, gamma, stats, r) in the Add's
// place, dx' the Add's output, when only the Add reads dx.
bool fuse_ln_bwd_add(Fuser& f, size_t i) {
  Node& add = f.nodes[i];
  if (!is_compute(add, OpKind::Add) || add.attrs.relu) return false;
  for (std::string_view side : {"b", "a"}) {
    const int k = sole_producer(f, i, side, OpKind::LayerNormBwd, "dx");
    if (k < 0 || f.drop[size_t(k)]) continue;
    const Node& ln = f.nodes[size_t(k)];
    if (!clear_between(f, size_t(k), i, ln)) continue;
    Node fused = ln;
    set_operands(fused, OpKind::LayerNormBwdAdd,
                 {{"dy", input_of(ln, "dy")},
                  {"x", input_of(ln, "x")},
                  {"gamma", input_of(ln, "gamma")},
                  {"stats", input_of(ln, "stats")},
                  {"r", input_of(add, side == "b" ? "a" : "b")}},
                 {{"dx", output_of(add, "y")}, {"dgamma", output_of(ln, "dgamma")}, {"dbeta", output_of(ln, "dbeta")}});
    fused.label = joined(ln, add);
    add = fused;
    f.drop[size_t(k)] = true;
    return true;
  }
  return false;
}

// In the order they are tried at each node: the head before its BatchNorm,
// the fan-in Add before the reduce that takes the ReLU's gradient.
constexpr FusionRule kRules[] = {
    {"head", 0, &FusionCounts::head, fuse_head},
    {"head_bn", 0, &FusionCounts::head_bn, fuse_head_bn},
    {"bn_add", 0, &FusionCounts::bn_add, fuse_bn_add},
    {"add_relu_bwd", 0, &FusionCounts::add_relu_bwd, fuse_add_relu_bwd},
    {"relu_grad_reduce", 0, &FusionCounts::relu_grad_reduce, fuse_relu_grad_reduce},
    {"bn_pool", 0, &FusionCounts::bn_pool, fuse_bn_pool},
    {"pool_stats", 0, &FusionCounts::pool_stats, fuse_pool_stats},
    {"fc_gelu", 0, &FusionCounts::fc_gelu, fuse_fc_gelu, false},
    {"fc_gelu_bwd", 0, &FusionCounts::fc_gelu_bwd, fuse_fc_gelu_bwd, false},
    {"fc_residual", 0, &FusionCounts::fc_residual, fuse_fc_residual, false},
    {"ln_bwd_add", 0, &FusionCounts::ln_bwd_add, fuse_ln_bwd_add},
    {"stats_apply", 1, &FusionCounts::stats_apply, fuse_stats_apply},
    {"pool_bn", 1, &FusionCounts::pool_bn, fuse_pool_bn},
    {"bwd_phases", 1, &FusionCounts::bwd_phases, fuse_bwd_phases},
};

}  // namespace

std::span<const FusionRule> fusion_rules() { return kRules; }

bool on_own_stream(const Node& n) { return n.kind == Node::Kind::Compute && n.stream == StreamKind::COUNT; }

}  // namespace tr

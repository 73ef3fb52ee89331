// Note [fusion] (fusion.h): the node-pair fusions, the classifier head and
// the BatchNorm in front of it, then the BatchNorms' phases.
#include "framework/graph/fusion.h"

#include <algorithm>
#include <map>
#include <set>

#include "framework/ops/fc.h"
#include "framework/ops/pool_window.h"

namespace tr {
namespace {

// Readers of each tensor over every graph (compute inputs and tensor operands).
std::vector<int> reader_counts(const ComputationGraph& cg) {
  std::vector<int> n(size_t(cg.num_tensors()), 0);
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& node : cg.nodes(GraphId(g))) {
      for (TensorId t : node.in) ++n[size_t(t)];
      for (const RangeRef& r : node.operands)
        if (r.is_tensor) ++n[size_t(r.tensor)];
    }
  return n;
}

bool on_own_stream(const Node& n) { return n.kind == Node::Kind::Compute && n.stream == StreamKind::COUNT; }

// Whether nodes (first, last) leave every tensor of `moved` alone.
bool clear_between(const ComputationGraph& cg, const std::vector<Node>& nodes, size_t first, size_t last,
                   const Node& moved) {
  std::set<TensorId> ts(moved.in.begin(), moved.in.end());
  ts.insert(moved.out.begin(), moved.out.end());
  for (size_t k = first + 1; k < last; ++k)
    if (touches(cg, nodes[k], ts)) return false;
  return true;
}

// The pattern's first node for `later`, or -1: the producer (in this graph,
// before `later`) of later.in[k] for some k, of kind `op`, whose output 0 only
// `later` reads. *k_out is that input's index.
int producer_of(const std::vector<Node>& nodes, size_t later, OpKind op, const std::vector<int>& readers,
                const std::map<TensorId, size_t>& producer, int* k_out) {
  for (size_t k = 0; k < nodes[later].in.size(); ++k) {
    const TensorId t = nodes[later].in[k];
    const auto it = producer.find(t);
    if (it == producer.end() || it->second >= later) continue;
    const Node& p = nodes[it->second];
    if (p.op != op || !on_own_stream(p) || p.out.empty() || p.out[0] != t || readers[size_t(t)] != 1) continue;
    *k_out = int(k);
    return int(it->second);
  }
  return -1;
}

bool is_pool2(const Node& n) {
  return n.op == OpKind::MaxPoolFwd && PoolWindow{n.attrs.kernel, n.attrs.stride, n.attrs.pad}.is_2x2();
}

// Whether every reader of y, in every graph, is a 2x2 MaxPoolFwd of y that
// records its winners, or the MaxPoolBwd of such a pool (which, given the
// winners, reads y for its shape only: pool.h): then nothing needs y stored.
bool read_only_by_pools(const ComputationGraph& cg, TensorId y) {
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& n : cg.nodes(GraphId(g))) {
      bool reads = false;
      for (TensorId t : n.in) reads |= t == y;
      for (const RangeRef& r : n.operands) reads |= r.is_tensor && r.tensor == y;
      if (!reads) continue;
      const bool pool_fwd = is_pool2(n) && n.in.size() == 1 && n.out.size() == 2;
      const bool pool_bwd = n.op == OpKind::MaxPoolBwd && n.in.size() == 3 && n.in[1] == y && n.in[0] != y &&
                            n.in[2] != y && cg.tensor(n.in[2]).dtype == DType::U8;
      if (n.kind != Node::Kind::Compute || !(pool_fwd || pool_bwd)) return false;
    }
  return true;
}

// Whether n writes any of ts: an output, or any operand of a range op (which may
// write its regions: counted as a write whenever it touches).
bool writes(const ComputationGraph& cg, const Node& n, const std::set<TensorId>& ts) {
  for (TensorId t : n.out)
    if (ts.count(t)) return true;
  if (n.kind != Node::Kind::Range) return false;
  return touches(cg, n, ts);
}

// The first node after `from` of kind `op`, on its graph's own stream, whose
// input `k` is t; nodes.size() when there is none.
size_t reader_after(const std::vector<Node>& nodes, size_t from, OpKind op, size_t k, TensorId t) {
  for (size_t i = from + 1; i < nodes.size(); ++i)
    if (nodes[i].kind == Node::Kind::Compute && nodes[i].op == op && nodes[i].in.size() > k && nodes[i].in[k] == t)
      return on_own_stream(nodes[i]) ? i : nodes.size();
  return nodes.size();
}

// The classifier head at the global max pool nodes[i] (see fusion.h): the fc,
// the loss and their backward to the pool's input become one ClassifierHead
// in the pool's place. Returns whether it fused; marks the four later nodes.
bool fuse_head(const ComputationGraph& cg, std::vector<Node>& nodes, size_t i, const std::vector<int>& readers,
               std::vector<bool>& drop) {
  const Node& pool = nodes[i];
  if (pool.op != OpKind::GlobalMaxPoolFwd || !on_own_stream(pool) || pool.in.size() != 1 || pool.out.size() != 1)
    return false;
  const TensorId x = pool.in[0], p = pool.out[0];
  const size_t f = reader_after(nodes, i, OpKind::FcFwd, 0, p);
  if (f == nodes.size() || nodes[f].in.size() != 2 || nodes[f].attrs.has_bias) return false;
  const TensorId w = nodes[f].in[1], z = nodes[f].out[0];
  const Shape& ws = cg.tensor(w).fixed_shape;
  if (ws.rank != 2 || ws[0] < 1 || ws[0] > kSmallFcMaxOutputs || readers[size_t(z)] != 1) return false;
  const size_t s = reader_after(nodes, f, OpKind::SoftmaxXent, 0, z);
  if (s == nodes.size() || !nodes[s].attrs.with_grad || nodes[s].out.size() != 2) return false;
  const TensorId labels = nodes[s].in[1], dl = nodes[s].out[0], metrics = nodes[s].out[1];
  const size_t d = reader_after(nodes, s, OpKind::FcBwdData, 0, dl);
  if (d == nodes.size() || nodes[d].in[1] != w || nodes[d].attrs.scale != nodes[f].attrs.scale) return false;
  const TensorId dp = nodes[d].out[0];
  if (readers[size_t(dp)] != 1) return false;
  const size_t b = reader_after(nodes, d, OpKind::GlobalMaxPoolBwd, 0, dp);
  if (b == nodes.size() || nodes[b].in != std::vector<TensorId>{dp, x, p}) return false;
  const TensorId dx = nodes[b].out[0];
  // Between the pool and its backward, the nodes that stay behind the fused one
  // may read what it now writes earlier (p, dlogits: the fc's weight gradient),
  // but nothing may write what it reads or writes, or read what vanishes or
  // comes out only at the end.
  const std::set<TensorId> gone = {z, dp, dx, metrics}, kept = {x, w, labels, p, dl};
  for (size_t k = i + 1; k < b; ++k) {
    if (k == f || k == s || k == d) continue;
    if (touches(cg, nodes[k], gone) || writes(cg, nodes[k], kept)) return false;
  }
  Node head = pool;
  head.op = OpKind::ClassifierHead;
  head.in = {x, w, labels};
  head.out = {p, dl, metrics, dx};
  head.attrs = nodes[f].attrs;
  head.attrs.label_smoothing = nodes[s].attrs.label_smoothing;
  head.attrs.with_grad = true;
  head.label = pool.label + "+" + nodes[f].label + "+" + nodes[s].label + "+" + nodes[d].label + "+" + nodes[b].label;
  nodes[i] = head;
  drop[f] = drop[s] = drop[d] = drop[b] = true;
  return true;
}

// The BatchNorm + ReLU in front of the head at nodes[i] (Note [the head's
// BatchNorm], fusion.h): when its y has no reader but the pool and the pool's
// backward, both now inside the head, it moves into the head, which
// recomputes y and never stores it. Returns whether it fused; marks the
// BatchNorm.
bool fuse_head_bn(const ComputationGraph& cg, std::vector<Node>& nodes, size_t i, const std::vector<int>& readers,
                  const std::map<TensorId, size_t>& producer, std::vector<bool>& drop) {
  Node& head = nodes[i];
  const TensorId y = head.in[0];
  const auto it = producer.find(y);
  if (it == producer.end() || it->second >= i || drop[it->second]) return false;
  const Node& bn = nodes[it->second];
  if (bn.op != OpKind::BnReluApply || !on_own_stream(bn) || bn.in.size() != 4 || bn.out.size() != 3 ||
      bn.out[0] != y || readers[size_t(y)] != 2 || !clear_between(cg, nodes, it->second, i, bn))
    return false;
  head.in = {bn.in[0], head.in[1], head.in[2], bn.in[1], bn.in[2], bn.in[3]};
  head.out.push_back(bn.out[1]);
  head.out.push_back(bn.out[2]);
  head.attrs.eps = bn.attrs.eps;
  head.attrs.relu = bn.attrs.relu;
  head.attrs.bn_rank_local = bn.attrs.bn_rank_local;
  head.label = bn.label + "+" + head.label;
  drop[it->second] = true;
  return true;
}

// The gradient fan-in Add in front of the ReluBwd at nodes[i] moves into it
// (fusion.h). Returns whether it fused; marks the Add.
bool fuse_add_relu_bwd(const ComputationGraph& cg, std::vector<Node>& nodes, size_t i,
                       const std::vector<int>& readers, const std::map<TensorId, size_t>& producer,
                       std::vector<bool>& drop) {
  int k = -1;
  if (nodes[i].in.size() != 2) return false;
  const int a = producer_of(nodes, i, OpKind::Add, readers, producer, &k);
  if (a < 0 || k != 0 || drop[size_t(a)]) return false;  // the sum must be the gradient, not y
  const Node& add = nodes[size_t(a)];
  if (add.attrs.relu || add.in.size() != 2 || !clear_between(cg, nodes, size_t(a), i, add)) return false;
  Node& b = nodes[i];
  b.in = {add.in[0], b.in[1], add.in[1]};
  b.label = add.label + "+" + b.label;
  drop[size_t(a)] = true;
  return true;
}

// The first BatchNorm backward reduce that reads g = ReluBwd(...) at nodes[i]
// moves up into it (Note [the ReLU's gradient in the reduce], batchnorm.h):
// nodes[i] becomes the reduce with the ReLU's gradient in front, which still
// writes g there for its other readers. The nodes in between may read g, but
// none may write what the reduce reads, or touch what it writes. Returns
// whether it fused; marks the reduce.
bool fuse_relu_grad_reduce(const ComputationGraph& cg, std::vector<Node>& nodes, size_t i, std::vector<bool>& drop) {
  const Node& relu = nodes[i];
  if (relu.op != OpKind::ReluBwd || !on_own_stream(relu) || relu.in.size() < 2 || relu.in.size() > 3 ||
      relu.out.size() != 1)
    return false;
  const TensorId g = relu.out[0];
  const size_t r = reader_after(nodes, i, OpKind::BnReluBwdReduce, 0, g);
  if (r == nodes.size() || drop[r] || nodes[r].in.size() != 4 || nodes[r].out.size() != 3) return false;
  const Node& reduce = nodes[r];
  const std::set<TensorId> read(reduce.in.begin(), reduce.in.end());
  const std::set<TensorId> written(reduce.out.begin(), reduce.out.end());
  for (size_t k = i + 1; k < r; ++k)
    if (writes(cg, nodes[k], read) || touches(cg, nodes[k], written)) return false;
  Node f = reduce;
  f.in = {relu.in[0], reduce.in[1], reduce.in[2], reduce.in[3], relu.in[1]};
  if (relu.in.size() == 3) f.in.push_back(relu.in[2]);
  f.out.push_back(g);
  f.label = relu.label + "+" + reduce.label;
  nodes[i] = f;
  drop[r] = true;
  return true;
}

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

// A BatchNorm's phases at the apply nodes[i] (fusion.h; Note [one kernel per
// BatchNorm]): the node that made its sums (BnStats, the pool with its
// statistics, BnReluBwdReduce) moves into it when the sums have no other reader.
// Returns which count it adds to, or null; marks the producer.
int* fuse_bn_phases(const ComputationGraph& cg, std::vector<Node>& nodes, size_t i,
                    const std::map<TensorId, size_t>& producer, std::vector<bool>& drop, FusionCounts& c) {
  Node& a = nodes[i];
  const bool fwd = a.op == OpKind::BnReluApply && a.in.size() == 4 && a.out.size() == 3;
  const bool bwd = a.op == OpKind::BnReluBwdApply && a.in.size() == 6 && a.out.size() == 1;
  if (!on_own_stream(a) || !(fwd || bwd)) return nullptr;
  const TensorId sums = fwd ? a.in[1] : a.in[5];
  const auto it = producer.find(sums);
  if (it == producer.end() || it->second >= i || drop[it->second] || !read_only_by(cg, sums, a)) return nullptr;
  const Node& p = nodes[it->second];
  if (!on_own_stream(p) || !clear_between(cg, nodes, it->second, i, p)) return nullptr;
  if (fwd && p.op == OpKind::BnStats && p.in.size() == 1 && p.out.size() == 1 && p.in[0] == a.in[0]) {
    a.in = {a.in[0], a.in[2], a.in[3]};
    a.out.push_back(sums);
    a.label = p.label + "+" + a.label;
    drop[it->second] = true;
    return &c.stats_apply;
  }
  if (fwd && is_pool2(p) && p.in.size() == 1 && p.out.size() == 3 && p.out[2] == sums && p.out[0] == a.in[0]) {
    Node f = p;
    f.in = {p.in[0], a.in[2], a.in[3]};
    f.out = {p.out[0], p.out[1], sums, a.out[0], a.out[1], a.out[2]};
    f.attrs.eps = a.attrs.eps;
    f.attrs.relu = a.attrs.relu;
    f.attrs.bn_rank_local = a.attrs.bn_rank_local;
    f.label = p.label + "+" + a.label;
    a = f;
    drop[it->second] = true;
    return &c.pool_bn;
  }
  if (bwd && p.op == OpKind::BnReluBwdReduce && p.in.size() == 4 && p.out.size() == 3 && p.out[2] == sums &&
      std::equal(p.in.begin(), p.in.end(), a.in.begin())) {
    a.in.pop_back();
    a.out = {a.out[0], p.out[0], p.out[1], sums};
    a.label = p.label + "+" + a.label;
    drop[it->second] = true;
    return &c.bwd_phases;
  }
  return nullptr;
}

// Drops the nodes marked in `drop`.
void remove_dropped(std::vector<Node>& nodes, const std::vector<bool>& drop) {
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
}

FusionCounts fuse_one(const ComputationGraph& cg, std::vector<Node>& nodes, const std::vector<int>& readers,
                      std::map<TensorId, TensorId>& unstored) {
  FusionCounts c;
  std::map<TensorId, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (TensorId t : nodes[i].out) producer[t] = i;
  std::vector<bool> drop(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& b = nodes[i];
    if (!on_own_stream(b) || drop[i]) continue;
    int k = -1;
    if (b.op == OpKind::GlobalMaxPoolFwd) {
      if (!fuse_head(cg, nodes, i, readers, drop)) continue;
      ++c.head;
      c.head_bn += fuse_head_bn(cg, nodes, i, readers, producer, drop);
    } else if (b.op == OpKind::Add && b.in.size() == 2) {
      const int a = producer_of(nodes, i, OpKind::BnReluApply, readers, producer, &k);
      if (a < 0 || drop[size_t(a)]) continue;
      const Node& bn = nodes[size_t(a)];
      if (bn.attrs.relu || bn.in.size() != 4 || !clear_between(cg, nodes, size_t(a), i, bn)) continue;
      Node f = bn;
      f.in.push_back(b.in[size_t(1 - k)]);  // the residual
      f.out[0] = b.out[0];
      f.attrs.relu = b.attrs.relu;
      f.label = bn.label + "+" + b.label;
      b = f;
      drop[size_t(a)] = true;
      ++c.bn_add;
    } else if (b.op == OpKind::ReluBwd) {
      c.add_relu_bwd += fuse_add_relu_bwd(cg, nodes, i, readers, producer, drop);
      c.relu_grad_reduce += fuse_relu_grad_reduce(cg, nodes, i, drop);
    } else if (is_pool2(b) && b.in.size() == 1 && b.out.size() == 2) {
      // BnReluApply's y pooled and never stored: the fused node reads x.
      const auto it = producer.find(b.in[0]);
      if (it == producer.end() || it->second >= i || drop[it->second]) continue;
      const Node& bn = nodes[it->second];
      if (bn.op != OpKind::BnReluApply || !on_own_stream(bn) || bn.in.size() != 4 || bn.out[0] != b.in[0] ||
          !read_only_by_pools(cg, b.in[0]) || !clear_between(cg, nodes, it->second, i, bn))
        continue;
      Node f = bn;
      f.op = OpKind::BnReluPool;
      f.out = {b.out[0], b.out[1], bn.out[1], bn.out[2]};
      f.attrs.kernel = b.attrs.kernel;
      f.attrs.stride = b.attrs.stride;
      f.attrs.pad = b.attrs.pad;
      f.label = bn.label + "+" + b.label;
      unstored[bn.out[0]] = bn.in[0];
      b = f;
      drop[it->second] = true;
      ++c.bn_pool;
    } else if (b.op == OpKind::BnStats && b.in.size() == 1 && b.out.size() == 1) {
      // The statistics move up into the pool: y keeps its other readers.
      const auto it = producer.find(b.in[0]);
      if (it == producer.end() || it->second >= i) continue;
      Node& pool = nodes[it->second];
      if (!is_pool2(pool) || !on_own_stream(pool) || pool.out.size() != 2 || pool.out[0] != b.in[0] ||
          !clear_between(cg, nodes, it->second, i, b))
        continue;
      pool.out.push_back(b.out[0]);
      pool.label += "+" + b.label;
      drop[i] = true;
      ++c.pool_stats;
    }
  }
  remove_dropped(nodes, drop);
  // The BatchNorms' phases, on the pairs made above.
  producer.clear();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (TensorId t : nodes[i].out) producer[t] = i;
  drop.assign(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (int* n = fuse_bn_phases(cg, nodes, i, producer, drop, c)) ++*n;
  remove_dropped(nodes, drop);
  return c;
}

}  // namespace

FusionCounts fuse_graph(ComputationGraph& cg) {
  const std::vector<int> readers = reader_counts(cg);
  FusionCounts total;
  std::map<TensorId, TensorId> unstored;  // a BatchNorm output no longer stored -> its input (same shape)
  for (int g = 0; g < kGraphIdCount; ++g) {
    std::vector<Node> nodes = cg.nodes(GraphId(g));
    const FusionCounts c = fuse_one(cg, nodes, readers, unstored);
    if (c.total() == 0) continue;
    cg.set_nodes(GraphId(g), std::move(nodes));
    total += c;
  }
  // The pools' backward took y for its shape only: the BatchNorm's input has it.
  if (!unstored.empty())
    for (int g = 0; g < kGraphIdCount; ++g) {
      std::vector<Node> nodes = cg.nodes(GraphId(g));
      bool changed = false;
      for (Node& n : nodes) {
        if (n.kind != Node::Kind::Compute || n.op != OpKind::MaxPoolBwd || n.in.size() != 3) continue;
        const auto it = unstored.find(n.in[1]);
        if (it == unstored.end()) continue;
        n.in[1] = it->second;
        changed = true;
      }
      if (changed) cg.set_nodes(GraphId(g), std::move(nodes));
    }
  return total;
}

}  // namespace tr

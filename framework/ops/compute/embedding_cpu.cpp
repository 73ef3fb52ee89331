// Token and position embedding: shape rules, the batch's order and the CPU
// reference. Semantics: framework/ops/compute/embedding.h.
#include <algorithm>
#include <numeric>
#include <vector>

#include "framework/ops/compute/embedding.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

struct Dims {
  int64_t B = 0, T = 0, C = 0, V = 0, P = 0;
};

template <class S>
void fwd_impl(const OpCall& c, Dims d) {
  using A = acc_t<S>;
  const int32_t* ids = c.in[0].as<int32_t>();
  const S* wte = c.in[1].as<S>();
  const S* wpe = c.in[2].as<S>();
  S* y = c.out[0].as<S>();
  for (int64_t p = 0; p < d.B * d.T; ++p) {
    const int64_t id = ids[p], t = p % d.T;
    TR_USER_CHECK(id >= 0 && id < d.V, "embedding_fwd: token ", id, " at position ", p,
                  " is outside the vocabulary of ", d.V);
    for (int64_t i = 0; i < d.C; ++i)
      y[p * d.C + i] = cpu::store<S>(cpu::load<A>(wte[id * d.C + i]) + cpu::load<A>(wpe[t * d.C + i]));
  }
}

// The order must be what embedding_order makes: a wrong one would sum a
// token's gradient in another order (or twice), silently.
void check_order(const int32_t* ids, const int32_t* order, int64_t n) {
  std::vector<char> seen(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t p = order[i];
    TR_CHECK(p >= 0 && p < n && !seen[size_t(p)], "embedding_bwd: order[", i, "] = ", p, " is not a new position");
    seen[size_t(p)] = 1;
    if (i > 0) {
      const int32_t q = order[i - 1];
      TR_CHECK(ids[q] < ids[p] || (ids[q] == ids[p] && q < p),
               "embedding_bwd: order is not sorted by (id, position) at ", i);
    }
  }
}

template <class S>
void bwd_impl(const OpCall& c, Dims d) {
  using A = acc_t<S>;
  const S* dy = c.in[0].as<S>();
  const int32_t* ids = c.in[1].as<int32_t>();
  const int32_t* order = c.in[2].as<int32_t>();
  S* dwte = c.out[0].as<S>();
  S* dwpe = c.out[1].as<S>();
  const int64_t n = d.B * d.T;
  check_order(ids, order, n);
  std::fill(dwte, dwte + d.V * d.C, cpu::store<S>(A(0)));
  std::vector<A> acc(size_t(d.C));
  for (int64_t i = 0; i < n;) {  // one run of equal ids at a time, in order
    const int32_t id = ids[order[i]];
    TR_USER_CHECK(id >= 0 && id < d.V, "embedding_bwd: token ", id, " is outside the vocabulary of ", d.V);
    std::fill(acc.begin(), acc.end(), A(0));
    for (; i < n && ids[order[i]] == id; ++i)
      for (int64_t k = 0; k < d.C; ++k) acc[size_t(k)] += cpu::load<A>(dy[int64_t(order[i]) * d.C + k]);
    for (int64_t k = 0; k < d.C; ++k) dwte[id * d.C + k] = cpu::store<S>(acc[size_t(k)]);
  }
  for (int64_t t = 0; t < d.P; ++t)
    for (int64_t k = 0; k < d.C; ++k) {
      A s = A(0);
      for (int64_t b = 0; t < d.T && b < d.B; ++b) s += cpu::load<A>(dy[(b * d.T + t) * d.C + k]);
      dwpe[t * d.C + k] = cpu::store<S>(s);
    }
}

Dims check_tables(const Shape& ids, const Shape& wte, const Shape& wpe, const char* op) {
  TR_USER_CHECK(ids.rank == 2 && ids[0] > 0 && ids[1] > 0, op, ": ids are ", ids.str(), ", expected [B,T]");
  TR_USER_CHECK(wte.rank == 2 && wte[0] > 0 && wte[1] > 0, op, ": wte is ", wte.str(), ", expected [V,C]");
  TR_USER_CHECK(wpe.rank == 2 && wpe[1] == wte[1], op, ": wpe is ", wpe.str(), ", expected [P,", wte[1], "]");
  TR_USER_CHECK(ids[1] <= wpe[0], op, ": a sequence of ", ids[1], " tokens is longer than the model's context of ",
                wpe[0]);
  return {ids[0], ids[1], wte[1], wte[0], wpe[0]};
}

}  // namespace

void embedding_order(const int32_t* ids, int64_t n, int32_t* order) {
  std::iota(order, order + n, 0);
  std::stable_sort(order, order + n, [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
}

void embedding_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const Dims d = check_tables(c.in[0], c.in[1], c.in[2], "embedding_fwd");
  out[0] = Shape{d.B, d.T, d.C};
}

void embedding_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape &dy = c.in[0], &ids = c.in[1], &order = c.in[2];
  const Dims d = check_tables(ids, c.in[3], c.in[4], "embedding_bwd");
  TR_USER_CHECK(dy == (Shape{d.B, d.T, d.C}), "embedding_bwd: dy ", dy.str(), " does not match ids ", ids.str(),
                " and C = ", d.C);
  TR_USER_CHECK(order.numel() == ids.numel(), "embedding_bwd: order ", order.str(), " must hold one entry per id");
  out[0] = c.in[3];
  out[1] = c.in[4];
}

void embedding_fwd_cpu(const OpCall& c) {
  const char* op = "embedding_fwd";
  check_operands(OpKind::EmbeddingFwd, c);
  const Dims d = check_tables(c.in[0].shape, c.in[1].shape, c.in[2].shape, op);
  cpu::check_dtype(c.in[0], DType::I32, op, "ids");
  cpu::check_dtype(c.in[2], c.in[1].dtype, op, "wpe");
  cpu::check_dtype(c.out[0], c.in[1].dtype, op, "y");
  cpu::check_numel(c.out[0], d.B * d.T * d.C, op, "y");
  cpu::dispatch_float(c.in[1].dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, d); });
}

void embedding_bwd_cpu(const OpCall& c) {
  const char* op = "embedding_bwd";
  check_operands(OpKind::EmbeddingBwd, c);
  const TensorRef &dy = c.in[0], &ids = c.in[1];
  const Dims d = check_tables(ids.shape, c.in[3].shape, c.in[4].shape, op);
  cpu::check_dtype(ids, DType::I32, op, "ids");
  cpu::check_dtype(c.in[2], DType::I32, op, "order");
  cpu::check_numel(c.in[2], d.B * d.T, op, "order");
  cpu::check_numel(dy, d.B * d.T * d.C, op, "dy");
  for (int i = 0; i < 2; ++i) cpu::check_dtype(c.out[i], dy.dtype, op, "a table's gradient");
  cpu::check_numel(c.out[0], d.V * d.C, op, "dwte");
  cpu::check_numel(c.out[1], d.P * d.C, op, "dwpe");
  cpu::dispatch_float(dy.dtype, op, [&](auto tag) { bwd_impl<typename decltype(tag)::type>(c, d); });
}

}  // namespace tr

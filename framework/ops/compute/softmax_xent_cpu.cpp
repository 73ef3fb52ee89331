// Softmax cross-entropy with label smoothing: shape rule and the CPU reference.
// Per row (M logits z, label l, smoothing s):
//   loss = logsumexp(z) - (1-s) z[l] - (s/M) sum_j z[j]     (= -sum_j target_j log softmax_j)
//   dlogits = loss_scale * (softmax(z) - target) / (global_batch * rows per sample)
//   correct = argmax(z) == l, the first maximum winning ties.
// Row math runs in double (M is small); dlogits is rounded once to T.
#include "framework/ops/compute/softmax_xent.h"

#include <cmath>

#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

// N rows of M logits, per_sample of them to each sample.
template <class S>
void xent_impl(const OpCall& c, int64_t N, int64_t M, int64_t per_sample) {
  const char* op = "softmax_xent";
  const bool grad = c.attrs->with_grad;
  const S* logits = c.in[0].as<S>();
  const int32_t* labels = c.in[1].as<int32_t>();
  S* dlogits = grad ? c.out[0].as<S>() : nullptr;
  double scale = 0;  // loss_scale / (global_batch * per_sample)
  if (grad) {
    TR_CHECK(c.env != nullptr && c.env->scalars != nullptr, op, ": with_grad needs env.scalars (loss_scale)");
    TR_CHECK(c.variant != nullptr && c.variant->global_batch > 0, op, ": needs variant.global_batch");
    scale = double(c.env->scalars->loss_scale) / (double(c.variant->global_batch) * double(per_sample));
  }
  const double s = c.attrs->label_smoothing;
  const double off = s / double(M);  // target of every class; the label gets (1 - s) more
  double* z = cpu::scratch<double>(cpu::kDoubleSlot, size_t(M));
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int32_t l = labels[n];
    TR_USER_CHECK(l >= 0 && l < M, op, ": label ", l, " of row ", n, " is outside [0,", M, ")");
    const S* row = logits + n * M;
    int64_t arg = 0;
    double zmax = cpu::load<double>(row[0]);
    double zsum = 0;
    for (int64_t j = 0; j < M; ++j) {
      z[j] = cpu::load<double>(row[j]);
      if (z[j] > zmax) {
        zmax = z[j];
        arg = j;
      }
      zsum += z[j];
    }
    double esum = 0;
    for (int64_t j = 0; j < M; ++j) esum += std::exp(z[j] - zmax);
    const double lse = zmax + std::log(esum);
    loss_sum += lse - (1.0 - s) * z[l] - off * zsum;
    correct += (arg == l);
    if (grad) {
      S* drow = dlogits + n * M;
      for (int64_t j = 0; j < M; ++j) {
        const double p = std::exp(z[j] - lse);
        const double target = off + (j == l ? 1.0 - s : 0.0);
        drow[j] = cpu::store<S>(scale * (p - target));
      }
    }
  }
  const double metrics[kMetricSlots] = {loss_sum, double(correct), double(N), 0.0};
  cpu::write_stats(c.out[grad ? 1 : 0], kMetricSlots, metrics, op, "metrics");
}

}  // namespace

void softmax_xent_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "softmax_xent";
  const bool grad = c.attrs->with_grad;
  const Shape &z = c.in[0], &l = c.in[1];
  TR_USER_CHECK(z.rank >= 2, op, ": logits must be [N,M] or [N,T,M], got ", z.str());
  check_positive_dims(z, op, "logits");
  bool match = l.rank == z.rank - 1;
  for (int i = 0; match && i < l.rank; ++i) match = l[i] == z[i];
  TR_USER_CHECK(match, op, ": labels must be the logits' ", z.str(), " without the last dim, got ", l.str());
  TR_USER_CHECK(c.attrs->label_smoothing >= 0.f && c.attrs->label_smoothing <= 1.f, op, ": label_smoothing ",
                c.attrs->label_smoothing, " is outside [0,1]");
  if (grad) out[0] = z;
  out[grad ? 1 : 0] = Shape{kMetricSlots};
}

void softmax_xent_cpu(const OpCall& c) {
  const char* op = "softmax_xent";
  const bool grad = c.attrs->with_grad;
  check_operands(OpKind::SoftmaxXent, c);
  const Shape& z = c.in[0].shape;
  TR_CHECK(z.rank >= 2 && z[z.rank - 1] > 0, op, ": logits ", z.str());
  const int64_t M = z[z.rank - 1], N = z.numel() / M, per_sample = N / z[0];
  cpu::check_dtype(c.in[1], DType::I32, op, "labels");
  cpu::check_numel(c.in[1], N, op, "labels");
  if (grad) {
    cpu::check_dtype(c.out[0], c.in[0].dtype, op, "dlogits");
    cpu::check_numel(c.out[0], N * M, op, "dlogits");
  }
  cpu::dispatch_float(c.in[0].dtype, op,
                      [&](auto tag) { xent_impl<typename decltype(tag)::type>(c, N, M, per_sample); });
}

}  // namespace tr

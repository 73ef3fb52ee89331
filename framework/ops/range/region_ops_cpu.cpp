// CPU reference of the region RANGE ops (see region_ops.h): plain loops, f32 math.
#include <array>
#include <cstring>

#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/region_ops.h"

namespace tr {

void copy_in_cpu(const RangeCall& c) {
  const std::array<const void*, 2> from = range::copy_in_sources(c);
  for (int i = 0; i < c.n_ops && i < 2; ++i) {
    const RangeOperand& d = c.ops[i];
    const size_t bytes = size_t(d.elems) * dtype_size(d.dtype);
    if (bytes == 0) continue;
    range::check_copy_in_source(c, from[size_t(i)], i);
    std::memcpy(d.data, from[size_t(i)], bytes);
  }
}

void clear_cpu(const RangeCall& c) {
  TR_CHECK(c.ops != nullptr || c.n_ops == 0, "Clear: operands missing");
  for (int i = 0; i < c.n_ops; ++i) {
    const RangeOperand& d = c.ops[i];
    if (d.elems > 0) std::memset(d.data, 0, size_t(d.elems) * dtype_size(d.dtype));
  }
}

void lerp_cpu(const RangeCall& c) {
  const range::BinaryOperands o = range::lerp_operands(c);
  if (c.attrs->skip_on_inf && c.env->scalars->found_inf) return;
  float* d = static_cast<float*>(o.dst->data);
  const float* s = static_cast<const float*>(o.src->data);
  const float t = c.attrs->t;
  for (int64_t i = 0; i < o.dst->elems; ++i) d[i] = range::lerp_elem(d[i], s[i], t);
}

void accumulate_cpu(const RangeCall& c) {
  const range::BinaryOperands o = range::binary_operands(c, "Accumulate");
  float* d = static_cast<float*>(o.dst->data);
  const float* s = static_cast<const float*>(o.src->data);
  for (int64_t i = 0; i < o.dst->elems; ++i) d[i] = range::accumulate_elem(d[i], s[i]);
}

}  // namespace tr

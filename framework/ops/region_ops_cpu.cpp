// CPU reference of the region RANGE ops (see region_ops.h): plain loops, f32 math.
#include <cstring>

#include "framework/ops/range_util.h"
#include "framework/ops/region_ops.h"

namespace tr {

void copy_in_cpu(const RangeCall& c) {
  range::check_n_ops(c, 1, "CopyIn");
  TR_CHECK(c.attrs != nullptr && c.env->staging != nullptr, "CopyIn: no staging buffers");
  TR_CHECK(c.attrs->slot == 0 || c.attrs->slot == 1, "CopyIn: bad staging slot ", c.attrs->slot);
  const HostBatch& src = c.env->staging[c.attrs->slot];
  const void* from[2] = {src.images, src.labels};
  for (int i = 0; i < c.n_ops && i < 2; ++i) {
    const RangeOperand& d = c.ops[i];
    const size_t bytes = size_t(d.elems) * dtype_size(d.dtype);
    if (bytes == 0) continue;
    TR_CHECK(from[i] != nullptr, "CopyIn: staging slot ", c.attrs->slot, " has no ",
             i == 0 ? "images" : "labels");
    std::memcpy(d.data, from[i], bytes);
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
  range::check_n_ops(c, 2, "Lerp");
  TR_CHECK(c.n_ops == 2, "Lerp: takes 2 operands, got ", c.n_ops);
  const RangeOperand& dst = c.ops[0];
  const RangeOperand& src = c.ops[1];
  range::check_f32(dst, "Lerp");
  range::check_f32(src, "Lerp");
  TR_CHECK(dst.elems == src.elems, "Lerp: operand sizes differ");
  TR_CHECK(c.attrs != nullptr, "Lerp: no attributes");
  if (c.attrs->skip_on_inf && c.env->scalars->found_inf) return;
  float* d = static_cast<float*>(dst.data);
  const float* s = static_cast<const float*>(src.data);
  const float t = c.attrs->t;
  for (int64_t i = 0; i < dst.elems; ++i) d[i] = range::lerp_elem(d[i], s[i], t);
}

void accumulate_cpu(const RangeCall& c) {
  range::check_n_ops(c, 2, "Accumulate");
  const RangeOperand& dst = c.ops[0];
  const RangeOperand& src = c.ops[1];
  range::check_f32(dst, "Accumulate");
  range::check_f32(src, "Accumulate");
  TR_CHECK(dst.elems == src.elems, "Accumulate: operand sizes differ");
  float* d = static_cast<float*>(dst.data);
  const float* s = static_cast<const float*>(src.data);
  for (int64_t i = 0; i < dst.elems; ++i) d[i] = range::accumulate_elem(d[i], s[i]);
}

}  // namespace tr

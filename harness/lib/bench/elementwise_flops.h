#pragma once
// The element-wise FLOPs of a COMPUTE node (Note [step roofline],
// step_roofline.h): everything but its matrix products, convolutions and
// attention products, as a few FLOPs per element of one of its operands, per
// op kind in a table (elementwise_flops.cpp).
#include "framework/ops/op_signature.h"

namespace tr::bench {

// `o`: the node's operands by name (their shapes; pointers unread).
double elementwise_flops(const OpOperands& o, const OpAttrs& a);

// The pairs causal attention scores per head and sample over qkv [B,T,3C]:
// query t sees keys 0..t, T (T + 1) / 2.
double causal_pairs(const Shape& qkv);

}  // namespace tr::bench

// ConvKey: see conv_key.h.
#include "framework/ops/conv_plans/conv_key.h"

#include "framework/core/error.h"

namespace tr {

std::string_view conv_dir_name(ConvDir d) {
  switch (d) {
    case ConvDir::Fwd: return "fwd";
    case ConvDir::BwdData: return "bwd_data";
    case ConvDir::BwdFilter: return "bwd_filter";
  }
  return "?";
}

std::optional<ConvDir> parse_conv_dir(std::string_view s) {
  for (ConvDir d : {ConvDir::Fwd, ConvDir::BwdData, ConvDir::BwdFilter})
    if (s == conv_dir_name(d)) return d;
  return std::nullopt;
}

std::string ConvKey::str() const {
  return cat("conv ", conv_dir_name(dir), " x[", n, ",", h, ",", w, ",", c, "] w[", k, ",", r, ",", r, ",", c, "] ", r,
             "x", r, " stride ", stride, " pad ", pad, " y[", n, ",", ho(), ",", wo(), ",", k, "] ", dtype_name(dtype));
}

// The same rules as the shape rules of conv_cpu.cpp, as internal checks: a node
// that reaches here passed them already.
ConvKey conv_key(OpKind kind, const Shape* in, int n_in, const OpAttrs& a, DType dtype) {
  auto nhwc = [](const Shape& s, const char* what) {
    TR_CHECK(s.rank == 4, "conv_key: ", what, " must be [N,H,W,C], got ", s.str());
  };
  auto filt = [&](const Shape& s) {
    TR_CHECK(s.rank == 4 && s[1] == a.kernel && s[2] == a.kernel, "conv_key: w must be [K,", a.kernel, ",", a.kernel,
             ",C], got ", s.str());
  };
  TR_CHECK(a.kernel >= 1 && a.stride >= 1 && a.pad >= 0 && a.pad < a.kernel, "conv_key: kernel ", a.kernel, " stride ",
           a.stride, " pad ", a.pad);
  ConvKey key;
  key.dtype = dtype;
  key.r = a.kernel;
  key.stride = a.stride;
  key.pad = a.pad;
  auto set_x = [&](const Shape& x) {
    nhwc(x, "x");
    TR_CHECK(x[1] + 2 * a.pad >= a.kernel && x[2] + 2 * a.pad >= a.kernel, "conv_key: x ", x.str(),
             " is smaller than the window");
    key.n = x[0];
    key.h = x[1];
    key.w = x[2];
    key.c = x[3];
  };
  auto check_dy = [&](const Shape& dy) {
    nhwc(dy, "dy");
    const Shape want{key.n, key.ho(), key.wo(), key.k};
    TR_CHECK(dy == want, "conv_key: dy ", dy.str(), " should be ", want.str(), " for ", key.str());
  };
  switch (kind) {
    case OpKind::ConvFwd:  // (x, w)
      TR_CHECK(n_in == 2, "conv_key: ConvFwd has 2 inputs, got ", n_in);
      key.dir = ConvDir::Fwd;
      set_x(in[0]);
      filt(in[1]);
      TR_CHECK(in[1][3] == key.c, "conv_key: x ", in[0].str(), " and w ", in[1].str(), " differ in C");
      key.k = in[1][0];
      break;
    case OpKind::ConvBwdData:  // (dy, w, x)
      TR_CHECK(n_in == 3, "conv_key: ConvBwdData has 3 inputs, got ", n_in);
      key.dir = ConvDir::BwdData;
      set_x(in[2]);
      filt(in[1]);
      TR_CHECK(in[1][3] == key.c, "conv_key: x ", in[2].str(), " and w ", in[1].str(), " differ in C");
      key.k = in[1][0];
      check_dy(in[0]);
      break;
    case OpKind::ConvBwdFilter:  // (x, dy)
      TR_CHECK(n_in == 2, "conv_key: ConvBwdFilter has 2 inputs, got ", n_in);
      key.dir = ConvDir::BwdFilter;
      set_x(in[0]);
      nhwc(in[1], "dy");
      key.k = in[1][3];
      check_dy(in[1]);
      break;
    default: TR_CHECK(false, "conv_key: ", op_name(kind), " is not a convolution");
  }
  return key;
}

}  // namespace tr

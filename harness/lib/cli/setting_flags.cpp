#include "harness/lib/cli/setting_flags.h"

#include <array>
#include <utility>

namespace tr {
namespace {

// Each setting the framework names, and the flags of tr-train and tr-bench that set it.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kFlags = {{
    {"batch", "--batch"},
    {"ranks", "--ranks/--gpus"},
    {"epochs", "--epochs"},
    {"width", "--width"},
    {"image_size", "--image-size"},
    {"lowres_size", "--lowres-size"},
    {"seq_warmup", "--seq-warmup"},
    {"translate", "--translate"},
    {"cutout", "--cutout"},
    {"conv_plans", "--cudnn-benchmark --conv-plans"},
    {"optimizer", "--optimizer"},
    {"max_grad_norm", "--clip-grad-norm"},
}};

}  // namespace

std::string with_flags(std::string_view message) {
  std::string out;
  size_t i = 0;
  while (i < message.size()) {
    const size_t open = message.find('{', i);
    const size_t close = open == std::string_view::npos ? open : message.find('}', open);
    if (close == std::string_view::npos) break;
    out.append(message.substr(i, open - i));
    const std::string_view name = message.substr(open + 1, close - open - 1);
    std::string_view flag;
    for (const auto& [setting, flags] : kFlags)
      if (setting == name) flag = flags;
    if (flag.empty()) out.append(message.substr(open, close - open + 1));
    else out.append(flag);
    i = close + 1;
  }
  out.append(message.substr(i));
  return out;
}

}  // namespace tr

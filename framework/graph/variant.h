#pragma once
// Variants: sets of shapes for the same topology (docs/design.md, "Vocabulary").
#include <array>
#include <string_view>

namespace tr {

enum class Variant : int { TrainBase, TrainLast, TrainLowres, TrainLowresLast, ValBase, ValLast, COUNT };
constexpr int kVariantCount = static_cast<int>(Variant::COUNT);
constexpr std::array<Variant, kVariantCount> kAllVariants = {Variant::TrainBase,   Variant::TrainLast,
                                                             Variant::TrainLowres, Variant::TrainLowresLast,
                                                             Variant::ValBase,     Variant::ValLast};

constexpr std::string_view variant_name(Variant v) {
  switch (v) {
    case Variant::TrainBase: return "train_base";
    case Variant::TrainLast: return "train_last";
    case Variant::TrainLowres: return "train_lowres";
    case Variant::TrainLowresLast: return "train_lowres_last";
    case Variant::ValBase: return "val_base";
    case Variant::ValLast: return "val_last";
    case Variant::COUNT: break;
  }
  return "?";
}
constexpr bool is_train(Variant v) { return static_cast<int>(v) < static_cast<int>(Variant::ValBase); }
constexpr int vidx(Variant v) { return static_cast<int>(v); }

}  // namespace tr

#pragma once
// What the compiled graph knows about a tensor id: no shapes for activations
// (those come from shape inference per variant), fixed shapes for everything else.
#include <cstdint>
#include <string>

#include "framework/core/dtype.h"
#include "framework/core/shape.h"

namespace tr {

using TensorId = int32_t;
constexpr TensorId kNoTensor = -1;

// Where a tensor lives in the arena. Note [parallel regions]: every role marked
// "param layout" is laid out as one contiguous region with the same element
// offsets for the same slot, so one RANGE node can walk param, grad and optimizer
// state side by side; likewise "bn layout" for BatchNorm statistics.
enum class Role : uint8_t {
  Scalars,          // not a tensor id: the TrainScalars block at arena offset 0
  Input,            // images/labels buffers A and B (persistent)
  Activation,       // per-step values, liveness-based reuse
  ParamMaster,      // param layout, f32 master weights
  ParamCompute,     // param layout, f16 copies (AMP only)
  Grad,             // param layout, compute dtype
  GradMaster,       // param layout, f32 (AMP only)
  OptState1,        // param layout, f32 (momentum / Adam m)
  OptState2,        // param layout, f32 (Adam v)
  EmaParam,         // param layout, f32
  EmaParamCompute,  // param layout, f16 (AMP only)
  BnBatch,          // bn layout, f32 [2,C] (mean, var) of the current step
  BnRunning,        // bn layout, f32 [2,C]
  EmaBnRunning,     // bn layout, f32 [2,C]
  Persistent,       // anything else that lives for the whole run (BN affines, metrics, lr table)
  COUNT
};
constexpr int kRoleCount = static_cast<int>(Role::COUNT);

enum class Layout : uint8_t { None, Param, Bn };

constexpr Layout layout_of(Role r) {
  switch (r) {
    case Role::ParamMaster:
    case Role::ParamCompute:
    case Role::Grad:
    case Role::GradMaster:
    case Role::OptState1:
    case Role::OptState2:
    case Role::EmaParam:
    case Role::EmaParamCompute: return Layout::Param;
    case Role::BnBatch:
    case Role::BnRunning:
    case Role::EmaBnRunning: return Layout::Bn;
    default: return Layout::None;
  }
}

// The state a training run carries from step to step, and that two runs must
// agree on bit for bit: master weights, optimizer state, EMA weights, BN
// running statistics (main and EMA).
constexpr bool is_training_state(Role r) {
  switch (r) {
    case Role::ParamMaster:
    case Role::OptState1:
    case Role::OptState2:
    case Role::EmaParam:
    case Role::BnRunning:
    case Role::EmaBnRunning: return true;
    default: return false;
  }
}

// Parameter groups, laid out in this order inside every param/bn region so that
// any run of adjacent groups is contiguous: FIRST_COMM = {First},
// DEEP_COMM = {Deep, Fc}; LARS groups = {First}, {Deep}, {Fc}.
enum class ParamGroup : uint8_t { First = 0, Deep = 1, Fc = 2 };
using GroupMask = uint8_t;
constexpr GroupMask group_bit(ParamGroup g) { return GroupMask(1u << static_cast<int>(g)); }
constexpr GroupMask kAllGroups = 0x7;
constexpr GroupMask kDeepGroups = 0x6;

// How the trainer fills a persistent tensor before the first step.
enum class Init : uint8_t { Zero, One, Normal, BnRunning /* rows (mean=0, var=1) */ };

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Role role = Role::Activation;
  ParamGroup group = ParamGroup::Deep;  // param/bn layouts only
  int32_t slot = -1;                    // index in its layout; parallel tensors share it
  bool decay = false;                   // param layout: weight decay / LARS adaptation
  Shape fixed_shape;                    // every role but Activation
  Init init = Init::Zero;               // ParamMaster / BnRunning (copies follow their master)
  float init_std = 0.f;                 // Init::Normal
};

}  // namespace tr

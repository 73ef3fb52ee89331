#include "framework/runtime/nvtx.h"

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define TR_HAVE_NVTX 1
#endif

#include <array>
#include <string>

namespace tr::nvtx {

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Compile: return "compile";
    case Phase::Plan: return "plan";
    case Phase::Capture: return "capture";
    case Phase::Warmup: return "warmup";
    case Phase::Measure: return "measure";
    case Phase::TrainStep: return "train_step";
    case Phase::ValStep: return "val_step";
    case Phase::Epoch: return "epoch";
    case Phase::Validate: return "validate";
    case Phase::StepGraph: return "step_graph";
    case Phase::COUNT: break;
  }
  return "?";
}

#ifdef TR_HAVE_NVTX
namespace {

struct Domain {
  nvtxDomainHandle_t domain = nullptr;
  std::array<nvtxStringHandle_t, static_cast<size_t>(Phase::COUNT)> phases{};
  std::array<nvtxStringHandle_t, kGraphIdCount> graphs{};
  Domain() {
    domain = nvtxDomainCreateA("tr");
    for (int i = 0; i < static_cast<int>(Phase::COUNT); ++i)
      phases[size_t(i)] = nvtxDomainRegisterStringA(domain, std::string(phase_name(Phase(i))).c_str());
    for (int i = 0; i < kGraphIdCount; ++i)
      graphs[size_t(i)] = nvtxDomainRegisterStringA(domain, std::string(graph_name(GraphId(i))).c_str());
  }
};

const Domain& domain() {
  static const Domain d;  // created on first use, after a tool could attach
  return d;
}

void push_registered(nvtxStringHandle_t s) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  nvtxDomainRangePushEx(domain().domain, &a);
}

}  // namespace

void push(Phase p) { push_registered(domain().phases[static_cast<size_t>(p)]); }
void push(GraphId g) { push_registered(domain().graphs[static_cast<size_t>(g)]); }
void pop() { nvtxDomainRangePop(domain().domain); }
#else
void push(Phase) {}
void push(GraphId) {}
void pop() {}
#endif

}  // namespace tr::nvtx

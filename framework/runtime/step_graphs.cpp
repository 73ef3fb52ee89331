#include "framework/runtime/step_graphs.h"

#include "framework/core/error.h"
#include "framework/core/launch_tally.h"
#include "framework/runtime/nvtx.h"

namespace tr {

struct StepGraphs::Exec {
  std::unique_ptr<NativeExec> native;         // CUDA
  std::vector<const CapturedGraph*> cpu_seq;  // CPU: the atlas graphs in launch order
};

StepGraphs::StepGraphs(GraphRunner& r, const std::vector<Variant>& train_variants) : r_(r) {
  DeviceContext& ctx = r.ctx();
  ctx.make_current();
  for (Variant v : train_variants) {
    TR_CHECK(is_train(v), "step graphs are for training variants, got ", variant_name(v));
    for (int cur = 0; cur < 2; ++cur) {
      for (int next = 0; next < 2; ++next) {
        auto e = std::make_unique<Exec>();
        auto body = [&] {
          r.splice_into(&e->cpu_seq);
          try {
            tr::train_step(r, v, cur, next != 0, nullptr);
          } catch (...) {
            r.splice_into(nullptr);
            throw;
          }
          r.splice_into(nullptr);
        };
        if (ctx.backend() == Backend::Cuda) {
          e->native = capture_step_cuda(ctx, body);
        } else {
          body();
        }
        table_[size_t(vidx(v))][size_t(cur)][size_t(next)] = std::move(e);
        ++built_;
      }
    }
  }
}

StepGraphs::~StepGraphs() = default;

const NativeExec* StepGraphs::native(Variant v, int cur, bool transfer_next) const {
  const Exec* e = table_[size_t(vidx(v))][size_t(cur)][transfer_next ? 1 : 0].get();
  return e ? e->native.get() : nullptr;
}

void StepGraphs::train_step(Variant v, int cur, bool transfer_next, const StepHook* hook) {
  const Exec* e = table_[size_t(vidx(v))][size_t(cur)][transfer_next ? 1 : 0].get();
  if (e == nullptr || (hook && (hook->after_backward || hook->time_grad_allreduce))) {
    tr::train_step(r_, v, cur, transfer_next, hook);
    return;
  }
  nvtx::Range step(nvtx::Phase::TrainStep);
  nvtx::Range graph(nvtx::Phase::StepGraph);
  DeviceContext& c = r_.ctx();
  using S = StreamKind;
  // The step graph runs on COMP_1 and holds every stream's part of the step:
  // it starts after what was submitted elsewhere (CLEAR_METRICS on UPDATE, the
  // first transfer on TRANS), and what follows on those streams starts after it.
  c.stream_wait(S::COMP_1, S::UPDATE);
  c.stream_wait(S::COMP_1, S::TRANS);
  ++launch_tally().graph_launches;
  if (e->native) {
    e->native->launch(c, S::COMP_1);
  } else {
    for (const CapturedGraph* g : e->cpu_seq) g->run_cpu(c);
  }
  c.stream_wait(S::UPDATE, S::COMP_1);
  c.stream_wait(S::TRANS, S::COMP_1);
}

}  // namespace tr

#ifndef TR_HAVE_CUDA
namespace tr {
std::unique_ptr<NativeExec> capture_step_cuda(DeviceContext&, const std::function<void()>&) {
  throw Error("this build of tr has no CUDA backend (configure with -DTR_CUDA=ON)");
}
}  // namespace tr
#endif

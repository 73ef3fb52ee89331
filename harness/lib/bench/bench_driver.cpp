#include "harness/lib/bench/bench_driver.h"

#include <time.h>
#include <algorithm>
#include <chrono>
#include <thread>

#include "framework/core/log.h"

namespace tr::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Time slots of the all-reduce timed alone; the in-step marks are read by then.
constexpr int kAloneBegin = 0, kAloneEnd = 1;

}  // namespace

void BenchDriver::prime(Variant v) {
  const bool train = is_train(v);
  const DataView& d = train ? s_.train_data() : s_.val_data();
  const MemoryPlan& p = s_.plans().plan(v);
  TR_USER_CHECK(p.present(), "variant ", variant_name(v), " is not part of this run");
  const std::vector<int64_t> no_order;
  s_.for_each_rank([&](int r) {
    DeviceContext& ctx = s_.context(r);
    ctx.synchronize();
    for (int slot = 0; slot < 2; ++slot) {
      const int64_t first = std::min<int64_t>(slot * p.dims.global_batch, d.count - p.dims.global_batch);
      TrainingSession::fill_staging(ctx, slot, d, no_order, std::max<int64_t>(first, 0), p.dims.global_batch,
                                    p.dims.batch);
    }
    GraphRunner& gr = s_.runner(r);
    if (train) epoch_begin(gr, v);
    transfer(gr, v, 0);
    ctx.synchronize();
  });
  cur_ = 0;
}

BenchDriver::Stats BenchDriver::steps(Variant v, int64_t steps) {
  trace("bench: ", steps, " steps of ", variant_name(v));
  Stats st;
  const bool train = is_train(v);
  const int start = cur_;
  const auto t0 = std::chrono::steady_clock::now();
  s_.for_each_rank([&](int r) {
    GraphRunner& gr = s_.runner(r);
    const double c0 = r == 0 ? thread_cpu_seconds() : 0;
    const LaunchTally l0 = launch_tally();
    if (!train) val_begin(gr, v);
    int cur = start;
    for (int64_t i = 0; i < steps; ++i) {
      if (host_delay_.count() > 0) std::this_thread::sleep_for(host_delay_);
      if (train) {
        s_.steps(r).train_step(v, cur, true, &s_.step_hook());
      } else {
        val_step(gr, v, cur, true);
      }
      cur = 1 - cur;
    }
    if (!train) val_end(gr, v);
    if (r == 0) {
      st.rank0_cpu_s = thread_cpu_seconds() - c0;
      st.rank0_tally = launch_tally() - l0;
    }
    gr.ctx().synchronize();
  });
  st.wall_s = seconds_since(t0);
  cur_ = static_cast<int>((start + steps) % 2);
  return st;
}

std::vector<BenchDriver::Message> BenchDriver::grad_allreduce_messages(Variant v) const {
  std::vector<Message> out;
  if (!s_.plans().plan(v).present() || !is_train(v)) return out;
  // The calls pre_capture listed (B2.5) for the two gradient all-reduce graphs.
  for (GraphId g : {GraphId::DEEP_COMM, GraphId::FIRST_COMM}) {
    const AtlasSlot& s = s_.atlas().slot(v, g);
    if (!s.present()) continue;
    for (const CollectiveSig& c : s_.capture().collectives.at(static_cast<size_t>(s.captured_idx)))
      out.push_back({c.elems, c.dtype});
  }
  return out;
}

std::vector<BenchDriver::Message> BenchDriver::in_backward_messages(Variant v) const {
  std::vector<Message> out;
  const MemoryPlan& p = s_.plans().plan(v);
  if (!p.present() || !is_train(v)) return out;
  const ComputationGraph& cg = s_.model().cg;
  for (const Node& n : cg.nodes(GraphId::DEEP_FWD_BWD)) {
    if (!n.collective || n.stream == StreamKind::COUNT) continue;  // BN statistics run on the graph's own stream
    for (const RangeRef& r : n.operands) {
      const ResolvedRange rr = s_.plans().resolve(cg, r, p);
      out.push_back({rr.elems, rr.dtype});
    }
  }
  return out;
}

BenchDriver::AllreduceTiming BenchDriver::allreduce(Variant v, int64_t steps) {
  const std::vector<Message> msgs = grad_allreduce_messages(v);
  TR_CHECK(!msgs.empty() && s_.comm() != nullptr, "variant ", variant_name(v), " has no gradient all-reduce");
  TR_CHECK(steps >= 1, "bench_allreduce needs at least one step");
  AllreduceTiming at;
  StepHook timed = s_.step_hook();
  timed.time_grad_allreduce = true;
  const int start = cur_;
  s_.for_each_rank([&](int r) {
    DeviceContext& ctx = s_.context(r);
    int cur = start;
    for (int64_t i = 0; i < steps; ++i) {
      s_.steps(r).train_step(v, cur, true, &timed);
      ctx.synchronize();
      if (r == 0)
        at.in_step_ms += ctx.elapsed_ms(kDeepCommBegin, kDeepCommEnd) + ctx.elapsed_ms(kFirstCommBegin, kFirstCommEnd);
      cur = 1 - cur;
    }
  });
  cur_ = static_cast<int>((start + steps) % 2);
  at.in_step_ms /= double(steps);

  int64_t largest = 0;
  for (const Message& m : msgs) largest = std::max(largest, m.bytes());
  s_.for_each_rank([&](int r) {
    DeviceContext& ctx = s_.context(r);
    ctx.synchronize();
    // Scratch: the arena's library workspace on CUDA (no allocation after
    // planning); host memory on the CPU.
    std::vector<uint8_t> host;
    void* scratch = nullptr;
    if (ctx.backend() == Backend::Cuda) {
      TR_CHECK(largest <= ctx.spec().workspace_bytes, "an all-reduce of ", largest, " bytes does not fit the ",
               ctx.spec().workspace_bytes, "-byte workspace");
      scratch = ctx.ptr_at(ctx.spec().workspace_offset);
    } else {
      host.assign(static_cast<size_t>(largest), 0);
      scratch = host.data();
    }
    const ExecEnv& e = ctx.env(StreamKind::COMP_1);
    auto round = [&] {
      for (const Message& m : msgs)
        s_.comm()->allreduce(ctx.rank(), scratch, m.elems, m.dtype, ReduceOp::Sum, e.stream);
    };
    round();  // warm-up
    ctx.synchronize();
    ctx.mark_time(StreamKind::COMP_1, kAloneBegin);
    for (int64_t i = 0; i < steps; ++i) round();
    ctx.mark_time(StreamKind::COMP_1, kAloneEnd);
    ctx.synchronize();
    if (r == 0) at.alone_ms = ctx.elapsed_ms(kAloneBegin, kAloneEnd) / double(steps);
  });
  return at;
}

}  // namespace tr::bench

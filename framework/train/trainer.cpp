#include "framework/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <time.h>

#include "framework/comm/comm_factory.h"
#include "framework/core/log.h"
#include "framework/core/rng.h"
#include "framework/runtime/context_factory.h"
#include "framework/runtime/nvtx.h"
#include "framework/train/param_init.h"

namespace tr {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void check_data(const DataView& d, const ModelConfig& m, const char* what) {
  TR_USER_CHECK(d.count > 0 && d.images && d.labels, what, " set is empty");
  TR_USER_CHECK(d.height == m.in_height && d.width == m.in_width && d.channels == m.in_channels, what,
                " images are ", d.height, "x", d.width, "x", d.channels, " but the model expects ", m.in_height, "x",
                m.in_width, "x", m.in_channels);
}

}  // namespace

Trainer::Trainer(const RunOptions& opt, DataView train, DataView val) : opt_(opt), train_(train), val_(val) {
  const int ranks = opt.train.ranks;
  TR_USER_CHECK(ranks >= 1, "--ranks/--gpus must be >= 1, got ", ranks);
  TR_USER_CHECK(opt.epochs >= 1, "--epochs must be >= 1, got ", opt.epochs);
  TR_USER_CHECK(opt.batch >= 1, "--batch must be >= 1, got ", opt.batch);
  TR_USER_CHECK(opt.batch % ranks == 0, "--batch ", opt.batch, " does not divide evenly over ", ranks, " ranks");
  check_data(train_, opt.model, "training");
  if (opt.validate) check_data(val_, opt.model, "validation");
  const int64_t vb = opt.val_batch > 0 ? opt.val_batch : opt.batch;
  TR_USER_CHECK(vb % ranks == 0, "validation batch ", vb, " does not divide evenly over ", ranks, " ranks");

  // Variants (global sizes). Note [uneven last batch]: every rank must run the
  // same shapes, so a last batch of n samples gives each rank floor(n/ranks)
  // and drops the n % ranks samples left over.
  const int64_t B = std::min(opt.batch, train_.count);
  steps_per_epoch_ = (train_.count + B - 1) / B;
  last_batch_ = train_.count - (steps_per_epoch_ - 1) * B;
  const int64_t per_rank = B / ranks;
  TR_USER_CHECK(per_rank >= 1, "batch ", B, " is smaller than the number of ranks");
  std::array<VariantDims, kVariantCount> dims{};
  auto set = [&](Variant v, int64_t global, int64_t hw) {
    const int64_t b = global / ranks;
    if (b < 1) return;
    dims[static_cast<size_t>(vidx(v))] = VariantDims{b, b * ranks, hw, hw};
  };
  const int64_t H = opt.model.in_height;
  TR_USER_CHECK(opt.model.in_height == opt.model.in_width, "square inputs only");
  set(Variant::TrainBase, B, H);
  if (last_batch_ != B) set(Variant::TrainLast, last_batch_, H);
  if (opt.lowres_epochs > 0) {
    TR_USER_CHECK(opt.lowres_size >= 4 && opt.lowres_size < H, "--lowres-size must be in [4, ", H, "), got ",
                  opt.lowres_size);
    set(Variant::TrainLowres, B, opt.lowres_size);
    if (last_batch_ != B) set(Variant::TrainLowresLast, last_batch_, opt.lowres_size);
  }
  if (opt.validate) {
    const int64_t VB = std::min(vb, val_.count);
    val_steps_ = (val_.count + VB - 1) / VB;
    val_last_ = val_.count - (val_steps_ - 1) * VB;
    set(Variant::ValBase, VB, H);
    if (val_last_ != VB) set(Variant::ValLast, val_last_, H);
  }

  TrainConfig tc = opt.train;
  tc.schedule_len = int64_t(opt.epochs) * steps_per_epoch_;
  int64_t max_batch = 0;
  for (const auto& d : dims) max_batch = std::max(max_batch, d.batch);
  {
    nvtx::Range range(nvtx::Phase::Compile);
    model_ = build_model(opt.model, tc, max_batch);
  }
  TR_USER_CHECK(opt.lowres_epochs == 0 || model_.supports_lowres, "model ", model_name(opt.model.kind),
                " has a spatial fully connected layer and cannot train at a lower resolution");

  // Contexts: phase 1 (library plans), memory plan, phase 2 (arena).
  trace("trainer: ", model_name(opt.model.kind), ", ", mode_name(opt.mode), ", ", ranks, " rank(s), batch ", opt.batch);
  if (opt.train.has_collectives()) {
    trace("communicator: creating for ", ranks, " rank(s)");
    comm_ = make_communicator(opt.backend, ranks, opt.first_device, std::chrono::milliseconds(opt.watchdog_ms));
  }
  int64_t workspace = 0;
  for (int r = 0; r < ranks; ++r) {
    contexts_.push_back(make_context(opt.backend, r, ranks, opt.first_device + r, opt.deterministic, comm_.get()));
    workspace = std::max(workspace, contexts_.back()->prepare_workspace(model_, dims));
  }
  {
    nvtx::Range range(nvtx::Phase::Plan);
    plans_ = plan_memory(model_, dims, workspace);
    atlas_ = build_atlas(model_.cg, plans_);
  }
  ContextSpec spec;
  spec.arena_bytes = plans_.arena_bytes;
  spec.scalars_offset = plans_.scalars_offset;
  spec.workspace_offset = plans_.workspace_offset;
  spec.workspace_bytes = plans_.workspace_bytes;
  spec.staging_image_bytes = max_batch * H * opt.model.in_width * opt.model.in_channels;
  spec.staging_label_count = max_batch;
  spec.deterministic = opt.deterministic;
  spec.watchdog_ms = opt.watchdog_ms;
  const auto lr_table = make_lr_table(opt.lr, tc.schedule_len);
  for (auto& ctx : contexts_) {
    ContextSpec s = spec;
    s.rank = ctx->rank();
    s.ranks = ranks;
    s.device = ctx->spec().device;
    ctx->allocate(s);
    init_arena_state(model_, plans_, *ctx, lr_table, tc.amp ? tc.init_loss_scale : 1.f, opt.seed);
  }

  std::vector<DeviceContext*> raw;
  for (auto& c : contexts_) raw.push_back(c.get());
  {
    nvtx::Range range(nvtx::Phase::Capture);
    trace("contexts allocated; pre_capture");
    capture_ = pre_capture(atlas_, model_.cg, plans_, raw, opt.mode);
    trace("pre_capture done: ", capture_.captured, " graphs");
    for (auto& c : contexts_) runners_.push_back(std::make_unique<GraphRunner>(model_.cg, plans_, atlas_, capture_, *c));
    // Full capture: compose each rank's training steps into step graphs.
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Variant> step_variants;
    if (opt.mode == ExecMode::FullCapture && opt.step_graphs)
      for (Variant v : kAllVariants)
        if (is_train(v) && plans_.plan(v).present()) step_variants.push_back(v);
    for (auto& r : runners_) {
      steps_.push_back(std::make_unique<StepGraphs>(*r, step_variants));
      capture_.step_graphs += steps_.back()->built();
    }
    capture_.capture_ms += seconds_since(t0) * 1e3;
    trace("step graphs built: ", capture_.step_graphs);
  }
  // AMP: the compute copies start as casts of the masters.
  for (auto& r : runners_) {
    r->ctx().make_current();  // this thread drives every rank in turn
    r->launch(GraphId::CAST_MAIN_FP32_TO_FP16, Variant::TrainBase);
    r->ctx().synchronize();
  }
}

Trainer::~Trainer() = default;

void Trainer::for_each_rank(const std::function<void(int)>& fn) {
  if (ranks() == 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks()));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks(); ++r) {
    threads.emplace_back([&, r] {
      try {
        context(r).make_current();
        fn(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        comm_->abort(cat("rank ", r, " failed: ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  // The root cause is the first rank that failed on its own, not a rank the
  // abort released; prefer a watchdog or mismatch report, else the lowest rank.
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void Trainer::fill_staging(DeviceContext& ctx, int slot, const DataView& d, const std::vector<int64_t>& order,
                           int64_t first, int64_t global_n, int64_t per_rank) {
  // This rank's shard of the batch [first, first + global_n): samples
  // first + rank*per_rank .. + per_rank.
  const int64_t img = int64_t(d.height) * d.width * d.channels;
  uint8_t* dst = ctx.staging_images(slot);
  int32_t* lab = ctx.staging_labels(slot);
  TR_CHECK(per_rank * ctx.ranks() <= global_n, "shard too large");
  for (int64_t i = 0; i < per_rank; ++i) {
    const int64_t pos = first + ctx.rank() * per_rank + i;
    const int64_t idx = order.empty() ? pos : order[static_cast<size_t>(pos)];
    std::memcpy(dst + i * img, d.images + idx * img, static_cast<size_t>(img));
    lab[i] = d.labels[idx];
  }
}

void Trainer::train_epoch_on_rank(int rank, const std::vector<int64_t>& order, bool lowres) {
  trace("rank ", rank, ": epoch ", epoch_, " training");
  GraphRunner& r = *runners_[static_cast<size_t>(rank)];
  DeviceContext& ctx = r.ctx();
  const Variant base = lowres ? Variant::TrainLowres : Variant::TrainBase;
  const Variant last = lowres ? Variant::TrainLowresLast : Variant::TrainLast;
  const int64_t B = plans_.plan(Variant::TrainBase).dims.global_batch;
  auto variant_of = [&](int64_t i) { return (i == steps_per_epoch_ - 1 && last_batch_ != B) ? last : base; };
  auto per_rank = [&](Variant v) { return plans_.plan(v).dims.batch; };

  epoch_begin(r, base);
  ctx.wait_transfer_done(0);
  fill_staging(ctx, 0, train_, order, 0, std::min(B, train_.count), per_rank(variant_of(0)));
  transfer(r, base, 0);
  for (int64_t i = 0; i < steps_per_epoch_; ++i) {
    const Variant v = variant_of(i);
    const int cur = static_cast<int>(i % 2);
    const bool has_next = i + 1 < steps_per_epoch_;
    if (has_next) {
      const Variant nv = variant_of(i + 1);
      ctx.wait_transfer_done(1 - cur);
      fill_staging(ctx, 1 - cur, train_, order, (i + 1) * B, plans_.plan(nv).dims.global_batch, per_rank(nv));
    }
    steps_[static_cast<size_t>(rank)]->train_step(v, cur, has_next, &hook_);
  }
  ctx.synchronize();
}

void Trainer::validate_on_rank(int rank) {
  trace("rank ", rank, ": epoch ", epoch_, " validation");
  GraphRunner& r = *runners_[static_cast<size_t>(rank)];
  DeviceContext& ctx = r.ctx();
  const int64_t VB = plans_.plan(Variant::ValBase).dims.global_batch;
  auto variant_of = [&](int64_t i) { return (i == val_steps_ - 1 && val_last_ != VB) ? Variant::ValLast : Variant::ValBase; };
  const std::vector<int64_t> no_order;
  val_begin(r, Variant::ValBase);
  ctx.wait_transfer_done(0);
  fill_staging(ctx, 0, val_, no_order, 0, plans_.plan(variant_of(0)).dims.global_batch, plans_.plan(variant_of(0)).dims.batch);
  transfer(r, Variant::ValBase, 0);
  for (int64_t i = 0; i < val_steps_; ++i) {
    const Variant v = variant_of(i);
    const int cur = static_cast<int>(i % 2);
    const bool has_next = i + 1 < val_steps_;
    if (has_next) {
      const Variant nv = variant_of(i + 1);
      ctx.wait_transfer_done(1 - cur);
      fill_staging(ctx, 1 - cur, val_, no_order, (i + 1) * VB, plans_.plan(nv).dims.global_batch, plans_.plan(nv).dims.batch);
    }
    val_step(r, v, cur, has_next);
  }
  val_end(r, Variant::ValBase);
  ctx.synchronize();
}

void Trainer::bench_prime(Variant v) {
  const bool train = is_train(v);
  const DataView& d = train ? train_ : val_;
  const MemoryPlan& p = plans_.plan(v);
  TR_USER_CHECK(p.present(), "variant ", variant_name(v), " is not part of this run");
  const std::vector<int64_t> no_order;
  for_each_rank([&](int r) {
    DeviceContext& ctx = context(r);
    ctx.synchronize();
    for (int slot = 0; slot < 2; ++slot) {
      const int64_t first = std::min<int64_t>(slot * p.dims.global_batch, d.count - p.dims.global_batch);
      fill_staging(ctx, slot, d, no_order, std::max<int64_t>(first, 0), p.dims.global_batch, p.dims.batch);
    }
    GraphRunner& gr = *runners_[static_cast<size_t>(r)];
    if (train) epoch_begin(gr, v);
    transfer(gr, v, 0);
    ctx.synchronize();
  });
  bench_cur_ = 0;
}

namespace {
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
}  // namespace

Trainer::BenchStats Trainer::bench_steps(Variant v, int64_t steps) {
  trace("bench: ", steps, " steps of ", variant_name(v));
  BenchStats st;
  const bool train = is_train(v);
  const int start = bench_cur_;
  const auto t0 = std::chrono::steady_clock::now();
  for_each_rank([&](int r) {
    GraphRunner& gr = *runners_[static_cast<size_t>(r)];
    const double c0 = r == 0 ? thread_cpu_seconds() : 0;
    const LaunchTally l0 = launch_tally();
    if (!train) val_begin(gr, v);
    int cur = start;
    for (int64_t i = 0; i < steps; ++i) {
      if (train) {
        steps_[static_cast<size_t>(r)]->train_step(v, cur, true, &hook_);
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
  bench_cur_ = static_cast<int>((start + steps) % 2);
  return st;
}

std::vector<Trainer::Message> Trainer::grad_allreduce_messages(Variant v) const {
  std::vector<Message> out;
  if (!plans_.plan(v).present() || !is_train(v)) return out;
  // The calls pre_capture listed (B2.5) for the two gradient all-reduce graphs.
  for (GraphId g : {GraphId::DEEP_COMM, GraphId::FIRST_COMM}) {
    const AtlasSlot& s = atlas_.slot(v, g);
    if (!s.present()) continue;
    for (const CollectiveSig& c : capture_.collectives.at(static_cast<size_t>(s.captured_idx)))
      out.push_back({c.elems, c.dtype});
  }
  return out;
}

Trainer::AllreduceTiming Trainer::bench_allreduce(Variant v, int64_t steps) {
  const std::vector<Message> msgs = grad_allreduce_messages(v);
  TR_CHECK(!msgs.empty() && comm_ != nullptr, "variant ", variant_name(v), " has no gradient all-reduce");
  TR_CHECK(steps >= 1, "bench_allreduce needs at least one step");
  AllreduceTiming at;
  StepHook timed = hook_;
  timed.time_grad_allreduce = true;
  const int start = bench_cur_;
  for_each_rank([&](int r) {
    DeviceContext& ctx = context(r);
    int cur = start;
    for (int64_t i = 0; i < steps; ++i) {
      steps_[static_cast<size_t>(r)]->train_step(v, cur, true, &timed);
      ctx.synchronize();
      if (r == 0) at.in_step_ms += ctx.elapsed_ms(0, 1) + ctx.elapsed_ms(2, 3);
      cur = 1 - cur;
    }
  });
  bench_cur_ = static_cast<int>((start + steps) % 2);
  at.in_step_ms /= double(steps);

  int64_t largest = 0;
  for (const Message& m : msgs) largest = std::max(largest, m.bytes());
  for_each_rank([&](int r) {
    DeviceContext& ctx = context(r);
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
      for (const Message& m : msgs) comm_->allreduce(r, scratch, m.elems, m.dtype, ReduceOp::Sum, e.stream);
    };
    round();  // warm-up
    ctx.synchronize();
    ctx.mark_time(StreamKind::COMP_1, 0);
    for (int64_t i = 0; i < steps; ++i) round();
    ctx.mark_time(StreamKind::COMP_1, 1);
    ctx.synchronize();
    if (r == 0) at.alone_ms = ctx.elapsed_ms(0, 1) / double(steps);
  });
  return at;
}

EpochStats Trainer::run_epoch() {
  TR_USER_CHECK(epoch_ < opt_.epochs, "all ", opt_.epochs, " epochs (the length of the learning-rate schedule) are done");
  EpochStats st;
  st.epoch = epoch_;
  st.lowres = epoch_ < opt_.lowres_epochs;
  st.steps = steps_per_epoch_;
  std::vector<int64_t> order(static_cast<size_t>(train_.count));
  std::iota(order.begin(), order.end(), 0);
  if (opt_.shuffle) {
    Rng rng(opt_.seed * 1000003ull + static_cast<uint64_t>(epoch_));
    for (int64_t i = train_.count - 1; i > 0; --i) std::swap(order[size_t(i)], order[size_t(rng.below(uint64_t(i + 1)))]);
  }
  auto t0 = std::chrono::steady_clock::now();
  for_each_rank([&](int r) {
    nvtx::Range range(nvtx::Phase::Epoch);
    train_epoch_on_rank(r, order, st.lowres);
  });
  st.train_seconds = seconds_since(t0);

  const MemoryPlan& p = plans_.plan(Variant::TrainBase);
  double loss = 0, correct = 0, count = 0;
  for (int r = 0; r < ranks(); ++r) {
    const auto m = read_tensor(model_, p, context(r), model_.train_metrics);
    loss += m[kMetricLossSum];
    correct += m[kMetricCorrect];
    count += m[kMetricCount];
  }
  st.train_loss = loss / std::max(1.0, count);
  st.train_acc = correct / std::max(1.0, count);
  if (opt_.validate) {
    t0 = std::chrono::steady_clock::now();
    for_each_rank([&](int r) {
      nvtx::Range range(nvtx::Phase::Validate);
      validate_on_rank(r);
    });
    st.val_seconds = seconds_since(t0);
    // After VAL_RESULT_COMM every rank holds the sums over all ranks.
    const auto vm = read_tensor(model_, p, context(0), model_.val_main_metrics);
    const auto ve = read_tensor(model_, p, context(0), model_.val_ema_metrics);
    st.val_loss = vm[kMetricLossSum] / std::max(1.f, vm[kMetricCount]);
    st.val_acc = vm[kMetricCorrect] / std::max(1.f, vm[kMetricCount]);
    st.val_ema_loss = ve[kMetricLossSum] / std::max(1.f, ve[kMetricCount]);
    st.val_ema_acc = ve[kMetricCorrect] / std::max(1.f, ve[kMetricCount]);
  }
  const TrainScalars s = read_scalars(plans_, context(0));
  st.skipped_steps = s.skipped_steps;
  st.loss_scale = s.loss_scale;
  ++epoch_;
  return st;
}

}  // namespace tr

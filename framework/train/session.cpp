#include "framework/train/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "framework/comm/comm_factory.h"
#include "framework/core/log.h"
#include "framework/core/setting.h"
#include "framework/ops/compute/batchnorm.h"
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
  TR_USER_CHECK(d.height == m.in_height && d.width == m.in_width && d.channels == m.in_channels, what, " images are ",
                d.height, "x", d.width, "x", d.channels, " but the model expects ", m.in_height, "x", m.in_width, "x",
                m.in_channels);
}

// The largest per-rank batch of any variant: the model's and the staging buffers' size.
int64_t max_batch_of(const std::array<VariantDims, kVariantCount>& dims) {
  int64_t m = 0;
  for (const auto& d : dims) m = std::max(m, d.batch);
  return m;
}

}  // namespace

TrainingSession::TrainingSession(const RunOptions& opt, DataView train, DataView val)
    : opt_(opt), train_(train), val_(val) {
  check_options();
  const Dims dims = plan_variants();
  const TrainConfig tc = compile(dims);
  trace("trainer: ", opt.model.name, ", ", mode_name(opt.mode), ", ", opt.train.ranks, " rank(s), batch ", opt.batch);
  const int64_t workspace = make_contexts(dims);
  allocate(tc, dims, workspace);
  capture_graphs();
  // AMP's compute copies start as host casts of the masters (init_arena_state).
}

int TrainingSession::processes() const { return opt_.world ? opt_.world->processes() : 1; }

int TrainingSession::first_rank() const {
  return opt_.world ? opt_.world->process() * (opt_.train.ranks / processes()) : 0;
}

void TrainingSession::check_options() const {
  const int ranks = opt_.train.ranks;  // global
  TR_USER_CHECK(ranks >= 1, setting("ranks"), " must be >= 1, got ", ranks);
  TR_USER_CHECK(ranks % processes() == 0, ranks, " ranks do not divide over ", processes(), " processes");
  TR_USER_CHECK(opt_.epochs >= 1, setting("epochs"), " must be >= 1, got ", opt_.epochs);
  TR_USER_CHECK(opt_.batch >= 1, setting("batch"), " must be >= 1, got ", opt_.batch);
  TR_USER_CHECK(opt_.batch % ranks == 0, setting("batch"), " ", opt_.batch, " does not divide evenly over ", ranks,
                " ranks");
  check_data(train_, opt_.model, "training");
  if (opt_.validate) check_data(val_, opt_.model, "validation");
  const int64_t vb = opt_.val_batch > 0 ? opt_.val_batch : opt_.batch;
  TR_USER_CHECK(vb % ranks == 0, "validation batch ", vb, " does not divide evenly over ", ranks, " ranks");
  TR_USER_CHECK(opt_.model.is_sequence() || opt_.model.in_height == opt_.model.in_width, "square inputs only");
}

// Variants (global sizes). Note [uneven last batch]: every rank must run the
// same shapes, so a last batch of n samples gives each rank floor(n/ranks)
// and drops the n % ranks samples left over.
TrainingSession::Dims TrainingSession::plan_variants() {
  const int ranks = opt_.train.ranks;
  const int64_t B = std::min(opt_.batch, train_.count);
  steps_per_epoch_ = (train_.count + B - 1) / B;
  last_batch_ = train_.count - (steps_per_epoch_ - 1) * B;
  TR_USER_CHECK(B / ranks >= 1, "batch ", B, " is smaller than the number of ranks");
  Dims dims{};
  auto set = [&](Variant v, int64_t global, int64_t hw) {
    const int64_t b = global / ranks;
    if (b < 1) return;
    dims[static_cast<size_t>(vidx(v))] = VariantDims{b, b * ranks, hw, hw};
  };
  // The variants' height: the image side, or a sequence model's length (TokenPrep reads it).
  const int64_t H = opt_.model.is_sequence() ? opt_.model.seq_len : opt_.model.in_height;
  set(Variant::TrainBase, B, H);
  if (last_batch_ != B) set(Variant::TrainLast, last_batch_, H);
  if (opt_.lowres_epochs > 0) {
    // A GPT model's low resolution is its warm-up window (--seq-warmup).
    TR_USER_CHECK(opt_.lowres_size >= 4 && opt_.lowres_size < H,
                  setting(opt_.model.is_sequence() ? "seq_warmup" : "lowres_size"), " must be in [4, ", H, "), got ",
                  opt_.lowres_size);
    set(Variant::TrainLowres, B, opt_.lowres_size);
    if (last_batch_ != B) set(Variant::TrainLowresLast, last_batch_, opt_.lowres_size);
  }
  if (opt_.validate) {
    const int64_t VB = std::min(opt_.val_batch > 0 ? opt_.val_batch : opt_.batch, val_.count);
    val_steps_ = (val_.count + VB - 1) / VB;
    val_last_ = val_.count - (val_steps_ - 1) * VB;
    set(Variant::ValBase, VB, H);
    if (val_last_ != VB) set(Variant::ValLast, val_last_, H);
  }
  return dims;
}

TrainConfig TrainingSession::compile(const Dims& dims) {
  TrainConfig tc = opt_.train;
  tc.schedule_len = int64_t(opt_.epochs) * steps_per_epoch_;
  tc.augment.seed = opt_.seed;  // Note [augmentation]: the run's seed keys every decision
  tc.bn_sums = opt_.bn_sums.value_or(bn_sums_dtype(opt_.backend));
  TR_CHECK(tc.bn_sums == DType::F32 || (tc.bn_sums == DType::F64 && opt_.backend == Backend::Cpu),
           "BatchNorm sums are F32, or F64 on the CPU");
  {
    nvtx::Range range(nvtx::Phase::Compile);
    model_ = build_model(opt_.model, tc, max_batch_of(dims));
  }
  TR_USER_CHECK(opt_.lowres_epochs == 0 || model_.supports_lowres, "model ", opt_.model.name,
                " has a spatial fully connected layer and cannot train at a lower resolution");
  return tc;
}

// Contexts: phase 1 (library plans); the memory plan and the arena follow.
int64_t TrainingSession::make_contexts(const Dims& dims) {
  const int ranks = opt_.train.ranks, local = ranks / processes();
  if (opt_.train.has_collectives()) {
    trace("communicator: creating for ", ranks, " rank(s)");
    comm_ = make_communicator(opt_.backend, ranks, opt_.world, opt_.first_device,
                              std::chrono::milliseconds(opt_.watchdog_ms));
  }
  int64_t workspace = 0;
  auto make = [&] {
    for (int l = 0; l < local; ++l) {
      contexts_.push_back(
          make_context(opt_.backend, first_rank() + l, ranks, opt_.first_device + l, opt_.algos, comm_.get()));
      workspace = std::max(workspace, contexts_.back()->prepare_workspace(model_, dims));
    }
  };
  // Timed plans under a launcher: every process takes the first one's (Note
  // [convolution plan books]). Its timing may take minutes on a large model.
  ConvPlanBook* book = opt_.algos.conv_plans.get();
  if (book && book->use() == ConvPlanUse::Record && processes() > 1) {
    const auto wait = std::max(std::chrono::milliseconds(opt_.watchdog_ms), std::chrono::milliseconds(600000));
    share_first_process_plans(*book, *opt_.world, wait, make);
  } else {
    make();
  }
  return workspace;
}

void TrainingSession::allocate(const TrainConfig& tc, const Dims& dims, int64_t workspace) {
  {
    nvtx::Range range(nvtx::Phase::Plan);
    plans_ = plan_memory(model_, dims, workspace);
    atlas_ = build_atlas(model_.cg, plans_);
  }
  const int64_t max_batch = max_batch_of(dims);
  ContextSpec spec;
  spec.arena_bytes = plans_.arena_bytes;
  spec.scalars_offset = plans_.scalars_offset;
  spec.workspace_offset = plans_.workspace_offset;
  spec.workspace_bytes = plans_.workspace_bytes;
  spec.staging_image_bytes = max_batch * opt_.model.in_height * opt_.model.in_width * opt_.model.in_channels;
  spec.staging_label_count = max_batch;
  spec.deterministic = opt_.algos.deterministic;
  spec.watchdog_ms = opt_.watchdog_ms;
  const auto lr_table = make_lr_table(opt_.lr, tc.schedule_len);
  for (auto& ctx : contexts_) {
    ContextSpec s = spec;
    s.rank = ctx->rank();
    s.ranks = opt_.train.ranks;
    s.local_rank = ctx->rank() - first_rank();
    s.device = ctx->spec().device;
    ctx->allocate(s);
    init_arena_state(model_, plans_, *ctx, lr_table, tc.loss_scaling() ? tc.init_loss_scale : 1.f, opt_.seed);
  }
}

void TrainingSession::capture_graphs() {
  std::vector<DeviceContext*> raw;
  for (auto& c : contexts_) raw.push_back(c.get());
  nvtx::Range range(nvtx::Phase::Capture);
  trace("contexts allocated; pre_capture");
  capture_ = pre_capture(atlas_, model_.cg, plans_, raw, opt_.mode, opt_.capture_fault ? &*opt_.capture_fault : nullptr,
                         opt_.world);
  trace("pre_capture done: ", capture_.captured, " graphs");
  for (auto& c : contexts_) runners_.push_back(std::make_unique<GraphRunner>(model_.cg, plans_, atlas_, capture_, *c));
  // Full capture: compose each rank's training steps into step graphs.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Variant> step_variants;
  if (opt_.mode == ExecMode::FullCapture && opt_.step_graphs)
    for (Variant v : kAllVariants)
      if (is_train(v) && plans_.plan(v).present()) step_variants.push_back(v);
  for (auto& r : runners_) {
    steps_.push_back(std::make_unique<StepGraphs>(*r, step_variants));
    capture_.step_graphs += steps_.back()->built();
  }
  capture_.capture_ms += seconds_since(t0) * 1e3;
  trace("step graphs built: ", capture_.step_graphs);
}

TrainingSession::~TrainingSession() = default;

void TrainingSession::for_each_rank(const std::function<void(int)>& fn) {
  if (local_ranks() == 1) {
    try {
      fn(0);
    } catch (const std::exception& e) {
      // Other processes may wait in a collective for this rank: release them
      // (ncclCommAbort) before the graphs and the communicator are torn down.
      if (comm_) comm_->abort(cat("rank ", context(0).rank(), " failed: ", e.what()));
      throw;
    }
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(local_ranks()));
  std::vector<std::thread> threads;
  for (int r = 0; r < local_ranks(); ++r) {
    threads.emplace_back([&, r] {
      try {
        context(r).make_current();
        fn(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        comm_->abort(cat("rank ", context(r).rank(), " failed: ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  // The root cause is a rank that failed on its own, not one the abort
  // released: those throw a Fault naming the cause (rank_barrier.cpp). So the
  // lowest rank whose error is not a Fault, whose kind sets the exit status;
  // when every error is a Fault (a watchdog or a collective mismatch report),
  // the lowest rank's.
  auto is_fault = [](const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const Fault&) {
      return true;
    } catch (...) {
      return false;
    }
  };
  for (auto& e : errors)
    if (e && !is_fault(e)) std::rethrow_exception(e);
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void TrainingSession::fill_staging(DeviceContext& ctx, int slot, const DataView& d, const std::vector<int64_t>& order,
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

}  // namespace tr

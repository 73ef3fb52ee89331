#include "framework/train/trainer.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>

#include "framework/core/log.h"
#include "framework/core/rng.h"
#include "framework/runtime/nvtx.h"
#include "framework/train/param_init.h"

namespace tr {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {

// Note [A/B double buffering] (step_loop.h): step i reads staging slot i % 2;
// while it runs, step i+1's samples are filled into the other slot. Fills
// slot 0 with step 0's samples, then `start` (its transfer), then for every
// step fills the next one's slot and runs `step(i, variant, slot, has_next)`,
// for steps first .. end - 1 (slot 0 first). Step i takes samples
// [i * batch, ...) of `data` (in `order`, or in data order when empty), as
// many as its variant's global batch.
void double_buffered(DeviceContext& ctx, const PlanSet& plans, const DataView& data, const std::vector<int64_t>& order,
                     int64_t first, int64_t end, int64_t batch, const std::function<Variant(int64_t)>& variant_of,
                     const std::function<void()>& start, const std::function<void(int64_t, Variant, int, bool)>& step) {
  auto fill = [&](int slot, int64_t i) {
    const VariantDims& d = plans.plan(variant_of(i)).dims;
    ctx.wait_transfer_done(slot);
    TrainingSession::fill_staging(ctx, slot, data, order, i * batch, d.global_batch, d.batch);
  };
  fill(0, first);
  start();
  for (int64_t i = first; i < end; ++i) {
    const int cur = static_cast<int>((i - first) % 2);
    const bool has_next = i + 1 < end;
    if (has_next) fill(1 - cur, i + 1);
    step(i, variant_of(i), cur, has_next);
  }
}

// Where the epoch's steps pause for a validation (RunOptions::val_every):
// after each step i (0-based, inside an epoch of n steps starting at run step
// `done`) with (done + i + 1) % every == 0, except the epoch's last.
std::vector<int64_t> pauses(int64_t done, int64_t n, int64_t every) {
  std::vector<int64_t> out;
  if (every <= 0) return out;
  for (int64_t i = 0; i + 1 < n; ++i)
    if ((done + i + 1) % every == 0) out.push_back(i + 1);
  return out;
}

}  // namespace

void Trainer::train_epoch_on_rank(int rank, const std::vector<int64_t>& order, bool lowres,
                                  std::vector<ValPoint>* mid_vals) {
  trace("rank ", rank, ": epoch ", epoch_, " training");
  GraphRunner& r = s_.runner(rank);
  const Variant base = lowres ? Variant::TrainLowres : Variant::TrainBase;
  const Variant last = lowres ? Variant::TrainLowresLast : Variant::TrainLast;
  const int64_t B = s_.plans().plan(Variant::TrainBase).dims.global_batch, n = s_.steps_per_epoch();
  auto variant_of = [&](int64_t i) { return (i == n - 1 && s_.last_batch() != B) ? last : base; };
  epoch_begin(r, base);
  const int64_t done = int64_t(epoch_) * n;
  std::vector<int64_t> ends = pauses(done, n, s_.options().val_every);
  ends.push_back(n);
  int64_t first = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double val_seconds = 0;  // of the validations so far
  for (const int64_t end : ends) {
    double_buffered(
        r.ctx(), s_.plans(), s_.train_data(), order, first, end, B, variant_of,
        [&] { transfer(r, variant_of(first), 0); },
        [&](int64_t, Variant v, int slot, bool has_next) {
          s_.steps(rank).train_step(v, slot, has_next, &s_.step_hook());
        });
    r.ctx().synchronize();
    if (end < n) {
      const double trained = seconds_since(t0) - val_seconds;
      const auto v0 = std::chrono::steady_clock::now();
      validate_on_rank(rank);
      ValPoint v = rank == 0 ? read_val_metrics(0, done + end) : ValPoint{};
      v.train_seconds = trained;
      v.val_seconds = seconds_since(v0);
      val_seconds += v.val_seconds;
      if (rank == 0) mid_vals->push_back(v);
    }
    first = end;
  }
}

// After VAL_RESULT_COMM every rank holds the sums over all ranks.
ValPoint Trainer::read_val_metrics(int rank, int64_t step) {
  const MemoryPlan& p = s_.plans().plan(Variant::TrainBase);
  const auto vm = read_tensor(s_.model(), p, s_.context(rank), s_.model().val_main_metrics);
  // No EMA (ema_decay 0): the EMA weights are the weights, and so are their metrics.
  const auto ve =
      s_.model().train.has_ema() ? read_tensor(s_.model(), p, s_.context(rank), s_.model().val_ema_metrics) : vm;
  ValPoint v;
  v.step = step;
  v.loss = vm[kMetricLossSum] / std::max(1.f, vm[kMetricCount]);
  v.acc = vm[kMetricCorrect] / std::max(1.f, vm[kMetricCount]);
  v.ema_loss = ve[kMetricLossSum] / std::max(1.f, ve[kMetricCount]);
  v.ema_acc = ve[kMetricCorrect] / std::max(1.f, ve[kMetricCount]);
  return v;
}

void Trainer::validate_on_rank(int rank) {
  trace("rank ", rank, ": epoch ", epoch_, " validation");
  GraphRunner& r = s_.runner(rank);
  const int64_t VB = s_.plans().plan(Variant::ValBase).dims.global_batch;
  auto variant_of = [&](int64_t i) {
    return (i == s_.val_steps() - 1 && s_.val_last() != VB) ? Variant::ValLast : Variant::ValBase;
  };
  val_begin(r, Variant::ValBase);
  double_buffered(
      r.ctx(), s_.plans(), s_.val_data(), {}, 0, s_.val_steps(), VB, variant_of,
      [&] { transfer(r, Variant::ValBase, 0); },
      [&](int64_t, Variant v, int slot, bool has_next) { val_step(r, v, slot, has_next); });
  val_end(r, Variant::ValBase);
  r.ctx().synchronize();
}

EpochStats Trainer::run_epoch() {
  TR_USER_CHECK(epoch_ < s_.options().epochs, "all ", s_.options().epochs,
                " epochs (the length of the learning-rate schedule) are done");
  EpochStats st;
  st.epoch = epoch_;
  st.lowres = epoch_ < s_.options().lowres_epochs;
  st.steps = s_.steps_per_epoch();
  std::vector<int64_t> order(static_cast<size_t>(s_.train_data().count));
  std::iota(order.begin(), order.end(), 0);
  if (s_.options().shuffle) {
    Rng rng(s_.options().seed * 1000003ull + static_cast<uint64_t>(epoch_));
    for (int64_t i = s_.train_data().count - 1; i > 0; --i)
      std::swap(order[size_t(i)], order[size_t(rng.below(uint64_t(i + 1)))]);
  }
  auto t0 = std::chrono::steady_clock::now();
  s_.for_each_rank([&](int r) {
    nvtx::Range range(nvtx::Phase::Epoch);
    train_epoch_on_rank(r, order, st.lowres, &st.mid_vals);
  });
  st.train_seconds = seconds_since(t0);
  for (const ValPoint& v : st.mid_vals) st.train_seconds -= v.val_seconds;

  const MemoryPlan& p = s_.plans().plan(Variant::TrainBase);
  double loss = 0, correct = 0, count = 0;
  for (int r = 0; r < s_.local_ranks(); ++r) {
    const auto m = read_tensor(s_.model(), p, s_.context(r), s_.model().train_metrics);
    loss += m[kMetricLossSum];
    correct += m[kMetricCorrect];
    count += m[kMetricCount];
  }
  if (World* w = s_.options().world) {  // the other processes' ranks, summed in process order
    const double mine[3] = {loss, correct, count};
    const auto all =
        w->allgather(mine, sizeof mine, "the training metrics", std::chrono::milliseconds(s_.options().watchdog_ms));
    loss = correct = count = 0;
    for (int q = 0; q < w->processes(); ++q) {
      double theirs[3];
      std::memcpy(theirs, all.data() + size_t(q) * sizeof theirs, sizeof theirs);
      loss += theirs[0];
      correct += theirs[1];
      count += theirs[2];
    }
  }
  st.train_loss = loss / std::max(1.0, count);
  st.train_acc = correct / std::max(1.0, count);
  if (s_.options().validate) {
    t0 = std::chrono::steady_clock::now();
    s_.for_each_rank([&](int r) {
      nvtx::Range range(nvtx::Phase::Validate);
      validate_on_rank(r);
    });
    st.val_seconds = seconds_since(t0);
    const ValPoint v = read_val_metrics(0, (epoch_ + 1) * st.steps);
    st.val_loss = v.loss;
    st.val_acc = v.acc;
    st.val_ema_loss = v.ema_loss;
    st.val_ema_acc = v.ema_acc;
  }
  const TrainScalars s = read_scalars(s_.plans(), s_.context(0));
  st.skipped_steps = s.skipped_steps;
  st.loss_scale = s.loss_scale;
  ++epoch_;
  return st;
}

}  // namespace tr

// The model builder: one engine for every model (docs/design.md, "From a model to a graph"). It resolves a
// layer list into a DAG, then asks each layer's plug-in for its parameters,
// forward and backward nodes, summing the gradients of tensors that feed
// several layers; the recipe graphs (AMP, NaN check, optimizer, EMA, metrics,
// collectives) come from recipe_graphs.cpp.
#include "framework/graph/model_builder.h"

#include <map>
#include <set>

#include "framework/core/error.h"
#include "framework/core/setting.h"
#include "framework/graph/grad_buckets.h"
#include "framework/graph/layer_plugin.h"
#include "framework/graph/model_registry.h"
#include "framework/graph/recipe_graphs.h"
#include "framework/ops/range/grad_norm.h"

namespace tr {
namespace {

constexpr int kNetworkInput = -1;  // an input index naming the network input

// A layer of the list, resolved: its plug-in, name, inputs and shapes.
struct Resolved {
  const LayerPlugin* plugin = nullptr;
  std::string name;
  std::vector<int> inputs;  // earlier layer indices, or kNetworkInput
  std::vector<FeatureShape> in_shapes;
  FeatureShape out_shape;
};

// One trained layer's forward tensors, kept for its backward (the tape).
struct TapeEntry {
  int layer = 0;
  std::vector<TensorId> x;
  TensorId y = kNoTensor;
};

class Builder {
 public:
  Builder(const ModelConfig& m, const TrainConfig& t, int64_t max_batch)
      : specs_(model_layers(m)), mc_(m), emitter_(out_.cg, t) {
    out_.model = m;
    out_.train = t;
    out_.max_batch = max_batch;
    out_.compute_dtype = emitter_.compute_dtype();
    TR_USER_CHECK(t.ranks >= 1, "ranks must be >= 1, got ", t.ranks);
    TR_USER_CHECK(max_batch >= 1, "batch must be >= 1");
    TR_USER_CHECK(t.schedule_len >= 1, "learning-rate schedule must have at least one entry");
    TR_USER_CHECK(t.max_grad_norm >= 0, "the gradient norm's bound (", setting("max_grad_norm"), ") is ",
                  t.max_grad_norm, "; it must be positive, or 0 for no clipping");
    TR_USER_CHECK(t.max_grad_norm == 0 || t.optimizer == OptimizerKind::AdamW, "clipping the gradient norm (",
                  setting("max_grad_norm"), ") needs the adamw ", setting("optimizer"), ", not ",
                  optimizer_name(t.optimizer));
    // Note [16-bit gradients in the optimizer]: no f32 gradient masters where nothing reads them.
    for (const LayerSpec& s : specs_) has_bn_ = has_bn_ || s.kind == LayerKind::BatchNorm;
    emitter_.set_grad_masters(!optimizer_reads_half_grads(t, has_bn_));
  }

  CompiledModel build() {
    resolve();
    make_inputs_and_state();
    for (size_t i = 0; i < specs_.size(); ++i)
      layer(i).plugin->make_params(emitter_, specs_[i], layer(i).name, layer(i).in_shapes, states_[i]);
    tie_params();
    if (out_.train.has_collectives()) buckets_ = grad_buckets(out_.cg, out_.train.bucket_bytes);
    emit_training();
    RecipeTensors rt{out_.images,        out_.labels_src,       out_.lr_table,       out_.step_metrics,
                     out_.train_metrics, out_.val_main_metrics, out_.val_ema_metrics};
    if (out_.train.max_grad_norm > 0)
      rt.grad_norm_partials = emitter_.persistent("grad_norm.partials", DType::F64, Shape{kGradNormPartials});
    // DEEP_COMM takes the last bucket: the slots below the in-backward ones.
    const int32_t deep_comm_hi = buckets_.size() > 1 ? buckets_[buckets_.size() - 2].slot_lo : INT32_MAX;
    TR_CHECK(has_bn_ == (emitter_.bn_slots() > 0), "the layer list's BatchNorm layers and the emitted ones disagree");
    emit_recipe_graphs(out_.cg, out_.train, rt, has_bn_, deep_comm_hi);
    emit_validation();
    if (out_.train.fusion) out_.fusions = fuse_graph(out_.cg, out_.train.fusion_rules);
    return std::move(out_);
  }

 private:
  Resolved& layer(size_t i) { return resolved_[i]; }
  bool is_first(size_t i) const { return specs_[i].group == ParamGroup::First; }

  // Names, inputs and shapes of every layer; every check a layer list must pass.
  void resolve() {
    const std::string model = mc_.name;
    TR_USER_CHECK(!specs_.empty(), "model ", model, " has no layers");
    TR_USER_CHECK(mc_.in_height >= 1 && mc_.in_width >= 1 && mc_.in_channels >= 1, "model ", model, ": input ",
                  mc_.in_height, "x", mc_.in_width, "x", mc_.in_channels, " is empty");
    const FeatureShape input = mc_.is_sequence() ? FeatureShape{1, 1, 1, false, mc_.seq_len}
                                                 : FeatureShape{mc_.in_height, mc_.in_width, mc_.in_channels, true};
    std::map<std::string, int> index;
    resolved_.resize(specs_.size());
    states_.resize(specs_.size());
    std::vector<bool> used(specs_.size(), false);
    bool first_done = false, fc_seen = false;
    out_.supports_lowres = true;
    for (size_t i = 0; i < specs_.size(); ++i) {
      const LayerSpec& s = specs_[i];
      Resolved& r = resolved_[i];
      r.plugin = &layer_plugin(s.kind);
      r.name = s.name.empty() ? cat("l", i, r.plugin->tag) : s.name;
      TR_USER_CHECK(r.name != kInputLayer && index.emplace(r.name, int(i)).second, "model ", model,
                    ": two layers are named '", r.name, "'");
      if (s.inputs.empty()) {
        r.inputs.push_back(i == 0 ? kNetworkInput : int(i) - 1);
      } else {
        for (const std::string& in : s.inputs) {
          if (in == kInputLayer) {
            r.inputs.push_back(kNetworkInput);
            continue;
          }
          auto it = index.find(in);
          TR_USER_CHECK(it != index.end() && it->second < int(i), "model ", model, ": layer ", r.name, " reads '", in,
                        "', which is not an earlier layer");
          r.inputs.push_back(it->second);
        }
      }
      TR_USER_CHECK(int(r.inputs.size()) == r.plugin->inputs, "model ", model, ": layer ", r.name, " (",
                    layer_kind_name(s.kind), ") reads ", r.plugin->inputs, " input(s), not ", r.inputs.size());
      for (int in : r.inputs) {
        r.in_shapes.push_back(in == kNetworkInput ? input : resolved_[size_t(in)].out_shape);
        if (in != kNetworkInput) used[size_t(in)] = true;
        // The first-layer graphs run from the input buffer alone.
        TR_USER_CHECK(!is_first(i) || in == kNetworkInput || is_first(size_t(in)), "model ", model,
                      ": first-group layer ", r.name, " reads a layer outside the first group");
      }
      TR_USER_CHECK(!is_first(i) || !first_done, "model ", model, ": the first-group layers must open the list (",
                    r.name, " comes after a deep layer)");
      if (!is_first(i)) first_done = true;
      // Note [gradient buckets]: slot order must be layout order.
      TR_USER_CHECK(s.group == ParamGroup::Fc || !fc_seen, "model ", model,
                    ": the Fc-group layers must close the list (", r.name, " comes after one)");
      fc_seen = fc_seen || s.group == ParamGroup::Fc;
      r.out_shape = r.plugin->shape(s, r.name, r.in_shapes);
      if (r.plugin->fixes_resolution && r.plugin->fixes_resolution(r.in_shapes)) out_.supports_lowres = false;
    }
    for (size_t i = 0; i + 1 < specs_.size(); ++i)
      TR_USER_CHECK(used[i], "model ", model, ": the output of layer ", resolved_[i].name, " is never read");
    // Image operations have no meaning for tokens.
    // Note [sequence warm-up]: a sequence model's "low resolution" variants
    // (TrainLowres, TrainLowresLast) are a shorter window T' < T (--seq-warmup):
    // TokenPrep takes the first T' + 1 tokens of each T + 1 window, the position
    // table its first T' rows, the loss divides by N x T', and no layer depends
    // on T otherwise. Like every variant it is captured ahead of time and lays
    // its activations out in the one arena sized for the largest variant
    // (Note [same offset in every variant]): a warm-up costs no memory.
    if (mc_.is_sequence())
      TR_USER_CHECK(!out_.train.augment.any() && !out_.train.tta_flip, "model ", model,
                    " reads tokens: no image augmentation or flip test-time augmentation");
    const FeatureShape& logits = resolved_.back().out_shape;
    TR_USER_CHECK(!logits.spatial && logits.c == mc_.classes && logits.t == mc_.seq_len, "model ", model,
                  ": the last layer (", resolved_.back().name, ") must give one logit per class (", mc_.classes, ")",
                  mc_.is_sequence() ? " for each token" : "", ", not ",
                  logits.spatial ? cat(logits.h, "x", logits.w, "x", logits.c)
                  : logits.t > 0 ? cat(logits.t, "x", logits.c)
                                 : cat(logits.c));
  }

  void make_inputs_and_state() {
    const Shape img{out_.max_batch, mc_.in_height, mc_.in_width, mc_.in_channels};
    const Shape windows{out_.max_batch, mc_.seq_len + 1};  // a sequence model's (token_prep.h)
    for (int b = 0; b < 2; ++b) {
      const char* ab = b == 0 ? "A" : "B";
      out_.images[b] = mc_.is_sequence() ? emitter_.persistent(cat("tokens_", ab), DType::I32, windows, Role::Input)
                                         : emitter_.persistent(cat("images_", ab), DType::U8, img, Role::Input);
      out_.labels_src[b] = emitter_.persistent(cat("labels_", ab), DType::I32, Shape{out_.max_batch}, Role::Input);
    }
    out_.lr_table = emitter_.persistent("lr_table", DType::F32, Shape{out_.train.schedule_len});
    out_.step_metrics = emitter_.persistent("metrics.step", DType::F32, Shape{kMetricSlots});
    out_.train_metrics = emitter_.persistent("metrics.train", DType::F32, Shape{kMetricSlots});
    out_.val_main_metrics = emitter_.persistent("metrics.val_main", DType::F32, Shape{kMetricSlots});
    out_.val_ema_metrics = emitter_.persistent("metrics.val_ema", DType::F32, Shape{kMetricSlots});
    val_step_main_ = emitter_.persistent("metrics.val_step_main", DType::F32, Shape{kMetricSlots});
    val_step_ema_ = emitter_.persistent("metrics.val_step_ema", DType::F32, Shape{kMetricSlots});
  }

  // InputPrep of the training graphs (augmented) or of the validation graphs
  // (mirrored copies under flip-TTA).
  OpAttrs prep_attrs(bool training) const {
    OpAttrs a;
    for (int c = 0; c < 4; ++c) {
      a.norm_mean[c] = mc_.norm_mean[c];
      a.norm_std[c] = mc_.norm_std[c];
    }
    const AugmentConfig& aug = out_.train.augment;
    if (training) {
      a.aug_flip = aug.flip;
      a.aug_translate = aug.translate;
      a.aug_cutout = aug.cutout;
      a.aug_seed = aug.seed;
    } else {
      a.tta_flip = out_.train.tta_flip;
    }
    return a;
  }

  // The input graph's first node: InputPrep of the images (or TokenPrep of a
  // sequence model's windows, which also writes the batch's order by id,
  // `order`) from buffer b into x and labels.
  Node input_node(int b, TensorId x, TensorId labels, TensorId order, const std::string& label, bool training) const {
    if (mc_.is_sequence()) return compute(OpKind::TokenPrep, {out_.images[b]}, {x, labels, order}, label);
    return compute(OpKind::InputPrep, {out_.images[b], out_.labels_src[b]}, {x, labels}, label, prep_attrs(training));
  }

  // Note [shared parameters]
  // A tied head (LayerSpec::tie) reads its embedding's token table: the
  // table's Param goes first in the head's params, so both layers read the
  // same weights in every pass. Gradients are overwritten, never accumulated
  // (Note [gradients are overwritten]), so in the backward each layer writes
  // its part of a shared gradient into a tensor of its own ("<layer>.dshared"),
  // and after the last of them one Add writes their sum into the gradient.
  void tie_params() {
    for (size_t i = 0; i < specs_.size(); ++i) {
      const LayerSpec& s = specs_[i];
      if (s.tie.empty()) continue;
      const std::string& name = layer(i).name;
      TR_USER_CHECK(s.kind == LayerKind::Fc, "model ", mc_.name, ": layer ", name,
                    " ties its weights but only an fc can");
      size_t j = 0;
      while (j < i && layer(j).name != s.tie) ++j;
      TR_USER_CHECK(j < i && specs_[j].kind == LayerKind::Embedding, "model ", mc_.name, ": layer ", name,
                    " ties its weights to '", s.tie, "', which is not an earlier embedding");
      TR_USER_CHECK(specs_[j].vocab == s.channels && specs_[j].channels == layer(i).in_shapes[0].c, "model ", mc_.name,
                    ": layer ", name, " (", layer(i).in_shapes[0].c, " -> ", s.channels, ") cannot use ", s.tie, "'s ",
                    specs_[j].vocab, "x", specs_[j].channels, " table as its weights");
      states_[i].params.insert(states_[i].params.begin(), states_[j].params[0]);
    }
    std::map<TensorId, int> users;
    for (const LayerState& st : states_)
      for (const Param& p : st.params) ++users[p.grad];
    for (const auto& [grad, n] : users)
      if (n > 1) shared_grads_[grad] = {n, {}};
  }

  // The state layer i's backward writes into: its shared gradients swapped for
  // parts of its own (Note [shared parameters]).
  LayerState backward_state(size_t i) {
    LayerState st = states_[i];
    for (Param& p : st.params)
      if (shared_grads_.count(p.grad)) p.grad = emitter_.activation(cat(layer(i).name, ".dshared"));
    return st;
  }

  // After layer i's backward: each shared gradient's part, and the sum once every user has written its part.
  void finish_shared_grads(size_t i, const LayerState& written, GraphId g) {
    for (size_t k = 0; k < written.params.size(); ++k) {
      const auto it = shared_grads_.find(states_[i].params[k].grad);
      if (it == shared_grads_.end()) continue;
      SharedGrad& sg = it->second;
      sg.parts.push_back(written.params[k].grad);
      if (int(sg.parts.size()) < sg.users) continue;
      TR_CHECK(sg.users == 2, "a parameter shared by ", sg.users, " layers");
      OpAttrs a;
      a.relu = false;
      emitter_.emit(
          g, compute(OpKind::Add, {sg.parts[0], sg.parts[1]}, {it->first}, cat(layer(i).name, ".dshared_sum"), a));
    }
  }

  // One forward pass over the whole list from x0; records the tape for training.
  TensorId forward_pass(TensorId x0, Pass pass, const std::string& suffix, const std::vector<GraphId>& first_graphs,
                        const std::vector<GraphId>& deep_graphs) {
    std::vector<TensorId> outs(specs_.size(), kNoTensor);
    for (size_t i = 0; i < specs_.size(); ++i) {
      Resolved& r = layer(i);
      std::vector<TensorId> xs;
      for (int in : r.inputs) xs.push_back(in == kNetworkInput ? x0 : outs[size_t(in)]);
      const std::string name = r.name + suffix;
      const LayerFwd f{specs_[i], name, states_[i], r.in_shapes, xs, pass, is_first(i) ? first_graphs : deep_graphs};
      outs[i] = r.plugin->forward(emitter_, f);
      if (pass == Pass::Train) tape_.push_back({int(i), xs, outs[i]});
    }
    return outs.back();
  }

  void emit_training() {
    const std::vector<GraphId> fwd_ab = {GraphId::FIRST_LAYER_FWD_A, GraphId::FIRST_LAYER_FWD_B};
    const bool seq = mc_.is_sequence();
    const TensorId x0 = seq ? emitter_.activation("input.x", DType::I32) : emitter_.activation("input.x");
    const TensorId labels = emitter_.activation("input.labels", DType::I32);
    const TensorId order = seq ? emitter_.activation("input.order", DType::I32) : kNoTensor;
    emitter_.emit(GraphId::FIRST_LAYER_FWD_A, input_node(0, x0, labels, order, "input_prep.A", true));
    emitter_.emit(GraphId::FIRST_LAYER_FWD_B, input_node(1, x0, labels, order, "input_prep.B", true));
    const TensorId logits = forward_pass(x0, Pass::Train, "", fwd_ab, {GraphId::DEEP_FWD_BWD});

    OpAttrs la;
    la.label_smoothing = out_.train.label_smoothing;
    la.with_grad = true;
    const TensorId dlogits = emitter_.activation("loss.dlogits");
    emitter_.emit(GraphId::DEEP_FWD_BWD,
                  compute(OpKind::SoftmaxXent, {logits, labels}, {dlogits, out_.step_metrics}, "loss", la));
    backward_pass(x0, logits, dlogits);
  }

  // Reverse order over the tape: each layer's output gradient is complete when
  // its turn comes (every reader comes later in the list). Note [gradient fan-in]:
  // a tensor read by several layers gets the sum of their gradients, one Add
  // node per extra reader, in the graph of the reader that completes it.
  void backward_pass(TensorId x0, TensorId logits, TensorId dlogits) {
    std::map<TensorId, TensorId> grad_of = {{logits, dlogits}};
    std::map<TensorId, int> sums;  // extra readers summed so far, per tensor
    size_t next_bucket = 0;        // the next in-backward bucket to issue
    for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) {
      const size_t i = size_t(it->layer);
      Resolved& r = layer(i);
      const GraphId g = is_first(i) ? GraphId::FIRST_LAYER_BWD : GraphId::DEEP_FWD_BWD;
      const auto dy = grad_of.find(it->y);
      TR_CHECK(dy != grad_of.end(), "layer ", r.name, ": no gradient reached its output");
      std::vector<bool> need;
      for (TensorId x : it->x) need.push_back(x != x0);
      const LayerState st = backward_state(i);
      const LayerBwd b{specs_[i], r.name, st, r.in_shapes, it->x, it->y, dy->second, need, g};
      const std::vector<TensorId> dx = r.plugin->backward(emitter_, b);
      finish_shared_grads(i, st, g);
      TR_CHECK(dx.size() == it->x.size(), "layer ", r.name, ": backward gave ", dx.size(), " gradients");
      for (size_t k = 0; k < dx.size(); ++k) {
        if (!need[k]) continue;
        TR_CHECK(dx[k] != kNoTensor, "layer ", r.name, ": no gradient for input ", k);
        auto [slot, fresh] = grad_of.emplace(it->x[k], dx[k]);
        if (fresh) continue;
        const int n = ++sums[it->x[k]];
        const std::string producer = resolved_[size_t(r.inputs[k])].name;
        const TensorId sum = emitter_.activation(cat(producer, ".dsum", n));
        OpAttrs a;
        a.relu = false;
        emitter_.emit(g, compute(OpKind::Add, {slot->second, dx[k]}, {sum}, cat(producer, ".dsum", n), a));
        slot->second = sum;
      }
      // Every bucket but the last, once its lowest slot's gradient exists.
      while (next_bucket + 1 < buckets_.size() && owns_slot(i, buckets_[next_bucket].slot_lo)) {
        emit_bucket(next_bucket);
        ++next_bucket;
      }
    }
    TR_CHECK(buckets_.empty() || next_bucket + 1 == buckets_.size(), "gradient buckets: ", next_bucket, " of ",
             buckets_.size() - 1, " issued during the backward");
  }

  bool owns_slot(size_t layer, int32_t slot) const {
    const LayerState& s = states_[layer];
    auto has = [&](const Param& p) { return out_.cg.tensor(p.master).slot == slot; };
    for (const Param& p : s.params)
      if (has(p)) return true;
    return s.has_bn && (has(s.bn.gamma) || has(s.bn.beta));
  }

  // Note [gradient buckets]: AMP cast and all-reduce of bucket k on UPDATE,
  // beside the rest of the backward.
  void emit_bucket(size_t k) {
    const GradBucket& b = buckets_[k];
    const Role grads = out_.train.amp ? Role::GradMaster : Role::Grad;
    if (out_.train.amp) {
      Node cast = range(RangeOp::Cast,
                        {RangeRef::slots(Role::Grad, kDeepGroups, b.slot_lo, b.slot_hi),
                         RangeRef::slots(Role::GradMaster, kDeepGroups, b.slot_lo, b.slot_hi)},
                        cat("bucket", k, ".cast"));
      cast.stream = StreamKind::UPDATE;
      emitter_.emit(GraphId::DEEP_FWD_BWD, std::move(cast));
    }
    Node ar = range(RangeOp::AllReduceSum, {RangeRef::slots(grads, kDeepGroups, b.slot_lo, b.slot_hi)},
                    cat("bucket", k, ".allreduce"));
    ar.stream = StreamKind::UPDATE;
    emitter_.emit(GraphId::DEEP_FWD_BWD, std::move(ar));
  }

  // Flip-TTA: the logits of the 2N images -> the mean of each pair, [N,M].
  TensorId tta_join(TensorId logits2, const std::string& name, const std::vector<GraphId>& gs) {
    if (!out_.train.tta_flip) return logits2;
    const TensorId y = emitter_.activation(name);
    emitter_.emit(gs, compute(OpKind::TtaMean, {logits2}, {y}, name));
    return y;
  }

  void emit_validation() {
    for (size_t i = 0; i < specs_.size(); ++i)
      if (layer(i).plugin->before_inference) layer(i).plugin->before_inference(emitter_, layer(i).name, states_[i]);
    const bool seq = mc_.is_sequence();
    const TensorId xv = seq ? emitter_.activation("val.x", DType::I32) : emitter_.activation("val.x");
    const TensorId lv = emitter_.activation("val.labels", DType::I32);
    const TensorId ov = seq ? emitter_.activation("val.order", DType::I32) : kNoTensor;
    const std::vector<GraphId> main_gs = {GraphId::INF_MAIN_A, GraphId::INF_MAIN_B};
    for (int b = 0; b < 2; ++b)
      emitter_.emit(main_gs[size_t(b)],
                    input_node(b, xv, lv, ov, b == 0 ? "val.input_prep.A" : "val.input_prep.B", false));
    OpAttrs la;
    la.label_smoothing = out_.train.label_smoothing;
    la.with_grad = false;
    TensorId x = tta_join(forward_pass(xv, Pass::InferMain, ".inf", main_gs, main_gs), "val.tta_mean", main_gs);
    emitter_.emit(main_gs, compute(OpKind::SoftmaxXent, {x, lv}, {val_step_main_}, "val.loss", la));
    emitter_.emit(main_gs, range(RangeOp::Accumulate,
                                 {RangeRef::of(out_.val_main_metrics), RangeRef::of(val_step_main_)}, "val.accum"));
    if (out_.train.has_ema()) {  // without one, INF_EMA is empty and the trainer reports the weights' metrics
      x = tta_join(forward_pass(xv, Pass::InferEma, ".ema", {GraphId::INF_EMA}, {GraphId::INF_EMA}), "val_ema.tta_mean",
                   {GraphId::INF_EMA});
      emitter_.emit(GraphId::INF_EMA, compute(OpKind::SoftmaxXent, {x, lv}, {val_step_ema_}, "val_ema.loss", la));
      emitter_.emit(GraphId::INF_EMA,
                    range(RangeOp::Accumulate, {RangeRef::of(out_.val_ema_metrics), RangeRef::of(val_step_ema_)},
                          "val_ema.accum"));
    }
    if (out_.train.has_collectives())
      emitter_.emit(GraphId::VAL_RESULT_COMM,
                    range(RangeOp::AllReduceSum,
                          {RangeRef::of(out_.val_main_metrics), RangeRef::of(out_.val_ema_metrics)}, "val_allreduce"));
  }

  std::vector<LayerSpec> specs_;
  ModelConfig mc_;
  CompiledModel out_;  // before emitter_, which holds a reference to out_.cg
  LayerEmitter emitter_;
  bool has_bn_ = false;  // a BatchNorm layer in the list
  std::vector<Resolved> resolved_;
  std::vector<LayerState> states_;
  std::vector<TapeEntry> tape_;
  std::vector<GradBucket> buckets_;  // Note [gradient buckets]; empty without collectives
  struct SharedGrad {
    int users = 0;
    std::vector<TensorId> parts;  // written so far, in backward order
  };
  std::map<TensorId, SharedGrad> shared_grads_;  // Note [shared parameters]
  TensorId val_step_main_ = kNoTensor, val_step_ema_ = kNoTensor;
};

}  // namespace

CompiledModel build_model(const ModelConfig& m, const TrainConfig& t, int64_t max_batch) {
  return Builder(m, t, max_batch).build();
}

}  // namespace tr

// GPU input preparation and convolutions (cuDNN, the small-C kernels and the
// tensor-core filter gradient; 1x1 to 7x7 windows, strides 1 to 3, the ResNet
// shapes) against the CPU reference; the conv plan cache and its keys. The OpsGpu tests skip without a CUDA device; the
// OpsConvKey ones need none.
#include <nlohmann/json.hpp>
#include "framework/ops/conv_plans/conv_engine_cuda.h"
#include "framework/ops/conv_plans/conv_filter_tc_cuda.h"
#include "harness/lib/cli/conv_plans_file.h"
#include "tests/ops_gpu_fixture.h"

namespace tr {
namespace {

using namespace gpu_test;

// ================================================================ InputPrep

TEST_F(OpsGpu, InputPrepMatchesCpu) {
  Rng rng(1);
  for (DType t : {F32, F16})
    for (int64_t C : {1, 3})
      for (int64_t hw : {28, 20, 14}) {
        Case k;
        k.name = cat(tname("InputPrep", t), " C=", C, " h=", hw);
        k.variant = {6, 12, hw, hw};
        for (int ch = 0; ch < int(C); ++ch) {
          k.attrs.norm_mean[ch] = 0.2f + 0.1f * ch;
          k.attrs.norm_std[ch] = 0.3f + 0.05f * ch;
        }
        HostTensor img(DType::U8, {8, 28, 28, C});
        for (int64_t i = 0; i < img.numel(); ++i) img.set(i, double(rng.below(256)));
        HostTensor lab(DType::I32, {8});
        for (int64_t i = 0; i < 8; ++i) lab.set(i, double(rng.below(10)));
        k.in = {img, lab};
        k.out = {HostTensor(t, {6, hw, hw, C}), HostTensor(DType::I32, {6})};
        k.tol = {0.0, 0.0};  // same float formula: same bits
        check(input_prep_cpu, input_prep_cuda, k);
      }
}

// Augmented (flip, translate, cutout) and flip-TTA preparation: the CPU and
// CUDA kernels make the same integer decisions (Note [augmentation]), so the
// values match bit for bit, at several batch counters and ranks.
TEST_F(OpsGpu, InputPrepAugmentationMatchesCpu) {
  Rng rng(2);
  int cases = 0;
  for (DType t : {F32, F16})
    for (int32_t batches : {0, 1, 977})
      for (int rank : {0, 3})
        for (bool tta : {false, true}) {
          Case k;
          k.name = cat(tname("InputPrep+aug", t), " batches=", batches, " rank=", rank, tta ? " tta" : "");
          k.variant = {16, 64, 28, 28};
          k.batches = batches;
          k.rank = rank;
          k.attrs.norm_mean[0] = 0.286f;
          k.attrs.norm_std[0] = 0.353f;
          k.attrs.aug_flip = !tta;
          k.attrs.aug_translate = tta ? 0 : 3;
          k.attrs.aug_cutout = tta ? 0 : 9;
          k.attrs.aug_seed = 0x123456789abcull;
          k.attrs.tta_flip = tta;
          HostTensor img(DType::U8, {16, 28, 28, 1});
          for (int64_t i = 0; i < img.numel(); ++i) img.set(i, double(rng.below(256)));
          HostTensor lab(DType::I32, {16});
          for (int64_t i = 0; i < 16; ++i) lab.set(i, double(rng.below(10)));
          k.in = {img, lab};
          k.out = {HostTensor(t, {tta ? 32 : 16, 28, 28, 1}), HostTensor(DType::I32, {16})};
          k.tol = {0.0, 0.0};  // the same integer decisions and float formula: the same bits
          check(input_prep_cpu, input_prep_cuda, k);
          ++cases;
        }
  std::printf("[ gpu vs cpu ] InputPrep with augmentation / flip-TTA: %d cases, bit for bit\n", cases);
}

TEST_F(OpsGpu, TtaMeanMatchesCpu) {
  Rng rng(3);
  for (DType t : {F32, F16}) {
    Case k;
    k.name = tname("TtaMean", t);
    k.in = {test::random_tensor(t, {2 * 37, 10}, rng, -4, 4)};
    k.out = {HostTensor(t, {37, 10})};
    k.tol = {0.0};  // (a + b) / 2 by the same float formula: the same bits
    check(tta_mean_cpu, tta_mean_cuda, k);
  }
}

// ================================================================ conv

// x[N,H,W,C] through an R x R window, stride, pad -> K channels.
struct ConvShape {
  int64_t n, h, w, c, k;
  int r = 3, stride = 1, pad = 1;
  int64_t ho() const { return conv_out_size(h, r, stride, pad); }
  int64_t wo() const { return conv_out_size(w, r, stride, pad); }
  OpAttrs attrs() const {
    OpAttrs a;
    a.kernel = r;
    a.stride = stride;
    a.pad = pad;
    return a;
  }
};
// 3x3 / stride 1 / pad 1 with C <= 4: forward and filter gradients run the
// direct small-C kernels (Note [small-C convolutions]; in f16 with K a multiple
// of 16 up to 64, on the tensor cores); every other row cuDNN.
const ConvShape kConvShapes[] = {
    {4, 8, 8, 16, 32},
    {3, 7, 5, 1, 32},
    {2, 6, 9, 3, 8},
    {2, 14, 14, 64, 64},
    {2, 5, 4, 4, 12},
    {1, 3, 3, 2, 5},
    {64, 28, 28, 1, 32},
    {8, 12, 12, 3, 64},
    {2, 6, 7, 2, 6},
    {2, 5, 6, 1, 6},  // filter gradient: 2 and 4 channels per thread, and K % 4 != 0 for C = 1
    // f16 with K = 16..64 runs on the tensor cores (conv_small_tc_cuda.h): every C and
    // K it takes, pixel counts that leave a partial 16-pixel tile, tiles across rows
    {2, 9, 7, 2, 16},
    {3, 5, 11, 4, 48},
    {2, 10, 13, 3, 64},
    {1, 1, 1, 3, 32},
    // ResNet shapes at small batch
    {2, 32, 32, 3, 64, 7, 2, 3},    // stem: 7x7 / stride 2, C = 3 (cuDNN, not small-C)
    {2, 13, 11, 3, 4, 7, 2, 3},     // stem window on an odd, non-square image
    {2, 16, 16, 64, 128, 1, 2, 0},  // projection shortcut: 1x1 / stride 2
    {2, 15, 15, 32, 16, 1, 2, 0},   // ... on an odd side
    {2, 16, 16, 32, 32, 3, 2, 1},   // 3x3 / stride 2 (first conv of a downsampling block)
    {2, 7, 8, 16, 8, 3, 2, 1},      // ... odd and even sides
    {2, 8, 8, 64, 16, 1, 1, 0},     // bottleneck 1x1 reduce
    {2, 8, 8, 16, 64, 1, 1, 0},     // bottleneck 1x1 expand
    // small C in other geometries: cuDNN
    {2, 8, 8, 1, 8, 3, 2, 1},
    {2, 6, 5, 2, 3, 3, 1, 0},
    {1, 9, 10, 4, 8, 5, 3, 2},
};

// f32: cuDNN may pick a Winograd or FFT algorithm whose transforms round in other places (ops_gpu_fixture.h),
// so 10x tol_for; measured below 1e-5 on an H200 (check() prints any error above tol / 10). f16: tol_for's.
double conv_tol(DType t) { return t == F16 ? 1e-3 : 1e-4; }

std::string conv_name(const char* op, DType t, const ConvShape& s) {
  return cat(tname(op, t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k, " ", s.r, "x", s.r, "/s", s.stride,
             "/p", s.pad);
}

TEST_F(OpsGpu, ConvFwdMatchesCpu) {
  Rng rng(2);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = conv_name("ConvFwd", t, s);
      k.attrs = s.attrs();
      k.in = {rnd(t, {s.n, s.h, s.w, s.c}, rng), rnd(t, {s.k, s.r, s.r, s.c}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.n, s.ho(), s.wo(), s.k})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::ConvFwd, k);
      check(conv_fwd_cpu, conv_fwd_cuda, k);
    }
}

// x (the third input) is shape only: it is uploaded as NaN, so a read would show.
TEST_F(OpsGpu, ConvBwdDataMatchesCpu) {
  Rng rng(3);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = conv_name("ConvBwdData", t, s);
      k.attrs = s.attrs();
      HostTensor x(t, {s.n, s.h, s.w, s.c});
      x.poison();
      k.in = {rnd(t, {s.n, s.ho(), s.wo(), s.k}, rng), rnd(t, {s.k, s.r, s.r, s.c}, rng, -0.3, 0.3), x};
      k.out = {HostTensor(t, {s.n, s.h, s.w, s.c})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::ConvBwdData, k);
      check(conv_bwd_data_cpu, conv_bwd_data_cuda, k);
    }
}

TEST_F(OpsGpu, ConvBwdFilterMatchesCpu) {
  Rng rng(4);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = conv_name("ConvBwdFilter", t, s);
      k.attrs = s.attrs();
      k.in = {rnd(t, {s.n, s.h, s.w, s.c}, rng), rnd(t, {s.n, s.ho(), s.wo(), s.k}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.k, s.r, s.r, s.c})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::ConvBwdFilter, k);
      check(conv_bwd_filter_cpu, conv_bwd_filter_cuda, k);
    }
}

// The f16 3x3 filter gradient with C = 32 -> K = 64 runs our tensor-core kernel
// (Note [3x3 filter gradient on tensor cores]); the same cases through cuDNN
// (Options::tc_filter = false) match the CPU too. Shapes: one split (straight
// to f16), many splits (partials added in order), sub-tiles that span images
// (3x3 and 7x7 images), the widest row (64), odd and non-square sides.
TEST_F(OpsGpu, ConvBwdFilterTensorCoreMatchesCpu) {
  const ConvShape shapes[] = {{2, 8, 8, 32, 64},  {8, 28, 28, 32, 64}, {16, 7, 7, 32, 64},  {24, 3, 3, 32, 64},
                              {3, 5, 64, 32, 64}, {5, 9, 11, 32, 64},  {4, 14, 14, 32, 64}, {64, 28, 28, 32, 64}};
  Rng rng(7);
  int ours = 0;
  for (bool tc : {true, false}) {
    ConvPlanCache::Options o;
    o.tc_filter = tc;
    plans_ = std::make_unique<ConvPlanCache>(o);
    gh_.conv_plans = plans_.get();
    for (const ConvShape& s : shapes) {
      Case k;
      k.name = cat(conv_name("ConvBwdFilter", F16, s), tc ? " (tensor-core kernel)" : " (cuDNN)");
      k.attrs = s.attrs();
      k.in = {rnd(F16, {s.n, s.h, s.w, s.c}, rng), rnd(F16, {s.n, s.ho(), s.wo(), s.k}, rng, -0.3, 0.3)};
      k.out = {HostTensor(F16, {s.k, s.r, s.r, s.c})};
      k.tol = {conv_tol(F16)};
      prepare_conv(OpKind::ConvBwdFilter, k);
      const ConvPlan& p =
          plans_->lookup(conv_key(OpKind::ConvBwdFilter, {k.in[0].shape(), k.in[1].shape()}, k.attrs, F16));
      EXPECT_EQ(p.impl == ConvImpl::FilterTc, tc) << p.describe();
      ours += p.impl == ConvImpl::FilterTc;
      check(conv_bwd_filter_cpu, conv_bwd_filter_cuda, k);
    }
  }
  std::printf(
      "[ gpu vs cpu ] ConvBwdFilter f16 3x3 32->64: %d shapes on the tensor-core kernel, the same through cuDNN\n",
      ours);
}

// The kernel itself, called directly, at shapes the plans leave to cuDNN
// (filter_tc_beats_cudnn): several (k, c) tiles per filter.
void filter_tc_direct(const OpCall& c) {
  const GpuHandles& gh = *static_cast<const GpuHandles*>(c.env->gpu);
  const ConvKey key = conv_key(OpKind::ConvBwdFilter, {c.in[0].shape, c.in[1].shape}, *c.attrs, F16);
  ASSERT_LE(filter_tc_workspace_bytes(key, gh.sm_count), gh.workspace_bytes);
  prepare_filter_tc_device();  // what the plans do for the shapes they give it
  conv_bwd_filter_tc(c.env, gh.sm_count, c.in[0].data, c.in[1].data, c.out[0].data, gh.workspace, key);
}

TEST_F(OpsGpu, ConvBwdFilterTensorCoreKernelTakesWiderShapes) {
  const ConvShape shapes[] = {{4, 14, 14, 64, 128}, {16, 7, 7, 128, 64}, {24, 3, 3, 64, 64}, {5, 9, 11, 32, 192}};
  Rng rng(8);
  for (const ConvShape& s : shapes) {
    Case k;
    k.name = cat(conv_name("ConvBwdFilter", F16, s), " (tensor-core kernel, direct)");
    k.attrs = s.attrs();
    k.in = {rnd(F16, {s.n, s.h, s.w, s.c}, rng), rnd(F16, {s.n, s.ho(), s.wo(), s.k}, rng, -0.3, 0.3)};
    k.out = {HostTensor(F16, {s.k, s.r, s.r, s.c})};
    k.tol = {conv_tol(F16)};
    const ConvKey key = conv_key(OpKind::ConvBwdFilter, {k.in[0].shape(), k.in[1].shape()}, k.attrs, F16);
    ASSERT_TRUE(uses_filter_tc(key)) << key.str();
    EXPECT_FALSE(filter_tc_beats_cudnn(key)) << key.str();
    check(conv_bwd_filter_cpu, filter_tc_direct, k);
  }
}

TEST_F(OpsGpu, ConvPlanCacheLookupNeedsPrepare) {
  const ConvShape s{2, 8, 8, 16, 32};
  const ConvKey key = conv_key(OpKind::ConvFwd, {Shape{2, 8, 8, 16}, Shape{32, 3, 3, 16}}, s.attrs(), F16);
  EXPECT_FALSE(plans_->contains(key));
  EXPECT_THROW(plans_->lookup(key), Error);
  EXPECT_EQ(plans_->max_workspace_bytes(), 0u);
  const ConvPlan& p = plans_->prepare(gh_, key);
  EXPECT_EQ(&plans_->prepare(gh_, key), &p);  // idempotent
  EXPECT_EQ(&plans_->lookup(key), &p);
  EXPECT_EQ(plans_->size(), 1u);
  EXPECT_GE(plans_->max_workspace_bytes(), p.workspace_bytes);
  std::printf("  %s\n", p.describe().c_str());
  // A conv launch with an unprepared shape throws instead of selecting an algorithm.
  Rng rng(5);
  Case k;
  k.attrs = s.attrs();
  k.in = {rnd(F32, {2, 8, 8, 16}, rng), rnd(F32, {32, 3, 3, 16}, rng)};
  k.out = {HostTensor(F32, {2, 8, 8, 32})};
  DevTensor x(k.in[0]), w(k.in[1]), y(k.out[0]);
  EXPECT_THROW(call(conv_fwd_cuda, {x.ref(), w.ref()}, {y.ref()}, k.attrs, k.variant), Error);
  // The f16 plan is prepared, but a stride-2 launch of the same tensors is another key.
  HostTensor y2h(F16, {2, 4, 4, 32});
  DevTensor x16(k.in[0].to(F16)), w16(k.in[1].to(F16)), y2(y2h);
  OpAttrs a2 = k.attrs;
  a2.stride = 2;
  EXPECT_THROW(call(conv_fwd_cuda, {x16.ref(), w16.ref()}, {y2.ref()}, a2, k.variant), Error);
}

// One convolution of shape s in direction `kind`, dtype t, with random inputs.
Case conv_case(OpKind kind, DType t, const ConvShape& s, Rng& rng) {
  Case k;
  k.attrs = s.attrs();
  k.tol = {conv_tol(t)};
  const Shape x{s.n, s.h, s.w, s.c}, w{s.k, s.r, s.r, s.c}, y{s.n, s.ho(), s.wo(), s.k};
  if (kind == OpKind::ConvFwd) {
    k.name = conv_name("ConvFwd", t, s);
    k.in = {rnd(t, x, rng), rnd(t, w, rng, -0.3, 0.3)};
    k.out = {HostTensor(t, y)};
  } else if (kind == OpKind::ConvBwdData) {
    k.name = conv_name("ConvBwdData", t, s);
    HostTensor shape_only(t, x);
    shape_only.poison();
    k.in = {rnd(t, y, rng), rnd(t, w, rng, -0.3, 0.3), shape_only};
    k.out = {HostTensor(t, x)};
  } else {
    k.name = conv_name("ConvBwdFilter", t, s);
    k.in = {rnd(t, x, rng), rnd(t, y, rng, -0.3, 0.3)};
    k.out = {HostTensor(t, w)};
  }
  return k;
}

struct ConvFns {
  OpKind kind;
  OpFn cpu, gpu;
};
const ConvFns kConvDirs[] = {{OpKind::ConvFwd, conv_fwd_cpu, conv_fwd_cuda},
                             {OpKind::ConvBwdData, conv_bwd_data_cpu, conv_bwd_data_cuda},
                             {OpKind::ConvBwdFilter, conv_bwd_filter_cpu, conv_bwd_filter_cuda}};

// Benchmark mode (Note [timed convolution plans]): whichever plan the timing
// keeps, heuristic or engine config, matches the CPU and repeats to the bit.
TEST_F(OpsGpu, ConvPlanCacheBenchmarkModeAlsoMatches) {
  ConvPlanCache::Options o;
  o.benchmark = true;
  plans_ = std::make_unique<ConvPlanCache>(o);
  gh_.conv_plans = plans_.get();
  Rng rng(6);
  const ConvShape shapes[] = {{8, 14, 14, 32, 48}, {4, 16, 16, 64, 128, 1, 2, 0}};  // every key on cuDNN
  for (DType t : {F32, F16})
    for (const ConvShape& s : shapes)
      for (const ConvFns& f : kConvDirs) {
        Case k = conv_case(f.kind, t, s, rng);
        k.name += " (benchmark)";
        prepare_conv(f.kind, k);
        std::vector<Shape> in;
        for (const HostTensor& x : k.in) in.push_back(x.shape());
        const ConvPlan& p = plans_->lookup(conv_key(f.kind, in.data(), int(in.size()), k.attrs, t));
        EXPECT_GE(p.time_ms, 0) << p.describe();            // -1 marks a plan never timed
        EXPECT_GE(p.legacy_ms, p.time_ms) << p.describe();  // the kept plan is the fastest, legacy among them
        std::printf("[ timed plans ] %s\n", p.describe().c_str());
        check(f.cpu, f.gpu, k);
      }
}

// Note [convolution plan books]: a cache that replays the book a timed cache
// recorded (through the file's text) keeps the same plan for every key and
// times nothing; a choice that does not fit this GPU and cuDNN, or a key the
// book does not hold, is a UserError.
TEST_F(OpsGpu, ConvPlanBookReplaysTheTimedChoices) {
  const ConvShape shapes[] = {{8, 14, 14, 32, 48}, {4, 16, 16, 64, 128, 1, 2, 0}};  // every key on cuDNN
  auto recorded = std::make_shared<ConvPlanBook>(ConvPlanUse::Record, "recorded.json");
  ConvPlanCache::Options timed_opt;
  timed_opt.benchmark = true;
  timed_opt.book = recorded;
  ConvPlanCache timed(timed_opt);
  std::vector<ConvKey> keys;
  for (DType t : {F32, F16})
    for (const ConvShape& s : shapes)
      for (const ConvFns& f : kConvDirs) {
        const Shape x{s.n, s.h, s.w, s.c}, w{s.k, s.r, s.r, s.c}, y{s.n, s.ho(), s.wo(), s.k};
        const ConvKey key = f.kind == OpKind::ConvFwd       ? conv_key(f.kind, {x, w}, s.attrs(), t)
                            : f.kind == OpKind::ConvBwdData ? conv_key(f.kind, {y, w, x}, s.attrs(), t)
                                                            : conv_key(f.kind, {x, y}, s.attrs(), t);
        keys.push_back(key);
        timed.prepare(gh_, key);
      }
  ASSERT_EQ(recorded->size(), keys.size());
  const std::string text = conv_plans_json(*recorded);

  auto replay_book = [&](const std::string& t) {
    auto b = std::make_shared<ConvPlanBook>(ConvPlanUse::Replay, "replayed.json");
    read_conv_plans_json(t, *b);
    return b;
  };
  auto replay_cache = [](std::shared_ptr<ConvPlanBook> b) {
    ConvPlanCache::Options o;
    o.book = std::move(b);
    return std::make_unique<ConvPlanCache>(o);
  };
  auto replayed_book = replay_book(text);
  auto replayed = replay_cache(replayed_book);
  int engines = 0;
  for (const ConvKey& key : keys) {
    const ConvPlan& a = timed.lookup(key);
    const ConvPlan& b = replayed->prepare(gh_, key);
    EXPECT_EQ(a.impl, b.impl) << key.str();
    EXPECT_EQ(a.algo, b.algo) << key.str();
    EXPECT_EQ(a.workspace_bytes, b.workspace_bytes) << key.str();
    EXPECT_EQ(a.time_ms, b.time_ms) << key.str() << ": the replay shows the recorded time";
    if (a.impl == ConvImpl::CudnnEngine) {
      ++engines;
      ASSERT_TRUE(b.engine != nullptr) << key.str();
      EXPECT_EQ(a.engine->engine, b.engine->engine) << key.str();
      EXPECT_EQ(a.engine->candidate, b.engine->candidate) << key.str();
    }
  }
  EXPECT_EQ(replayed_book->digest(), recorded->digest());
  EXPECT_EQ(replayed_book->unsaved(), 0u) << "a replay records nothing";

  // A key the book does not hold.
  ConvKey other = keys[0];
  other.n += 1;
  try {
    replayed->prepare(gh_, other);
    ADD_FAILURE() << "replayed a key that was never timed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("replayed.json has no plan for " + other.str()), std::string::npos)
        << e.what();
  }
  // Choices from another setup: another heuristic algorithm, another engine
  // at the candidate's place, another cuDNN.
  nlohmann::json j = nlohmann::json::parse(text);
  for (auto& e : j["plans"]) e["legacy_algo"] = e["legacy_algo"].get<int>() == 0 ? 1 : 0;
  EXPECT_THROW(replay_cache(replay_book(j.dump()))->prepare(gh_, keys[0]), UserError);
  j = nlohmann::json::parse(text);
  size_t with_engine = j["plans"].size();
  for (size_t i = 0; i < j["plans"].size(); ++i)
    if (j["plans"][i]["candidate"].get<int>() >= 0) with_engine = i;
  if (with_engine < j["plans"].size()) {
    j["plans"][with_engine]["engine"] = j["plans"][with_engine]["engine"].get<int64_t>() + 100000;
    const ConvKey k = recorded->entries()[with_engine].first;
    try {
      replay_cache(replay_book(j.dump()))->prepare(gh_, k);
      ADD_FAILURE() << "replayed an engine that is not there";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("was recorded with engine candidate"), std::string::npos) << e.what();
    }
  }
  j = nlohmann::json::parse(text);
  j["place"]["cudnn_version"] = 1;
  EXPECT_THROW(replay_cache(replay_book(j.dump()))->prepare(gh_, keys[0]), UserError);
  std::printf(
      "[ conv plan book ] %zu keys timed (%d kept an engine config) and replayed to the same plans; "
      "digest %s\n",
      keys.size(), engines, recorded->digest().c_str());
}

// Each of the first three engine candidates (Note [engine plans for
// convolutions]) in all three directions, f16 and f32, through the op
// launchers: within the CPU's tolerance, and the same bits twice.
// Every key here runs on cuDNN (none is small-C, none the 32 -> 64 3x3 filter
// gradient of tr's own kernel); the stem's C = 3 may have no engine at all.
TEST_F(OpsGpu, ConvEngineCandidatesMatchCpu) {
  const ConvShape shapes[] = {
      {8, 14, 14, 32, 48}, {4, 16, 16, 64, 128, 1, 2, 0}, {2, 32, 32, 3, 64, 7, 2, 3}, {4, 7, 8, 16, 8, 3, 2, 1}};
  auto aligned = [](const ConvShape& s) { return s.c % 8 == 0 && s.k % 8 == 0; };
  Rng rng(9);
  int engine_cases = 0, f16_keys = 0, f16_with_engine = 0;
  for (int cand = 0; cand < 3; ++cand) {
    ConvPlanCache::Options o;
    o.engine_candidate = cand;
    plans_ = std::make_unique<ConvPlanCache>(o);
    gh_.conv_plans = plans_.get();
    for (DType t : {F32, F16})
      for (const ConvShape& s : shapes)
        for (const ConvFns& f : kConvDirs) {
          Case k = conv_case(f.kind, t, s, rng);
          prepare_conv(f.kind, k);
          std::vector<Shape> in;
          for (const HostTensor& x : k.in) in.push_back(x.shape());
          const ConvPlan& p = plans_->lookup(conv_key(f.kind, in.data(), int(in.size()), k.attrs, t));
          if (p.impl != ConvImpl::CudnnEngine) continue;  // no candidate of this rank: the heuristic's plan
          k.name += cat(" (engine candidate ", cand, ": engine ", p.engine->engine, ")");
          check(f.cpu, f.gpu, k);
          ++engine_cases;
          if (cand == 0 && t == F16 && aligned(s)) ++f16_with_engine;
        }
  }
  for (const ConvShape& s : shapes) f16_keys += aligned(s) ? 3 : 0;
  std::printf(
      "[ conv engines ] %d cases on engine candidates 0-2 matched the CPU and repeated; candidate 0 exists "
      "for %d of the %d f16 keys with C and K multiples of 8\n",
      engine_cases, f16_with_engine, f16_keys);
  EXPECT_EQ(f16_with_engine, f16_keys) << "every f16 key with C and K multiples of 8 should have an engine candidate";
}

// ================================================================ keys (no GPU needed)

TEST(OpsConvKey, KeysCarryWindowStrideAndPad) {
  const ConvShape stem{2, 32, 32, 3, 64, 7, 2, 3};
  const Shape x{2, 32, 32, 3}, w{64, 7, 7, 3}, y{2, 16, 16, 64};
  const ConvKey f = conv_key(OpKind::ConvFwd, {x, w}, stem.attrs(), F16);
  const ConvKey d = conv_key(OpKind::ConvBwdData, {y, w, x}, stem.attrs(), F16);
  const ConvKey g = conv_key(OpKind::ConvBwdFilter, {x, y}, stem.attrs(), F16);
  for (const ConvKey* k : {&f, &d, &g}) {
    EXPECT_EQ(k->r, 7);
    EXPECT_EQ(k->stride, 2);
    EXPECT_EQ(k->pad, 3);
    EXPECT_EQ(k->ho(), 16);
    EXPECT_EQ(k->wo(), 16);
    EXPECT_EQ(k->c, 3);
    EXPECT_EQ(k->k, 64);
  }
  EXPECT_EQ(f.str(), "conv fwd x[2,32,32,3] w[64,7,7,3] 7x7 stride 2 pad 3 y[2,16,16,64] f16");
  // Same dy, another x: with stride 2, sides 31 and 32 both give 16.
  const ConvKey d31 = conv_key(OpKind::ConvBwdData, {y, w, Shape{2, 31, 31, 3}}, stem.attrs(), F16);
  EXPECT_NE(d31, d);
  EXPECT_EQ(d31.h, 31);
  OpAttrs s1 = stem.attrs();
  s1.stride = 1;
  EXPECT_NE(conv_key(OpKind::ConvFwd, {x, w}, s1, F16), f);
}

TEST(OpsConvKey, TensorCoreFilterGradientOnlyForItsShapes) {
  auto key = [](const ConvShape& s, DType t) {
    return conv_key(OpKind::ConvBwdFilter, {Shape{s.n, s.h, s.w, s.c}, Shape{s.n, s.ho(), s.wo(), s.k}}, s.attrs(), t);
  };
  EXPECT_TRUE(uses_filter_tc(key({256, 28, 28, 32, 64}, F16)));
  EXPECT_TRUE(filter_tc_beats_cudnn(key({256, 28, 28, 32, 64}, F16)));
  EXPECT_FALSE(filter_tc_beats_cudnn(key({256, 14, 14, 64, 64}, F16)));  // cuDNN measured faster
  EXPECT_FALSE(filter_tc_beats_cudnn(key({256, 28, 28, 32, 64}, F32)));
  EXPECT_TRUE(uses_filter_tc(key({2, 3, 3, 256, 512}, F16)));
  EXPECT_TRUE(uses_filter_tc(key({2, 56, 64, 64, 64}, F16)));
  EXPECT_FALSE(uses_filter_tc(key({256, 28, 28, 32, 64}, F32)));         // f16 only
  EXPECT_FALSE(uses_filter_tc(key({2, 14, 14, 48, 64}, F16)));           // C % 32 != 0
  EXPECT_FALSE(uses_filter_tc(key({2, 14, 14, 64, 96}, F16)));           // K % 64 != 0
  EXPECT_FALSE(uses_filter_tc(key({2, 8, 65, 32, 64}, F16)));            // rows wider than 64
  EXPECT_FALSE(uses_filter_tc(key({2, 16, 16, 64, 64, 3, 2, 1}, F16)));  // stride 2
  EXPECT_FALSE(uses_filter_tc(key({2, 16, 16, 64, 64, 1, 1, 0}, F16)));  // 1x1
  const ConvShape s{2, 14, 14, 64, 64};
  const Shape x{2, 14, 14, 64}, w{64, 3, 3, 64}, y{2, 14, 14, 64};
  EXPECT_FALSE(uses_filter_tc(conv_key(OpKind::ConvFwd, {x, w}, s.attrs(), F16)));
  EXPECT_FALSE(uses_filter_tc(conv_key(OpKind::ConvBwdData, {y, w, x}, s.attrs(), F16)));
}

TEST(OpsConvKey, SmallCKernelOnlyFor3x3Stride1Pad1) {
  auto key = [](OpKind kind, const ConvShape& s) {
    const Shape x{s.n, s.h, s.w, s.c}, w{s.k, s.r, s.r, s.c}, y{s.n, s.ho(), s.wo(), s.k};
    if (kind == OpKind::ConvFwd) return conv_key(kind, {x, w}, s.attrs(), F16);
    if (kind == OpKind::ConvBwdData) return conv_key(kind, {y, w, x}, s.attrs(), F16);
    return conv_key(kind, {x, y}, s.attrs(), F16);
  };
  for (int64_t c : {1, 3, 4}) {
    const ConvShape s{2, 28, 28, c, 32};
    EXPECT_TRUE(uses_small_c_kernel(key(OpKind::ConvFwd, s)));
    EXPECT_TRUE(uses_small_c_kernel(key(OpKind::ConvBwdFilter, s)));
    EXPECT_FALSE(uses_small_c_kernel(key(OpKind::ConvBwdData, s)));
  }
  for (const ConvShape& s : {ConvShape{2, 28, 28, 8, 32}, ConvShape{2, 32, 32, 3, 64, 7, 2, 3},
                             ConvShape{2, 28, 28, 1, 32, 3, 2, 1}, ConvShape{2, 28, 28, 3, 32, 3, 1, 0},
                             ConvShape{2, 28, 28, 3, 32, 1, 1, 0}, ConvShape{2, 28, 28, 3, 32, 5, 1, 1}}) {
    SCOPED_TRACE(conv_name("", F16, s));
    EXPECT_FALSE(uses_small_c_kernel(key(OpKind::ConvFwd, s)));
    EXPECT_FALSE(uses_small_c_kernel(key(OpKind::ConvBwdFilter, s)));
  }
}

// The shape rules refuse these first (UserError); reaching conv_key is a bug.
TEST(OpsConvKey, InconsistentShapesAreInternalErrors) {
  const ConvShape s{2, 8, 8, 3, 4, 3, 2, 1};
  const Shape x{2, 8, 8, 3}, w{4, 3, 3, 3}, y{2, 4, 4, 4};
  EXPECT_NO_THROW(conv_key(OpKind::ConvBwdData, {y, w, x}, s.attrs(), F32));
  EXPECT_THROW(conv_key(OpKind::ConvBwdData, {Shape{2, 8, 8, 4}, w, x}, s.attrs(), F32), Error);
  EXPECT_THROW(conv_key(OpKind::ConvBwdData, {y, w}, s.attrs(), F32), Error);
  EXPECT_THROW(conv_key(OpKind::ConvBwdFilter, {x, Shape{2, 8, 8, 4}}, s.attrs(), F32), Error);
  EXPECT_THROW(conv_key(OpKind::ConvFwd, {x, Shape{4, 5, 5, 3}}, s.attrs(), F32), Error);
  EXPECT_THROW(conv_key(OpKind::ConvFwd, {x, w}, OpAttrs{}, F32), Error);  // kernel 0
  EXPECT_THROW(conv_key(OpKind::ConvFwd, {Shape{2, 1, 1, 3}, w}, ConvShape{2, 1, 1, 3, 4, 3, 1, 0}.attrs(), F32),
               Error);
  EXPECT_THROW(conv_key(OpKind::ReluFwd, {x, w}, s.attrs(), F32), Error);
}

}  // namespace
}  // namespace tr

// Augmentation inside InputPrep and flip-TTA on the CPU (Note [augmentation]):
// the counter-based generator is Philox4x32-10 (known-answer vectors), its
// decisions depend on (seed, batch, sample) and nothing else, flip then unflip
// is the identity, a translate by 0 changes nothing, each augmented image is
// exactly its shifted / mirrored / cut original, and rank r of N sees the
// decisions one rank makes for the same samples of the whole batch.
#include <gtest/gtest.h>

#include <set>

#include "framework/core/philox.h"
#include "framework/ops/compute/tta_mean.h"
#include "framework/ops/kernels/augment.h"
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

// Random123's known-answer vectors for Philox4x32-10.
TEST(Philox, KnownAnswers) {
  const Philox4 zero = philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  const Philox4 ones = philox4x32_10(Philox4{{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  const Philox4 pi =
      philox4x32_10(Philox4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(Augment, DecisionsAreAFunctionOfSeedBatchAndSampleAndCoverTheirRange) {
  const AugmentParams p{42, 2, 8, true};
  int flips = 0;
  std::set<int> dxs, dys;
  for (uint32_t s = 0; s < 4000; ++s) {
    const AugmentChoice c = augment_choice(p, 5, s, 28, 28);
    const AugmentChoice again = augment_choice(p, 5, s, 28, 28);
    EXPECT_EQ(c.flip, again.flip);
    EXPECT_EQ(c.dx, again.dx);
    EXPECT_EQ(c.cut_y0, again.cut_y0);
    flips += c.flip;
    dxs.insert(c.dx);
    dys.insert(c.dy);
    EXPECT_GE(c.cut_y0, -4);
    EXPECT_LT(c.cut_y0, 28 - 4);
  }
  // A fair coin's fraction over 4000 draws has a binomial sd of 0.0079: 0.03 is 3.8 sd (and the seed fixes
  // the draws); a flip drawn with another probability (0.25, 1) is off by 0.25 or more.
  EXPECT_NEAR(flips / 4000.0, 0.5, 0.03);
  EXPECT_EQ(dxs, (std::set<int>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(dys, (std::set<int>{-2, -1, 0, 1, 2}));
  // Another batch, sample or seed draws anew; disabled parts draw nothing.
  int same_batch = 0, same_seed = 0;
  for (uint32_t s = 0; s < 200; ++s) {
    const AugmentChoice a = augment_choice(p, 5, s, 28, 28), b = augment_choice(p, 6, s, 28, 28);
    const AugmentChoice c = augment_choice(AugmentParams{43, 2, 8, true}, 5, s, 28, 28);
    same_batch += a.dx == b.dx && a.dy == b.dy && a.flip == b.flip && a.cut_x0 == b.cut_x0;
    same_seed += a.dx == c.dx && a.dy == c.dy && a.flip == c.flip && a.cut_x0 == c.cut_x0;
    const AugmentChoice off = augment_choice(AugmentParams{42, 0, 0, false}, 5, s, 28, 28);
    EXPECT_FALSE(off.flip);
    EXPECT_EQ(off.dx, 0);
    EXPECT_EQ(off.dy, 0);
  }
  // Independent draws agree in (dx, dy, flip, cut_x0) with probability 1/5 * 1/5 * 1/2 * 1/28 = 1/1400:
  // 0.14 of 200 expected; draws that ignore the batch or the seed agree 200 times.
  EXPECT_LT(same_batch, 10);
  EXPECT_LT(same_seed, 10);
}

// A 4-sample u8 batch of 6x5x2 images and its InputPrep runner.
struct Prep {
  static constexpr int64_t B = 4, H = 6, W = 5, C = 2;
  HostTensor images{DType::U8, {B, H, W, C}}, labels_src{DType::I32, {B}};
  OpRunner run;
  Prep() {
    for (int64_t i = 0; i < images.numel(); ++i) images.set(i, double((i * 37 + 11) % 256));
    for (int64_t n = 0; n < B; ++n) labels_src.set(n, double(n));
    run.variant = VariantDims{B, B, H, W};
    run.attrs.norm_mean[0] = 0.25f;
    run.attrs.norm_mean[1] = 0.5f;
    run.attrs.norm_std[0] = 0.5f;
    run.attrs.norm_std[1] = 2.0f;
  }
  HostTensor prep(int64_t n_out = B) {
    HostTensor x(DType::F32, {n_out, H, W, C}), labels(DType::I32, {run.variant.batch});
    run.run(input_prep_cpu, {&images, &labels_src}, {&x, &labels});
    return x;
  }
  static double at(const HostTensor& x, int64_t n, int64_t i, int64_t j, int64_t c) {
    return x.get(((n * H + i) * W + j) * C + c);
  }
  double pad_value(int64_t c) const { return double((0.f / 255.f - run.attrs.norm_mean[c]) / run.attrs.norm_std[c]); }
};

TEST(Augment, TranslateByZeroAndNoAugmentationChangeNothing) {
  Prep p;
  const HostTensor plain = p.prep();
  p.run.attrs.aug_seed = 9;
  p.run.attrs.aug_translate = 0;
  p.run.scalars.batches = 17;
  EXPECT_EQ(p.prep().values(), plain.values());
}

TEST(Augment, EachImageIsItsShiftedMirroredAndCutOriginal) {
  Prep p;
  const HostTensor plain = p.prep();
  p.run.attrs.aug_seed = 1234;
  p.run.attrs.aug_flip = true;
  p.run.attrs.aug_translate = 2;
  p.run.attrs.aug_cutout = 3;
  int flipped = 0, shifted = 0, cut = 0;
  for (int32_t batch : {0, 1, 2, 3, 4, 5}) {
    p.run.scalars.batches = batch;
    const HostTensor x = p.prep();
    for (int64_t n = 0; n < Prep::B; ++n) {
      const AugmentChoice ch =
          augment_choice(augment_params(p.run.attrs), uint32_t(batch), uint32_t(n), Prep::H, Prep::W);
      flipped += ch.flip;
      shifted += ch.dx != 0 || ch.dy != 0;
      for (int64_t i = 0; i < Prep::H; ++i)
        for (int64_t j = 0; j < Prep::W; ++j) {
          const bool in_cut = i >= ch.cut_y0 && i < ch.cut_y0 + 3 && j >= ch.cut_x0 && j < ch.cut_x0 + 3;
          cut += in_cut;
          // Written out here by hand: mirror, then shift by (dy, dx).
          int64_t si = i - ch.dy, sj = j - ch.dx;
          if (ch.flip) sj = Prep::W - 1 - sj;
          const bool inside = si >= 0 && si < Prep::H && sj >= 0 && sj < Prep::W;
          for (int64_t c = 0; c < Prep::C; ++c) {
            const double want = in_cut ? 0.0 : inside ? Prep::at(plain, n, si, sj, c) : p.pad_value(c);
            ASSERT_EQ(Prep::at(x, n, i, j, c), want) << "batch " << batch << " sample " << n << " at " << i << "," << j;
          }
        }
    }
  }
  // 24 samples: every kind of change happened (the decisions are fixed, so this cannot flake).
  EXPECT_GT(flipped, 0);
  EXPECT_GT(shifted, 0);
  EXPECT_GT(cut, 0);
}

TEST(Augment, FlipTtaWritesTheMirrorsAndFlipThenUnflipIsTheIdentity) {
  Prep p;
  const HostTensor plain = p.prep();
  p.run.attrs.tta_flip = true;
  const HostTensor x = p.prep(2 * Prep::B);
  for (int64_t n = 0; n < Prep::B; ++n)
    for (int64_t i = 0; i < Prep::H; ++i)
      for (int64_t j = 0; j < Prep::W; ++j)
        for (int64_t c = 0; c < Prep::C; ++c) {
          EXPECT_EQ(Prep::at(x, n, i, j, c), Prep::at(plain, n, i, j, c));
          // The mirror, mirrored back, is the image.
          EXPECT_EQ(Prep::at(x, Prep::B + n, i, Prep::W - 1 - j, c), Prep::at(plain, n, i, j, c));
        }
  // The same through the decisions: a flipped source of a flipped source is the pixel.
  AugmentChoice f;
  f.flip = true;
  for (int64_t j = 0; j < Prep::W; ++j) {
    int64_t si = 0, sj = 0, si2 = 0, sj2 = 0;
    ASSERT_TRUE(augment_source(f, 2, j, Prep::H, Prep::W, si, sj));
    ASSERT_TRUE(augment_source(f, si, sj, Prep::H, Prep::W, si2, sj2));
    EXPECT_EQ(sj2, j);
  }
}

// Rank r of R with N samples each decides for samples r*N .. r*N+N-1 of the
// global batch: two ranks x 2 equal one rank x 4, image for image.
TEST(Augment, RanksDecideLikeOneRankWithTheWholeBatch) {
  Prep one;
  one.run.attrs.aug_seed = 77;
  one.run.attrs.aug_flip = true;
  one.run.attrs.aug_translate = 2;
  one.run.attrs.aug_cutout = 2;
  one.run.scalars.batches = 3;
  const HostTensor whole = one.prep();
  Prep rank1 = one;
  rank1.run.rank = 1;
  rank1.run.ranks = 2;
  rank1.run.variant = VariantDims{2, 4, Prep::H, Prep::W};
  for (int64_t n = 0; n < 2; ++n)  // rank 1's staging holds samples 2 and 3
    for (int64_t e = 0; e < Prep::H * Prep::W * Prep::C; ++e)
      rank1.images.set(n * Prep::H * Prep::W * Prep::C + e, one.images.get((2 + n) * Prep::H * Prep::W * Prep::C + e));
  HostTensor x(DType::F32, {2, Prep::H, Prep::W, Prep::C}), labels(DType::I32, {2});
  rank1.run.run(input_prep_cpu, {&rank1.images, &rank1.labels_src}, {&x, &labels});
  const int64_t per = Prep::H * Prep::W * Prep::C;
  for (int64_t e = 0; e < 2 * per; ++e) ASSERT_EQ(x.get(e), whole.get(2 * per + e)) << e;
}

TEST(Augment, ShapeRuleRefusesTranslateOrCutoutTooLargeForTheImage) {
  Prep p;
  p.run.attrs.aug_translate = 5;  // the image is 6x5: at most 4
  EXPECT_THROW(p.run.shapes(input_prep_shapes, {p.images.shape(), p.labels_src.shape()}, 2), UserError);
  p.run.attrs.aug_translate = 4;
  EXPECT_NO_THROW(p.run.shapes(input_prep_shapes, {p.images.shape(), p.labels_src.shape()}, 2));
  p.run.attrs.aug_cutout = 6;
  EXPECT_THROW(p.run.shapes(input_prep_shapes, {p.images.shape(), p.labels_src.shape()}, 2), UserError);
  p.run.attrs.aug_cutout = 0;
  p.run.attrs.tta_flip = true;
  EXPECT_EQ(p.run.shapes(input_prep_shapes, {p.images.shape(), p.labels_src.shape()}, 2)[0],
            (Shape{2 * Prep::B, Prep::H, Prep::W, Prep::C}));
}

TEST(TtaMean, AveragesEachImageWithItsMirrorAndKeepsEqualPairsExact) {
  OpRunner run;
  for (DType t : {F32, F64, F16}) {
    SCOPED_TRACE(dtype_name(t));
    HostTensor x(t, {4, 3}), y(t, {2, 3});
    const double v[] = {1, -2, 3.5, 0.25, 8, -1, 3, -2, 1.5, 0.25, 8, 7};
    for (int i = 0; i < 12; ++i) x.set(i, v[i]);
    run.run(tta_mean_cpu, {&x}, {&y});
    EXPECT_EQ(y.values(), (std::vector<double>{2, -2, 2.5, 0.25, 8, 3}));
  }
  EXPECT_EQ(run.shapes(tta_mean_shapes, {Shape{6, 10}}, 1)[0], (Shape{3, 10}));
  EXPECT_THROW(run.shapes(tta_mean_shapes, {Shape{5, 10}}, 1), UserError);
}

}  // namespace
}  // namespace tr::test

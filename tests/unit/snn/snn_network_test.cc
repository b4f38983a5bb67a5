// apps/snn/snn_network: the sparse and dense propagations give the same
// logits, loss and gradients on fixed seeds (several shapes, caps, readouts,
// recurrence), the sparse one with fewer multiply-adds; the gradient matches
// finite differences of the loss where the surrogate is exact (the smooth
// forward), and a planted wrong gradient fails that check; the activity cap
// and the input codings do what they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "apps/snn/snn_network.h"
#include "apps/snn/spike_coding.h"
#include "framework/runtime/random_stream.h"

namespace stalelearn::apps::snn {
namespace {

SnnParameters RandomParameters(const SnnShape& shape, std::uint64_t seed, double scale) {
  SnnParameters p = SnnParameters::Zeros(shape);
  runtime::RandomStream random(seed);
  for (int l = 0; l < shape.layers(); ++l) {
    const double s = scale / std::sqrt(static_cast<double>(shape.fan_in(l)));
    for (float& x : p.feed[l]) x = static_cast<float>(random.Normal() * s);
    for (float& x : p.recurrent[l]) x = static_cast<float>(random.Normal() * s * 0.5);
  }
  return p;
}

SpikeTrain RandomSpikes(int inputs, int steps, double rate, std::uint64_t seed) {
  runtime::RandomStream random(seed);
  SpikeTrain train;
  train.offsets.push_back(0);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < inputs; ++i) {
      if (random.Uniform() < rate) train.indices.push_back(i);
    }
    train.offsets.push_back(static_cast<std::int32_t>(train.indices.size()));
  }
  return train;
}

// Largest |a - b| relative to the largest |a| over all parameters.
double RelativeDifference(const SnnParameters& a, const SnnParameters& b) {
  double diff = 0, size = 1e-12;
  const auto add = [&](const std::vector<float>& x, const std::vector<float>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - y[i]));
      size = std::max(size, std::fabs(static_cast<double>(x[i])));
    }
  };
  for (std::size_t l = 0; l < a.feed.size(); ++l) add(a.feed[l], b.feed[l]);
  for (std::size_t l = 0; l < a.recurrent.size(); ++l) add(a.recurrent[l], b.recurrent[l]);
  return diff / size;
}

struct Case {
  std::vector<int> hidden;
  bool recurrent;
  float max_activity;
  Readout readout;
};

class PropagationsAgree : public ::testing::TestWithParam<Case> {};

TEST_P(PropagationsAgree, SameLogitsLossAndGradientsWithFewerMultiplyAdds) {
  const Case& c = GetParam();
  SnnShape shape{64, c.hidden, 10, c.recurrent};
  LifParams lif;
  lif.steps = 12;
  lif.max_activity = c.max_activity;
  lif.readout = c.readout;
  const SnnNetwork network(shape, lif);
  const SnnParameters w = RandomParameters(shape, 11, 3.0);
  Workspace dense_ws(network), sparse_ws(network);
  SnnParameters dense_grad = SnnParameters::Zeros(shape), sparse_grad = SnnParameters::Zeros(shape);
  double dense_work = 0, sparse_work = 0, spikes = 0;
  for (int sample = 0; sample < 4; ++sample) {
    const SpikeTrain input = RandomSpikes(shape.inputs, lif.steps, 0.1, 100 + sample);
    const int label = sample % 10;
    const ForwardStats d = network.Forward(w, input, label, Propagation::kDense, dense_ws);
    const ForwardStats s = network.Forward(w, input, label, Propagation::kSparse, sparse_ws);
    EXPECT_NEAR(d.loss, s.loss, 1e-5 * std::max(1.0, d.loss));
    EXPECT_EQ(d.hidden_spikes, s.hidden_spikes);
    for (int j = 0; j < shape.outputs; ++j) {
      EXPECT_NEAR(network.Logits(dense_ws)[j], network.Logits(sparse_ws)[j], 1e-5f) << "output " << j;
    }
    dense_work += d.multiply_adds + network.Backward(w, input, label, Propagation::kDense, dense_ws, dense_grad);
    sparse_work += s.multiply_adds + network.Backward(w, input, label, Propagation::kSparse, sparse_ws, sparse_grad);
    spikes += s.hidden_spikes;
  }
  EXPECT_GT(spikes, 0) << "no hidden spikes: the case tests nothing";
  EXPECT_LE(RelativeDifference(dense_grad, sparse_grad), 1e-5);
  EXPECT_GT(RelativeDifference(dense_grad, SnnParameters::Zeros(shape)), 0.99) << "gradient is zero";
  EXPECT_LT(sparse_work, dense_work);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PropagationsAgree,
    ::testing::Values(Case{{32}, false, 1.0f, Readout::kMembrane}, Case{{32}, true, 1.0f, Readout::kMembrane},
                      Case{{32, 24}, true, 0.1f, Readout::kMembrane}, Case{{24, 16, 16}, false, 0.2f, Readout::kSpikeCount},
                      Case{{32, 24}, true, 0.05f, Readout::kSpikeCount}));

// A difference of one spike in one step shows: the comparison above has teeth.
TEST(PropagationsAgree, AGradientFromADifferentInputDiffers) {
  SnnShape shape{64, {32}, 10, true};
  const SnnNetwork network(shape, LifParams{});
  const SnnParameters w = RandomParameters(shape, 11, 3.0);
  Workspace ws(network);
  SnnParameters a = SnnParameters::Zeros(shape), b = a;
  SpikeTrain input = RandomSpikes(shape.inputs, 16, 0.1, 5);
  network.Forward(w, input, 3, Propagation::kSparse, ws);
  network.Backward(w, input, 3, Propagation::kSparse, ws, a);
  input.indices.pop_back();
  --input.offsets.back();
  network.Forward(w, input, 3, Propagation::kSparse, ws);
  network.Backward(w, input, 3, Propagation::kSparse, ws, b);
  EXPECT_GT(RelativeDifference(a, b), 1e-4);
}

// ||backward - central finite differences|| / ||backward|| over all
// parameters, with the smooth forward (the surrogate is then the derivative).
double FiniteDifferenceError(const LifParams& lif, const SnnShape& shape) {
  const SnnNetwork network(shape, lif);
  SnnParameters w = RandomParameters(shape, 3, 4.0);
  Workspace ws(network);
  const SpikeTrain input = RandomSpikes(shape.inputs, lif.steps, 0.3, 9);
  const int label = 2;
  SnnParameters grad = SnnParameters::Zeros(shape);
  network.Forward(w, input, label, Propagation::kDense, ws);
  network.Backward(w, input, label, Propagation::kDense, ws, grad);
  const float eps = 2.5e-3f;
  double err = 0, norm = 0;
  const auto check = [&](std::vector<float>& values, const std::vector<float>& g) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float saved = values[i];
      values[i] = saved + eps;
      const double up = network.Forward(w, input, label, Propagation::kDense, ws).loss;
      values[i] = saved - eps;
      const double down = network.Forward(w, input, label, Propagation::kDense, ws).loss;
      values[i] = saved;
      const double fd = (up - down) / (2.0 * eps);
      err += (fd - g[i]) * (fd - g[i]);
      norm += static_cast<double>(g[i]) * g[i];
    }
  };
  for (std::size_t l = 0; l < w.feed.size(); ++l) check(w.feed[l], grad.feed[l]);
  for (std::size_t l = 0; l < w.recurrent.size(); ++l) check(w.recurrent[l], grad.recurrent[l]);
  EXPECT_GT(norm, 1e-6) << "zero gradient: the check tests nothing";
  return std::sqrt(err / norm);
}

LifParams SmoothParams(Readout readout) {
  LifParams lif;
  lif.steps = 6;
  lif.smooth = true;
  lif.slope = 2.0f;
  lif.window = 2.0f;
  lif.readout = readout;
  return lif;
}

TEST(SnnGradient, MatchesFiniteDifferences) {
  const SnnShape shape{10, {7, 5}, 4, true};
  EXPECT_LT(FiniteDifferenceError(SmoothParams(Readout::kMembrane), shape), 0.01);
  EXPECT_LT(FiniteDifferenceError(SmoothParams(Readout::kSpikeCount), shape), 0.01);
}

TEST(SnnGradient, PlantedWrongGradientFailsTheCheck) {
  const SnnShape shape{10, {7, 5}, 4, true};
  LifParams lif = SmoothParams(Readout::kMembrane);
  lif.plant_wrong_gradient = true;
  const double error = FiniteDifferenceError(lif, shape);
  EXPECT_GT(error, 0.1);
}

TEST(SnnNetwork, ActivityCapBoundsSpikesPerStep) {
  SnnShape shape{64, {50}, 10, true};
  LifParams lif;
  lif.steps = 10;
  const SnnParameters w = RandomParameters(shape, 1, 8.0);
  const SpikeTrain input = RandomSpikes(shape.inputs, lif.steps, 0.3, 2);
  const auto spikes = [&](float cap) {
    lif.max_activity = cap;
    const SnnNetwork network(shape, lif);
    Workspace ws(network);
    return network.Forward(w, input, 0, Propagation::kSparse, ws).hidden_spikes;
  };
  const double uncapped = spikes(1.0f);
  EXPECT_GT(uncapped, 4 * lif.steps) << "too few spikes for the cap to bind";
  EXPECT_LE(spikes(0.04f), 2.0 * lif.steps);  // ceil(0.04 * 50) = 2 per step
  EXPECT_GT(spikes(0.04f), 0);
}

TEST(SpikeCoding, LatencyCodingSpikesOncePerLitPixelBrightFirst) {
  const std::uint8_t pixels[] = {255, 0, 10, 128, 255};
  SpikeTrain train;
  EncodeLatency(pixels, 5, 8, 0.1f, train);
  ASSERT_EQ(train.offsets.size(), 9u);
  EXPECT_EQ(train.spikes(), 3);  // 10/255 is below the cutoff
  EXPECT_EQ(train.offsets[1], 2);  // both 255 pixels at step 0, ascending
  EXPECT_EQ(train.indices[0], 0);
  EXPECT_EQ(train.indices[1], 4);
  EXPECT_EQ(train.indices[2], 3);
}

TEST(SpikeCoding, RateCodingFollowsIntensity) {
  std::vector<std::uint8_t> pixels = {0, 64, 255};
  runtime::RandomStream random(4);
  SpikeTrain train;
  EncodeRate(pixels.data(), 3, 2000, random, train);
  std::array<int, 3> counts{};
  for (std::int32_t i : train.indices) ++counts[static_cast<std::size_t>(i)];
  EXPECT_EQ(counts[0], 0);
  EXPECT_NEAR(counts[1] / 2000.0, 0.25, 0.03);
  EXPECT_EQ(counts[2], 2000);
}

}  // namespace
}  // namespace stalelearn::apps::snn

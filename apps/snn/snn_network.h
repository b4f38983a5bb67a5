// A leaky integrate-and-fire (LIF) network over T time steps and its
// backpropagation through time with a fast-sigmoid surrogate gradient.
//
// Layers 0..H-1 are hidden LIF layers, layer H the output. Per hidden layer,
// per step t (s: spikes in {0, 1}, theta: threshold, beta: leak):
//   v_t = beta * v_{t-1} - theta * s_{t-1} + W^T x_t + R^T s_{t-1} + b   (R only when recurrent)
//   s_t = H(v_t - theta), then at most k = ceil(max_activity * width)
//         neurons keep their spike: those of largest v_t (ties: lower index)
// The output layer is a leaky integrator (readout "membrane": logits = the
// mean over t of u_t = beta u_{t-1} + W^T x_t + b) or a LIF layer without a
// cap (readout "spike_count": logits = count_scale * sum_t s_t). Loss:
// softmax cross-entropy. The backward pass differentiates everything above,
// the reset included, with ds/dv := 1 / (1 + slope |v - theta|)^2 inside the
// window |v - theta| < window and 0 outside it.
//
// Two propagations compute the same function, with the same floating-point
// operations in the same order (so their outputs and gradients agree to the
// bit, checked by tests/unit/snn):
//   dense   W^T x as a loop over every input (x in {0, 1}); dW += x gv^T and
//           the backpropagated W gv over every row;
//   sparse  spikes as index lists per step: the forward pass adds the weight
//           rows of the spiking inputs only, dW updates only their rows, and
//           W gv is computed only for neurons inside the surrogate window
//           (outside it the surrogate is zero, so nothing else is needed).
// Weights are stored input-major (row i = the weights out of input i), so
// both gather and scatter touch whole contiguous rows.
//
// `smooth` (tests only) replaces the step function by the surrogate's
// antiderivative, so the surrogate gradient is the exact gradient and a
// finite-difference check applies; only the dense propagation supports it.
//
// Thread-safety: SnnNetwork is immutable after construction and may be shared;
// a Workspace (traces and scratch) belongs to one thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace stalelearn::apps::snn {

enum class Readout { kMembrane, kSpikeCount };
enum class Propagation { kDense, kSparse };

struct SnnShape {
  int inputs = 784;
  std::vector<int> hidden = {128};  // 1..3 layers
  int outputs = 10;
  bool recurrent = false;

  int layers() const { return static_cast<int>(hidden.size()) + 1; }  // hidden + output
  int fan_in(int layer) const { return layer == 0 ? inputs : hidden[static_cast<std::size_t>(layer) - 1]; }
  int width(int layer) const {
    return layer < static_cast<int>(hidden.size()) ? hidden[static_cast<std::size_t>(layer)] : outputs;
  }
  bool has_recurrence(int layer) const { return recurrent && layer < static_cast<int>(hidden.size()); }
};

struct LifParams {
  int steps = 16;
  float beta = 0.9f;
  float threshold = 1.0f;
  float slope = 5.0f;
  float window = 0.5f;
  float max_activity = 1.0f;
  Readout readout = Readout::kMembrane;
  float count_scale = 0.5f;
  bool smooth = false;
  // Tests only: Backward drops the leak term of the membrane's gradient (a
  // wrong gradient the finite-difference check must catch).
  bool plant_wrong_gradient = false;
};

// The weights (or their gradients): per layer, (fan_in + 1) x width row-major
// with the bias as the last row; per hidden layer with recurrence, width x width.
struct SnnParameters {
  std::vector<std::vector<float>> feed;       // [layer]
  std::vector<std::vector<float>> recurrent;  // [layer]; empty where none

  static SnnParameters Zeros(const SnnShape& shape);
  void SetZero();
  std::size_t size() const;  // floats in all
};

// Input spikes of one sample: step t's spiking inputs are
// indices[offsets[t] .. offsets[t + 1]), ascending.
struct SpikeTrain {
  std::vector<std::int32_t> offsets;  // steps + 1
  std::vector<std::int32_t> indices;
  std::int64_t spikes() const { return static_cast<std::int64_t>(indices.size()); }
};

// What one sample's forward pass observed.
struct ForwardStats {
  double loss = 0;
  int predicted = 0;
  double hidden_spikes = 0;      // over hidden layers and steps
  double hidden_slots = 0;       // hidden neurons x steps (activity = spikes / slots)
  double window_neurons = 0;     // hidden neurons inside the surrogate window, over steps
  double input_spikes = 0;
  double multiply_adds = 0;      // weight multiply-adds done (the propagation's cost)
};

class SnnNetwork;

// One thread's traces of a forward pass (kept for the backward pass) and scratch.
class Workspace {
 public:
  explicit Workspace(const SnnNetwork& network);

 private:
  friend class SnnNetwork;
  std::vector<std::vector<float>> v_;           // [layer] steps x width: potential before the spike
  std::vector<std::vector<float>> s_;           // [layer] steps x width: spikes (or smooth outputs)
  std::vector<std::vector<std::int32_t>> spike_offsets_, spike_indices_;    // [layer] per step
  std::vector<std::vector<std::int32_t>> window_offsets_, window_indices_;  // [layer] per step
  std::vector<float> input_dense_;              // steps x inputs (dense propagation)
  std::vector<float> logits_, dlogits_;
  std::vector<std::vector<float>> gs_;          // [layer] steps x width: dL/ds from above
  std::vector<float> gv_, gv_next_, rec_;       // width-sized scratch
  std::vector<std::pair<float, std::int32_t>> candidates_;
};

class SnnNetwork {
 public:
  SnnNetwork(SnnShape shape, LifParams params);

  const SnnShape& shape() const { return shape_; }
  const LifParams& params() const { return params_; }
  // Spikes a hidden layer may emit per step.
  int SpikeCap(int layer) const;

  // Runs one sample forward; keeps the trace in `ws` for Backward.
  ForwardStats Forward(const SnnParameters& w, const SpikeTrain& input, int label, Propagation propagation,
                       Workspace& ws) const;
  // Adds the gradient of the last Forward's loss (on the same `w`, `input`,
  // `label`, `propagation`) to `grad`. Returns the multiply-adds done.
  double Backward(const SnnParameters& w, const SpikeTrain& input, int label, Propagation propagation,
                  Workspace& ws, SnnParameters& grad) const;
  // The last Forward's logits.
  std::span<const float> Logits(const Workspace& ws) const { return ws.logits_; }

 private:
  bool IsLif(int layer) const { return layer < shape_.layers() - 1 || params_.readout == Readout::kSpikeCount; }
  void ForwardLayer(const SnnParameters& w, int layer, const SpikeTrain& input, Propagation propagation,
                    Workspace& ws) const;
  // Spikes of `layer` at step t from its potential (cap, lists, window).
  void Fire(int layer, int t, Workspace& ws) const;
  void BackwardLayer(const SnnParameters& w, int layer, const SpikeTrain& input, Propagation propagation,
                     Workspace& ws, SnnParameters& grad, double& work) const;
  float Surrogate(float v) const;

  SnnShape shape_;
  LifParams params_;
};

}  // namespace stalelearn::apps::snn

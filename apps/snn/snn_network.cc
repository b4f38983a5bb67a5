#include "apps/snn/snn_network.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace stalelearn::apps::snn {
namespace {

// dst[j] += x * row[j]: the dense propagation's term of one input (x is 0 or
// 1 for spikes, so it adds exactly what the sparse propagation adds).
void AddScaled(float* dst, const float* row, float x, int n) {
  for (int j = 0; j < n; ++j) dst[j] += x * row[j];
}
void AddRow(float* dst, const float* row, int n) {
  for (int j = 0; j < n; ++j) dst[j] += row[j];
}
// Eight partial sums in a fixed order: vectorizable without reassociation, and
// the same result wherever it is called from.
float Dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += a[j + k] * b[j + k];
  }
  for (; j < n; ++j) acc[0] += a[j] * b[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

SnnParameters SnnParameters::Zeros(const SnnShape& shape) {
  SnnParameters p;
  for (int l = 0; l < shape.layers(); ++l) {
    p.feed.emplace_back(static_cast<std::size_t>(shape.fan_in(l) + 1) * static_cast<std::size_t>(shape.width(l)), 0.0f);
    p.recurrent.emplace_back(
        shape.has_recurrence(l) ? static_cast<std::size_t>(shape.width(l)) * static_cast<std::size_t>(shape.width(l)) : 0,
        0.0f);
  }
  return p;
}

void SnnParameters::SetZero() {
  for (auto& m : feed) std::fill(m.begin(), m.end(), 0.0f);
  for (auto& m : recurrent) std::fill(m.begin(), m.end(), 0.0f);
}

std::size_t SnnParameters::size() const {
  std::size_t n = 0;
  for (const auto& m : feed) n += m.size();
  for (const auto& m : recurrent) n += m.size();
  return n;
}

Workspace::Workspace(const SnnNetwork& network) {
  const SnnShape& shape = network.shape();
  const auto steps = static_cast<std::size_t>(network.params().steps);
  int widest = shape.inputs;
  for (int l = 0; l < shape.layers(); ++l) {
    const auto n = static_cast<std::size_t>(shape.width(l));
    v_.emplace_back(steps * n, 0.0f);
    s_.emplace_back(steps * n, 0.0f);
    gs_.emplace_back(steps * n, 0.0f);
    spike_offsets_.emplace_back(steps + 1, 0);
    window_offsets_.emplace_back(steps + 1, 0);
    spike_indices_.emplace_back();
    window_indices_.emplace_back();
    widest = std::max(widest, shape.width(l));
  }
  input_dense_.assign(steps * static_cast<std::size_t>(shape.inputs), 0.0f);
  logits_.assign(static_cast<std::size_t>(shape.outputs), 0.0f);
  dlogits_ = logits_;
  gv_.assign(static_cast<std::size_t>(widest), 0.0f);
  gv_next_ = gv_;
  rec_ = gv_;
}

SnnNetwork::SnnNetwork(SnnShape shape, LifParams params) : shape_(std::move(shape)), params_(params) {}

int SnnNetwork::SpikeCap(int layer) const {
  const int n = shape_.width(layer);
  if (layer >= static_cast<int>(shape_.hidden.size()) || params_.max_activity >= 1.0f) return n;
  return std::clamp(static_cast<int>(std::ceil(static_cast<double>(params_.max_activity) * n - 1e-9)), 1, n);
}

float SnnNetwork::Surrogate(float v) const {
  const float a = std::fabs(v - params_.threshold);
  if (!(a < params_.window)) return 0.0f;
  const float d = 1.0f + params_.slope * a;
  return 1.0f / (d * d);
}

void SnnNetwork::Fire(int layer, int t, Workspace& ws) const {
  const int n = shape_.width(layer);
  const float* v = ws.v_[layer].data() + static_cast<std::size_t>(t) * n;
  float* s = ws.s_[layer].data() + static_cast<std::size_t>(t) * n;
  const float theta = params_.threshold, window = params_.window;
  std::vector<std::int32_t>& windowed = ws.window_indices_[layer];
  for (int j = 0; j < n; ++j) {
    if (std::fabs(v[j] - theta) < window) windowed.push_back(j);
  }
  ws.window_offsets_[layer][t + 1] = static_cast<std::int32_t>(windowed.size());
  std::vector<std::int32_t>& spikes = ws.spike_indices_[layer];
  if (params_.smooth) {
    // The antiderivative of the windowed surrogate, shifted to be >= 0.
    const auto g = [&](float u) { return u / (1.0f + params_.slope * std::fabs(u)); };
    for (int j = 0; j < n; ++j) s[j] = g(std::clamp(v[j] - theta, -window, window)) + g(window);
    ws.spike_offsets_[layer][t + 1] = static_cast<std::int32_t>(spikes.size());
    return;
  }
  auto& candidates = ws.candidates_;
  candidates.clear();
  for (int j = 0; j < n; ++j) {
    if (v[j] >= theta) candidates.emplace_back(v[j], j);
  }
  const auto cap = static_cast<std::size_t>(SpikeCap(layer));
  if (candidates.size() > cap) {
    // Largest potential first; ties to the lower index (both propagations agree).
    const auto higher = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
    std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(cap), candidates.end(), higher);
    candidates.resize(cap);
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  }
  std::fill(s, s + n, 0.0f);
  for (const auto& [potential, j] : candidates) {
    s[j] = 1.0f;
    spikes.push_back(j);
  }
  ws.spike_offsets_[layer][t + 1] = static_cast<std::int32_t>(spikes.size());
}

void SnnNetwork::ForwardLayer(const SnnParameters& w, int layer, const SpikeTrain& input, Propagation propagation,
                              Workspace& ws) const {
  const int n_in = shape_.fan_in(layer), n = shape_.width(layer), steps = params_.steps;
  const float* weights = w.feed[layer].data();
  const float* bias = weights + static_cast<std::size_t>(n_in) * n;
  const float* rec = shape_.has_recurrence(layer) ? w.recurrent[layer].data() : nullptr;
  const bool lif = IsLif(layer);
  const float beta = params_.beta, theta = params_.threshold;
  float* current = ws.rec_.data();
  ws.spike_indices_[layer].clear();
  ws.window_indices_[layer].clear();
  for (int t = 0; t < steps; ++t) {
    std::copy(bias, bias + n, current);
    if (propagation == Propagation::kDense) {
      const float* x = layer == 0 ? ws.input_dense_.data() + static_cast<std::size_t>(t) * n_in
                                  : ws.s_[layer - 1].data() + static_cast<std::size_t>(t) * n_in;
      for (int i = 0; i < n_in; ++i) AddScaled(current, weights + static_cast<std::size_t>(i) * n, x[i], n);
      if (rec != nullptr && t > 0) {
        const float* prev = ws.s_[layer].data() + static_cast<std::size_t>(t - 1) * n;
        for (int i = 0; i < n; ++i) AddScaled(current, rec + static_cast<std::size_t>(i) * n, prev[i], n);
      }
    } else {
      const std::int32_t* begin = layer == 0 ? input.indices.data() + input.offsets[t]
                                             : ws.spike_indices_[layer - 1].data() + ws.spike_offsets_[layer - 1][t];
      const std::int32_t* end = layer == 0 ? input.indices.data() + input.offsets[t + 1]
                                           : ws.spike_indices_[layer - 1].data() + ws.spike_offsets_[layer - 1][t + 1];
      for (const std::int32_t* i = begin; i != end; ++i) AddRow(current, weights + static_cast<std::size_t>(*i) * n, n);
      if (rec != nullptr && t > 0) {
        const std::vector<std::int32_t>& own = ws.spike_indices_[layer];
        for (std::int32_t k = ws.spike_offsets_[layer][t - 1]; k < ws.spike_offsets_[layer][t]; ++k) {
          AddRow(current, rec + static_cast<std::size_t>(own[static_cast<std::size_t>(k)]) * n, n);
        }
      }
    }
    float* v = ws.v_[layer].data() + static_cast<std::size_t>(t) * n;
    if (t == 0) {
      std::copy(current, current + n, v);
    } else {
      const float* v_prev = v - n;
      const float* s_prev = ws.s_[layer].data() + static_cast<std::size_t>(t - 1) * n;
      if (lif) {
        for (int j = 0; j < n; ++j) v[j] = beta * v_prev[j] - theta * s_prev[j] + current[j];
      } else {
        for (int j = 0; j < n; ++j) v[j] = beta * v_prev[j] + current[j];
      }
    }
    if (lif) Fire(layer, t, ws);
  }
}

ForwardStats SnnNetwork::Forward(const SnnParameters& w, const SpikeTrain& input, int label, Propagation propagation,
                                 Workspace& ws) const {
  const int steps = params_.steps, outputs = shape_.outputs;
  ForwardStats stats;
  if (propagation == Propagation::kDense) {
    std::fill(ws.input_dense_.begin(), ws.input_dense_.end(), 0.0f);
    for (int t = 0; t < steps; ++t) {
      for (std::int32_t k = input.offsets[t]; k < input.offsets[t + 1]; ++k) {
        ws.input_dense_[static_cast<std::size_t>(t) * shape_.inputs + static_cast<std::size_t>(input.indices[k])] = 1.0f;
      }
    }
  }
  for (int l = 0; l < shape_.layers(); ++l) {
    ForwardLayer(w, l, input, propagation, ws);
    const double rec = shape_.has_recurrence(l) ? 1 : 0;
    const double n = shape_.width(l);
    if (propagation == Propagation::kDense) {
      stats.multiply_adds += steps * (shape_.fan_in(l) + rec * n) * n;
    } else {
      const double in_spikes = l == 0 ? static_cast<double>(input.spikes()) : ws.spike_indices_[l - 1].size();
      stats.multiply_adds += (in_spikes + rec * static_cast<double>(ws.spike_indices_[l].size())) * n;
    }
  }
  for (std::size_t l = 0; l < shape_.hidden.size(); ++l) {
    stats.hidden_spikes += static_cast<double>(ws.spike_indices_[l].size());
    stats.hidden_slots += static_cast<double>(steps) * shape_.hidden[l];
    stats.window_neurons += static_cast<double>(ws.window_indices_[l].size());
  }
  stats.input_spikes = static_cast<double>(input.spikes());
  // Logits and the softmax cross-entropy.
  const int top = shape_.layers() - 1;
  for (int j = 0; j < outputs; ++j) {
    float sum = 0;
    const std::vector<float>& trace = params_.readout == Readout::kMembrane ? ws.v_[top] : ws.s_[top];
    for (int t = 0; t < steps; ++t) sum += trace[static_cast<std::size_t>(t) * outputs + j];
    ws.logits_[j] = params_.readout == Readout::kMembrane ? sum * (1.0f / steps) : sum * params_.count_scale;
  }
  const auto best = std::max_element(ws.logits_.begin(), ws.logits_.end());
  stats.predicted = static_cast<int>(best - ws.logits_.begin());
  double normalizer = 0;
  for (float z : ws.logits_) normalizer += std::exp(static_cast<double>(z) - *best);
  const double log_normalizer = std::log(normalizer) + *best;
  stats.loss = log_normalizer - ws.logits_[static_cast<std::size_t>(label)];
  for (int j = 0; j < outputs; ++j) {
    ws.dlogits_[j] = static_cast<float>(std::exp(ws.logits_[j] - log_normalizer)) - (j == label ? 1.0f : 0.0f);
  }
  return stats;
}

void SnnNetwork::BackwardLayer(const SnnParameters& w, int layer, const SpikeTrain& input, Propagation propagation,
                               Workspace& ws, SnnParameters& grad, double& work) const {
  const int n_in = shape_.fan_in(layer), n = shape_.width(layer), steps = params_.steps;
  const float* weights = w.feed[layer].data();
  const float* rec = shape_.has_recurrence(layer) ? w.recurrent[layer].data() : nullptr;
  float* g_weights = grad.feed[layer].data();
  float* g_bias = g_weights + static_cast<std::size_t>(n_in) * n;
  float* g_rec = rec != nullptr ? grad.recurrent[layer].data() : nullptr;
  const bool lif = IsLif(layer), dense = propagation == Propagation::kDense;
  const float beta = params_.plant_wrong_gradient ? 0.0f : params_.beta, theta = params_.threshold;
  float* gv = ws.gv_.data();
  float* gv_next = ws.gv_next_.data();
  float* total = ws.rec_.data();
  std::fill(gv_next, gv_next + n, 0.0f);
  for (int t = steps - 1; t >= 0; --t) {
    const float* v = ws.v_[layer].data() + static_cast<std::size_t>(t) * n;
    if (!lif) {
      for (int j = 0; j < n; ++j) gv[j] = ws.dlogits_[j] * (1.0f / steps) + beta * gv_next[j];
    } else {
      // dL/ds_t: from above, through the reset of v_{t+1}, through R into v_{t+1}.
      const float* gs = ws.gs_[layer].data() + static_cast<std::size_t>(t) * n;
      for (int j = 0; j < n; ++j) total[j] = gs[j] - theta * gv_next[j];
      if (rec != nullptr && t + 1 < steps) {
        if (dense) {
          for (int j = 0; j < n; ++j) total[j] += Dot(rec + static_cast<std::size_t>(j) * n, gv_next, n);
          work += static_cast<double>(n) * n;
        } else {
          const std::vector<std::int32_t>& in_window = ws.window_indices_[layer];
          for (std::int32_t k = ws.window_offsets_[layer][t]; k < ws.window_offsets_[layer][t + 1]; ++k) {
            const std::int32_t j = in_window[static_cast<std::size_t>(k)];
            total[j] += Dot(rec + static_cast<std::size_t>(j) * n, gv_next, n);
          }
          work += static_cast<double>(ws.window_offsets_[layer][t + 1] - ws.window_offsets_[layer][t]) * n;
        }
      }
      for (int j = 0; j < n; ++j) gv[j] = Surrogate(v[j]) * total[j] + beta * gv_next[j];
    }
    // Parameter gradients: bias, the inputs that spiked at t, own spikes of t-1.
    AddRow(g_bias, gv, n);
    if (dense) {
      const float* x = layer == 0 ? ws.input_dense_.data() + static_cast<std::size_t>(t) * n_in
                                  : ws.s_[layer - 1].data() + static_cast<std::size_t>(t) * n_in;
      for (int i = 0; i < n_in; ++i) AddScaled(g_weights + static_cast<std::size_t>(i) * n, gv, x[i], n);
      work += static_cast<double>(n_in) * n;
      if (rec != nullptr && t > 0) {
        const float* prev = ws.s_[layer].data() + static_cast<std::size_t>(t - 1) * n;
        for (int i = 0; i < n; ++i) AddScaled(g_rec + static_cast<std::size_t>(i) * n, gv, prev[i], n);
        work += static_cast<double>(n) * n;
      }
    } else {
      const std::int32_t* begin = layer == 0 ? input.indices.data() + input.offsets[t]
                                             : ws.spike_indices_[layer - 1].data() + ws.spike_offsets_[layer - 1][t];
      const std::int32_t* end = layer == 0 ? input.indices.data() + input.offsets[t + 1]
                                           : ws.spike_indices_[layer - 1].data() + ws.spike_offsets_[layer - 1][t + 1];
      for (const std::int32_t* i = begin; i != end; ++i) AddRow(g_weights + static_cast<std::size_t>(*i) * n, gv, n);
      work += static_cast<double>(end - begin) * n;
      if (rec != nullptr && t > 0) {
        const std::vector<std::int32_t>& own = ws.spike_indices_[layer];
        for (std::int32_t k = ws.spike_offsets_[layer][t - 1]; k < ws.spike_offsets_[layer][t]; ++k) {
          AddRow(g_rec + static_cast<std::size_t>(own[static_cast<std::size_t>(k)]) * n, gv, n);
        }
        work += static_cast<double>(ws.spike_offsets_[layer][t] - ws.spike_offsets_[layer][t - 1]) * n;
      }
    }
    // dL/ds of the layer below at t: W gv, where its surrogate can be non-zero.
    if (layer > 0) {
      float* gs_below = ws.gs_[layer - 1].data() + static_cast<std::size_t>(t) * n_in;
      if (dense) {
        for (int i = 0; i < n_in; ++i) gs_below[i] = Dot(weights + static_cast<std::size_t>(i) * n, gv, n);
        work += static_cast<double>(n_in) * n;
      } else {
        const std::vector<std::int32_t>& in_window = ws.window_indices_[layer - 1];
        const std::int32_t first = ws.window_offsets_[layer - 1][t], last = ws.window_offsets_[layer - 1][t + 1];
        for (std::int32_t k = first; k < last; ++k) {
          const std::int32_t i = in_window[static_cast<std::size_t>(k)];
          gs_below[i] = Dot(weights + static_cast<std::size_t>(i) * n, gv, n);
        }
        work += static_cast<double>(last - first) * n;
      }
    }
    std::swap(gv, gv_next);
  }
}

double SnnNetwork::Backward(const SnnParameters& w, const SpikeTrain& input, int label, Propagation propagation,
                            Workspace& ws, SnnParameters& grad) const {
  (void)label;  // Forward already turned it into dlogits
  for (auto& gs : ws.gs_) std::fill(gs.begin(), gs.end(), 0.0f);
  const int top = shape_.layers() - 1;
  if (IsLif(top)) {
    float* gs = ws.gs_[top].data();
    for (int t = 0; t < params_.steps; ++t) {
      for (int j = 0; j < shape_.outputs; ++j) gs[t * shape_.outputs + j] = params_.count_scale * ws.dlogits_[j];
    }
  }
  double work = 0;
  for (int l = top; l >= 0; --l) BackwardLayer(w, l, input, propagation, ws, grad, work);
  return work;
}

}  // namespace stalelearn::apps::snn

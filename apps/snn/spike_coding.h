// Turning an image into input spike trains over T steps.
//   latency  a pixel of intensity p >= cutoff spikes once, at step
//            round((1 - p) / (1 - cutoff) * (T - 1)): bright pixels first;
//            dimmer ones never. Deterministic; about one spike per lit pixel.
//   rate     at every step a pixel spikes with probability p (Bernoulli),
//            drawn from the caller's random stream.
// Both write a SpikeTrain whose per-step indices are ascending.
//
// Thread-safety: free functions; the caller owns `out` and `random`.
#pragma once

#include <cstdint>

#include "apps/snn/snn_network.h"
#include "framework/runtime/random_stream.h"

namespace stalelearn::apps::snn {

enum class Coding { kLatency, kRate };

void EncodeLatency(const std::uint8_t* pixels, int count, int steps, float cutoff, SpikeTrain& out);
void EncodeRate(const std::uint8_t* pixels, int count, int steps, runtime::RandomStream& random, SpikeTrain& out);

}  // namespace stalelearn::apps::snn

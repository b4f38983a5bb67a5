#include "apps/snn/spike_coding.h"

#include <cmath>

namespace stalelearn::apps::snn {

void EncodeLatency(const std::uint8_t* pixels, int count, int steps, float cutoff, SpikeTrain& out) {
  // Counting sort by spike step keeps each step's indices ascending.
  out.offsets.assign(static_cast<std::size_t>(steps) + 1, 0);
  const auto step_of = [&](int i) {
    const float p = pixels[i] * (1.0f / 255.0f);
    if (p < cutoff || pixels[i] == 0) return -1;
    const float late = cutoff < 1.0f ? (1.0f - p) / (1.0f - cutoff) : 0.0f;
    return static_cast<int>(std::lround(late * static_cast<float>(steps - 1)));
  };
  for (int i = 0; i < count; ++i) {
    const int t = step_of(i);
    if (t >= 0) ++out.offsets[static_cast<std::size_t>(t) + 1];
  }
  for (int t = 0; t < steps; ++t) out.offsets[t + 1] += out.offsets[t];
  out.indices.assign(static_cast<std::size_t>(out.offsets[steps]), 0);
  std::vector<std::int32_t> next(out.offsets.begin(), out.offsets.end() - 1);
  for (int i = 0; i < count; ++i) {
    const int t = step_of(i);
    if (t >= 0) out.indices[static_cast<std::size_t>(next[static_cast<std::size_t>(t)]++)] = i;
  }
}

void EncodeRate(const std::uint8_t* pixels, int count, int steps, runtime::RandomStream& random, SpikeTrain& out) {
  out.offsets.assign(1, 0);
  out.indices.clear();
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < count; ++i) {
      // 8-bit comparison: spikes with probability pixels[i] / 255.
      if (pixels[i] != 0 && static_cast<int>(random.Next() & 0xff) < pixels[i] + (pixels[i] == 255 ? 1 : 0)) {
        out.indices.push_back(i);
      }
    }
    out.offsets.push_back(static_cast<std::int32_t>(out.indices.size()));
  }
}

}  // namespace stalelearn::apps::snn

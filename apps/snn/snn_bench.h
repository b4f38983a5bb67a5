// `stalelearn bench snn`: training throughput of the dense and the sparse
// propagation (snn_network.h) on the same network, one cap on the hidden
// layers' activity (max_activity) at a time, on one core:
//
//   stalelearn bench snn --activity 0.005,0.01,0.02,0.05,0.1,0.2,0.5 [--json]
//       [--dataset mnist] [--hidden 256,256] [--steps 25] [--no-recurrent]
//       [--batch 32] [--train-samples 6000] [--timed-samples 256] [--test-samples 1000]
//       [--init-scale 4] [--learning-rate 0.002] [--seed 42]
//
// Per cap: from the same initial weights, train with the sparse propagation
// on --train-samples images (Adam, one step per batch of --batch) and score
// --test-samples test images (accuracy, observed activity); then, from those
// trained weights, train --timed-samples more images once dense and once
// sparse, timing each (samples per second of the thread's CPU time, robust
// on a shared machine, and per wall second; the update included), and compare the two
// resulting models: both propagations compute the same function, so they
// must agree (max_weight_difference; the accuracy of either is the accuracy
// of both). Observed activity: spikes per hidden neuron and step.
//
// Thread-safety: runs on the calling thread only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::apps::snn {

// The bench's entry point (registered as an AppBench by apps/cli/main.cc).
Status RunSnnBench(const std::vector<std::string>& args, const std::filesystem::path& data_dir);

}  // namespace stalelearn::apps::snn

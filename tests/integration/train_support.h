// Shared pieces of the training integration tests: a counting app whose
// merged totals are known exactly, configs, and a runner for ranks as threads
// on the local backend.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/train.h"

namespace stalelearn::testing {

// Table 0 "by_sample": one int32 row per sample, +1 per visit. Table 1
// "buckets": 8 rows of width 2 shared by all ranks (contention): sample s adds
// 1 and s to bucket s mod 8. Integer sums do not depend on the order of
// merges, so every mode must end with exactly the same model (I4).
// Evaluate reports the sum of "by_sample" as "total".
class CountingApp final : public runtime::SampleKernelApp, public runtime::RunsKernelInChunks {
 public:
  // `spin_per_sample`: busy work per sample, so a straggler's delay is real.
  // `runs_in_chunks`: allow training.threads_per_rank > 1 to run the kernel
  // on chunks (RunsKernelInChunks); the exact sums must still hold.
  explicit CountingApp(std::int64_t samples, int spin_per_sample = 0, bool runs_in_chunks = false)
      : samples_(samples),
        spin_(spin_per_sample),
        runs_in_chunks_(runs_in_chunks),
        by_sample_(tables_.AddInt("by_sample", samples, 1)),
        buckets_(tables_.AddInt("buckets", 8, 2)) {}

  std::string name() const override { return "counting"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override;
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override;
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override;
  bool KernelRunsInChunks() const override { return runs_in_chunks_; }

  // The exact model after `epochs` epochs.
  runtime::TableSet ExpectedModel(int epochs) const;

 private:
  std::int64_t samples_;
  int spin_;
  bool runs_in_chunks_;
  runtime::TableList tables_;
  runtime::IntTable by_sample_;
  runtime::IntTable buckets_;
};

// A resolved config for the counting app (or MF) with small rings.
proto::Config TestConfig(std::string_view mode, int staleness, int memory_ranks, int epochs,
                         int samples_per_clock);

struct LocalRun {
  std::vector<runtime::RankRun> ranks;  // by world rank
  const proto::Report& report() const { return ranks.at(0).report; }
};

// Runs `config` on the timing backend over local, priced on the StaleLearn
// presets (hmc2 memory, pcie4-x16 link, gtx580 compute): deterministic.
// `edit` may change the section's fields (the inner backend, a bandwidth cap)
// by name: "inner" and "link_bandwidth_gb_per_s" as in the config text.
void UseStaleLearnTiming(proto::Config& config, const std::map<std::string, std::string>& edit = {});

// The built-in consistency modes (SSP, BSP, ASP, DIRECT, ALLREDUCE).
const runtime::ModeRegistry& BuiltinModes();

// Runs every rank as a thread on the local backend; rethrows a rank's error.
LocalRun RunLocal(const proto::Config& config, const runtime::App& app, int world_size,
                  runtime::RuntimeHooks hooks = {});

}  // namespace stalelearn::testing

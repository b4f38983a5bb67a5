#include "tests/integration/train_support.h"

#include <stdexcept>

#include "backends/builtin.h"
#include "backends/timing/timing_options.pb.h"
#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::testing {

using runtime::RowId;

void CountingApp::RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const {
  rows.push_back({by_sample_.id, RowId{sample}});
  rows.push_back({buckets_.id, RowId{sample % 8}});
}

void CountingApp::Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const {
  runtime::WorkCounters& work = ctx.work;
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < spin_; ++i) sink = sink * 31 + static_cast<std::uint64_t>(i);
  model.Row(by_sample_, RowId{sample})[0] += 1;
  const std::span<std::int32_t> bucket = model.Row(buckets_, RowId{sample % 8});
  bucket[0] += 1;
  bucket[1] = static_cast<std::int32_t>(static_cast<std::uint32_t>(bucket[1]) + static_cast<std::uint32_t>(sample));
  work.flops += 3;
  work.random_row_accesses += 2;
}

runtime::Evaluation CountingApp::Evaluate(const runtime::TableSet& model) const {
  double total = 0;
  for (std::int64_t r = 0; r < samples_; ++r) total += runtime::Row(model, by_sample_, r)[0];
  return {"total", total};
}

runtime::TableSet CountingApp::ExpectedModel(int epochs) const {
  runtime::TableSet expected = model::MakeTableSet(Tables());
  for (int e = 0; e < epochs; ++e) {
    for (std::int64_t s = 0; s < samples_; ++s) {
      expected[0].IntRow(s)[0] += 1;
      const std::span<std::int32_t> bucket = expected[1].IntRow(s % 8);
      bucket[0] += 1;
      bucket[1] = static_cast<std::int32_t>(static_cast<std::uint32_t>(bucket[1]) + static_cast<std::uint32_t>(s));
    }
  }
  return expected;
}

void UseStaleLearnTiming(proto::Config& config, const std::map<std::string, std::string>& edit) {
  config.mutable_backend()->set_name("timing");
  stalelearn::timing::TimingBackendOptions options;
  options.set_inner("local");
  options.set_memory("hmc2");
  options.set_link("pcie4-x16");
  options.set_compute("gpu-gtx580");
  for (const auto& [field, value] : edit) {
    if (field == "inner") {
      options.set_inner(value);
    } else if (field == "link_bandwidth_gb_per_s") {
      options.set_link_bandwidth_gb_per_s(std::stod(value));
    } else {
      throw std::invalid_argument("UseStaleLearnTiming: no edit for field " + field);
    }
  }
  config.mutable_backend()->mutable_params()->PackFrom(options);
}

proto::Config TestConfig(std::string_view mode, int staleness, int memory_ranks, int epochs,
                         int samples_per_clock) {
  proto::Config config;
  config.set_seed(7);
  config.mutable_consistency()->set_mode(std::string(mode));
  config.mutable_consistency()->set_staleness(staleness);
  config.mutable_cluster()->set_memory_ranks(memory_ranks);
  config.mutable_cluster()->set_ring_slots(4);
  config.mutable_cluster()->set_slot_bytes(64 << 10);
  config.mutable_training()->set_epochs(epochs);
  config.mutable_training()->set_samples_per_clock(samples_per_clock);
  config.mutable_output()->set_quiet(true);
  config.mutable_backend()->set_name("local");
  ThrowIfError(config::ResolveDefaults(config));
  return config;
}

const runtime::ModeRegistry& BuiltinModes() {
  static const runtime::ModeRegistry* modes = [] {
    auto* registry = new runtime::ModeRegistry;
    ThrowIfError(runtime::RegisterBuiltinModes(*registry));
    return registry;
  }();
  return *modes;
}

LocalRun RunLocal(const proto::Config& config, const runtime::App& app, int world_size, runtime::RuntimeHooks hooks) {
  sync::WaitOptions wait;
  wait.timeout = std::chrono::seconds(60);
  const runtime::TrainInputs inputs{config, app, backends::BuiltinRegistry(), BuiltinModes(), std::move(hooks), wait};
  LocalRun run;
  run.ranks.resize(static_cast<std::size_t>(world_size));
  std::mutex mutex;
  transport::RunRanks(world_size, [&](transport::Bootstrap& bootstrap) {
    runtime::RankRun result = ValueOrThrow(runtime::TrainRank(inputs, bootstrap));
    std::lock_guard lock(mutex);
    run.ranks[static_cast<std::size_t>(bootstrap.rank().value)] = std::move(result);
  });
  return run;
}

}  // namespace stalelearn::testing

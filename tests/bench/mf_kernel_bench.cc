// The MF app's SGD kernel (apps/mf/mf_app.cc, UpdateBatch) alone, one thread:
// SGD updates per second over a clock's shuffled samples, on a replica
// (model::Replica: what a compute rank trains on, touch tracking and the
// clock's deltas encoded into a batch included)
// and on a bare table set (the kernel alone). Ratings come from the planted
// model of `stalelearn data synth ratings` (framework/data/synth_ratings.h),
// at MovieLens size (671 users, 9066 items, 100k ratings) and larger.
//
//   build/tests/bench/mf_kernel_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "apps/mf/mf_app.h"
#include "framework/core/error.h"
#include "framework/data/ratings.h"
#include "framework/data/synth_ratings.h"
#include "framework/model/replica.h"
#include "framework/runtime/random_stream.h"
#include "framework/sync/batch_codec.h"

namespace stalelearn::apps::mf {
namespace {

constexpr std::int64_t kSamplesPerClock = 1024;

std::unique_ptr<MfApp> MakeApp(std::int64_t users, std::int64_t items, std::int64_t ratings) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("mf_kernel_bench_" + std::to_string(::getpid()) + ".tsv");
  data::SynthRatingsSpec spec;
  spec.users = users;
  spec.items = items;
  spec.ratings = ratings;
  ValueOrThrow(data::WriteSynthRatings(spec, file));
  data::RatingsTable table = ValueOrThrow(data::ReadRatingsTsv(file));
  std::filesystem::remove(file);
  return std::make_unique<MfApp>("synth", table.num_users(), table.num_items(), std::move(table.ratings),
                                 std::vector<data::Rating>{}, MfParams{});
}

// A view over plain tables: the kernel with no touch tracking.
class BareView final : public model::ModelView {
 public:
  explicit BareView(model::TableSet& tables) : tables_(tables) {}
  std::span<float> FloatRow(model::TableId t, model::RowId r) override { return tables_[t.value].FloatRow(r.value); }
  std::span<std::int32_t> IntRow(model::TableId t, model::RowId r) override { return tables_[t.value].IntRow(r.value); }

 private:
  model::TableSet& tables_;
};

// Takes a clock's deltas as a compute rank's pusher does (runtime/delta_pusher.h):
// written in place into one batch being encoded, through an inlined writer.
class EncodingWriter final {
 public:
  explicit EncodingWriter(const std::vector<model::TableSpec>& tables) : encoder_(tables) {}
  std::byte* BeginRow(model::TableId table, model::RowId row) { return encoder_.BeginEntry(table, row); }
  void EndRow(bool changed) { encoder_.EndEntry(changed); }
  // Seals the clock's batch and hands its memory back for the next one.
  std::size_t Seal() {
    std::vector<std::byte> batch = encoder_.Seal(1, 0, sync::kEndOfClock);
    const std::size_t bytes = batch.size();
    encoder_.Recycle(std::move(batch));
    return bytes;
  }

 private:
  sync::BatchEncoder encoder_;
};

// Args: users, items, ratings, replica (1) or bare (0).
void BM_MfKernel(benchmark::State& state) {
  const std::unique_ptr<MfApp> app = MakeApp(state.range(0), state.range(1), state.range(2));
  const std::vector<model::TableSpec> tables = app->Tables();
  model::Replica replica(tables);
  model::TableSet bare = model::MakeTableSet(tables);
  BareView bare_view(bare);
  for (std::size_t t = 0; t < tables.size(); ++t) {
    for (std::int64_t r = 0; r < tables[t].rows; ++r) {
      app->InitRow(model::TableId{static_cast<std::uint32_t>(t)}, model::RowId{r},
                   model::RowValues(replica.mutable_tables()[t].FloatRow(r)));
      app->InitRow(model::TableId{static_cast<std::uint32_t>(t)}, model::RowId{r},
                   model::RowValues(bare[t].FloatRow(r)));
    }
  }
  const bool on_replica = state.range(3) != 0;
  model::ModelView& view = on_replica ? static_cast<model::ModelView&>(replica) : bare_view;
  std::vector<std::int64_t> order(static_cast<std::size_t>(app->TrainingSamples()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  runtime::RandomStream random = runtime::RandomStream::For(1, 0, 0);
  runtime::WorkCounters work;
  runtime::KernelContext context{runtime::RankInfo{}, 0, 0, random, nullptr, work};
  EncodingWriter writer(tables);
  std::size_t at = 0;
  std::int64_t updates = 0;
  double batch_bytes = 0;
  for (auto _ : state) {
    const std::size_t n = std::min<std::size_t>(kSamplesPerClock, order.size() - at);
    app->UpdateBatch(std::span(order).subspan(at, n), view, context);
    // A clock ends: the replica's touched rows become one encoded batch (its
    // checksum, put and merge are the data plane's, measured elsewhere).
    if (on_replica) {
      replica.DrainDeltasInto(writer);
      batch_bytes += static_cast<double>(writer.Seal());
    }
    at = (at + n) % order.size();
    updates += static_cast<std::int64_t>(n);
  }
  state.SetItemsProcessed(updates);
  if (on_replica) state.counters["batch_bytes_per_sample"] = batch_bytes / static_cast<double>(updates);
  state.SetLabel(on_replica ? "replica" : "bare");
}

BENCHMARK(BM_MfKernel)
    ->Args({671, 9066, 100000, 0})
    ->Args({671, 9066, 100000, 1})
    ->Args({10000, 50000, 1000000, 0})
    ->Args({10000, 50000, 1000000, 1})
    ->ArgNames({"users", "items", "ratings", "replica"});

}  // namespace
}  // namespace stalelearn::apps::mf

BENCHMARK_MAIN();

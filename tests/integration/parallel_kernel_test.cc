// training.threads_per_rank > 1 (framework/runtime/parallel_kernel.h): a
// clock's samples run as contiguous chunks on private row overlays, and each
// chunk's change is added to the replica. These tests fail if a chunk's
// change is lost or added twice, if the chunks race on a row, if a kernel
// error on a worker thread is swallowed, or if the result depends on the
// scheduling rather than on (samples, threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/mf/mf_app.h"
#include "framework/core/error.h"
#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/model/replica.h"
#include "framework/runtime/parallel_kernel.h"
#include "framework/runtime/random_stream.h"
#include "tests/integration/movielens_file.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using model::ElementType;
using runtime::RowId;
using runtime::TableId;

constexpr std::int64_t kRows = 16;

// Table 0 "halve": float rows; sample s sets row s % kRows to row * 0.5 + 1
// (not additive: the order of updates to a row matters). Table 1 "count":
// int rows; sample s adds 1 and s to row s % 4 (additive: exact whatever
// the chunking). Sample kOutside touches a row no sample names.
class ChunkedApp final : public runtime::SampleKernelApp, public runtime::RunsKernelInChunks {
 public:
  static constexpr std::int64_t kOutside = 1'000'000;

  std::string name() const override { return "chunked"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override {
    return {{"halve", ElementType::kFloat32, kRows + 1, 1}, {"count", ElementType::kInt32, 4, 2}};
  }
  std::int64_t TrainingSamples() const override { return 64; }
  void RowsOf(std::int64_t s, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({TableId{0}, RowId{s % kRows}});
    rows.push_back({TableId{1}, RowId{s % 4}});
  }
  void Update(std::int64_t s, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    const std::int64_t row = s == kOutside ? kRows : s % kRows;  // row kRows is in no working set
    float& v = model.FloatRow(TableId{0}, RowId{row})[0];
    v = v * 0.5f + 1.0f;
    const std::span<std::int32_t> count = model.IntRow(TableId{1}, RowId{s % 4});
    count[0] += 1;
    count[1] += static_cast<std::int32_t>(s);
    ctx.work.flops += 4;
  }
};

// The replica's rows for samples 0..TrainingSamples()-1 (row kRows left out).
model::Replica MakeReplica(const ChunkedApp& app) {
  model::WorkingSet set(2);
  set[0].emplace();
  for (std::int64_t r = 0; r < kRows; ++r) set[0]->push_back(r);
  return model::Replica(app.Tables(), set);
}

struct Drained {
  std::vector<std::pair<std::uint32_t, std::int64_t>> rows;
  std::vector<float> halve;         // table 0 deltas, in drain order
  std::vector<std::int32_t> count;  // table 1 deltas
};

Drained Drain(model::Replica& replica) {
  Drained d;
  replica.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte> delta) {
    d.rows.emplace_back(t.value, r.value);
    if (t.value == 0) {
      d.halve.push_back(*reinterpret_cast<const float*>(delta.data()));
    } else {
      const auto* v = reinterpret_cast<const std::int32_t*>(delta.data());
      d.count.insert(d.count.end(), v, v + 2);
    }
  });
  std::sort(d.rows.begin(), d.rows.end());
  return d;
}

std::vector<std::int64_t> Samples(std::int64_t n) {
  std::vector<std::int64_t> s(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) s[static_cast<std::size_t>(i)] = i;
  return s;
}

// One clock of `samples` on `threads` chunks; returns the flops counted.
double RunClock(const ChunkedApp& app, model::Replica& replica, int threads, std::span<const std::int64_t> samples,
                std::int64_t clock = 0) {
  runtime::RandomStream random = runtime::RandomStream::For(7, 0, clock);
  runtime::WorkCounters work;
  runtime::KernelContext ctx{{model::ComputeIndex{0}, 1, 7}, 0, clock, random, nullptr, work};
  runtime::ParallelKernel kernel(app, threads);
  kernel.Run(samples, replica, ctx);
  return work.flops;
}

TEST(ParallelKernel, AdditiveChangesOfEveryChunkAreAddedExactlyOnce) {
  const ChunkedApp app;
  const std::vector<std::int64_t> samples = Samples(64);
  for (int threads : {2, 3, 5}) {
    model::Replica replica = MakeReplica(app);
    EXPECT_EQ(RunClock(app, replica, threads, samples), 4.0 * 64) << "every chunk's work counted once";
    for (std::int64_t r = 0; r < 4; ++r) {
      std::int32_t sum = 0;
      for (std::int64_t s = r; s < 64; s += 4) sum += static_cast<std::int32_t>(s);
      const std::span<std::int32_t> count = replica.IntRow(TableId{1}, RowId{r});
      EXPECT_EQ(count[0], 16) << "threads " << threads << " row " << r << ": a chunk's change lost or doubled";
      EXPECT_EQ(count[1], sum) << "threads " << threads << " row " << r;
    }
    const Drained d = Drain(replica);
    EXPECT_EQ(d.rows.size(), kRows + 4u) << "threads " << threads << ": every touched row is shipped once";
  }
}

TEST(ParallelKernel, ChunksStartFromTheClockStartValues) {
  // 64 samples, 2 chunks: each chunk applies v = v/2 + 1 twice to each of the
  // 16 rows starting from 0 (0 -> 1 -> 1.5), so each chunk's change is 1.5
  // and the clock's change is 3. One sequential pass would give 1.875.
  const ChunkedApp app;
  const std::vector<std::int64_t> samples = Samples(64);
  model::Replica replica = MakeReplica(app);
  RunClock(app, replica, 2, samples);
  for (std::int64_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(replica.FloatRow(TableId{0}, RowId{r})[0], 3.0f) << "row " << r;
  }
  // The next clock starts from 3: each chunk goes 3 -> 2.5 -> 2.25 (-0.75).
  Drain(replica);
  RunClock(app, replica, 2, samples, /*clock=*/1);
  EXPECT_EQ(replica.FloatRow(TableId{0}, RowId{0})[0], 1.5f);
}

TEST(ParallelKernel, SameSamplesAndThreadsGiveTheSameBitsEveryTime) {
  const ChunkedApp app;
  std::vector<std::int64_t> samples;
  for (int i = 0; i < 400; ++i) samples.push_back((i * 37) % 64);
  std::optional<Drained> first;
  for (int run = 0; run < 20; ++run) {
    model::Replica replica = MakeReplica(app);
    RunClock(app, replica, 3, samples);
    const Drained d = Drain(replica);
    if (!first) {
      first = d;
      continue;
    }
    EXPECT_EQ(d.halve, first->halve) << "run " << run;
    EXPECT_EQ(d.count, first->count) << "run " << run;
  }
}

TEST(ParallelKernel, AKernelErrorOnAWorkerThreadReachesTheCaller) {
  const ChunkedApp app;
  std::vector<std::int64_t> samples = Samples(40);
  samples[35] = ChunkedApp::kOutside;  // in the last chunk, on a worker thread
  model::Replica replica = MakeReplica(app);
  try {
    RunClock(app, replica, 4, samples);
    ADD_FAILURE() << "a kernel touching a row outside the working set did not fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside its working set"), std::string::npos) << e.what();
  }
}

// End to end: the counting app's integer sums are exact (I4) with chunked
// kernels in every mode that pushes deltas.
TEST(ParallelKernelTraining, CountingSumsAreExactWithChunkedKernels) {
  const CountingApp app(/*samples=*/600, /*spin_per_sample=*/0, /*runs_in_chunks=*/true);
  for (const char* mode : {"SSP", "BSP", "ASP"}) {
    proto::Config config = TestConfig(mode, 2, /*memory_ranks=*/2, /*epochs=*/3, /*samples_per_clock=*/40);
    config.mutable_training()->set_threads_per_rank(3);
    const LocalRun run = RunLocal(config, app, 4);
    EXPECT_EQ(run.report().model_checksum(), model::HexDigest(model::ModelChecksum(app.ExpectedModel(3))))
        << mode << ": merged model differs from the exact sums";
  }
}

// MF on MovieLens, priced on the timing backend (deterministic): two threads
// per compute rank give the same bits on every run, a different model from
// one thread (the chunked path ran), and the same quality.
TEST(ParallelKernelTraining, MfWithTwoThreadsIsDeterministicAndTrainsAsWell) {
  const std::filesystem::path file = MovieLensFile();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched; run: deploy/fetch-data.sh movielens";
  proto::Config config = TestConfig("SSP", 2, /*memory_ranks=*/1, /*epochs=*/5, /*samples_per_clock=*/1024);
  UseStaleLearnTiming(config);
  config.mutable_cluster()->set_slot_bytes(1 << 20);
  config.mutable_data()->set_name("movielens");
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, file));

  const proto::Report one = RunLocal(config, *app, 3).report();
  config.mutable_training()->set_threads_per_rank(2);
  const proto::Report two = RunLocal(config, *app, 3).report();
  const proto::Report again = RunLocal(config, *app, 3).report();
  EXPECT_EQ(two.model_checksum(), again.model_checksum()) << "threads_per_rank 2 is not deterministic";
  EXPECT_NE(two.model_checksum(), one.model_checksum()) << "the chunked kernel did not run";
  ASSERT_EQ(two.final().metric(), "test_rmse");
  EXPECT_TRUE(std::isfinite(two.final().value()));
  EXPECT_NEAR(two.final().value(), one.final().value(), 0.02) << "chunked kernels train worse than one thread";
  EXPECT_LT(two.curve(two.curve_size() - 1).metric_value(), two.curve(0).metric_value()) << "no progress";
}

}  // namespace
}  // namespace stalelearn::testing

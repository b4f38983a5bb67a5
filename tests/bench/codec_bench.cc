// The batch codec and the checksum under it, one thread: encoding a batch
// (rows appended, sealed in place, the buffer recycled), decoding it with full
// validation (header and payload checksums, every row's table and shard),
// and XXH3-64 alone over 64 bytes (a header), 4 KiB and 1 MiB. Bytes per
// second are of the encoded batch (or the hashed bytes).
//
//   build/tests/bench/codec_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>
#include <vector>

#include "framework/core/error.h"
#include "framework/model/hash64.h"
#include "framework/sync/batch_codec.h"

namespace stalelearn::sync {
namespace {

constexpr std::int64_t kRows = 1 << 20;

model::ModelLayout Layout(std::int32_t width) {
  return model::ModelLayout({{"w", model::ElementType::kFloat32, kRows, width}}, 1, model::PartitionScheme::kRange);
}

// Distinct random rows filling about `batch_bytes`.
std::vector<std::int64_t> RowsFor(std::int32_t width, std::size_t batch_bytes) {
  const std::size_t n = batch_bytes / (kEntryPrefixBytes + static_cast<std::size_t>(width) * 4);
  std::vector<std::int64_t> rows(kRows);
  std::iota(rows.begin(), rows.end(), 0);
  std::shuffle(rows.begin(), rows.end(), std::mt19937_64(1));
  rows.resize(n);
  return rows;
}

// Args: row width, batch KiB.
void BM_EncodeBatch(benchmark::State& state) {
  const auto width = static_cast<std::int32_t>(state.range(0));
  const model::ModelLayout layout = Layout(width);
  const std::vector<std::int64_t> rows = RowsFor(width, static_cast<std::size_t>(state.range(1)) << 10);
  const std::vector<float> delta(static_cast<std::size_t>(width), 0.25f);
  BatchEncoder encoder(layout.tables());
  std::size_t bytes = 0;
  for (auto _ : state) {
    for (std::int64_t r : rows) encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
    std::vector<std::byte> batch = encoder.Seal(1, 0, kEndOfClock);
    bytes = batch.size();
    benchmark::DoNotOptimize(batch.data());
    encoder.Recycle(std::move(batch));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows.size()));
}

void BM_DecodeBatch(benchmark::State& state) {
  const auto width = static_cast<std::int32_t>(state.range(0));
  const model::ModelLayout layout = Layout(width);
  const std::vector<std::int64_t> rows = RowsFor(width, static_cast<std::size_t>(state.range(1)) << 10);
  const std::vector<float> delta(static_cast<std::size_t>(width), 0.25f);
  BatchEncoder encoder(layout.tables());
  for (std::int64_t r : rows) encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
  const std::vector<std::byte> batch = encoder.Seal(1, 0, kEndOfClock);
  for (auto _ : state) {
    Result<DecodedBatch> decoded = DecodeBatch(batch, 1, layout, model::MemoryIndex{0});
    if (!decoded.ok()) state.SkipWithError(decoded.status().ToString().c_str());
    benchmark::DoNotOptimize(decoded->entries.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * batch.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows.size()));
}

// Arg: bytes hashed.
void BM_Hash64(benchmark::State& state) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(state.range(0)));
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 131);
  for (auto _ : state) benchmark::DoNotOptimize(model::Hash64(bytes, 7));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}

BENCHMARK(BM_EncodeBatch)->ArgsProduct({{21, 1024}, {256, 1024}})->ArgNames({"width", "KiB"});
BENCHMARK(BM_DecodeBatch)->ArgsProduct({{21, 1024}, {256, 1024}})->ArgNames({"width", "KiB"});
BENCHMARK(BM_Hash64)->Arg(64)->Arg(4096)->Arg(1 << 20);

}  // namespace
}  // namespace stalelearn::sync

BENCHMARK_MAIN();

// The app API (v2): everything an app uses of stalelearn. An app declares its
// tables, a kernel that updates the model through a ModelView (the compute
// rank's replica, or the rows DIRECT mode fetched), and an evaluation. The
// runtime does the rest: deals samples to compute ranks, runs the kernel
// clock by clock under the configured consistency mode, ships what changed
// to the memory ranks (which merge it with each table's merge policy), and
// evaluates the merged model.
//
// What an app may bring beyond the basics:
//   - per-compute-rank local state (CreateLocalState), built from that rank's
//     samples, kept by the runtime and handed to every kernel call
//     (e.g. a topic model's per-token assignments and per-document counts);
//   - a kernel context: rank, epoch, clock and a deterministic random stream
//     per (seed, rank, clock), so emulation stays bit-reproducible;
//   - a per-sample kernel (Update) or a mini-batch kernel (UpdateBatch);
//   - dense tables (TableSpec::dense: every row changes every clock), shipped
//     without per-row touch bookkeeping;
//   - data-dependent initialisation (InitializeFromData): writes made before
//     clock 0 on every compute rank, summed across ranks before clock 0;
//   - evaluation in parts (EvaluatesInParts): every compute rank evaluates
//     its part (e.g. its share of the test set, or with its local state) and
//     the runtime sums the parts over ranks.
//
// A complete small app (counts how often each of 16 buckets is visited):
//
//   using namespace stalelearn::runtime;
//   class CountApp final : public App {
//    public:
//     std::string name() const override { return "count"; }
//     std::string dataset() const override { return "synthetic"; }
//     std::vector<TableSpec> Tables() const override {
//       return {{"counts", ElementType::kInt32, /*rows=*/16, /*width=*/1}};
//     }
//     std::int64_t TrainingSamples() const override { return 1000; }
//     void RowsOf(std::int64_t s, std::vector<RowRef>& rows) const override {
//       rows.push_back({TableId{0}, RowId{s % 16}});
//     }
//     void Update(std::int64_t s, ModelView& model, KernelContext& ctx) const override {
//       model.IntRow(TableId{0}, RowId{s % 16})[0] += 1;
//       ctx.work.flops += 1;
//       ctx.work.random_row_accesses += 1;
//     }
//     Evaluation Evaluate(const TableSet& model) const override {
//       double total = 0;
//       for (std::int64_t r = 0; r < 16; ++r) total += model[0].IntRow(r)[0];
//       return {"total", total};
//     }
//   };
//
// Registering it (its config section, defaults, validation and factory) is
// one call; see framework/runtime/app_registry.h and apps/README.md.
//
// Threading: the runtime calls the kernels, RowsOf and the evaluation
// concurrently from several compute ranks (threads in single-process
// emulation) with distinct views, contexts and local states, so the app
// object itself must not be mutated: every method is const. Lifetimes: the
// app object outlives the run; a LocalState lives for the rank's run.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/status.h"
#include "framework/metrics/work_counters.h"
#include "framework/model/model_view.h"
#include "framework/model/rank_index.h"
#include "framework/model/row_block.h"
#include "framework/model/shard_layout.h"
#include "framework/model/table_spec.h"
#include "framework/runtime/random_stream.h"

namespace stalelearn::runtime {

using metrics::WorkCounters;
using model::ElementType;
using model::ModelView;
using model::RowId;
using model::TableId;
using model::TableSet;
using model::TableSpec;

struct RowRef {
  TableId table;
  RowId row;
};

// Consecutive samples [begin, end) that stay together on one compute rank.
struct SampleRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

struct Evaluation {
  std::string metric;  // the headline metric, e.g. "test_rmse"
  double value = 0;
  // Further metrics of the same evaluation (e.g. {"test_log_loss", 0.08}).
  std::vector<std::pair<std::string, double>> extra = {};
};

// An app's per-compute-rank state; the app subclasses it.
class LocalState {
 public:
  virtual ~LocalState() = default;
};

// Who is running a kernel and where in the run.
struct RankInfo {
  model::ComputeIndex rank;  // 0..compute_ranks-1
  int compute_ranks = 1;
  std::uint64_t seed = 0;    // config seed
};

// What a kernel call sees besides the model. `random` is seeded from (seed,
// rank, clock): the same run draws the same numbers whatever the timing.
struct KernelContext {
  RankInfo info;
  int epoch = 0;            // 0-based
  std::int64_t clock = -1;  // 0-based clock of this rank; -1 during initialisation
  RandomStream& random;
  LocalState* state;        // CreateLocalState's, or nullptr
  WorkCounters& work;       // add what the kernel did (timing backends charge it)
};

// What an evaluation part sees.
struct EvalContext {
  RankInfo info;
  const LocalState* state;  // nullptr when the app has none or one rank evaluates the whole model
};

class App {
 public:
  virtual ~App() = default;

  virtual std::string name() const = 0;     // copied into the report
  virtual std::string dataset() const = 0;  // copied into the report

  // The model's tables, the same on every rank, in a fixed order.
  virtual std::vector<TableSpec> Tables() const = 0;
  // Initial values of a row (default: zeros). Must be a pure function of
  // (table, row): every rank computes the rows it needs independently.
  virtual void InitFloatRow(TableId table, RowId row, std::span<float> values) const;
  virtual void InitIntRow(TableId table, RowId row, std::span<std::int32_t> values) const;

  // Training samples are 0..TrainingSamples()-1.
  virtual std::int64_t TrainingSamples() const = 0;
  // Groups of samples that must stay on one compute rank (consecutive
  // ranges covering 0..TrainingSamples()-1 in order). Default: each sample
  // is its own group.
  virtual std::int64_t SampleGroups() const { return TrainingSamples(); }
  virtual SampleRange GroupSamples(std::int64_t group) const { return {group, group + 1}; }

  // The compute rank's local state, built from its samples (all epochs visit
  // exactly these). Default: none.
  virtual std::unique_ptr<LocalState> CreateLocalState(const RankInfo& info,
                                                       std::span<const std::int64_t> samples) const;
  // Checkpoints (training.checkpoint): the local state as bytes after a
  // clock, and back into a state CreateLocalState made for the same rank and
  // samples (a resumed run). Default: no local state saves nothing; an app
  // whose CreateLocalState returns a state must override both, or a
  // checkpointed run stops with kUnimplemented. Restore: kDataLoss for bytes
  // that do not fit.
  virtual Result<std::vector<std::byte>> SaveLocalState(const LocalState* state) const;
  virtual Status RestoreLocalState(std::span<const std::byte> bytes, LocalState* state) const;
  // Data-dependent initialisation: runs once per compute rank before clock 0
  // (ctx.clock == -1). What it writes through `model` is a delta summed over
  // all compute ranks into the master before any rank starts clock 0 (e.g.
  // a topic model's counts of random initial assignments). Default: nothing.
  virtual bool HasDataInitialization() const { return false; }
  virtual void InitializeFromData(ModelView& model, KernelContext& ctx) const;

  // Appends the rows the kernel will touch for `sample` (DIRECT mode fetches
  // exactly these before running the kernel). Dense tables need not be named:
  // they are always fetched whole.
  virtual void RowsOf(std::int64_t sample, std::vector<RowRef>& rows) const = 0;
  // The per-sample kernel: one SGD (or sampling, or counting) step.
  virtual void Update(std::int64_t sample, ModelView& model, KernelContext& ctx) const;
  // The mini-batch kernel, for apps that use matrix routines over a batch.
  // Default: Update for each sample in order. An app overrides one of the two.
  virtual void UpdateBatch(std::span<const std::int64_t> samples, ModelView& model, KernelContext& ctx) const;
  // True when UpdateBatch may run concurrently on disjoint chunks of a
  // clock's samples, each chunk with its own KernelContext (own RandomStream
  // and WorkCounters) and its own view of the model, writing no LocalState
  // another chunk reads. Then `training.threads_per_rank` > 1 runs the
  // chunks on that many threads (framework/runtime/parallel_kernel.h).
  // Default: false (the kernel runs on one thread).
  virtual bool KernelRunsInChunks() const { return false; }

  // Evaluation of a full model (all rows of every table), by one compute rank.
  virtual Evaluation Evaluate(const TableSet& model) const;
  // Evaluation in parts: when true, every compute rank calls EvaluatePart at
  // each evaluation point with its context, the runtime adds the returned
  // vectors element-wise over ranks, and CombineParts turns the sums into
  // the metrics (e.g. {squared error, count} -> RMSE). Evaluate is unused.
  virtual bool EvaluatesInParts() const { return false; }
  virtual std::vector<double> EvaluatePart(const TableSet& model, const EvalContext& ctx) const;
  virtual Evaluation CombineParts(std::span<const double> sums) const;
};

// Fills `tables` (full size, from model::MakeTableSet) with the app's initial values.
void InitializeTables(const App& app, TableSet& tables);
// Fills memory rank `shard`'s master rows (from layout.MakeShard) likewise.
void InitializeShard(const App& app, const model::ModelLayout& layout, model::MemoryIndex shard, TableSet& rows);

}  // namespace stalelearn::runtime

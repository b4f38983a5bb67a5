// The app API (v3): everything an app uses of stalelearn. An app declares its
// tables, a kernel that updates the model through a ModelView (the compute
// rank's replica, or the rows DIRECT mode fetched), and an evaluation. The
// runtime does the rest: deals samples to compute ranks, runs the kernel
// clock by clock under the configured consistency mode, ships what changed
// to the memory ranks (which merge it with each table's merge policy), and
// evaluates the merged model.
//
// The core, class App, has eight virtual methods: name, dataset, Tables,
// InitRow, TrainingSamples, RowsOf, UpdateBatch (the kernel) and Evaluate.
// The kernel is required at compile time: UpdateBatch is pure, so an app
// either overrides it (a mini-batch kernel) or derives from SampleKernelApp
// and writes the per-sample Update; an app with neither is abstract and
// cannot be built (the concept RunnableApp says so in a static_assert).
//
// What an app may bring beyond the core, each a small interface of its own
// that the app class also derives from (framework/runtime/app_facets.h; the
// runtime finds them once per run):
//   - HasLocalState: per-compute-rank state built from that rank's samples,
//     handed to every kernel call and saved in checkpoints (e.g. a topic
//     model's per-token assignments and per-document counts);
//   - InitializesFromData: writes made before clock 0 on every compute rank,
//     summed across ranks before clock 0;
//   - EvaluatesInParts: every compute rank evaluates its part (its share of
//     the test set, or with its local state); the runtime sums the parts;
//   - GroupsSamples: consecutive samples that must stay on one compute rank;
//   - RunsKernelInChunks: the kernel may run on disjoint chunks of a clock's
//     samples on several threads (training.threads_per_rank).
// Tables are reached through typed handles (framework/model/table_handle.h):
// model.Row(counts_, row) is a span of the table's element type, and the row
// is then touched (its changes are shipped as a delta); model.ReadRow(counts_,
// row) reads without touching, for rows a kernel only reads. Kernels
// also get a context: rank, epoch, clock and a deterministic random stream
// per (seed, rank, clock), so emulation stays bit-reproducible.
//
// A complete small app (counts how often each of 16 buckets is visited):
//
//   using namespace stalelearn::runtime;
//   class CountApp final : public SampleKernelApp {
//    public:
//     CountApp() : counts_(tables_.AddInt("counts", /*rows=*/16, /*width=*/1)) {}
//     std::string name() const override { return "count"; }
//     std::string dataset() const override { return "synthetic"; }
//     std::vector<TableSpec> Tables() const override { return tables_.specs(); }
//     std::int64_t TrainingSamples() const override { return 1000; }
//     void RowsOf(std::int64_t s, std::vector<RowRef>& rows) const override {
//       rows.push_back({counts_.id, RowId{s % 16}});
//     }
//     void Update(std::int64_t s, ModelView& model, KernelContext& ctx) const override {
//       model.Row(counts_, RowId{s % 16})[0] += 1;
//       ctx.work.flops += 1;
//       ctx.work.random_row_accesses += 1;
//     }
//     Evaluation Evaluate(const TableSet& model) const override {
//       double total = 0;
//       for (std::int64_t r = 0; r < 16; ++r) total += Row(model, counts_, r)[0];
//       return {"total", total};
//     }
//
//    private:
//     TableList tables_;   // declared before the handles it hands out
//     IntTable counts_;
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

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/core/status.h"
#include "framework/metrics/work_counters.h"
#include "framework/model/model_view.h"
#include "framework/model/rank_index.h"
#include "framework/model/row_block.h"
#include "framework/model/row_range.h"
#include "framework/model/shard_layout.h"
#include "framework/model/table_handle.h"
#include "framework/model/table_spec.h"
#include "framework/runtime/random_stream.h"

namespace stalelearn::model {
class Replica;  // replica.h
}  // namespace stalelearn::model

namespace stalelearn::runtime {

using metrics::WorkCounters;
using model::ElementType;
using model::FloatTable;
using model::IntTable;
using model::ModelView;
using model::RowId;
using model::RowValues;
using model::TableId;
using model::TableList;
using model::TableSet;
using model::TableSpec;
using model::Row;

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

// An app's per-compute-rank state (HasLocalState); the app subclasses it.
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
  LocalState* state;        // HasLocalState::CreateLocalState's, or nullptr
  WorkCounters& work;       // add what the kernel did (timing backends charge it)
};

// What an evaluation part sees.
struct EvalContext {
  RankInfo info;
  const LocalState* state;  // nullptr when the app has none or one rank evaluates the whole model
  // The rows of every table this part reads (EvaluatesInParts::PartRows;
  // every row when it evaluates the whole model).
  model::ModelRows part_rows = {};
};

// The core of every app: eight virtual methods (besides the destructor).
class App {
 public:
  virtual ~App() = default;

  virtual std::string name() const = 0;     // copied into the report
  virtual std::string dataset() const = 0;  // copied into the report

  // The model's tables, the same on every rank, in a fixed order (a
  // TableList's specs(), whose Add calls hand out the typed handles).
  virtual std::vector<TableSpec> Tables() const = 0;
  // Initial values of a row, typed by the table (values.floats() or
  // values.ints()). Default: zeros. Must be a pure function of (table, row):
  // every rank computes the rows it needs independently.
  virtual void InitRow(TableId table, RowId row, RowValues values) const;

  // Training samples are 0..TrainingSamples()-1.
  virtual std::int64_t TrainingSamples() const = 0;
  // Appends the rows the kernel will touch for `sample` (DIRECT mode fetches
  // exactly these before running the kernel). Dense tables need not be named:
  // they are always fetched whole.
  virtual void RowsOf(std::int64_t sample, std::vector<RowRef>& rows) const = 0;

  // The kernel: a clock's samples (or a chunk of them, RunsKernelInChunks)
  // in order. Apps with a per-sample kernel derive from SampleKernelApp,
  // which implements this as Update for each sample in order.
  virtual void UpdateBatch(std::span<const std::int64_t> samples, ModelView& model, KernelContext& ctx) const = 0;

  // Evaluation of a full model (all rows of every table), by one compute
  // rank. Default, for an app that EvaluatesInParts: its one part over the
  // whole model (rank 0 of 1, no local state), combined; for an app that
  // evaluates neither way, metric "none" = 0.
  virtual Evaluation Evaluate(const TableSet& model) const;
};

// An app whose kernel is one step per sample (an SGD step, a count): it
// writes Update, and App's UpdateBatch runs it for each sample in order.
class SampleKernelApp : public App {
 public:
  virtual void Update(std::int64_t sample, ModelView& model, KernelContext& ctx) const = 0;
  void UpdateBatch(std::span<const std::int64_t> samples, ModelView& model, KernelContext& ctx) const final {
    for (std::int64_t s : samples) Update(s, model, ctx);
  }
};

// An app class the runtime can run: an App that is not abstract, so in
// particular it has a kernel (UpdateBatch, or SampleKernelApp's Update).
template <class T>
concept RunnableApp = std::derived_from<T, App> && !std::is_abstract_v<T>;

// Fills `tables` (full size, from model::MakeTableSet) with the app's initial values.
void InitializeTables(const App& app, TableSet& tables);
// Fills memory rank `shard`'s master rows (from layout.MakeShard) likewise.
void InitializeShard(const App& app, const model::ModelLayout& layout, model::MemoryIndex shard, TableSet& rows);
// Fills the rows `replica` holds of each table t with tables[t] != 0
// likewise (before any is touched: no delta is taken).
void InitializeHeldRows(const App& app, std::span<const std::uint8_t> tables, model::Replica& replica);

}  // namespace stalelearn::runtime

// Optional facets of an app (framework/runtime/app.h): small interfaces an
// app class derives from besides App when it needs what they bring.
//
//   class TopicApp final : public App, public HasLocalState,
//                          public InitializesFromData, public EvaluatesInParts { ... };
//
// The runtime finds an app's facets once per rank (AppFacets::Of, a
// dynamic_cast per facet at setup, kept in RankEnv::facets; never per sample
// or per clock) and calls
// only the facets an app has. An app without a facet gets the behaviour the
// facet's comment names as "without it".
//
// Threading and lifetimes as for App: every method is const and may be
// called concurrently from several compute ranks with distinct contexts and
// states. AppFacets holds pointers into the app object, valid while it lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

// Per-compute-rank local state. Without it, kernels get ctx.state == nullptr.
class HasLocalState {
 public:
  virtual ~HasLocalState() = default;
  // The compute rank's state, built from its samples (all epochs visit
  // exactly these); may be nullptr.
  virtual std::unique_ptr<LocalState> CreateLocalState(const RankInfo& info,
                                                       std::span<const std::int64_t> samples) const = 0;
  // Checkpoints (training.checkpoint): the state as bytes after a clock, and
  // back into a state CreateLocalState made for the same rank and samples (a
  // resumed run). Restore: kDataLoss for bytes that do not fit. Default:
  // kUnimplemented, so a checkpointed run of an app that keeps a state but
  // cannot save it stops (the runtime names the app). A null state is never
  // passed: the runtime saves nothing for it.
  virtual Result<std::vector<std::byte>> SaveLocalState(const LocalState* state) const;
  virtual Status RestoreLocalState(std::span<const std::byte> bytes, LocalState* state) const;
};

// Data-dependent initialisation. Without it, training starts at clock 0 from
// App::InitRow's values.
class InitializesFromData {
 public:
  virtual ~InitializesFromData() = default;
  // Runs once per compute rank before clock 0 (ctx.clock == -1). What it
  // writes through `model` is a delta summed over all compute ranks into the
  // master before any rank starts clock 0 (e.g. a topic model's counts of
  // random initial assignments).
  virtual void InitializeFromData(ModelView& model, KernelContext& ctx) const = 0;
};

// Evaluation in parts. Without it, compute rank 0 evaluates the whole merged
// model with App::Evaluate.
class EvaluatesInParts {
 public:
  virtual ~EvaluatesInParts() = default;
  // Every compute rank calls EvaluatePart at each evaluation point with its
  // context; the runtime adds the returned vectors element-wise over ranks
  // and CombineParts turns the sums into the metrics (e.g. {squared error,
  // count} -> RMSE).
  virtual std::vector<double> EvaluatePart(const TableSet& model, const EvalContext& ctx) const = 0;
  virtual Evaluation CombineParts(std::span<const double> sums) const = 0;
  // The rows of `table` (`rows` long) that part `part` of `parts` reads
  // (ctx.part_rows): every row (the default), or a range: then each rank
  // reads just those rows of that table from the memory ranks (the other
  // rows of the model EvaluatePart gets hold anything), so a large table
  // costs an evaluation about one read of it over all ranks rather than one
  // per rank (e.g. a 2-D grid of parts over two tables). The parts'
  // ranges of a table must tile it: parts that read the same range share
  // it, different ranges are disjoint and cover every row. A pure function
  // of its arguments. A run that needs the whole model on one rank (early
  // stopping names its best by the whole model's checksum; surviving a dead
  // rank loses its part) evaluates an app whose parts read ranges whole,
  // with App::Evaluate (AppFacets::ForRun).
  virtual model::RowRange PartRows(TableId /*table*/, std::int64_t rows, int /*part*/, int /*parts*/) const {
    return {0, rows};
  }
};

// Every part's range of `table` (`rows` long) over `parts` parts: PartRows
// of part 0..parts-1.
std::vector<model::RowRange> RowsOfEveryPart(const EvaluatesInParts& in_parts, TableId table, std::int64_t rows,
                                             int parts);

// Sample groups: consecutive ranges of samples that must stay on one compute
// rank. Without it, each sample is its own group.
class GroupsSamples {
 public:
  virtual ~GroupsSamples() = default;
  // Groups 0..SampleGroups()-1 cover 0..TrainingSamples()-1 in order.
  virtual std::int64_t SampleGroups() const = 0;
  virtual SampleRange GroupSamples(std::int64_t group) const = 0;
};

// A kernel that may run in chunks: UpdateBatch may run concurrently on
// disjoint chunks of a clock's samples, each chunk with its own KernelContext
// (own RandomStream and WorkCounters) and its own view of the model, writing
// no LocalState another chunk reads. Then training.threads_per_rank > 1 runs
// the chunks on that many threads (framework/runtime/parallel_kernel.h).
// Without it, the kernel runs on one thread.
class RunsKernelInChunks {
 public:
  virtual ~RunsKernelInChunks() = default;
  // Default true; an app whose kernel runs in chunks only in some
  // configurations says so here.
  virtual bool KernelRunsInChunks() const { return true; }
};

// The facets an app has (nullptr: not implemented), found once.
struct AppFacets {
  const HasLocalState* local_state = nullptr;
  const InitializesFromData* data_initialization = nullptr;
  const EvaluatesInParts* parts = nullptr;
  const GroupsSamples* groups = nullptr;
  const RunsKernelInChunks* chunks = nullptr;

  static AppFacets Of(const App& app);
  // The facets a run of `config` with `compute_ranks` uses: Of(app), but
  // without parts for an app whose parts read ranges of some table
  // (EvaluatesInParts::PartRows) where the run needs the whole model on one
  // rank: it stops early or survives dead ranks.
  static AppFacets ForRun(const App& app, const proto::Config& config, int compute_ranks);
  // Ok, or kInvalidArgument naming a table whose evaluation parts' rows
  // (EvaluatesInParts::PartRows) over `compute_ranks` do not tile it:
  // overlap, leave a row out or run past the table.
  Status CheckPartRows(const App& app, int compute_ranks) const;

  bool evaluates_in_parts() const { return parts != nullptr; }
  bool initializes_from_data() const { return data_initialization != nullptr; }
  bool kernel_runs_in_chunks() const { return chunks != nullptr && chunks->KernelRunsInChunks(); }
  // The schedule's groups: the facet's, or one per sample.
  std::int64_t SampleGroups(const App& app) const {
    return groups != nullptr ? groups->SampleGroups() : app.TrainingSamples();
  }
  SampleRange GroupSamples(std::int64_t group) const {
    return groups != nullptr ? groups->GroupSamples(group) : SampleRange{group, group + 1};
  }
  // The rank's local state, or nullptr without the facet.
  std::unique_ptr<LocalState> CreateLocalState(const RankInfo& info, std::span<const std::int64_t> samples) const;
  // A checkpoint's bytes of `state` (none for a null state), and back;
  // errors name the app.
  Result<std::vector<std::byte>> SaveLocalState(const App& app, const LocalState* state) const;
  Status RestoreLocalState(const App& app, std::span<const std::byte> bytes, LocalState* state) const;
};

}  // namespace stalelearn::runtime

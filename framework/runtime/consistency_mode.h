// A consistency mode is a policy of the one clock loop (clock_loop.h): what
// a compute rank does before a clock (SSP: gate and refresh; DIRECT: fetch
// the clock's rows; ALLREDUCE: nothing), after it (push; push and wait for
// the merge; allreduce), and how it reads the model for evaluation. Modes
// are registered by name like backends; adding one is a new file under
// framework/runtime/modes/ and one registration line (builtin_modes.cc), or
// a registration from an app's program.
//
//   ModeRegistry modes;
//   ThrowIfError(RegisterBuiltinModes(modes));
//   const ModeDefinition* ssp = ValueOrThrow(modes.Find("SSP"));
//
// Clock numbers given to a mode are protocol clocks: when the app has
// data-dependent initialisation, clock 0 carries it (ShareInitialization)
// and training clocks start at 1.
//
// Threading: one ConsistencyMode per compute rank, used by that rank's
// thread only. The registry: Add during start-up, then read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "framework/model/row_range.h"
#include "framework/model/replica.h"
#include "framework/runtime/data_plane.h"
#include "framework/runtime/rank_env.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {

// Rows of the model an evaluation reads (an evaluation part's,
// EvaluatesInParts): one range per table, or an empty span: every row.
using ModelRows = model::ModelRows;

class ConsistencyMode {
 public:
  virtual ~ConsistencyMode() = default;

  // The model the kernel reads and writes during a clock.
  virtual model::ModelView& view() = 0;
  // The replica when the mode keeps one (tests inspect the rows it holds
  // after each refresh: RuntimeHooks::after_refresh), else nullptr.
  virtual const model::Replica* replica() const { return nullptr; }
  // After the app's InitializeFromData wrote into view() (as protocol clock
  // 0): makes the sum of every compute rank's writes part of this rank's
  // model before it returns.
  virtual Status ShareInitialization() = 0;
  // Before clock `clock`, whose samples are `samples`. Fills record's
  // min_merged_of_others, observed_staleness, and adds to stall_seconds.
  virtual Status BeforeClock(std::int64_t clock, std::span<const std::int64_t> samples, ClockRecord& record) = 0;
  // Stratified scheduling (locality_plan.h): until the next call, the
  // kernel reads only rows [first, last) of `table` (and any row of other
  // tables). A mode with a replica may stop refreshing that table's other
  // rows and must make the range fresh before returning; adds its wait to
  // stall_seconds. `until`: the clock the next call comes before (the
  // sub-epoch's end; or the run's). `writer_before`: the compute rank that
  // wrote the range last, the last other writer of its rows before `until`
  // (-1: any other rank may have); its clocks before `settled_before` hold
  // all its writes of them (locality_plan.h: Focus). Default: nothing
  // (every row stays fresh).
  virtual Status FocusRows(model::TableId /*table*/, std::int64_t /*first*/, std::int64_t /*last*/,
                           std::int64_t /*until*/, model::ComputeIndex /*writer_before*/,
                           std::int64_t /*settled_before*/, ClockRecord& /*record*/) {
    return Status::Ok();
  }
  // Stratified scheduling: the range the next FocusRows will name, with its
  // `writer_before` and `settled_before` (called right after each FocusRows
  // but the last of an epoch). A mode may start loading it while the kernel
  // runs on the current one. Default: nothing.
  virtual Status PrefetchFocus(model::TableId /*table*/, std::int64_t /*first*/, std::int64_t /*last*/,
                               model::ComputeIndex /*writer_before*/, std::int64_t /*settled_before*/) {
    return Status::Ok();
  }
  // Before ShareInitialization, under stratified scheduling: `table` will
  // be read only through FocusRows ranges, so a mode may leave it out of
  // what it reads before the first. Default: nothing.
  virtual void WillFocus(model::TableId /*table*/) {}
  // Before the first clock of a run that starts at clock 0 from the app's
  // initial values (App::InitRow: no checkpoint, no initialization from
  // data), whose memory ranks' first generation holds exactly those: a mode
  // may set rows from App::InitRow instead of reading them. Default: nothing.
  virtual void StartsFromInitialValues() {}
  // After the kernel ran: ships the clock's changes, or holds them for a
  // later clock's push where nobody reads them before (SSP inside a
  // stratum); adds to stall_seconds.
  virtual Status AfterClock(std::int64_t clock, ClockRecord& record) = 0;
  // Ships what AfterClock held, as of the last clock run (before a
  // checkpoint's cut: CheckpointingMode). Default: nothing is held.
  virtual Status PushHeld() { return Status::Ok(); }
  // The merged model for an evaluation during the run: rows `rows` of it
  // (ModelRows), at least; the other rows of `model` are left as they are.
  virtual Status ReadModel(TableSet& model, ModelRows rows) = 0;
  // After the last clock (`total_clocks` protocol clocks): nothing more is pushed.
  virtual Status Finish(std::uint64_t total_clocks) = 0;
  // After Finish: the model with every clock of every rank merged (rows
  // `rows` of it at least, as ReadModel).
  virtual Status ReadFinalModel(TableSet& model, ModelRows rows) = 0;
  // The last call to the memory ranks (after ReadFinalModel, if any).
  virtual Status Release() = 0;
};

// What a mode is built from on one compute rank. `endpoints` and `geometry`
// are set only for modes that use memory ranks (the mode takes the endpoints).
// `schedule`: the rank's samples (its clock loop's; outlives the mode).
struct ModeContext {
  const RankEnv& env;
  model::ComputeIndex me;
  const SampleSchedule& schedule;
  ComputeEndpoints* endpoints = nullptr;
  const DataPlaneGeometry* geometry = nullptr;
};

struct ModeDefinition {
  std::string name;  // upper-case, e.g. "SSP"
  bool uses_memory_ranks = true;
  // The bound the report prints for a config (-1: unbounded).
  std::function<int(const proto::Config&)> reported_staleness;
  std::function<Result<std::unique_ptr<ConsistencyMode>>(ModeContext&)> create;
};

class ModeRegistry {
 public:
  // kInvalidArgument if the name is taken or not upper-case.
  Status Add(ModeDefinition mode);
  // kInvalidArgument naming the known modes if `name` is unknown (names are
  // compared case-insensitively).
  Result<const ModeDefinition*> Find(std::string_view name) const;
  std::string KnownNames() const;

 private:
  std::map<std::string, ModeDefinition, std::less<>> modes_;
};

// SSP, BSP, ASP, DIRECT, ALLREDUCE (framework/runtime/modes/).
Status RegisterBuiltinModes(ModeRegistry& registry);

}  // namespace stalelearn::runtime

// SSP (BSP with s = 0, ASP unbounded; ESSP eager): the StaleLearn path. Before clock t:
// if the replica lacks some other rank's clocks 0..t-s-1, wait until they are
// merged (I1) and refresh the replica: newer snapshots + own unmerged deltas
// (I2); otherwise keep computing on the replica. Under a merge that is not
// master += delta (adam, adagrad, average) the rank's own clocks 0..t-s-1
// must be in the installed snapshot too: its raw own deltas are not what the
// master made of them (with one compute rank the replica was otherwise never
// refreshed, and trained on plain local SGD while the master ran Adam).
// ESSP (eager SSP, Dai et al. AAAI 2015): the same bound, but the replica
// takes in what the memory ranks published before every clock, not only
// when the bound forces it, so fresh rows reach the kernel as soon as they
// are merged and published; the bound (I1) and read-your-writes (I2) hold as
// under SSP. A refresh with nothing new reads one snapshot header. After the clock: push the
// deltas of touched rows through the rings (backpressure, I5).
// Inside a stratum (a stratified sub-epoch whose rows no other rank can
// change: InStratum) a clock neither waits nor refreshes: what it reads
// lacks no other rank's update, and a rank waits only where its stripe
// moves, for the one rank that wrote the next stripe before it.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "framework/core/planted_defect.h"
#include "framework/core/thread_cpu_time.h"
#include "framework/model/replica.h"
#include "framework/runtime/compute_links.h"
#include "framework/runtime/merge_config.h"
#include "framework/runtime/modes/builtin_modes.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/stop_agreement.h"
#include "framework/runtime/stripe_hand_over.h"
#include "framework/runtime/tables_written_alone.h"
#include "framework/runtime/working_set.h"
#include "framework/sync/staleness_gate.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::runtime::modes {
namespace {

std::int64_t ObservedStaleness(std::uint64_t clock, std::uint64_t min_merged_of_others) {
  // UINT64_MAX: no other compute rank, nothing can be stale.
  return clock > min_merged_of_others ? static_cast<std::int64_t>(clock - min_merged_of_others) : 0;
}

// A merge that is not master += delta on some table: own clocks count (a
// policy that cannot be built fails on the memory ranks; here the safe side
// is taken).
bool CountsOwnClocks(const RankEnv& env) {
  if (DefectPlanted(PlantedDefect::kOwnClocksNotCounted)) return false;
  Result<bool> adds = MergesAddDeltas(env.merge, env.layout.tables());
  return !adds.ok() || !*adds;
}

// Every table merged by `sum`: a stratum's batches may carry values (WritesValues).
bool MergesBySum(const RankEnv& env) {
  return std::all_of(env.merge.begin(), env.merge.end(),
                     [](const sync::MergePolicySpec& spec) { return spec.name == "sum"; });
}

class SspConsistency final : public ConsistencyMode {
 public:
  SspConsistency(ModeContext& context, sync::StalenessBound bound, bool eager)
      : env_(context.env),
        me_(context.me),
        links_(context.env, std::move(*context.endpoints), *context.geometry, /*keep_pending=*/true),
        bound_(bound),
        replica_(context.env.layout.tables(), WorkingSetOf(context.env, context.schedule)),
        counts_own_clocks_(CountsOwnClocks(context.env)),
        merges_by_sum_(MergesBySum(context.env)),
        eager_(eager),
        hand_over_(context.env, context.me, links_, replica_) {
    links_.refresher.set_counts_own_clocks(counts_own_clocks_);
    // A stratified run's stripes: the memory ranks gather the held rows.
    if (links_.gather != nullptr) links_.refresher.EnableGather(links_.gather.get(), &replica_);
    FindTablesWrittenAlone();
  }

  model::ModelView& view() override { return replica_; }
  const model::Replica* replica() const override { return &replica_; }

  Status ShareInitialization() override {
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds stalled, links_.pusher.PushClock(replica_, 0));
    (void)stalled;
    // Everyone's clock 0 (their initialisation) must be in the installed model.
    ClockRecord record;
    return GateAndRefresh(1, sync::StalenessBound::Of(0), record);
  }

  Status BeforeClock(std::int64_t clock, std::span<const std::int64_t>, ClockRecord& record) override {
    if (InStratum()) {
      // Every other rank's update of every row this clock reads is in the
      // replica (InStratum): none is missing, whatever clock they are at.
      record.min_merged_of_others = static_cast<std::uint64_t>(clock);
      record.observed_staleness = 0;
      record.in_stratum = true;
      return Status::Ok();
    }
    return GateAndRefresh(static_cast<std::uint64_t>(clock), bound_, record);
  }

  Status AfterClock(std::int64_t clock, ClockRecord& record) override {
    last_clock_ = clock;
    // Reads ahead dropped since the last clock (a stop's, in Finish, is not one).
    record.stripes_read_ahead_dropped =
        static_cast<std::int64_t>(links_.refresher.counters().reads_ahead_dropped - dropped_reported_);
    dropped_reported_ = links_.refresher.counters().reads_ahead_dropped;
    if (record.in_stratum && !hand_over_.stratum().PushDue(clock)) {
      held_clock_ = clock;  // its deltas stay in the replica until a later push
      return hand_over_.AfterClock(clock, record);
    }
    held_clock_ = -1;
    // Tables no other rank reads stay back until the epoch's last clock, a
    // cut (PushHeld) or a stop (decided a clock ahead for this rank:
    // StopAgreement::set_commits_ahead).
    const bool stopping = env_.stop != nullptr && env_.stop->stop().has_value();
    const bool keep = record.in_stratum && !record.ends_epoch && !kept_tables_.empty() && !stopping;
    // A push inside a stratum but its last skips the memory ranks it has no
    // delta for (most of them: the stripe's rows live on one or two); the
    // stratum's last push tells every memory rank the clocks are in.
    const bool only_with_deltas =
        record.in_stratum && !record.ends_epoch && !hand_over_.stratum().Ends(clock) && !stopping;
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds push_stall,
                                links_.pusher.PushClock(replica_, static_cast<std::uint64_t>(clock),
                                                        record.staleness_epochs,
                                                        keep ? std::span<const std::uint8_t>(kept_tables_)
                                                             : std::span<const std::uint8_t>(),
                                                        only_with_deltas, WritesValues(record)));
    kept_clock_ = keep ? clock : -1;
    record.stall_seconds += std::chrono::duration<double>(push_stall).count();
    STALELEARN_RETURN_IF_ERROR(hand_over_.AfterClock(clock, record));
    return DropMergedPending();
  }

  Status PushHeld() override {
    // Held clocks are later than the last push; kept tables' deltas
    // (AfterClock) go out again as that push's clock (a batch's clock only
    // raises the merged clock: ring_poller.cc): at a cut, whose memory-side
    // part takes every batch of a clock before it. Not at a stop (Finish).
    const std::int64_t clock = std::max(held_clock_, kept_clock_);
    if (clock < 0) return Status::Ok();
    STALELEARN_RETURN_IF_ERROR(links_.pusher.PushClock(replica_, static_cast<std::uint64_t>(clock)).status());
    held_clock_ = -1;
    kept_clock_ = -1;
    return Status::Ok();
  }

  // The stripe moves (stripe_hand_over.h).
  Status FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::int64_t until,
                   model::ComputeIndex writer_before, std::int64_t settled_before, ClockRecord& record) override {
    return hand_over_.FocusRows(table, first, last, until, writer_before, settled_before, record);
  }
  Status PrefetchFocus(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
                       std::int64_t settled_before) override {
    return hand_over_.PrefetchFocus(table, first, last, writer_before, settled_before);
  }
  void WillFocus(model::TableId table) override { links_.refresher.set_focus_table(table); }
  // A table written alone holds, at the first generation, exactly what
  // App::InitRow gives its rows (no other rank writes them): set, not read.
  // At 4:1 a rank's users spread over the whole table, whose first read
  // got it whole (16 MB of the synthetic set's, twice with its patch).
  void StartsFromInitialValues() override {
    if (kept_tables_.empty()) return;
    InitializeHeldRows(env_.app, kept_tables_, replica_);
    links_.refresher.set_tables_set_initially(kept_tables_);
  }
  // With tables kept back, the other ranks' kept rows go out only at their
  // epoch's end: an evaluation waits until every rank's clocks up to this
  // rank's epoch end are merged, so its model holds every rank's whole
  // epoch, not rows an epoch behind for the ranks still in it.
  Status ReadModel(TableSet& model, ModelRows rows) override {
    STALELEARN_RETURN_IF_ERROR(PushHeld());  // what the model lacks of this rank's (none at an epoch's end)
    if (!kept_tables_.empty()) {
      STALELEARN_RETURN_IF_ERROR(links_.pusher.Complete());
      STALELEARN_RETURN_IF_ERROR(links_.AwaitMergedBefore(env_, static_cast<std::uint64_t>(last_clock_ + 1))
                                     .WithContext(fmt::format("compute rank {}, before it evaluates", me_.value)));
    }
    return links_.refresher.ReadMergedRows(model, rows);
  }
  Status Finish(std::uint64_t total_clocks) override {
    total_clocks_ = total_clocks;
    STALELEARN_RETURN_IF_ERROR(hand_over_.Finish());
    if (held_clock_ < 0 && kept_clock_ >= 0) {
      // The last clock's push kept rows back: pushed now, they would come
      // after that push claimed the clock, and the final read waits only
      // for clocks. A stop is decided a clock ahead (set_commits_ahead)
      // so that never happens; should it, fail rather than lose them.
      return Internal(fmt::format("compute rank {}: rows kept back after its last clock {} (a stop it did not "
                                  "know of before that clock's push)",
                                  me_.value, kept_clock_));
    }
    STALELEARN_RETURN_IF_ERROR(PushHeld());  // a stop inside a stratum: the held clocks go out first
    return links_.pusher.Finish();
  }
  Status ReadFinalModel(TableSet& model, ModelRows rows) override {
    return links_.ReadFinalModel(env_, total_clocks_, model, rows);
  }
  Status Release() override { return links_.Release(); }

 private:
  // SSP reads from its replica while it is fresh enough (Petuum's SSP cache):
  // a replica that already holds every other rank's clocks 0..t-s-1 serves
  // clock t without touching the network. Own updates are in it already (I2).
  // Unbounded (ASP) refreshes every clock, as nothing would ever force it to.
  // The merged clock every other rank needs for clock t to start under `bound`.
  static std::uint64_t NeededMergedClock(std::uint64_t t, sync::StalenessBound bound) {
    const auto s = static_cast<std::uint64_t>(std::max(bound.value(), 0));
    return t > s ? t - s : 0;
  }

  // A stratified sub-epoch in which no row the replica holds can change but
  // by this rank's own writes (ReplicaRefresher::OnlyOwnWritesChangeHeldRows:
  // a settled stripe, every other table written alone, a first read done).
  // FocusRows loaded the stripe with every earlier writer's clocks before
  // the sub-epoch; until the next FocusRows no other rank writes a row this
  // rank reads (strata are disjoint, the other tables' rows have one
  // writer). So the bound holds on every read with nothing missing, and a
  // refresh could install nothing: the clock skips the gate, the refresh
  // and their round trips (DSGD's sub-epochs: the ranks synchronise only
  // where the stripes move, each with the stripe's writer before it). A
  // rank may then lead another by several sub-epochs, never into a stripe
  // the other still writes: rank i's stripe in sub-epoch t is rank i+k's in
  // t-k, which ended before rank i+1's t-1 began, and comes back to rank
  // i+k only in t-k+C, which waits for rank i's t.
  // In a stratum this rank is the one writer of every row its replica
  // holds (InStratum), so under sum the master's row after its batch is the
  // replica's row: the batch carries values, which the memory rank writes
  // instead of reading, adding and writing back (sync::kRowValues).
  bool WritesValues(const ClockRecord& record) const { return record.in_stratum && merges_by_sum_; }

  bool InStratum() const {
    return links_.refresher.focused() && installed_ &&
           (DefectPlanted(PlantedDefect::kStratumWithSharedRows) ||
            links_.refresher.OnlyOwnWritesChangeHeldRows(replica_));
  }

  Status GateAndRefresh(std::uint64_t t, sync::StalenessBound bound, ClockRecord& record) {
    if (installed_ && !eager_ && bound.bounded() && bound.Allows(t, installed_min_merged_)) {
      record.min_merged_of_others = installed_min_merged_;
      record.observed_staleness = ObservedStaleness(t, installed_min_merged_);
      return Status::Ok();
    }
    // A refresh may drop pending batches: their puts must be complete.
    STALELEARN_RETURN_IF_ERROR(links_.pusher.Complete());
    sync::StalenessGate gate(links_.clocks, me_, bound, env_.transport, env_.wait, counts_own_clocks_);
    std::chrono::nanoseconds refreshing{0};
    std::chrono::nanoseconds refresh_cpu{0};
    const std::uint64_t rows_before = links_.refresher.counters().rows_installed;
    const std::uint64_t meta_only_before = links_.refresher.counters().meta_only_reads;
    std::uint64_t min_merged = 0;
    // The control block can run ahead of the snapshot we install: the
    // installed model itself must satisfy the bound, so refresh until it does.
    STALELEARN_ASSIGN_OR_RETURN(
        std::chrono::nanoseconds waited,
        sync::WaitUntil(
            env_.wait, env_.transport,
            [&]() -> Result<bool> {
              STALELEARN_RETURN_IF_ERROR(gate.WaitUntilAllowed(t).status());
              const auto refresh_start = std::chrono::steady_clock::now();
              const std::chrono::nanoseconds cpu_start = ThreadCpuTime();
              STALELEARN_ASSIGN_OR_RETURN(min_merged, links_.refresher.Refresh(replica_));
              refresh_cpu += ThreadCpuTime() - cpu_start;
              refreshing += std::chrono::steady_clock::now() - refresh_start;
              replica_.RebaseWritten();  // the rows the refresh installed (it notes them)
              installed_ = true;
              installed_min_merged_ = min_merged;
              return bound.Allows(t, min_merged);
            },
            [&] {
              return fmt::format("snapshot: one that lets compute rank {} start clock {} under bound {} (the last "
                                 "held the slowest other rank's clocks below {}); behind: {}",
                                 me_.value, t, bound.value(), min_merged,
                                 sync::DescribeLaggards(links_.clocks, sync::NotWaitedFor(me_, counts_own_clocks_),
                                                        NeededMergedClock(t, bound)));
            }));
    record.min_merged_of_others = min_merged;
    record.observed_staleness = ObservedStaleness(t, min_merged);
    // Stall: waiting at the gate and idling between refreshes, not refreshing.
    record.stall_seconds += std::chrono::duration<double>(waited - refreshing).count();
    const std::uint64_t rows = links_.refresher.counters().rows_installed - rows_before;
    record.refresh_cpu_seconds += std::chrono::duration<double>(refresh_cpu).count();
    record.rows_refreshed += static_cast<std::int64_t>(rows);
    record.meta_only_reads += static_cast<std::int64_t>(links_.refresher.counters().meta_only_reads - meta_only_before);
    // The refresh's own work (a calibrated kernel prices its rows).
    if (rows > 0) STALELEARN_RETURN_IF_ERROR(env_.wait.time->ChargeCompute({.rows_refreshed = double(rows)}));
    return Status::Ok();
  }

  // Tables only this rank writes need no records (tables_written_alone.h):
  // with one compute rank all of them; with several, looked for only under
  // stratified scheduling, where they leave the focus as the one table
  // others write (elsewhere a shared table is the rule and the pass over
  // every sample would buy nothing). Own records count only under
  // master += delta, and a full replica holds rows others write.
  void FindTablesWrittenAlone() {
    const int ranks = env_.roles.compute_ranks();
    if (counts_own_clocks_ || env_.config.training().full_replicas()) return;
    if (ranks > 1 && StrataOf(env_.config, ranks) <= 1) return;
    const RowNamers none;  // one rank: no pass, it writes every table alone
    if (ranks > 1) row_namers_ = FindRowNamers(env_.app, ranks, env_.config.seed());
    std::vector<bool> alone = TablesWrittenAlone(row_namers_ != nullptr ? *row_namers_ : none, ranks, me_, replica_);
    if (ranks > 1 && std::find(alone.begin(), alone.end(), true) != alone.end()) {
      kept_tables_.assign(alone.begin(), alone.end());
      if (env_.stop != nullptr) env_.stop->set_commits_ahead();
    }
    links_.refresher.set_tables_written_alone(std::move(alone));
  }

  // Pending batches wait for a refresh to be dropped; a rank that rarely
  // refreshes drops those the control blocks say are included, once they
  // exceed what the rings can hold.
  Status DropMergedPending() {
    const std::size_t limit = 2 * static_cast<std::size_t>(env_.config.cluster().ring_slots()) *
                              static_cast<std::size_t>(links_.clocks.memory_ranks());
    if (links_.refresher.pending_batches() <= limit) return Status::Ok();
    STALELEARN_RETURN_IF_ERROR(links_.pusher.Complete());  // a dropped batch's put must be done
    STALELEARN_RETURN_IF_ERROR(links_.clocks.Refresh());
    for (int m = 0; m < links_.clocks.memory_ranks(); ++m) {
      const model::MemoryIndex mi{m};
      links_.refresher.DropIncluded(mi, links_.clocks.included(mi, me_));
    }
    return Status::Ok();
  }

  const RankEnv& env_;
  model::ComputeIndex me_;
  ComputeLinks links_;
  sync::StalenessBound bound_;
  model::Replica replica_;
  bool installed_ = false;                  // a snapshot has been installed
  std::uint64_t installed_min_merged_ = 0;  // slowest other rank's clocks in it (or any rank's: counts_own_clocks_)
  bool counts_own_clocks_;                  // the merge is not master += delta: own clocks count (I1)
  bool merges_by_sum_;                      // every table's merge is sum (WritesValues)
  WrittenAloneHandle row_namers_;           // shared with this run's other ranks (tables_written_alone.h)
  bool eager_;                              // ESSP: refresh before every clock
  std::int64_t held_clock_ = -1;            // the last clock whose deltas wait in the replica (-1: none)
  // Tables written alone (stratified, several ranks): their deltas stay in
  // the replica inside strata, until the epoch's last clock (AfterClock).
  std::vector<std::uint8_t> kept_tables_;  // [table]: 1 = kept
  std::int64_t kept_clock_ = -1;            // the last push that kept them (-1: none kept)
  std::int64_t last_clock_ = -1;            // the last clock AfterClock saw
  std::uint64_t dropped_reported_ = 0;      // reads_ahead_dropped up to the last clock's record
  StripeHandOver hand_over_;                // the stripe's moves: loads, reads ahead, the stratum's clocks
  std::uint64_t total_clocks_ = 0;
};

ModeDefinition Bounded(std::string name, std::function<sync::StalenessBound(const proto::Config&)> bound,
                       std::function<int(const proto::Config&)> reported, bool eager = false) {
  ModeDefinition mode;
  mode.name = std::move(name);
  mode.uses_memory_ranks = true;
  mode.reported_staleness = std::move(reported);
  mode.create = [bound, eager](ModeContext& context) -> Result<std::unique_ptr<ConsistencyMode>> {
    return std::unique_ptr<ConsistencyMode>(new SspConsistency(context, bound(context.env.config), eager));
  };
  return mode;
}

}  // namespace

ModeDefinition SspMode() {
  return Bounded(
      "SSP", [](const proto::Config& c) { return sync::StalenessBound::Of(c.consistency().staleness()); },
      [](const proto::Config& c) { return c.consistency().staleness(); });
}

ModeDefinition EsspMode() {
  return Bounded(
      "ESSP", [](const proto::Config& c) { return sync::StalenessBound::Of(c.consistency().staleness()); },
      [](const proto::Config& c) { return c.consistency().staleness(); }, /*eager=*/true);
}

ModeDefinition BspMode() {
  return Bounded(
      "BSP", [](const proto::Config&) { return sync::StalenessBound::Of(0); },
      [](const proto::Config&) { return 0; });
}

ModeDefinition AspMode() {
  return Bounded(
      "ASP", [](const proto::Config&) { return sync::StalenessBound::Unbounded(); },
      [](const proto::Config&) { return -1; });
}

}  // namespace stalelearn::runtime::modes

#include "framework/runtime/run_report.h"
#include "framework/runtime/app_facets.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <utility>

#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/runtime/epoch_evaluator.h"

namespace stalelearn::runtime {

proto::RankReport MakeRankReport(transport::Rank rank, Role role, const TrainerResult* trainer,
                                 const sync::MergeCounters* merged, const metrics::TransportCounters& counters) {
  proto::RankReport r;
  r.set_rank(rank.value);
  r.set_role(RoleName(role));
  if (trainer != nullptr) {
    r.set_samples(trainer->samples);
    r.set_clocks(trainer->clocks);
    r.set_stall_seconds(trainer->stall_seconds);
    r.set_train_seconds(trainer->train_seconds);
    r.set_refresh_cpu_seconds(trainer->refresh_cpu_seconds);
    r.set_rows_refreshed(trainer->rows_refreshed);
    r.set_meta_only_reads(trainer->meta_only_reads);
    r.set_stripes_read_ahead(trainer->stripes_read_ahead);
    r.set_stripes_read_ahead_unsettled(trainer->stripes_read_ahead_unsettled);
    r.set_stripes_read_ahead_dropped(trainer->stripes_read_ahead_dropped);
    r.set_stratum_clocks(trainer->stratum_clocks);
    for (const proto::PhaseTime& p : trainer->phases) *r.add_phases() = p;
    r.set_simulated_training_end_seconds(trainer->simulated_training_end);
    r.set_max_observed_staleness(static_cast<std::int32_t>(trainer->max_observed_staleness));
    const LocalityPlanStats& p = trainer->plan;
    proto::LocalityPlanReport* plan = r.mutable_locality_plan();
    plan->set_planned(p.planned);
    plan->set_reason(p.reason);
    plan->set_scratchpad_bytes(p.scratchpad_bytes);
    plan->set_block_bytes(p.block_bytes);
    plan->set_blocks_a(p.blocks_a);
    plan->set_blocks_b(p.blocks_b);
    plan->set_cells(p.cells);
    plan->set_rows_named_per_clock(p.rows_named_per_clock);
    plan->set_distinct_rows_per_clock(p.distinct_rows_per_clock);
    plan->set_bytes_per_clock(p.bytes_per_clock);
    plan->set_largest_subbatch_bytes(p.largest_subbatch_bytes);
  }
  if (merged != nullptr) {
    r.set_batches_merged(merged->batches_merged);
    r.set_bytes_merged(merged->bytes_merged);
    r.set_rejected_batches(merged->rejected_batches);
    r.set_rows_merged(merged->rows_merged);
    r.set_element_updates(merged->element_updates);
    r.set_rows_written(merged->rows_written);
    r.set_rows_gathered(merged->rows_gathered);
  }
  r.set_bytes_put(counters.bytes_put);
  r.set_bytes_get(counters.bytes_get);
  r.set_puts(counters.puts);
  r.set_gets(counters.gets);
  r.set_atomics(counters.atomics);
  // Where the rank ran and how it reached each peer (cross-host runs).
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) == 0) r.set_host(host.data());
  for (const transport::PeerTransports& peer : counters.endpoints) {
    proto::EndpointTransports* e = r.add_endpoints();
    e->set_peer(peer.peer.value);
    for (const std::string& t : peer.transports) e->add_transports(t);
  }
  return r;
}

proto::Simulated MakeSimulatedPart(transport::Rank rank, const transport::SimulatedSummary& sim) {
  proto::Simulated part;
  part.set_total_seconds(transport::ToSeconds(sim.now.time_since_epoch()));
  part.set_memory_preset(sim.presets.memory);
  part.set_link_preset(sim.presets.link);
  part.set_compute_preset(sim.presets.compute);
  part.set_deterministic(sim.deterministic);
  const transport::TimeBreakdown& b = sim.breakdown;
  proto::SimulatedRank* r = part.add_ranks();
  r->set_rank(rank.value);
  r->set_compute_seconds(transport::ToSeconds(b.compute));
  r->set_transfer_seconds(transport::ToSeconds(b.transfer));
  r->set_merge_seconds(transport::ToSeconds(b.merge));
  r->set_wait_seconds(transport::ToSeconds(b.wait));
  return part;
}

namespace {

// The evaluations during the run by epoch, then the final one (a run stopped
// at an epoch's end evaluates that epoch twice: two points, as for apps that
// evaluate the whole model).
using EvalKey = std::pair<bool, int>;  // (final, epoch)

// Adds every rank's evaluation parts epoch by epoch and lets the app combine
// them: the curve, and the final metric from the last point.
Status CombineEvalParts(const App& app, const std::map<EvalKey, std::vector<const proto::EvalPart*>>& by_epoch,
                        proto::Report& report) {
  const EvaluatesInParts* combiner = AppFacets::Of(app).parts;
  if (combiner == nullptr && !by_epoch.empty()) return Internal("evaluation parts from an app that has none");
  for (const auto& [key, parts] : by_epoch) {
    const int epoch = key.second;
    std::vector<double> sums;
    double wall = 0, simulated = 0;
    for (const proto::EvalPart* p : parts) {
      if (sums.empty()) sums.assign(p->sums().size(), 0.0);
      if (static_cast<std::size_t>(p->sums().size()) != sums.size()) {
        return Internal(fmt::format("evaluation parts of epoch {} differ in length", epoch));
      }
      for (int i = 0; i < p->sums().size(); ++i) sums[static_cast<std::size_t>(i)] += p->sums(i);
      wall = std::max(wall, p->wall_seconds());
      simulated = std::max(simulated, p->simulated_seconds());
    }
    *report.add_curve() = MakeCurvePoint(epoch, wall, simulated, combiner->CombineParts(sums));
  }
  return Status::Ok();
}

// The model checksum from every compute rank's digest of its own rows in
// the final evaluation (EvalPart.model_digest), which add up over the ranks
// (model_checksum.h). Without a final part from each rank: no checksum.
void ChecksumFromParts(const std::map<EvalKey, std::vector<const proto::EvalPart*>>& by_epoch, const RoleMap& roles,
                       proto::Report& report) {
  const std::vector<const proto::EvalPart*>* final = nullptr;
  for (const auto& [key, parts] : by_epoch) {
    if (key.first) final = &parts;  // the last final key: a stopped run's repeat
  }
  if (final == nullptr || static_cast<int>(final->size()) != roles.compute_ranks()) return;  // a part is missing
  std::uint64_t digest = 0;
  for (const proto::EvalPart* p : *final) digest += p->model_digest();
  report.set_model_checksum(model::HexDigest(model::ChecksumOfDigest(digest)));
}

void SetFinalFromCurve(proto::Report& report, const std::string& metric) {
  if (report.curve().empty()) return;
  const proto::CurvePoint& last = report.curve(report.curve_size() - 1);
  report.mutable_final()->set_metric(metric);
  report.mutable_final()->set_value(last.metric_value());
  *report.mutable_final()->mutable_metrics() = last.metrics();
}

}  // namespace

Result<proto::Report> GatherReport(transport::Bootstrap& bootstrap, const proto::Config& config, const App& app,
                                   const RoleMap& roles, const char* backend, const ModeDefinition& mode,
                                   const proto::Report& partial) {
  std::string mine;
  partial.SerializeToString(&mine);
  STALELEARN_ASSIGN_OR_RETURN(std::vector<transport::Bytes> all,
                              bootstrap.AllGather("stalelearn/report", std::as_bytes(std::span(mine))));
  proto::Report report;
  report.set_name(config.name());
  report.set_app(app.name());
  report.set_dataset(app.dataset());
  report.set_mode(mode.name);
  report.set_staleness(mode.reported_staleness ? mode.reported_staleness(config) : -1);
  report.set_backend(backend);
  report.set_compute_ranks(roles.compute_ranks());
  report.set_memory_ranks(roles.memory_ranks());
  report.set_epochs(config.training().epochs());
  report.set_seed(config.seed());
  std::vector<proto::Report> parts(all.size());
  std::map<EvalKey, std::vector<const proto::EvalPart*>> eval_parts;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const transport::Bytes& bytes = all[i];
    proto::Report& part = parts[i];
    if (!part.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return Internal("a rank sent an unreadable partial report");
    }
    for (const proto::RankReport& r : part.ranks()) *report.add_ranks() = r;
    if (part.has_lost()) {
      // Every memory rank reports the ranks it dropped: merge, not add.
      proto::Lost& lost = *report.mutable_lost();
      for (int r : part.lost().ranks()) {
        if (std::find(lost.ranks().begin(), lost.ranks().end(), r) == lost.ranks().end()) lost.add_ranks(r);
      }
      lost.set_clocks(std::max(lost.clocks(), part.lost().clocks()));
      lost.set_samples(std::max(lost.samples(), part.lost().samples()));
    }
    if (part.has_simulated()) {
      proto::Simulated& simulated = *report.mutable_simulated();
      const bool first = simulated.ranks().empty();
      simulated.set_total_seconds(std::max(simulated.total_seconds(), part.simulated().total_seconds()));
      for (const proto::RankReport& r : part.ranks()) {
        simulated.set_training_seconds(std::max(simulated.training_seconds(), r.simulated_training_end_seconds()));
      }
      simulated.set_memory_preset(part.simulated().memory_preset());
      simulated.set_link_preset(part.simulated().link_preset());
      simulated.set_compute_preset(part.simulated().compute_preset());
      // Deterministic only if every rank ran under the scheduler.
      simulated.set_deterministic((first || simulated.deterministic()) && part.simulated().deterministic());
      for (const proto::SimulatedRank& r : part.simulated().ranks()) *simulated.add_ranks() = r;
    }
    if (!part.curve().empty()) *report.mutable_curve() = part.curve();
    if (part.has_best()) *report.mutable_best() = part.best();
    for (const proto::EvalPart& p : part.eval_parts()) eval_parts[EvalKey{p.final(), p.epoch()}].push_back(&p);
    if (!part.model_checksum().empty()) report.set_model_checksum(part.model_checksum());
    if (part.wall_seconds() > 0) report.set_wall_seconds(part.wall_seconds());  // the reporting rank's
  }
  // A model read in parts: its checksum from the final parts' digests.
  if (report.model_checksum().empty()) ChecksumFromParts(eval_parts, roles, report);
  std::string metric;
  for (const proto::Report& part : parts) {
    if (!part.final().metric().empty()) metric = part.final().metric();
  }
  if (!eval_parts.empty()) STALELEARN_RETURN_IF_ERROR(CombineEvalParts(app, eval_parts, report));
  SetFinalFromCurve(report, metric);
  std::ranges::sort(*report.mutable_ranks(), {}, [](const proto::RankReport& r) { return r.rank(); });
  if (report.has_simulated()) {
    std::ranges::sort(*report.mutable_simulated()->mutable_ranks(), {},
                      [](const proto::SimulatedRank& r) { return r.rank(); });
  }
  return report;
}

Result<std::string> GatherTraceCsv(transport::Bootstrap& bootstrap, const std::vector<ClockRecord>& records) {
  std::string mine;
  for (const ClockRecord& r : records) {
    const bool none = r.min_merged_of_others == std::numeric_limits<std::uint64_t>::max();
    mine += fmt::format("{},{},{},{},{:.6f}\n", bootstrap.rank().value, r.clock, r.observed_staleness,
                        none ? std::string("") : std::to_string(r.min_merged_of_others), r.stall_seconds);
  }
  STALELEARN_ASSIGN_OR_RETURN(std::vector<transport::Bytes> all,
                              bootstrap.AllGather("stalelearn/trace", std::as_bytes(std::span(mine))));
  std::string csv = "rank,clock,observed_staleness,min_merged_of_others,stall_seconds\n";
  for (const transport::Bytes& part : all) csv.append(reinterpret_cast<const char*>(part.data()), part.size());
  return csv;
}

}  // namespace stalelearn::runtime

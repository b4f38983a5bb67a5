#include "framework/runtime/epoch_evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "framework/model/model_checksum.h"

namespace stalelearn::runtime {

EpochEvaluator::EpochEvaluator(const App& app, const EvaluatesInParts* parts, RankInfo info, const LocalState* state,
                               bool prints, const metrics::ProgressPrinter& progress, int epochs,
                               std::chrono::steady_clock::time_point start, const transport::RankTime& time)
    : app_(app),
      in_parts_(parts),
      info_(info),
      state_(state),
      prints_(prints),
      progress_(progress),
      epochs_(epochs),
      start_(start),
      time_(time) {
  if (in_parts_ == nullptr) return;
  const std::vector<TableSpec> tables = app.Tables();
  bool whole = true;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableId table{static_cast<std::uint32_t>(t)};
    const std::vector<model::RowRange> of_part =
        RowsOfEveryPart(*in_parts_, table, tables[t].rows, info.compute_ranks);  // every part's range of the table
    const model::RowRange mine = of_part[static_cast<std::size_t>(info.rank.value)];
    part_rows_.push_back(mine);
    whole = whole && mine == model::RowRange{0, tables[t].rows};
    // Digested by this rank: its share of the parts that read its range
    // (the parts' ranges tile the table, AppFacets::CheckPartRows, so the
    // shares hold every row once).
    int sharing = 0, before = 0;
    for (int k = 0; k < info.compute_ranks; ++k) {
      if (of_part[static_cast<std::size_t>(k)] != mine) continue;
      ++sharing;
      if (k < info.rank.value) ++before;
    }
    const model::RowRange share = model::PartOfRows(mine.size(), before, sharing);
    digest_rows_.push_back({mine.first + share.first, mine.first + share.last});
  }
  read_rows_ = whole ? std::vector<model::RowRange>{} : part_rows_;
}

double EpochEvaluator::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

proto::CurvePoint MakeCurvePoint(int epoch, double wall_seconds, double simulated_seconds, const Evaluation& e) {
  proto::CurvePoint point;
  point.set_epoch(epoch);
  point.set_wall_seconds(wall_seconds);
  point.set_simulated_seconds(simulated_seconds);
  point.set_metric_value(e.value);
  for (const auto& [name, value] : e.extra) (*point.mutable_metrics())[name] = value;
  return point;
}

namespace {

// "; table 'T' row R holds V" for the first non-finite float of `model`, or "".
std::string FirstNonFiniteRow(const App& app, const TableSet& model) {
  const std::vector<TableSpec> tables = app.Tables();
  for (std::size_t t = 0; t < model.size() && t < tables.size(); ++t) {
    if (model[t].type() != model::ElementType::kFloat32) continue;
    for (std::int64_t r = 0; r < model[t].rows(); ++r) {
      for (const float v : model[t].FloatRow(r)) {
        if (!std::isfinite(v)) return fmt::format("; table '{}' row {} holds {}", tables[t].name, r, v);
      }
    }
  }
  return "";
}

}  // namespace

Status EpochEvaluator::Record(int epoch, const TableSet& model) {
  const double wall = ElapsedSeconds();
  const double simulated = transport::ToSeconds(time_.Now().time_since_epoch());  // 0 in real time
  const auto diverged = [&](const Evaluation& e) {
    return FailedPrecondition(fmt::format("diverged: metric {} is {} after epoch {} (compute rank {}){}", e.metric,
                                          e.value, epoch, info_.rank.value, FirstNonFiniteRow(app_, model)));
  };
  if (!in_parts()) {
    const Evaluation e = app_.Evaluate(model);
    if (!std::isfinite(e.value)) return diverged(e);
    metric_ = e.metric;
    curve_.push_back(MakeCurvePoint(epoch, wall, simulated, e));
    if (prints_) progress_.Epoch(epoch, epochs_, e.metric, e.value, wall);
    return Status::Ok();
  }
  proto::EvalPart part;
  part.set_epoch(epoch);
  part.set_wall_seconds(wall);
  part.set_simulated_seconds(simulated);
  const std::vector<double> sums = in_parts_->EvaluatePart(model, EvalContext{info_, state_, part_rows_});
  *part.mutable_sums() = {sums.begin(), sums.end()};
  // This rank's share of the model checksum: the ranks' digest rows are
  // every row once, so the report adds the shares up (model_checksum.h).
  part.set_model_digest(model::ModelDigest(model, digest_rows_));
  parts_.push_back(part);
  const Evaluation mine = in_parts_->CombineParts(sums);
  if (!std::isfinite(mine.value)) return diverged(mine);
  metric_ = mine.metric;
  if (prints_) {
    progress_.Epoch(epoch, epochs_, mine.metric + " (rank 0's part)", mine.value, wall);
  }
  return Status::Ok();
}

}  // namespace stalelearn::runtime

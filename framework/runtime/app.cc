#include "framework/runtime/app.h"

#include "framework/model/replica.h"
#include "framework/runtime/app_facets.h"

#include <fmt/format.h>

#include <algorithm>

namespace stalelearn::runtime {

void App::InitRow(TableId, RowId, RowValues values) const {
  if (values.type() == ElementType::kFloat32) {
    std::ranges::fill(values.floats(), 0.0f);
  } else {
    std::ranges::fill(values.ints(), 0);
  }
}

Evaluation App::Evaluate(const TableSet& model) const {
  const EvaluatesInParts* parts = dynamic_cast<const EvaluatesInParts*>(this);
  if (parts == nullptr) return {"none", 0};  // an app should evaluate one way or the other
  const std::vector<model::RowRange> every_row = model::RowsOfPart(model, 0, 1);  // part 0 of 1
  return parts->CombineParts(parts->EvaluatePart(model, EvalContext{RankInfo{}, nullptr, every_row}));
}

Result<std::vector<std::byte>> HasLocalState::SaveLocalState(const LocalState*) const {
  return Unimplemented("keeps local state but cannot save it (HasLocalState::SaveLocalState): "
                       "training.checkpoint is not available for it");
}

Status HasLocalState::RestoreLocalState(std::span<const std::byte>, LocalState*) const {
  return Unimplemented("cannot restore its local state (HasLocalState::RestoreLocalState)");
}

AppFacets AppFacets::Of(const App& app) {
  AppFacets f;
  f.local_state = dynamic_cast<const HasLocalState*>(&app);
  f.data_initialization = dynamic_cast<const InitializesFromData*>(&app);
  f.parts = dynamic_cast<const EvaluatesInParts*>(&app);
  f.groups = dynamic_cast<const GroupsSamples*>(&app);
  f.chunks = dynamic_cast<const RunsKernelInChunks*>(&app);
  return f;
}

namespace {

// Whether `ranges` (repeats allowed) are disjoint and cover rows 0..rows-1.
bool Tile(std::vector<model::RowRange> ranges, std::int64_t rows) {
  std::ranges::sort(ranges, {}, [](const model::RowRange& r) { return std::pair(r.first, r.last); });
  ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  std::int64_t next = 0;
  for (const model::RowRange& r : ranges) {
    if (r.first != next || r.last < r.first) return false;
    next = r.last;
  }
  return next == rows;
}

}  // namespace

std::vector<model::RowRange> RowsOfEveryPart(const EvaluatesInParts& in_parts, TableId table, std::int64_t rows,
                                             int parts) {
  std::vector<model::RowRange> ranges;
  for (int part = 0; part < parts; ++part) ranges.push_back(in_parts.PartRows(table, rows, part, parts));
  return ranges;
}

Status AppFacets::CheckPartRows(const App& app, int compute_ranks) const {
  if (parts == nullptr) return Status::Ok();
  const std::vector<TableSpec> tables = app.Tables();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableId table{static_cast<std::uint32_t>(t)};
    if (!Tile(RowsOfEveryPart(*parts, table, tables[t].rows, compute_ranks), tables[t].rows)) {
      return InvalidArgument(fmt::format("app {}: its evaluation parts' rows of table '{}' do not tile it over {} "
                                         "compute ranks (EvaluatesInParts::PartRows)",
                                         app.name(), tables[t].name, compute_ranks));
    }
  }
  return Status::Ok();
}

AppFacets AppFacets::ForRun(const App& app, const proto::Config& config, int compute_ranks) {
  AppFacets f = Of(app);
  if (f.parts == nullptr) return f;
  const bool needs_whole_model =
      config.training().early_stopping().patience() > 0 || config.faults().dead_after_seconds() > 0;
  if (!needs_whole_model) return f;
  const std::vector<TableSpec> tables = app.Tables();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const model::RowRange whole{0, tables[t].rows};
    for (const model::RowRange& rows :
         RowsOfEveryPart(*f.parts, TableId{static_cast<std::uint32_t>(t)}, tables[t].rows, compute_ranks)) {
      if (rows != whole) {
        f.parts = nullptr;  // evaluated whole (App::Evaluate)
        return f;
      }
    }
  }
  return f;
}

std::unique_ptr<LocalState> AppFacets::CreateLocalState(const RankInfo& info,
                                                        std::span<const std::int64_t> samples) const {
  return local_state != nullptr ? local_state->CreateLocalState(info, samples) : nullptr;
}

namespace {

// kUnimplemented from a facet's default names the app.
Status NamingTheApp(const App& app, Status status) {
  if (status.code() != StatusCode::kUnimplemented) return status;
  return Unimplemented(fmt::format("app '{}' {}", app.name(), status.message()));
}

}  // namespace

Result<std::vector<std::byte>> AppFacets::SaveLocalState(const App& app, const LocalState* state) const {
  if (state == nullptr) return std::vector<std::byte>{};
  if (local_state == nullptr) return NamingTheApp(app, Unimplemented("has a local state but no HasLocalState"));
  Result<std::vector<std::byte>> bytes = local_state->SaveLocalState(state);
  if (!bytes.ok()) return NamingTheApp(app, bytes.status());
  return bytes;
}

Status AppFacets::RestoreLocalState(const App& app, std::span<const std::byte> bytes, LocalState* state) const {
  if (state == nullptr) {
    return bytes.empty() ? Status::Ok()
                         : NamingTheApp(app, Unimplemented("cannot restore its local state (it keeps none)"));
  }
  if (local_state == nullptr) return NamingTheApp(app, Unimplemented("has a local state but no HasLocalState"));
  return NamingTheApp(app, local_state->RestoreLocalState(bytes, state));
}

void InitializeTables(const App& app, TableSet& tables) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableId id{static_cast<std::uint32_t>(t)};
    model::RowBlock& block = tables[t];
    for (std::int64_t r = 0; r < block.rows(); ++r) {
      if (block.type() == ElementType::kFloat32) {
        app.InitRow(id, RowId{r}, RowValues(block.FloatRow(r)));
      } else {
        app.InitRow(id, RowId{r}, RowValues(block.IntRow(r)));
      }
    }
  }
}

void InitializeHeldRows(const App& app, std::span<const std::uint8_t> tables, model::Replica& replica) {
  TableSet& values = replica.mutable_tables();
  for (std::size_t t = 0; t < tables.size() && t < values.size(); ++t) {
    if (tables[t] == 0) continue;
    const TableId id{static_cast<std::uint32_t>(t)};
    model::RowBlock& block = values[t];
    for (std::int64_t slot = 0; slot < block.rows(); ++slot) {
      const RowId row{replica.RowOfSlot(id, slot)};
      if (block.type() == ElementType::kFloat32) {
        app.InitRow(id, row, RowValues(block.FloatRow(slot)));
      } else {
        app.InitRow(id, row, RowValues(block.IntRow(slot)));
      }
    }
  }
}

void InitializeShard(const App& app, const model::ModelLayout& layout, model::MemoryIndex shard, TableSet& rows) {
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const TableId id{static_cast<std::uint32_t>(t)};
    const model::RowPartition& partition = layout.partition(id);
    model::RowBlock& block = rows[t];
    for (std::int64_t local = 0; local < block.rows(); ++local) {
      const RowId row = partition.GlobalRow(shard, local);
      if (block.type() == ElementType::kFloat32) {
        app.InitRow(id, row, RowValues(block.FloatRow(local)));
      } else {
        app.InitRow(id, row, RowValues(block.IntRow(local)));
      }
    }
  }
}

}  // namespace stalelearn::runtime

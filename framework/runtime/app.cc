#include "framework/runtime/app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace stalelearn::runtime {

void App::InitFloatRow(TableId, RowId, std::span<float> values) const { std::ranges::fill(values, 0.0f); }
void App::InitIntRow(TableId, RowId, std::span<std::int32_t> values) const { std::ranges::fill(values, 0); }

std::unique_ptr<LocalState> App::CreateLocalState(const RankInfo&, std::span<const std::int64_t>) const {
  return nullptr;
}

void App::InitializeFromData(ModelView&, KernelContext&) const {}

Result<std::vector<std::byte>> App::SaveLocalState(const LocalState* state) const {
  if (state == nullptr) return std::vector<std::byte>{};
  return Unimplemented(fmt::format("app '{}' keeps local state but cannot save it (App::SaveLocalState): "
                                   "training.checkpoint is not available for it",
                                   name()));
}

Status App::RestoreLocalState(std::span<const std::byte> bytes, LocalState* state) const {
  if (state == nullptr && bytes.empty()) return Status::Ok();
  return Unimplemented(fmt::format("app '{}' cannot restore its local state (App::RestoreLocalState)", name()));
}

void App::Update(std::int64_t, ModelView&, KernelContext&) const {
  // A programming error in the app, not bad input: say which and stop.
  std::fprintf(stderr, "stalelearn: app '%s' overrides neither Update nor UpdateBatch\n", name().c_str());
  std::abort();
}

void App::UpdateBatch(std::span<const std::int64_t> samples, ModelView& model, KernelContext& ctx) const {
  for (std::int64_t s : samples) Update(s, model, ctx);
}

Evaluation App::Evaluate(const TableSet& model) const {
  return CombineParts(EvaluatePart(model, EvalContext{RankInfo{}, nullptr}));
}

std::vector<double> App::EvaluatePart(const TableSet& model, const EvalContext&) const {
  const Evaluation whole = Evaluate(model);  // an app overrides one of the two
  std::vector<double> out{whole.value};
  for (const auto& [name, value] : whole.extra) out.push_back(value);
  return out;
}

Evaluation App::CombineParts(std::span<const double> sums) const {
  return {"metric", sums.empty() ? 0.0 : sums[0]};
}

void InitializeTables(const App& app, TableSet& tables) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableId id{static_cast<std::uint32_t>(t)};
    model::RowBlock& block = tables[t];
    for (std::int64_t r = 0; r < block.rows(); ++r) {
      if (block.type() == ElementType::kFloat32) {
        app.InitFloatRow(id, RowId{r}, block.FloatRow(r));
      } else {
        app.InitIntRow(id, RowId{r}, block.IntRow(r));
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
        app.InitFloatRow(id, row, block.FloatRow(local));
      } else {
        app.InitIntRow(id, row, block.IntRow(local));
      }
    }
  }
}

}  // namespace stalelearn::runtime

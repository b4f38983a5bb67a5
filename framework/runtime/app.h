// The app API: everything an app uses of stalelearn. An app declares its
// tables, a per-sample update kernel that works on the model through a
// ModelView (the compute rank's replica), and an evaluation on the full model.
// The runtime does the rest: partitions samples over compute ranks, runs the
// kernel clock by clock, ships deltas of touched rows to memory ranks under
// the configured consistency mode, and evaluates the merged model.
//
// Example: a counter app (one int32 row per sample bucket).
//
//   using namespace stalelearn::runtime;
//   class CountApp final : public stalelearn::runtime::App {
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
//     void Update(std::int64_t s, ModelView& model, WorkCounters& work) const override {
//       model.IntRow(TableId{0}, RowId{s % 16})[0] += 1;
//       work.flops += 1;
//       work.random_row_accesses += 1;
//     }
//     Evaluation Evaluate(const TableSet& model) const override {
//       double total = 0;
//       for (std::int64_t r = 0; r < 16; ++r) total += model[0].IntRow(r)[0];
//       return {"total", total};
//     }
//   };
//
// Threading: the runtime calls Update and RowsOf concurrently from several
// compute ranks (threads in single-process emulation) with distinct views, so
// they must be const and touch no shared mutable state. Tables, InitRow and
// Evaluate are also const. The app object outlives the run.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "framework/metrics/work_counters.h"
#include "framework/model/model_view.h"
#include "framework/model/row_block.h"
#include "framework/model/shard_layout.h"
#include "framework/model/table_spec.h"

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

struct Evaluation {
  std::string metric;  // e.g. "test_rmse"
  double value = 0;
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
  // Appends the rows Update(sample) will touch (DIRECT mode fetches exactly
  // these before running the kernel).
  virtual void RowsOf(std::int64_t sample, std::vector<RowRef>& rows) const = 0;
  // The kernel: one SGD (or counting) step for `sample` on `model`. Adds the
  // work it did to `work` (timing backends charge compute time from it).
  virtual void Update(std::int64_t sample, ModelView& model, WorkCounters& work) const = 0;

  // Evaluates a full model (all rows of every table).
  virtual Evaluation Evaluate(const TableSet& model) const = 0;
};

// Fills `tables` (full size, from model::MakeTableSet) with the app's initial values.
void InitializeTables(const App& app, TableSet& tables);
// Fills memory rank `shard`'s master rows (from layout.MakeShard) likewise.
void InitializeShard(const App& app, const model::ModelLayout& layout, model::MemoryIndex shard, TableSet& rows);

}  // namespace stalelearn::runtime

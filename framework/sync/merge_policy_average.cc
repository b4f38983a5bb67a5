// average: a window's deltas of a row are summed in merge order into a pending
// row, and at the window's end master += pending / contributors (one float
// division per element), then the pending row is cleared.
//
// State (float32 tables only): a pending row per shard row, a contributor
// count per row and the list of rows named in the window. Apply appends a
// row to that list through an atomic index, so distinct rows may be applied
// concurrently; EndWindow visits only the rows of the window.
#include <atomic>
#include <cstring>

#include "framework/sync/merge_policy.h"

namespace stalelearn::sync {
namespace {

class AveragePolicy final : public MergePolicy {
 public:
  explicit AveragePolicy(const MergePolicyShape& shape)
      : width_(shape.width),
        pending_(static_cast<std::size_t>(shape.rows) * static_cast<std::size_t>(shape.width), 0.0f),
        contributors_(static_cast<std::size_t>(shape.rows), 0),
        window_rows_(static_cast<std::size_t>(shape.rows), 0) {
    const double elements = width_;
    // Read delta, read + write the pending row; read + write the count.
    apply_work_ = {.flops = elements, .bytes = 3 * elements * model::kElementBytes + 8, .random_row_accesses = 2};
    // Per window row: read pending, read + write master, clear pending; read
    // the row index and its count, reset the count. Division and addition.
    flush_work_ = {.flops = 2 * elements, .bytes = 4 * elements * model::kElementBytes + 16, .random_row_accesses = 2};
  }

  // A copy with what the open window holds (Clone).
  AveragePolicy(const AveragePolicy& other)
      : MergePolicy(other),
        width_(other.width_),
        pending_(other.pending_),
        contributors_(other.contributors_),
        window_rows_(other.window_rows_),
        window_size_(other.window_size_.load()),
        apply_work_(other.apply_work_),
        flush_work_(other.flush_work_) {}
  AveragePolicy& operator=(const AveragePolicy&) = delete;

  std::string_view name() const override { return "average"; }
  std::unique_ptr<MergePolicy> Clone() const override {
    return std::make_unique<AveragePolicy>(*this);
  }

  void Apply(model::RowBlock&, std::int64_t local_row, const std::byte* delta) override {
    float* pending = PendingRow(local_row);
    for (std::int32_t i = 0; i < width_; ++i) {
      float d;
      std::memcpy(&d, delta + i * model::kElementBytes, sizeof d);
      pending[i] += d;
    }
    // Rows of one batch are distinct, so only this call touches this count.
    if (contributors_[static_cast<std::size_t>(local_row)]++ == 0) {
      window_rows_[window_size_.fetch_add(1, std::memory_order_relaxed)] = local_row;
    }
  }
  metrics::WorkCounters ApplyWork() const override { return apply_work_; }

  metrics::WorkCounters EndWindow(model::RowBlock& master, const ParallelChunks& parallel) override {
    const std::size_t rows = window_size_.load(std::memory_order_relaxed);
    if (rows == 0) return {};
    parallel(rows, [&](std::size_t begin, std::size_t end) {
      for (std::size_t k = begin; k < end; ++k) Flush(master, window_rows_[k]);
    });
    window_size_.store(0, std::memory_order_relaxed);
    metrics::WorkCounters work;
    work.flops = flush_work_.flops * static_cast<double>(rows);
    work.bytes = flush_work_.bytes * static_cast<double>(rows);
    work.random_row_accesses = flush_work_.random_row_accesses * static_cast<std::int64_t>(rows);
    return work;
  }

  std::size_t state_bytes() const override {
    return pending_.size() * sizeof(float) + contributors_.size() * sizeof(std::uint32_t) +
           window_rows_.size() * sizeof(std::int64_t);
  }

 private:
  float* PendingRow(std::int64_t local_row) {
    return pending_.data() + static_cast<std::size_t>(local_row) * static_cast<std::size_t>(width_);
  }

  void Flush(model::RowBlock& master, std::int64_t local_row) {
    std::uint32_t& count = contributors_[static_cast<std::size_t>(local_row)];
    const float contributors = static_cast<float>(count);
    float* pending = PendingRow(local_row);
    std::span<float> row = master.FloatRow(local_row);
    for (std::int32_t i = 0; i < width_; ++i) {
      row[i] += pending[i] / contributors;
      pending[i] = 0.0f;
    }
    count = 0;
  }

  std::int32_t width_;
  std::vector<float> pending_;                // [row * width + element]: sum of the window's deltas
  std::vector<std::uint32_t> contributors_;  // [row]: batches of the window that named it
  std::vector<std::int64_t> window_rows_;     // rows named in the window, first window_size_ used
  std::atomic<std::size_t> window_size_{0};
  metrics::WorkCounters apply_work_;
  metrics::WorkCounters flush_work_;
};

}  // namespace

Status RegisterAverageMergePolicy(MergePolicyRegistry& registry) {
  return registry.Add("average", "master += mean of the window's deltas of the row", /*merges_int32=*/false,
                      [](const MergePolicySpec&, const MergePolicyShape& shape) -> std::unique_ptr<MergePolicy> {
                        return std::make_unique<AveragePolicy>(shape);
                      });
}

}  // namespace stalelearn::sync

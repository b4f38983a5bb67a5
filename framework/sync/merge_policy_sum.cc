// sum: master += delta, with the element type's arithmetic (int32 wraps, so
// integer totals are exact: I4). No state.
#include "framework/sync/merge_policy.h"

namespace stalelearn::sync {
namespace {

class SumPolicy final : public MergePolicy {
 public:
  explicit SumPolicy(std::int32_t width) {
    const double elements = width;
    work_.flops = elements;
    work_.bytes = 3 * elements * model::kElementBytes;  // read delta, read + write master
    work_.random_row_accesses = 1;                      // the master row
  }

  std::string_view name() const override { return "sum"; }
  std::unique_ptr<MergePolicy> Clone() const override { return std::make_unique<SumPolicy>(*this); }
  void Apply(model::RowBlock& master, std::int64_t local_row, const std::byte* delta) override {
    master.AddDelta(local_row, delta);
  }
  metrics::WorkCounters ApplyWork() const override { return work_; }
  bool adds_delta() const override { return true; }

 private:
  metrics::WorkCounters work_;
};

}  // namespace

Status RegisterSumMergePolicy(MergePolicyRegistry& registry) {
  return registry.Add("sum", "master += delta (int32 wraps: exact)", /*merges_int32=*/true,
                      [](const MergePolicySpec&, const MergePolicyShape& shape) -> std::unique_ptr<MergePolicy> {
                        return std::make_unique<SumPolicy>(shape.width);
                      });
}

}  // namespace stalelearn::sync

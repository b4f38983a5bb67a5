// The counting app of framework/runtime/app.h as a program of its own: sample
// s adds 1 to bucket s % buckets, so after E epochs the buckets hold exactly
// E * samples in total. The whole app API it needs is SampleKernelApp (the
// App core with a per-sample kernel), a config message whose defaults and
// ranges are field options (count_config.proto), and one registration function.
#include <algorithm>
#include <memory>

#include "count_config.pb.h"
#include "framework/core/config_loader.h"
#include "framework/runtime/registries.h"

namespace count_example {

using namespace stalelearn;
using namespace stalelearn::runtime;

class CountApp final : public SampleKernelApp {
 public:
  explicit CountApp(const CountConfig& config)
      : buckets_(config.buckets()), samples_(config.samples()), counts_(tables_.AddInt("counts", buckets_, 1)) {}

  std::string name() const override { return "count"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t s, std::vector<RowRef>& rows) const override {
    rows.push_back({counts_.id, RowId{s % buckets_}});
  }
  void Update(std::int64_t s, ModelView& model, KernelContext& ctx) const override {
    model.Row(counts_, RowId{s % buckets_})[0] += 1;
    ctx.work.flops += 1;
    ctx.work.random_row_accesses += 1;
  }
  // "total", with the smallest and largest bucket as further metrics.
  Evaluation Evaluate(const TableSet& model) const override {
    double total = 0, low = Row(model, counts_, 0)[0], high = low;
    for (std::int64_t b = 0; b < buckets_; ++b) {
      const double count = Row(model, counts_, b)[0];
      total += count;
      low = std::min(low, count);
      high = std::max(high, count);
    }
    return {"total", total, {{"min_bucket", low}, {"max_bucket", high}}};
  }

 private:
  std::int64_t buckets_;
  std::int64_t samples_;
  TableList tables_;  // "counts": one int per bucket
  IntTable counts_;
};
static_assert(RunnableApp<CountApp>);

Result<std::unique_ptr<App>> LoadCount(const AppContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(CountConfig count, config::UnpackAppParams<CountConfig>(context.config));
  return std::unique_ptr<App>(std::make_unique<CountApp>(count));
}

// Named in CMakeLists.txt (REGISTER): the program calls it at start-up. No
// resolve function: the config loader applies count_config.proto's field
// rules ("app.count.buckets must be >= 1, got -2"); no rule relates fields.
Status RegisterApp(Registries& registries) { return registries.apps.Add<CountConfig>("count", nullptr, LoadCount); }

}  // namespace count_example

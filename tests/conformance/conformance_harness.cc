#include "tests/conformance/conformance_harness.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <set>

#include "framework/core/error.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::conformance {
namespace {

// Reports failures as gtest failures at the body's file:line, from any rank's
// thread (gtest is thread-safe on pthreads), and collects skip reasons.
class GtestSink final : public CheckSink {
 public:
  void Fail(Rank rank, const std::string& message, const std::source_location& where) override {
    failures_.fetch_add(1);
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << "rank " << rank.value << ": " << message;
  }
  void Skip(Rank, const std::string& reason) override {
    std::lock_guard lock(mutex_);
    skip_reasons_.insert(reason);
  }
  bool AnyFailure() const override { return failures_.load() > 0; }
  std::string SkipReasons() const {
    std::lock_guard lock(mutex_);
    return fmt::format("{}", fmt::join(skip_reasons_, "; "));
  }

 private:
  std::atomic<int> failures_{0};
  mutable std::mutex mutex_;
  std::set<std::string> skip_reasons_;
};

// One rank: create the backend, the env, run the case, leave together.
void RunRank(const ConformanceParam& param, const transport::BackendRegistry& registry, Bootstrap& bootstrap,
             CheckSink& sink) {
  const BackendVariant& variant = param.variant;
  auto make_transport = [&]() {
    return registry.Create(variant.backend, transport::BackendContext{bootstrap, variant.options, registry});
  };
  std::unique_ptr<Transport> transport = ValueOrThrow(make_transport());
  std::unique_ptr<RankEnv> env = ValueOrThrow(RankEnv::Create(*transport, bootstrap, make_transport, sink));
  if (env->world_size() < param.test_case.min_world_size) {
    env->Skip(fmt::format("needs at least {} ranks", param.test_case.min_world_size));
  } else {
    param.test_case.body(*env);
  }
  // No rank may tear down while a peer could still reach its memory.
  env->Barrier();
  ThrowIfError(bootstrap.Barrier());
}

}  // namespace

RankLauncher ThreadsLauncher(int world_size) {
  return [world_size](const RankBody& body) { transport::RunRanks(world_size, body); };
}

std::vector<ConformanceParam> CasesFor(const BackendVariant& variant) {
  std::vector<ConformanceParam> params;
  for (const ConformanceCase& test_case : ConformanceCases()) params.push_back({variant, test_case});
  return params;
}

void PrintTo(const ConformanceParam& param, std::ostream* out) {
  *out << param.test_case.name << " on " << param.variant.label;
}

std::string ConformanceParamName(const ::testing::TestParamInfo<ConformanceParam>& info) {
  return fmt::format("{}_{}", info.param.test_case.name, info.param.variant.label);
}

void RunCase(const ConformanceParam& param, CheckSink& sink) {
  transport::BackendRegistry registry;
  ThrowIfError(param.variant.register_backends(registry));
  try {
    param.variant.launch([&](Bootstrap& bootstrap) { RunRank(param, registry, bootstrap, sink); });
  } catch (const ConformanceAbort&) {
    // Already reported where it happened.
  }
}

TEST_P(Conformance, Passes) {
  GtestSink sink;
  try {
    RunCase(GetParam(), sink);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a rank failed: " << e.what();
  }
  if (const std::string reasons = sink.SkipReasons(); !reasons.empty() && !HasFailure()) GTEST_SKIP() << reasons;
}

}  // namespace stalelearn::conformance

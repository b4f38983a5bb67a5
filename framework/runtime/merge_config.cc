#include "framework/runtime/merge_config.h"

#include <fmt/format.h>

#include <algorithm>

namespace stalelearn::runtime {
namespace {

sync::MergePolicySpec SpecOf(const proto::MergeConfig& m) {
  sync::MergePolicySpec spec;
  if (!m.policy().empty()) spec.name = m.policy();
  if (m.learning_rate() != 0) spec.learning_rate = m.learning_rate();
  if (m.beta1() != 0) spec.beta1 = m.beta1();
  if (m.beta2() != 0) spec.beta2 = m.beta2();
  if (m.epsilon() != 0) spec.epsilon = m.epsilon();
  if (m.initial_accumulator() != 0) spec.initial_accumulator = m.initial_accumulator();
  return spec;
}

}  // namespace

Result<std::vector<sync::MergePolicySpec>> MergeSpecsOf(const proto::Config& config,
                                                        const std::vector<model::TableSpec>& tables,
                                                        bool uses_memory_ranks) {
  std::vector<std::string> names;
  for (const model::TableSpec& t : tables) names.push_back(t.name);
  for (const auto& [key, value] : config.merge()) {
    if (key != "*" && std::ranges::find(names, key) == names.end()) {
      return InvalidArgument(fmt::format("merge.{}: the app has no table '{}' (tables: {}; '*' for all)", key, key,
                                         fmt::join(names, ", ")));
    }
  }
  std::vector<sync::MergePolicySpec> specs;
  for (const model::TableSpec& t : tables) {
    const auto named = config.merge().find(t.name);
    const auto any = config.merge().find("*");
    specs.push_back(named != config.merge().end() ? SpecOf(named->second)
                    : any != config.merge().end() ? SpecOf(any->second)
                                                  : sync::MergePolicySpec{});
    if (!uses_memory_ranks && specs.back().name != "sum") {
      return InvalidArgument(fmt::format("merge.{}.policy={} needs memory ranks; consistency.mode {} has none",
                                         t.name, specs.back().name, config.consistency().mode()));
    }
    // Bad input whatever the registry's code (an unknown name is kNotFound
    // there): the CLI exits 2 on kInvalidArgument under mpirun too.
    const Status valid = sync::BuiltinMergePolicies().Validate(specs.back(), t);
    if (!valid.ok()) {
      const std::string key = named != config.merge().end() ? t.name : "*";
      return InvalidArgument(fmt::format("merge.{}: {}", key, valid.message()));
    }
  }
  return specs;
}

Result<bool> MergesAddDeltas(const std::vector<sync::MergePolicySpec>& specs,
                             const std::vector<model::TableSpec>& tables) {
  if (specs.empty()) return true;  // sum for every table
  for (std::size_t t = 0; t < tables.size(); ++t) {
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<sync::MergePolicy> policy,
                                sync::BuiltinMergePolicies().Create(specs[t], tables[t], 1));
    if (!policy->adds_delta()) return false;
  }
  return true;
}

}  // namespace stalelearn::runtime

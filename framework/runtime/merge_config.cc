#include "framework/runtime/merge_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "framework/core/field_rules.h"

namespace stalelearn::runtime {
namespace {

// The spec of one merge entry; errors name the entry ("merge.w: ...").
Result<sync::MergePolicySpec> SpecOf(const std::string& key, const proto::MergeConfig& m,
                                     const sync::MergePolicyRegistry& policies) {
  sync::MergePolicySpec spec;
  if (!m.policy().empty()) spec.name = m.policy();
  std::unique_ptr<google::protobuf::Message> options;
  if (m.has_params()) {
    const google::protobuf::Message* prototype = policies.OptionsOf(spec.name);
    options.reset(prototype != nullptr ? prototype->New() : nullptr);
    if (options == nullptr || !m.params().UnpackTo(options.get())) {
      return InvalidArgument(fmt::format("merge.{}.params holds {}, not policy '{}''s options", key,
                                         m.params().type_url(), spec.name));
    }
    // The loader resolved them already (then this changes nothing); a config
    // built in code gets the declared defaults and checks here.
    STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(*options, fmt::format("merge.{}.{}", key, spec.name)));
  }
  // Bad input whatever the registry's code (an unknown name is kNotFound
  // there): the CLI exits 2 on kInvalidArgument under mpirun too.
  Result<sync::MergePolicySpec> resolved = policies.Resolve(std::move(spec), options.get());
  if (!resolved.ok()) return InvalidArgument(fmt::format("merge.{}: {}", key, resolved.status().message()));
  return resolved;
}

}  // namespace

Result<std::vector<sync::MergePolicySpec>> MergeSpecsOf(const proto::Config& config,
                                                        const std::vector<model::TableSpec>& tables,
                                                        bool uses_memory_ranks,
                                                        const sync::MergePolicyRegistry& policies) {
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
    const auto entry = named != config.merge().end() ? named : any;
    if (entry == config.merge().end()) {
      STALELEARN_ASSIGN_OR_RETURN(sync::MergePolicySpec sum, policies.Resolve(sync::MergePolicySpec{}));
      specs.push_back(std::move(sum));
    } else {
      STALELEARN_ASSIGN_OR_RETURN(sync::MergePolicySpec spec, SpecOf(entry->first, entry->second, policies));
      specs.push_back(std::move(spec));
    }
    if (!uses_memory_ranks && specs.back().name != "sum") {
      return InvalidArgument(fmt::format("merge.{}.policy={} needs memory ranks; consistency.mode {} has none",
                                         t.name, specs.back().name, config.consistency().mode()));
    }
    const Status valid = policies.Validate(specs.back(), t);
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
  if (specs.size() != tables.size()) return InvalidArgument("MergesAddDeltas: one spec per table expected");
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (!specs[t].factory) return InvalidArgument(fmt::format("merge policy '{}' not resolved", specs[t].name));
    const std::unique_ptr<sync::MergePolicy> policy =
        specs[t].factory(specs[t], sync::MergePolicyShape{tables[t].type, 1, tables[t].width});
    if (!policy->adds_delta()) return false;
  }
  return true;
}

}  // namespace stalelearn::runtime

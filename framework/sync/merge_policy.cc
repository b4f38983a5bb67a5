#include "framework/sync/merge_policy.h"

#include <fmt/format.h>

#include <cstdlib>

#include "framework/core/field_rules.h"

namespace stalelearn::sync {

// One line each: the policy's file defines it (merge_policy_<name>.cc).
Status RegisterSumMergePolicy(MergePolicyRegistry& registry);
Status RegisterAverageMergePolicy(MergePolicyRegistry& registry);
Status RegisterAdagradMergePolicy(MergePolicyRegistry& registry);
Status RegisterAdamMergePolicy(MergePolicyRegistry& registry);
Status RegisterStalenessAwareMergePolicy(MergePolicyRegistry& registry);

Status RegisterBuiltinMergePolicies(MergePolicyRegistry& registry) {
  STALELEARN_RETURN_IF_ERROR(RegisterSumMergePolicy(registry));
  STALELEARN_RETURN_IF_ERROR(RegisterAverageMergePolicy(registry));
  STALELEARN_RETURN_IF_ERROR(RegisterAdagradMergePolicy(registry));
  STALELEARN_RETURN_IF_ERROR(RegisterAdamMergePolicy(registry));
  STALELEARN_RETURN_IF_ERROR(RegisterStalenessAwareMergePolicy(registry));
  return Status::Ok();
}

MergePolicyRegistry BuiltinMergePolicyRegistry() {
  MergePolicyRegistry r;
  if (!RegisterBuiltinMergePolicies(r).ok()) std::abort();  // programming error: duplicate names
  return r;
}

MergePolicySpec BuiltinSpec(std::string name, const google::protobuf::Message* options) {
  MergePolicySpec named;
  named.name = std::move(name);
  Result<MergePolicySpec> spec = BuiltinMergePolicyRegistry().Resolve(named, options);
  if (!spec.ok()) std::abort();  // programming error: see the declaration
  return *std::move(spec);
}

Status ValidateMergePolicySpec(const MergePolicySpec& spec) {
  if (spec.name.empty()) return InvalidArgument("merge_policy.name must not be empty");
  // The declared ranges (the config checked them already; a spec built in
  // code is checked here).
  if (spec.options != nullptr) STALELEARN_RETURN_IF_ERROR(config::CheckDeclaredRules(*spec.options, "merge_policy"));
  if (spec.batches_per_clock < 1) {
    return InvalidArgument(fmt::format("merge_policy.batches_per_clock must be >= 1, got {}", spec.batches_per_clock));
  }
  return Status::Ok();
}

Status MergePolicyRegistry::Add(std::string name, std::string description, bool merges_int32,
                                MergePolicyFactory factory, const google::protobuf::Message* options) {
  if (entries_.contains(name)) return InvalidArgument(fmt::format("merge policy '{}' registered twice", name));
  entries_.emplace(std::move(name), Entry{std::move(description), merges_int32, std::move(factory), options});
  return Status::Ok();
}

Result<MergePolicySpec> MergePolicyRegistry::Resolve(MergePolicySpec spec,
                                                     const google::protobuf::Message* options) const {
  auto it = entries_.find(spec.name);
  if (it == entries_.end()) {
    return NotFound(fmt::format("unknown merge policy '{}' (known: {})", spec.name, KnownNames()));
  }
  const google::protobuf::Message* prototype = it->second.options;
  if (options == nullptr) options = spec.options.get();
  if (options != nullptr &&
      (prototype == nullptr || options->GetDescriptor() != prototype->GetDescriptor())) {
    return InvalidArgument(fmt::format("merge policy '{}' has no options of type {}", spec.name,
                                       options->GetDescriptor()->full_name()));
  }
  if (prototype != nullptr) {
    // Options from the config are resolved already (then this changes
    // nothing); none, or options built in code, get the declared defaults.
    std::shared_ptr<google::protobuf::Message> own(options != nullptr ? options->New() : prototype->New());
    if (options != nullptr) own->CopyFrom(*options);
    STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(*own, "merge_policy"));
    spec.options = std::move(own);
  }
  spec.factory = it->second.factory;
  return spec;
}

const google::protobuf::Message* MergePolicyRegistry::OptionsOf(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.options;
}

Status MergePolicyRegistry::Validate(const MergePolicySpec& spec, const model::TableSpec& table) const {
  auto it = entries_.find(spec.name);
  if (it == entries_.end()) {
    return NotFound(fmt::format("unknown merge policy '{}' for table '{}' (known: {})", spec.name, table.name,
                                KnownNames()));
  }
  if (Status status = ValidateMergePolicySpec(spec); !status.ok()) {
    return status.WithContext(fmt::format("table '{}'", table.name));
  }
  if (table.type == model::ElementType::kInt32 && !it->second.merges_int32) {
    return InvalidArgument(fmt::format("table '{}' is int32: merge policy '{}' needs float32 (int32 tables merge "
                                       "with 'sum' only)",
                                       table.name, spec.name));
  }
  return Status::Ok();
}

Result<std::unique_ptr<MergePolicy>> MergePolicyRegistry::Create(const MergePolicySpec& spec,
                                                                 const model::TableSpec& table,
                                                                 std::int64_t rows) const {
  STALELEARN_RETURN_IF_ERROR(Validate(spec, table));
  // Resolved here too: a spec built in code may leave its options to the
  // declared defaults.
  STALELEARN_ASSIGN_OR_RETURN(const MergePolicySpec resolved, Resolve(spec));
  return resolved.factory(resolved, MergePolicyShape{table.type, rows, table.width});
}

std::vector<std::string> MergePolicyRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

std::string MergePolicyRegistry::KnownNames() const { return fmt::format("{}", fmt::join(names(), ", ")); }

Status ValidateMergePolicies(const std::vector<MergePolicySpec>& specs, const std::vector<model::TableSpec>& tables,
                             const MergePolicyRegistry& registry) {
  if (specs.empty()) return Status::Ok();
  if (specs.size() != tables.size()) {
    return InvalidArgument(
        fmt::format("{} merge policies for {} tables (give one per table, or none)", specs.size(), tables.size()));
  }
  for (std::size_t t = 0; t < tables.size(); ++t) STALELEARN_RETURN_IF_ERROR(registry.Validate(specs[t], tables[t]));
  return Status::Ok();
}

Result<std::vector<std::unique_ptr<MergePolicy>>> CreateMergePolicies(const std::vector<MergePolicySpec>& specs,
                                                                      const model::ModelLayout& layout,
                                                                      model::MemoryIndex shard) {
  const std::vector<model::TableSpec>& tables = layout.tables();
  // A spec resolved by a registry brings its factory (and was validated by
  // that registry at config time); the others name built-in policies.
  const MergePolicyRegistry builtin = BuiltinMergePolicyRegistry();
  if (!specs.empty() && specs.size() != tables.size()) return ValidateMergePolicies(specs, tables, builtin);
  std::vector<std::unique_ptr<MergePolicy>> policies;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const MergePolicySpec spec = specs.empty() ? MergePolicySpec{} : specs[t];
    const std::int64_t rows = layout.partition(model::TableId{static_cast<std::uint32_t>(t)}).ShardRows(shard);
    if (spec.factory) {
      if (Status status = ValidateMergePolicySpec(spec); !status.ok()) {
        return status.WithContext(fmt::format("table '{}'", tables[t].name));
      }
      policies.push_back(spec.factory(spec, MergePolicyShape{tables[t].type, rows, tables[t].width}));
      continue;
    }
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<MergePolicy> policy, builtin.Create(spec, tables[t], rows));
    policies.push_back(std::move(policy));
  }
  return policies;
}

Status MergePolicy::RestoreState(std::span<const std::byte> bytes) {
  if (bytes.empty()) return Status::Ok();
  return DataLoss(fmt::format("merge policy '{}' holds no state, but the checkpoint has {} bytes of it", name(),
                              bytes.size()));
}

}  // namespace stalelearn::sync

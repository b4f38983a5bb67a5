#include "framework/sync/merge_policy.h"

#include <fmt/format.h>

#include <cmath>
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

namespace {

// NaN fails every comparison, so each check is written as "not inside".
Status CheckField(bool inside, std::string_view field, std::string_view range, float value) {
  if (inside && std::isfinite(value)) return Status::Ok();
  return InvalidArgument(fmt::format("merge_policy.{} must be {}, got {}", field, range, value));
}

}  // namespace

Status ValidateMergePolicySpec(const MergePolicySpec& spec) {
  if (spec.name.empty()) return InvalidArgument("merge_policy.name must not be empty");
  STALELEARN_RETURN_IF_ERROR(CheckField(spec.learning_rate > 0, "learning_rate", "> 0", spec.learning_rate));
  STALELEARN_RETURN_IF_ERROR(CheckField(spec.beta1 >= 0 && spec.beta1 < 1, "beta1", "in [0, 1)", spec.beta1));
  STALELEARN_RETURN_IF_ERROR(CheckField(spec.beta2 >= 0 && spec.beta2 < 1, "beta2", "in [0, 1)", spec.beta2));
  STALELEARN_RETURN_IF_ERROR(CheckField(spec.epsilon > 0, "epsilon", "> 0", spec.epsilon));
  STALELEARN_RETURN_IF_ERROR(
      CheckField(spec.initial_accumulator >= 0, "initial_accumulator", ">= 0", spec.initial_accumulator));
  if (spec.batches_per_clock < 1) {
    return InvalidArgument(fmt::format("merge_policy.batches_per_clock must be >= 1, got {}", spec.batches_per_clock));
  }
  return Status::Ok();
}

Status MergePolicyRegistry::Add(std::string name, std::string description, bool merges_int32,
                                MergePolicyFactory factory, MergePolicyOptions options) {
  if (entries_.contains(name)) return InvalidArgument(fmt::format("merge policy '{}' registered twice", name));
  if (options.prototype != nullptr && !options.to_spec) {
    return InvalidArgument(fmt::format("merge policy '{}': an options message needs to_spec", name));
  }
  entries_.emplace(std::move(name),
                   Entry{std::move(description), merges_int32, std::move(factory), std::move(options)});
  return Status::Ok();
}

Result<MergePolicySpec> MergePolicyRegistry::Resolve(MergePolicySpec spec,
                                                     const google::protobuf::Message* options) const {
  auto it = entries_.find(spec.name);
  if (it == entries_.end()) {
    return NotFound(fmt::format("unknown merge policy '{}' (known: {})", spec.name, KnownNames()));
  }
  const MergePolicyOptions& own = it->second.options;
  if (options != nullptr) {
    if (own.prototype == nullptr || options->GetDescriptor() != own.prototype->GetDescriptor()) {
      return InvalidArgument(fmt::format("merge policy '{}' has no options of type {}", spec.name,
                                         options->GetDescriptor()->full_name()));
    }
    own.to_spec(*options, spec);
  } else if (own.prototype != nullptr) {
    // No options given: the ones the policy's message declares.
    const std::unique_ptr<google::protobuf::Message> defaults(own.prototype->New());
    STALELEARN_RETURN_IF_ERROR(config::FillDeclaredDefaults(*defaults));
    own.to_spec(*defaults, spec);
  }
  spec.factory = it->second.factory;
  return spec;
}

const google::protobuf::Message* MergePolicyRegistry::OptionsOf(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.options.prototype;
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
  return entries_.find(spec.name)->second.factory(spec, MergePolicyShape{table.type, rows, table.width});
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

#include "framework/runtime/registries.h"

namespace stalelearn::runtime {

std::vector<config::Section> MergePolicySections(const sync::MergePolicyRegistry& policies) {
  std::vector<config::Section> out;
  for (const std::string& name : policies.names()) {
    if (const google::protobuf::Message* prototype = policies.OptionsOf(name)) out.push_back({name, prototype, {}});
  }
  return out;
}

Result<config::ConfigSchema> Registries::Schema() const {
  config::ConfigSchema schema = apps.schema();
  for (config::Section& s : backends.sections()) {
    STALELEARN_RETURN_IF_ERROR(schema.Add(config::SectionKind::kBackend, std::move(s)));
  }
  for (std::string& name : backends.names()) schema.AddName(config::SectionKind::kBackend, std::move(name));
  for (config::Section& s : MergePolicySections(merge_policies)) {
    STALELEARN_RETURN_IF_ERROR(schema.Add(config::SectionKind::kMergePolicy, std::move(s)));
  }
  for (std::string& name : merge_policies.names()) schema.AddName(config::SectionKind::kMergePolicy, std::move(name));
  return schema;
}

}  // namespace stalelearn::runtime

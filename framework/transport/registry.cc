#include "framework/transport/registry.h"

#include <fmt/format.h>

namespace stalelearn::transport {

Status BackendRegistry::Add(std::string name, std::string description, BackendFactory factory,
                            config::Section options) {
  if (entries_.contains(name)) return InvalidArgument(fmt::format("backend '{}' registered twice", name));
  if (options.prototype != nullptr) options.name = name;
  entries_.emplace(std::move(name), Entry{std::move(description), std::move(factory), std::move(options)});
  return Status::Ok();
}

std::vector<config::Section> BackendRegistry::sections() const {
  std::vector<config::Section> out;
  for (const auto& [name, entry] : entries_) {
    if (entry.options.prototype != nullptr) out.push_back(entry.options);
  }
  return out;
}

Result<std::unique_ptr<Transport>> BackendRegistry::Create(std::string_view name,
                                                           const BackendContext& context) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return NotFound(fmt::format("unknown backend '{}' (known: {})", name, KnownNames()));
  }
  auto created = it->second.factory(context);
  if (!created.ok()) return created.status().WithContext(fmt::format("backend '{}'", name));
  return created;
}

bool BackendRegistry::Contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

std::string BackendRegistry::KnownNames() const { return fmt::format("{}", fmt::join(names(), ", ")); }

}  // namespace stalelearn::transport

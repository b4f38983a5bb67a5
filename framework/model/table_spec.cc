#include "framework/model/table_spec.h"

#include <fmt/format.h>

#include <set>

namespace stalelearn::model {

Status ValidateTables(const std::vector<TableSpec>& tables) {
  if (tables.empty()) return InvalidArgument("an app must declare at least one table");
  std::set<std::string> names;
  for (const TableSpec& t : tables) {
    if (t.name.empty()) return InvalidArgument("a table has an empty name");
    if (!names.insert(t.name).second) return InvalidArgument(fmt::format("table '{}' declared twice", t.name));
    if (t.rows < 1) return InvalidArgument(fmt::format("table '{}' must have rows >= 1, got {}", t.name, t.rows));
    if (t.width < 1) return InvalidArgument(fmt::format("table '{}' must have width >= 1, got {}", t.name, t.width));
    if (t.type != ElementType::kFloat32 && t.type != ElementType::kInt32) {
      return InvalidArgument(fmt::format("table '{}' has an unknown element type", t.name));
    }
  }
  return Status::Ok();
}

}  // namespace stalelearn::model

// Strong ids for the two roles (framework/README.md, convention 14): the i-th compute rank and the
// j-th memory rank, independent of their world ranks (framework/runtime/roles.h
// maps between them). Value types.
#pragma once

#include <compare>

namespace stalelearn::model {

struct ComputeIndex {
  int value = 0;
  friend bool operator==(ComputeIndex, ComputeIndex) = default;
  friend auto operator<=>(ComputeIndex, ComputeIndex) = default;
};

// A memory rank; it owns shard `value` of every table.
struct MemoryIndex {
  int value = 0;
  friend bool operator==(MemoryIndex, MemoryIndex) = default;
  friend auto operator<=>(MemoryIndex, MemoryIndex) = default;
};

}  // namespace stalelearn::model

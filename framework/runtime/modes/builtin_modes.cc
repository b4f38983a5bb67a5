#include "framework/runtime/modes/builtin_modes.h"

namespace stalelearn::runtime {

Status RegisterBuiltinModes(ModeRegistry& registry) {
  STALELEARN_RETURN_IF_ERROR(registry.Add(modes::SspMode()));
  STALELEARN_RETURN_IF_ERROR(registry.Add(modes::EsspMode()));
  STALELEARN_RETURN_IF_ERROR(registry.Add(modes::BspMode()));
  STALELEARN_RETURN_IF_ERROR(registry.Add(modes::AspMode()));
  STALELEARN_RETURN_IF_ERROR(registry.Add(modes::DirectMode()));
  STALELEARN_RETURN_IF_ERROR(registry.Add(modes::AllreduceMode()));
  return Status::Ok();
}

}  // namespace stalelearn::runtime

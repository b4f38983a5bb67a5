// Placeholder until the 'local' backend lands.
#include "backends/local/register.h"

namespace stalelearn::backends::local {

Status RegisterBackend(transport::BackendRegistry& registry) {
  (void)registry;
  return Status::Ok();
}

}  // namespace stalelearn::backends::local

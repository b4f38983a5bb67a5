// Placeholder until the 'timing' backend lands.
#include "backends/timing/register.h"

namespace stalelearn::backends::timing {

Status RegisterBackend(transport::BackendRegistry& registry) {
  (void)registry;
  return Status::Ok();
}

}  // namespace stalelearn::backends::timing

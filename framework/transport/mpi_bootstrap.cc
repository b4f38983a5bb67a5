// Placeholder until the MPI bootstrap lands (issue 3).
#include "framework/transport/mpi_bootstrap.h"

#include <mpi.h>

namespace stalelearn::transport {

Result<std::unique_ptr<Bootstrap>> MakeMpiBootstrap() {
  return Unimplemented("MPI bootstrap not built yet");
}

}  // namespace stalelearn::transport

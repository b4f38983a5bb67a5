// Bootstrap over MPI. MPI_Init/Finalize happen only through MpiSession, which
// main() owns (framework/README.md, convention 9). This header does not include mpi.h.
// Same threading rules as Bootstrap.
#pragma once

#include <memory>
#include <string>

#include "framework/transport/bootstrap.h"

namespace stalelearn::transport {

// Owns MPI initialisation for the life of the process's main(). Not copyable.
class MpiSession {
 public:
  // MPI_Init_thread(MPI_THREAD_FUNNELED); kUnavailable if MPI fails to start.
  static Result<std::unique_ptr<MpiSession>> Start(int* argc, char*** argv);
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return size_; }
  // MPI_Abort(MPI_COMM_WORLD, code): for an uncaught error on one rank.
  [[noreturn]] static void Abort(int code);

 private:
  MpiSession(int rank, int size) : rank_(rank), size_(size) {}
  int rank_;
  int size_;
};

// True when this process was started by mpirun/srun (checks the launcher's
// environment once, at the top of main).
bool LaunchedByMpiLauncher();

// Requires an MpiSession; kFailedPrecondition otherwise.
Result<std::unique_ptr<Bootstrap>> MakeMpiBootstrap();

// The MPI library's own version line (MPI_Get_library_version, first line),
// e.g. "Open MPI v4.1.4, package: Debian OpenMPI, ...". Needs no MpiSession
// (MPI allows the call before MPI_Init).
std::string MpiLibraryVersion();

}  // namespace stalelearn::transport

// A request to stop a run at its next clock boundary: SIGINT, SIGTERM or
// SIGUSR1 (stop_agreement.h turns it into one clock every rank stops at).
//
//   InstallStopSignalHandlers();   // once, before the ranks start
//   if (int signal = StopSignal()) ...   // polled by the ranks
//
// The first of these signals only records itself; the handler then restores
// the default action, so a second signal ends the process at once (the way
// out of a stop that takes too long). Under mpirun the signal reaches every
// rank: mpirun forwards SIGUSR1 at once, and SIGTERM/SIGINT after
// odls_base_sigkill_timeout seconds, followed by SIGKILL after as many again
// (OpenMPI 4.1, measured: framework/README.md, "Stopping a run").
//
// Thread-safety: the flag is one process-wide atomic; every function may be
// called from any thread. With ranks as threads, all ranks see one request.
#pragma once

namespace stalelearn::runtime {

// Installs the handlers for SIGINT, SIGTERM and SIGUSR1 and clears any
// earlier request.
void InstallStopSignalHandlers();
// The signal that asked for a stop, or 0 when none did.
int StopSignal();
// Asks for a stop as if `signal` had arrived (debug.stop_at_clock, tests).
void RequestStop(int signal);
// Not a signal: what a stop asked for by early stopping names
// (StopAgreement::RequestLocal; early_stopping.h).
inline constexpr int kEarlyStopRequest = -1;
// Forgets a request (a new run in the same process).
void ClearStopRequest();
// "SIGTERM", "SIGINT", "SIGUSR1", "early_stopping", or "a signal".
const char* StopSignalName(int signal);

}  // namespace stalelearn::runtime

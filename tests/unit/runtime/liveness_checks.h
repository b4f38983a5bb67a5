// The dead-rank detector's guarding check, shared by its test and the
// planted-defect self-test (tests/selftest): a compute rank whose heartbeat
// word stands still for the limit is declared dead, one whose word moves
// between checks never is. Fails with kStillHeartbeatMessage.
#pragma once

namespace stalelearn::runtime {

inline constexpr const char* kStillHeartbeatMessage = "a compute rank whose heartbeat stood still was not declared dead";

void CheckAStillHeartbeatIsDeadAndAMovingOneIsNot();

}  // namespace stalelearn::runtime

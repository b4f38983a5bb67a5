#include "framework/runtime/stop_agreement.h"

#include <algorithm>
#include <array>
#include <csignal>
#include <mutex>
#include <utility>
#include <vector>

#include "framework/runtime/stop_request.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::runtime {

// Ranks as threads: every compute rank's committed clock and the decision.
class StopBoard {
 public:
  explicit StopBoard(int compute_ranks) : committed_(static_cast<std::size_t>(std::max(compute_ranks, 1)), 0) {}

  void Begin(int rank, std::int64_t committed) {
    std::lock_guard lock(mutex_);
    committed_.at(static_cast<std::size_t>(rank)) = committed;
  }
  // `local`: this rank's own request (StopAgreement::RequestLocal), 0 if none;
  // `ahead`: StopAgreement::set_commits_ahead's clock (0 or 1).
  bool StopsBefore(int rank, std::int64_t clock, int local, std::int64_t ahead) {
    std::lock_guard lock(mutex_);
    if (!decision_) {
      if (const int signal = StopSignal() != 0 ? StopSignal() : local; signal != 0) {
        committed_.at(static_cast<std::size_t>(rank)) = clock + ahead;
        decision_ = StopDecision{signal, *std::ranges::max_element(committed_)};
      }
    }
    if (decision_ && clock >= decision_->clock) return true;
    committed_.at(static_cast<std::size_t>(rank)) = clock + 1 + ahead;  // this rank trains `clock`
    return false;
  }
  std::optional<StopDecision> decision() const {
    std::lock_guard lock(mutex_);
    return decision_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::int64_t> committed_;
  std::optional<StopDecision> decision_;
};

StopAgreement::StopAgreement(transport::Bootstrap& bootstrap, std::function<void()> progress,
                             transport::RankTime& time, Kind kind, int compute_ranks,
                             std::chrono::nanoseconds timeout)
    : bootstrap_(bootstrap), progress_(std::move(progress)), time_(time), timeout_(timeout), kind_(kind) {
  if (kind_ == Kind::kOff) return;
  if (auto* threads = dynamic_cast<transport::InProcessBootstrap*>(&bootstrap)) {
    board_ = threads->group().GetOrCreateShared<StopBoard>(
        "runtime/stop-board", [&] { return std::make_shared<StopBoard>(compute_ranks); });
  }
}

StopAgreement::~StopAgreement() = default;

void StopAgreement::Open() { open_ = kind_ == Kind::kOnRequest && board_ == nullptr && !stop_.has_value(); }

void StopAgreement::Begin(int rank, std::int64_t first_clock) {
  committed_ = first_clock + ahead_;
  if (board_ != nullptr) board_->Begin(rank, committed_);
}

Result<bool> StopAgreement::StopsBefore(int rank, std::int64_t clock) {
  if (kind_ == Kind::kOff) return false;
  if (request_at_clock_ > 0 && clock == request_at_clock_ && (request_rank_ < 0 || rank == request_rank_)) {
    RequestStop(SIGTERM);
  }
  if (board_ != nullptr) return board_->StopsBefore(rank, clock, local_request_, ahead_);
  if (kind_ == Kind::kEveryClock) {
    open_ = true;
    STALELEARN_RETURN_IF_ERROR(Join(clock));
  } else {
    committed_ = clock + ahead_;
    STALELEARN_RETURN_IF_ERROR(HearAnnouncements(/*now=*/true));
    STALELEARN_RETURN_IF_ERROR(Poll());
  }
  if (stop_ && clock >= stop_->clock) return true;
  committed_ = clock + 1 + ahead_;  // from here on this rank trains `clock`
  return false;
}

Status StopAgreement::Poll() {
  if (!open_) return Status::Ok();
  STALELEARN_RETURN_IF_ERROR(HearAnnouncements(/*now=*/false));
  if (Requested() == 0) return Status::Ok();
  return Join(committed_);
}

Status StopAgreement::RequestLocal(int signal) {
  local_request_ = signal;
  // Lockstep modes agree at every clock anyway; kOff never agrees.
  if (board_ != nullptr || kind_ != Kind::kOnRequest) return Status::Ok();
  Status announced = bootstrap_.Announce(signal);
  return announced.ok() ? announced : announced.WithContext("stop agreement");
}

Status StopAgreement::HearAnnouncements(bool now) {
  if (!hears_announcements_ || board_ != nullptr || kind_ != Kind::kOnRequest || announced_request_ != 0) {
    return Status::Ok();
  }
  if (!now && ++polls_since_probe_ < kPollsPerProbe) return Status::Ok();
  polls_since_probe_ = 0;
  Result<std::int64_t> heard = bootstrap_.Announced();
  if (!heard.ok()) return heard.status().WithContext("stop agreement");
  announced_request_ = static_cast<int>(*heard);
  return Status::Ok();
}

Status StopAgreement::JoinAtEnd(std::int64_t end) {
  if (!open_) return Status::Ok();
  return Join(end);
}

int StopAgreement::Requested() const {
  if (StopSignal() != 0) return StopSignal();
  return local_request_ != 0 ? local_request_ : announced_request_;
}

std::optional<StopDecision> StopAgreement::stop() const {
  return board_ != nullptr ? board_->decision() : stop_;
}

Status StopAgreement::Join(std::int64_t committed) {
  open_ = false;  // before the collective: a wait inside it must not join again
  std::array<std::int64_t, 2> values{Requested(), committed};
  // Under a virtual-time scheduler a rank blocked in a collective must be
  // out of the schedule; the clock does not move (the agreement is free).
  STALELEARN_RETURN_IF_ERROR(time_.OutsideSchedule([&] {
    // Progressing meanwhile: a peer still flushing its last puts to this
    // rank (UCX over tcp) completes only if this rank progresses.
    Status agreed = bootstrap_.AllReduceMaxProgressing(values, progress_, timeout_);
    return agreed.ok() ? agreed : agreed.WithContext("stop agreement");
  }));
  if (values[0] != 0) stop_ = StopDecision{static_cast<int>(values[0]), values[1]};
  return Status::Ok();
}

}  // namespace stalelearn::runtime

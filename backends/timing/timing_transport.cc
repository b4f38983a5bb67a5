#include "backends/timing/timing_transport.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "framework/core/log.h"

namespace stalelearn::backends::timing {
namespace {

using transport::Rank;
using transport::RequestPtr;

constexpr std::uint64_t kAtomicBytes = 8;
constexpr auto kReadOnly = VirtualTimeScheduler::Effect::kReadOnly;

// An inner request whose completion moves the owner's clock to `done`, once.
class TimedRequest final : public transport::Request {
 public:
  TimedRequest(RequestPtr inner, TimingTransport& owner, VirtualTime done)
      : inner_(std::move(inner)), owner_(owner), done_(done) {}

  // Complete once the owner's clock has reached `done`: a test before then
  // answers not yet and moves no clock (a poll between clocks waits for
  // nothing; a caller that must have it waits with Wait).
  bool Test() override {
    if (!completed_ && owner_.Now() < done_) return false;
    if (!inner_->Test()) return false;
    // A scheduler failure surfaces at the rank's next timed call.
    (void)Complete();
    return true;
  }
  Status Wait(transport::Timeout timeout) override {
    STALELEARN_RETURN_IF_ERROR(inner_->Wait(timeout));
    return Complete();
  }

 private:
  Status Complete() {
    if (completed_) return Status::Ok();
    completed_ = true;
    return owner_.CompleteAt(done_);
  }

  RequestPtr inner_;
  TimingTransport& owner_;
  const VirtualTime done_;
  bool completed_ = false;
};

}  // namespace

// A region imported through this transport: the inner backend's, shared so
// that an idle watch may keep it after the caller dropped its handle.
class TimingTransport::TimedRemoteRegion final : public transport::RemoteRegion {
 public:
  explicit TimedRemoteRegion(std::shared_ptr<const transport::RemoteRegion> inner) : inner_(std::move(inner)) {}
  Rank owner() const override { return inner_->owner(); }
  std::size_t size() const override { return inner_->size(); }
  const std::shared_ptr<const transport::RemoteRegion>& inner() const { return inner_; }

  // `region` as imported here, or nullptr (imported elsewhere).
  static const TimedRemoteRegion* Of(const transport::RemoteRegion& region) {
    return dynamic_cast<const TimedRemoteRegion*>(&region);
  }
  // The inner backend's region behind `region` (others pass through as they are).
  static const transport::RemoteRegion& Inner(const transport::RemoteRegion& region) {
    const TimedRemoteRegion* timed = Of(region);
    return timed != nullptr ? *timed->inner() : region;
  }

 private:
  std::shared_ptr<const transport::RemoteRegion> inner_;
};

TimingTransport::TimingTransport(std::unique_ptr<transport::Transport> inner, HardwareModel model,
                                 std::shared_ptr<VirtualTimeScheduler> scheduler)
    : inner_(std::move(inner)),
      model_(std::move(model)),
      scheduler_(std::move(scheduler)),
      watch_(*inner_),
      watching_(inner_->capabilities().completes_on_return),
      acked_(static_cast<std::size_t>(inner_->world_size())) {
  std::lock_guard lock(schedule_mutex_);
  ResetMemorySetLocked(wrote_);
  ResetMemorySetLocked(read_);
}

TimingTransport::~TimingTransport() { LeaveSchedule(); }

Result<std::unique_ptr<transport::MemoryRegion>> TimingTransport::Register(std::size_t bytes,
                                                                           transport::Access access) {
  return inner_->Register(bytes, access);
}

Result<std::unique_ptr<transport::RemoteRegion>> TimingTransport::Import(Rank owner,
                                                                         std::span<const std::byte> key) {
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<transport::RemoteRegion> region, inner_->Import(owner, key));
  return std::unique_ptr<transport::RemoteRegion>(
      std::make_unique<TimedRemoteRegion>(std::shared_ptr<const transport::RemoteRegion>(std::move(region))));
}

transport::Capabilities TimingTransport::capabilities() const {
  transport::Capabilities caps = inner_->capabilities();
  // The bytes the link moves in one operation's overhead (at least one row's worth).
  const double per_op_seconds = std::chrono::duration<double>(model_.link.overhead()).count();
  caps.operation_cost_bytes =
      std::max<std::size_t>(64, static_cast<std::size_t>(per_op_seconds * model_.link.gb_per_s() * 1e9));
  return caps;
}

Result<RequestPtr> TimingTransport::Put(const void* src, std::size_t bytes, const transport::RemoteRegion& dst,
                                        std::uint64_t offset) {
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, inner_->Put(src, bytes, TimedRemoteRegion::Inner(dst), offset));
  const VirtualTime left = IssueOneWay(bytes);
  VirtualTime in = left + model_.link.latency();
  if (serving_links_) {  // the bytes queue at the target's port behind others'
    const VirtualDuration wire = model_.link.Serialization(bytes);
    in = serving_links_->Arrive(dst.owner().value, left - wire + model_.link.latency(), wire);
  }
  NoteAck(dst.owner(), in + model_.link.latency());
  NoteWrote(dst.owner());
  STALELEARN_RETURN_IF_ERROR(SchedulingPoint());
  return Timed(std::move(request), left);
}

Result<RequestPtr> TimingTransport::Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                        std::uint64_t offset) {
  const TimedRemoteRegion* timed = TimedRemoteRegion::Of(src);
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, inner_->Get(dst, bytes, timed ? *timed->inner() : src, offset));
  const VirtualTime done =
      serving_links_ ? IssueServedGet(src.owner(), bytes) : IssueGet(src.owner(), bytes);
  NoteRead(src.owner());
  if (watching_) {
    std::lock_guard lock(schedule_mutex_);
    WatchLocked(timed, offset, bytes, dst);
  }
  STALELEARN_RETURN_IF_ERROR(SchedulingPoint(kReadOnly));
  return Timed(std::move(request), done);
}

Result<RequestPtr> TimingTransport::AtomicAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                              std::uint64_t value) {
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, inner_->AtomicAdd(TimedRemoteRegion::Inner(dst), offset, value));
  const VirtualTime left = IssueOneWay(kAtomicBytes);
  NoteAck(dst.owner(), left + 2 * model_.link.latency() + model_.memory.AtomicRmw());
  NoteWrote(dst.owner());
  STALELEARN_RETURN_IF_ERROR(SchedulingPoint());
  return Timed(std::move(request), left);
}

Result<RequestPtr> TimingTransport::FetchAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                             std::uint64_t value, std::uint64_t* old) {
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, inner_->FetchAdd(TimedRemoteRegion::Inner(dst), offset, value, old));
  const VirtualTime done = IssueRoundTrip(dst.owner(), model_.link.RoundTrip(kAtomicBytes) + model_.memory.AtomicRmw());
  NoteWrote(dst.owner());
  NoteRead(dst.owner());
  Unwatched();
  STALELEARN_RETURN_IF_ERROR(SchedulingPoint());
  return Timed(std::move(request), done);
}

Result<RequestPtr> TimingTransport::CompareSwap(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                std::uint64_t expected, std::uint64_t desired,
                                                std::uint64_t* old) {
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, inner_->CompareSwap(TimedRemoteRegion::Inner(dst), offset, expected, desired, old));
  const VirtualTime done = IssueRoundTrip(dst.owner(), model_.link.RoundTrip(kAtomicBytes) + model_.memory.AtomicRmw());
  NoteWrote(dst.owner());
  NoteRead(dst.owner());
  Unwatched();
  STALELEARN_RETURN_IF_ERROR(SchedulingPoint());
  return Timed(std::move(request), done);
}

Status TimingTransport::Flush(Rank peer, transport::Timeout timeout) {
  STALELEARN_RETURN_IF_ERROR(inner_->Flush(peer, timeout));
  VirtualTime acked;
  {
    std::lock_guard lock(clock_mutex_);
    if (peer.value < 0 || peer.value >= static_cast<int>(acked_.size())) return Status::Ok();
    acked = acked_[peer.value];
  }
  if (AdvanceClockTo(acked, Category::kTransfer)) return SchedulingPoint(kReadOnly);
  return Status::Ok();
}

Status TimingTransport::FlushAll(transport::Timeout timeout) {
  STALELEARN_RETURN_IF_ERROR(inner_->FlushAll(timeout));
  VirtualTime acked;
  {
    std::lock_guard lock(clock_mutex_);
    acked = acked_.empty() ? now_ : *std::max_element(acked_.begin(), acked_.end());
  }
  if (AdvanceClockTo(acked, Category::kTransfer)) return SchedulingPoint(kReadOnly);
  return Status::Ok();
}

Status TimingTransport::CompleteAt(VirtualTime done) {
  if (AdvanceClockTo(done, Category::kTransfer)) return SchedulingPoint(kReadOnly);
  return Status::Ok();
}

// ---- SimulatedTime ----

VirtualTime TimingTransport::Now() const {
  std::lock_guard lock(clock_mutex_);
  return now_;
}

TimeBreakdown TimingTransport::breakdown() const {
  std::lock_guard lock(clock_mutex_);
  return breakdown_;
}

SimulatedPresets TimingTransport::presets() const {
  return {model_.memory.name(), model_.link.name(), model_.compute.name()};
}


Status TimingTransport::ChargeComputeWork(const transport::ComputeWork& work) {
  if (!(work.flops >= 0 && work.bytes >= 0 && work.random_accesses >= 0)) {
    return InvalidArgument("ChargeCompute: work counters must be >= 0");
  }
  const VirtualDuration compute = model_.compute.Compute(work);
  // Rows a preset does not price: no time, and no scheduling point either
  // (the schedule of runs priced without them stays as it was).
  const bool rows_only =
      work.rows_refreshed > 0 && work.flops == 0 && work.bytes == 0 && work.random_accesses == 0 && work.samples == 0;
  if (rows_only && compute == VirtualDuration(0)) return Status::Ok();
  AdvanceClockTo(Now() + OnSharedCore(compute), Category::kCompute);
  return SchedulingPoint();
}

Status TimingTransport::ChargeMergeWork(const transport::MergeWork& work) {
  const VirtualDuration merge = model_.memory.Merge(work);
  // Rows alone that the preset does not price: as above.
  if (work.rows > 0 && work.bytes == 0 && work.ops == 0 && merge == VirtualDuration(0)) return Status::Ok();
  AdvanceClockTo(Now() + (model_.memory.merges_on_host_core() ? OnSharedCore(merge) : merge), Category::kMerge);
  return SchedulingPoint();
}

VirtualDuration TimingTransport::OnSharedCore(VirtualDuration work) {
  if (model_.shared_cores <= 0 || scheduler_ == nullptr) return work;
  // More ranks than cores: the OS switches a thread in for each piece of
  // work, on a core the others share (cost_model.h, IdleCosts::handoff).
  if (scheduler_->world_size() > model_.shared_cores && model_.compute.idle()) work += model_.compute.idle()->handoff;
  return scheduler_->WorkOnSharedCores(rank().value, Now(), work, model_.shared_cores);
}

Status TimingTransport::AdvanceTo(VirtualTime t) {
  if (AdvanceClockTo(t, Category::kWait)) return SchedulingPoint(kReadOnly);
  return Status::Ok();
}

VirtualTime TimingTransport::PutVisibleAt(std::uint64_t bytes, transport::Rank target) const {
  std::lock_guard lock(clock_mutex_);
  const VirtualTime start = DepartureLocked();
  if (serving_links_) {  // as Put will reserve it (no scheduling point between)
    return serving_links_->ArrivalAt(target.value, start + model_.link.latency(), model_.link.Serialization(bytes));
  }
  return start + model_.link.Serialization(bytes) + model_.link.latency();
}

VirtualTime TimingTransport::GetVisibleAt(VirtualTime published_at, std::uint64_t bytes) const {
  return published_at + model_.link.latency() + model_.link.Serialization(bytes);
}

bool TimingTransport::deterministic() const {
  std::lock_guard lock(schedule_mutex_);
  return joined_once_;
}

Status TimingTransport::StartSchedule() {
  if (scheduler_ == nullptr) return Status::Ok();
  std::lock_guard lock(schedule_mutex_);
  if (joined_once_) return FailedPrecondition("timing: StartSchedule called twice");
  STALELEARN_RETURN_IF_ERROR(KeepLocked(scheduler_->Join(rank().value, Now())));
  turn_started_ = Now();
  scheduled_ = true;
  joined_once_ = true;
  return Status::Ok();
}

VirtualTime TimingTransport::NextPoll(VirtualTime since, const Backoff::Policy& policy) const {
  const VirtualTime now = Now();
  if (!model_.compute.idle()) return now;
  return model_.compute.NextPoll(since, now, policy);
}

Status TimingTransport::IdleUntilProgress() {
  std::unique_lock lock(schedule_mutex_);
  if (!failure_.ok()) return failure_;
  if (!scheduled_) {
    lock.unlock();
    std::this_thread::yield();
    return Status::Ok();
  }
  Result<VirtualTime> woke =
      scheduler_->IdleUntilProgress(rank().value, wrote_, read_, watch_.usable() ? &watch_ : nullptr);
  ResetMemorySetLocked(wrote_);
  ResetMemorySetLocked(read_);
  watch_.Reset();
  STALELEARN_RETURN_IF_ERROR(KeepLocked(woke.status()));
  AdvanceClockTo(*woke, Category::kWait);
  turn_started_ = Now();
  return Status::Ok();
}

Status TimingTransport::ExitScheduleForCollective() {
  std::lock_guard lock(schedule_mutex_);
  if (!failure_.ok()) return failure_;
  if (!scheduled_) return Status::Ok();
  return KeepLocked(scheduler_->ExitForCollective(rank().value));
}

Status TimingTransport::RejoinSchedule() {
  std::lock_guard lock(schedule_mutex_);
  if (!failure_.ok()) return failure_;
  if (!scheduled_) return Status::Ok();
  STALELEARN_RETURN_IF_ERROR(KeepLocked(scheduler_->Rejoin(rank().value, Now())));
  turn_started_ = Now();
  return Status::Ok();
}

void TimingTransport::LeaveSchedule() {
  std::lock_guard lock(schedule_mutex_);
  if (!scheduled_) return;
  scheduler_->Leave(rank().value);
  scheduled_ = false;
}

// ---- private ----

bool TimingTransport::AdvanceClockTo(VirtualTime t, Category category) {
  std::lock_guard lock(clock_mutex_);
  if (t <= now_) return false;
  const VirtualDuration gap = t - now_;
  switch (category) {
    case Category::kCompute: breakdown_.compute += gap; break;
    case Category::kTransfer: breakdown_.transfer += gap; break;
    case Category::kMerge: breakdown_.merge += gap; break;
    case Category::kWait: breakdown_.wait += gap; break;
  }
  now_ = t;
  return true;
}

VirtualTime TimingTransport::IssueOneWay(std::uint64_t bytes) {
  std::lock_guard lock(clock_mutex_);
  const VirtualDuration overhead = model_.link.overhead();
  now_ += overhead;
  breakdown_.transfer += overhead;
  const VirtualTime start = std::max(now_, nic_free_);
  nic_free_ = start + model_.link.Serialization(bytes);
  return nic_free_;
}

VirtualTime TimingTransport::IssueRoundTrip(Rank peer, VirtualDuration cost) {
  std::lock_guard lock(clock_mutex_);
  return IssueLocked(peer, now_ + cost);
}

VirtualTime TimingTransport::IssueGet(Rank peer, std::uint64_t bytes) {
  std::lock_guard lock(clock_mutex_);
  return IssueLocked(peer, ArrivedLocked(now_ + model_.link.RoundTrip(bytes), bytes));
}

VirtualTime TimingTransport::IssueServedGet(Rank peer, std::uint64_t bytes) {
  std::lock_guard lock(clock_mutex_);
  const VirtualDuration wire = model_.link.Serialization(bytes);
  // The request leaves behind this rank's own puts and reaches the owner's
  // port a latency later; the owner's link takes it from there. Alone:
  // RoundTrip(bytes).
  const VirtualTime start = serving_links_->Reserve(peer.value, DepartureLocked() + model_.link.latency(), wire);
  return IssueLocked(peer, ArrivedLocked(start + wire + model_.link.latency(), bytes));
}

VirtualTime TimingTransport::ArrivedLocked(VirtualTime alone, std::uint64_t bytes) {
  // The replies to this rank's gets come in over its link one after
  // another: a reply that would arrive while an earlier one still comes in
  // follows it (gets in flight together share the bandwidth, not add it).
  const VirtualTime arrived = std::max(alone, reply_free_ + model_.link.Serialization(bytes));
  reply_free_ = arrived;
  return arrived;
}

VirtualTime TimingTransport::IssueLocked(Rank peer, VirtualTime done) {
  const VirtualDuration overhead = model_.link.overhead();
  now_ += overhead;
  breakdown_.transfer += overhead;
  if (peer.value >= 0 && peer.value < static_cast<int>(acked_.size())) {
    acked_[peer.value] = std::max(acked_[peer.value], done);
  }
  return done;
}

void TimingTransport::NoteAck(Rank peer, VirtualTime acked) {
  std::lock_guard lock(clock_mutex_);
  if (peer.value < 0 || peer.value >= static_cast<int>(acked_.size())) return;
  acked_[peer.value] = std::max(acked_[peer.value], acked);
}

RequestPtr TimingTransport::Timed(RequestPtr inner, VirtualTime done) {
  return std::make_unique<TimedRequest>(std::move(inner), *this, done);
}

Status TimingTransport::SchedulingPoint(VirtualTimeScheduler::Effect effect) {
  std::lock_guard lock(schedule_mutex_);
  if (!failure_.ok()) return failure_;
  if (!scheduled_) return Status::Ok();
  const VirtualTime now = Now();
  // Reads within one round trip of the turn's start keep it (header comment).
  if (effect == VirtualTimeScheduler::Effect::kReadOnly && now - turn_started_ < 2 * model_.link.latency()) {
    return Status::Ok();
  }
  STALELEARN_RETURN_IF_ERROR(KeepLocked(scheduler_->Yield(rank().value, now, effect, wrote_)));
  // A read-only segment reported nothing: what was written since stays.
  if (effect == VirtualTimeScheduler::Effect::kMayWrite) ResetMemorySetLocked(wrote_);
  turn_started_ = now;
  return Status::Ok();
}

void TimingTransport::NoteWrote(Rank owner) {
  std::lock_guard lock(schedule_mutex_);
  if (owner.value >= 0 && owner.value < static_cast<int>(wrote_.size())) wrote_[owner.value] = 1;
}

void TimingTransport::NoteRead(Rank owner) {
  std::lock_guard lock(schedule_mutex_);
  if (owner.value >= 0 && owner.value < static_cast<int>(read_.size())) read_[owner.value] = 1;
}

void TimingTransport::WatchLocked(const TimedRemoteRegion* src, std::uint64_t offset, std::size_t bytes,
                                  const void* seen) {
  if (src == nullptr) {
    watch_.GiveUp();
    return;
  }
  watch_.Record(src->inner(), offset, bytes, seen);
}

void TimingTransport::WaitOnlyFor(const transport::RemoteRegion& region, std::uint64_t offset, const void* seen,
                                  std::size_t bytes) {
  if (!watching_) return;
  // What the poll read before no longer matters: only the owner's memory
  // (and this rank's own) can end the wait.
  std::lock_guard lock(schedule_mutex_);
  watch_.Reset();
  ResetMemorySetLocked(read_);
  const int owner = region.owner().value;
  if (owner >= 0 && owner < static_cast<int>(read_.size())) read_[owner] = 1;
  WatchLocked(TimedRemoteRegion::Of(region), offset, bytes, seen);
}

void TimingTransport::Unwatched() {
  if (!watching_) return;
  std::lock_guard lock(schedule_mutex_);
  watch_.GiveUp();
}

void TimingTransport::ResetMemorySetLocked(std::vector<char>& set) const {
  set.assign(static_cast<std::size_t>(inner_->world_size()), 0);
  const int self = inner_->rank().value;
  if (self >= 0 && self < static_cast<int>(set.size())) set[self] = 1;
}

Status TimingTransport::KeepLocked(const Status& status) {
  if (!status.ok() && failure_.ok()) failure_ = status;
  return status;
}

void TimingTransport::Remember(const Status& status) {
  if (status.ok()) return;
  std::lock_guard lock(schedule_mutex_);
  if (failure_.ok()) log::Error("timing: {}", status.ToString());
  (void)KeepLocked(status);
}

}  // namespace stalelearn::backends::timing

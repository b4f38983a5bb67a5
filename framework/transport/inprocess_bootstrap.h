// Bootstrap for ranks that are threads of one process (single-process
// emulation, `--ranks C:M`, and the threaded tests).
//
//   RunRanks(4, [](Bootstrap& bootstrap) {          // 4 threads, ranks 0..3
//     auto all = ValueOrThrow(bootstrap.AllGather("addresses", my_bytes));
//     ThrowIfError(bootstrap.Barrier());
//   });                                             // rethrows a rank's exception
//
// An InProcessGroup is the meeting point of the N ranks: it hands out one
// InProcessBootstrap per rank and holds process-wide objects that in-process
// backends share (GetOrCreateShared; e.g. the local backend's fabric). A
// backend reaches the group from a Bootstrap& with
// dynamic_cast<InProcessBootstrap*>(&bootstrap).
//
// Collectives wait at most the group's deadline: a rank that never arrives
// gives kTimeout naming it, a rank whose body already returned or failed gives
// kUnavailable, never a hang.
//
// Threading and lifetimes: InProcessGroup is thread-safe. Each
// InProcessBootstrap follows the Bootstrap rules (its rank's thread only) and
// keeps its group alive through a shared_ptr.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "framework/transport/bootstrap.h"

namespace stalelearn::transport {

inline constexpr std::chrono::milliseconds kDefaultInProcessDeadline{std::chrono::seconds(120)};

class InProcessGroup : public std::enable_shared_from_this<InProcessGroup> {
 public:
  // kInvalidArgument unless world_size >= 1 and deadline > 0.
  static Result<std::shared_ptr<InProcessGroup>> Create(
      int world_size, std::chrono::milliseconds deadline = kDefaultInProcessDeadline);

  int world_size() const { return world_size_; }
  std::chrono::milliseconds deadline() const { return deadline_; }

  // The bootstrap of `rank`; one per rank (kFailedPrecondition on a second
  // call for the same rank, kInvalidArgument outside 0..world_size-1).
  Result<std::unique_ptr<Bootstrap>> MakeBootstrap(Rank rank);

  // Returns the object stored under `key`, creating it with `make()` (which
  // returns std::shared_ptr<T>) on first use. Called under the group's lock,
  // so `make` runs exactly once per key and must not call back into the
  // group. nullptr if `key` already holds an object of another type.
  template <class T, class Factory>
  std::shared_ptr<T> GetOrCreateShared(const std::string& key, Factory&& make);

  // Marks `rank` as gone (its body returned or threw): collectives waiting
  // for it stop with kUnavailable and `reason`. Used by RunRanks.
  void MarkDeparted(Rank rank, std::string reason);

  // One collective round, the building block of every collective: deposits
  // `contribution` (tagged with `what`, e.g. "allgather:addresses") as
  // `rank`'s share of its `round`-th collective and returns all shares,
  // indexed by rank, once every rank has deposited. kInvalidArgument if the
  // ranks disagree on `what`.
  Result<std::vector<Bytes>> Exchange(Rank rank, std::uint64_t round, const std::string& what,
                                      Bytes contribution);

  // Bootstrap store. Publish: `rank`'s puts made before its Sync number
  // `sync` (0, 1, ...). Lookup: the value `owner` put last before its Sync
  // number `syncs_done - 1`, i.e. what a reader that completed `syncs_done`
  // Syncs may see, even if the owner already published more since.
  void Publish(Rank rank, std::uint64_t sync, std::map<std::string, Bytes, std::less<>> values);
  Result<Bytes> Lookup(Rank owner, std::string_view key, std::uint64_t syncs_done) const;

  // Bootstrap messages: Post appends `bytes` to `to`'s mailbox; TakeMail
  // empties `rank`'s, in arrival order. kInvalidArgument for a rank outside
  // 0..world_size-1.
  Status Post(Rank to, Bytes bytes);
  std::vector<Bytes> TakeMail(Rank rank);

 private:
  InProcessGroup(int world_size, std::chrono::milliseconds deadline)
      : world_size_(world_size), deadline_(deadline), store_(world_size) {}

  struct Share {
    std::string what;
    Bytes bytes;
  };
  struct RoundState {
    std::map<int, Share> shares;  // by rank
    int collected = 0;            // ranks that took the result
  };
  // Why `round` cannot complete (a rank it lacks has departed), or "".
  std::string DepartedReasonLocked(const RoundState& round) const;

  const int world_size_;
  const std::chrono::milliseconds deadline_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::set<int> handed_out_;
  std::map<int, std::string> departed_;  // rank -> reason
  std::map<std::uint64_t, RoundState> rounds_;
  // By rank, then key, then the Sync that published the value.
  std::vector<std::map<std::string, std::map<std::uint64_t, Bytes>, std::less<>>> store_;
  struct SharedObject {
    std::type_index type;
    std::shared_ptr<void> object;
  };
  std::map<std::string, SharedObject> shared_;
  std::map<int, std::vector<Bytes>> mail_;  // by receiving rank
};

// The per-rank Bootstrap of an InProcessGroup.
class InProcessBootstrap final : public Bootstrap {
 public:
  InProcessBootstrap(std::shared_ptr<InProcessGroup> group, Rank rank)
      : group_(std::move(group)), rank_(rank) {}

  InProcessGroup& group() const { return *group_; }

  Rank rank() const override { return rank_; }
  int world_size() const override { return group_->world_size(); }
  Status Put(std::string_view key, std::span<const std::byte> value) override;
  Result<Bytes> Get(Rank owner, std::string_view key) override;
  Status Sync() override;
  Result<std::vector<Bytes>> AllGather(std::string_view key, std::span<const std::byte> mine) override;
  Status AllReduceSum(std::span<float> values) override;
  Status AllReduceSum(std::span<double> values) override;
  Status AllReduceMax(std::span<std::int64_t> values) override;
  Status Barrier() override;
  Status SendMessage(Rank to, std::span<const std::byte> bytes) override;
  Result<std::vector<Bytes>> ReceiveMessages() override;

 private:
  // Enters this rank's next collective round (InProcessGroup::Exchange).
  Result<std::vector<Bytes>> Round(const std::string& what, Bytes contribution);
  // An allreduce as one round; defined and instantiated in the .cc only.
  template <class T, class Combine>
  Status ReduceRound(std::string_view name, std::span<T> values, Combine combine);

  std::shared_ptr<InProcessGroup> group_;
  Rank rank_;
  std::uint64_t next_round_ = 0;  // collectives this rank has entered
  std::uint64_t syncs_done_ = 0;  // Sync() calls this rank completed
  std::map<std::string, Bytes, std::less<>> pending_;  // Put since the last Sync
};

// Runs `body` on `world_size` threads, rank r on thread r with
// log::SetThreadRank(r), and joins them. If any rank throws, the other ranks'
// collectives fail fast (kUnavailable) and, after all threads joined, the
// exception of the lowest failing rank is rethrown (the others are logged
// unless the rethrown message already contains theirs). A kUnavailable
// failure (a peer left: a consequence) is passed over for a cause, unless
// its message already names one.
// Throws stalelearn::Error for a bad world_size or deadline.
void RunRanks(int world_size, const std::function<void(Bootstrap&)>& body,
              std::chrono::milliseconds deadline = kDefaultInProcessDeadline);
// Same, on an existing group (e.g. to share objects with the caller).
void RunRanks(const std::shared_ptr<InProcessGroup>& group, const std::function<void(Bootstrap&)>& body);

// ---- implementation of the template ----

template <class T, class Factory>
std::shared_ptr<T> InProcessGroup::GetOrCreateShared(const std::string& key, Factory&& make) {
  std::lock_guard lock(mutex_);
  auto it = shared_.find(key);
  if (it == shared_.end()) {
    std::shared_ptr<T> created = std::forward<Factory>(make)();
    it = shared_.emplace(key, SharedObject{std::type_index(typeid(T)), std::move(created)}).first;
  }
  if (it->second.type != std::type_index(typeid(T))) return nullptr;
  return std::static_pointer_cast<T>(it->second.object);
}

}  // namespace stalelearn::transport

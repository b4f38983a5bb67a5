#include "framework/transport/inprocess_bootstrap.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <iterator>
#include <thread>

#include "framework/core/error.h"
#include "framework/core/log.h"

namespace stalelearn::transport {

Result<std::shared_ptr<InProcessGroup>> InProcessGroup::Create(int world_size,
                                                               std::chrono::milliseconds deadline) {
  if (world_size < 1) return InvalidArgument(fmt::format("in-process world size must be >= 1, got {}", world_size));
  if (deadline.count() <= 0) {
    return InvalidArgument(fmt::format("in-process deadline must be > 0 ms, got {}", deadline.count()));
  }
  // Not make_shared: the constructor is private.
  return std::shared_ptr<InProcessGroup>(new InProcessGroup(world_size, deadline));
}

Result<std::unique_ptr<Bootstrap>> InProcessGroup::MakeBootstrap(Rank rank) {
  if (rank.value < 0 || rank.value >= world_size_) {
    return InvalidArgument(fmt::format("rank {} outside 0..{}", rank.value, world_size_ - 1));
  }
  std::lock_guard lock(mutex_);
  if (!handed_out_.insert(rank.value).second) {
    return FailedPrecondition(fmt::format("bootstrap of rank {} already handed out", rank.value));
  }
  return std::unique_ptr<Bootstrap>(new InProcessBootstrap(shared_from_this(), rank));
}

void InProcessGroup::MarkDeparted(Rank rank, std::string reason) {
  std::lock_guard lock(mutex_);
  departed_.emplace(rank.value, std::move(reason));
  changed_.notify_all();
}

std::string InProcessGroup::DepartedReasonLocked(const RoundState& round) const {
  for (const auto& [rank, reason] : departed_) {
    if (!round.shares.contains(rank)) return fmt::format("rank {} {}", rank, reason);
  }
  return {};
}

Result<std::vector<Bytes>> InProcessGroup::Exchange(Rank rank, std::uint64_t round, const std::string& what,
                                                    Bytes contribution) {
  std::unique_lock lock(mutex_);
  // std::map references stay valid while other rounds come and go; this one
  // is erased only after every rank, this one included, collected it.
  RoundState& state = rounds_[round];
  state.shares[rank.value] = Share{what, std::move(contribution)};
  changed_.notify_all();

  std::string departed;
  const bool complete = changed_.wait_until(lock, std::chrono::steady_clock::now() + deadline_, [&] {
    if (static_cast<int>(state.shares.size()) == world_size_) return true;
    departed = DepartedReasonLocked(state);
    return !departed.empty();
  });
  if (!complete) {
    std::vector<int> missing;
    for (int r = 0; r < world_size_; ++r) {
      if (!state.shares.contains(r)) missing.push_back(r);
    }
    return TimeoutError(fmt::format("collective '{}' timed out after {} ms waiting for rank(s) {}", what,
                                    deadline_.count(), fmt::join(missing, ", ")));
  }
  if (!departed.empty()) {
    return Unavailable(fmt::format("collective '{}' cannot complete: {}", what, departed));
  }

  Status agreed = Status::Ok();
  std::vector<Bytes> all;
  all.reserve(world_size_);
  for (const auto& [peer, share] : state.shares) {
    if (share.what != what && agreed.ok()) {
      agreed = InvalidArgument(fmt::format("collective mismatch: rank {} called '{}' but rank {} called '{}'",
                                           rank.value, what, peer, share.what));
    }
    all.push_back(share.bytes);
  }
  if (++state.collected == world_size_) rounds_.erase(round);
  if (!agreed.ok()) return agreed;
  return all;
}

void InProcessGroup::Publish(Rank rank, std::uint64_t sync, std::map<std::string, Bytes, std::less<>> values) {
  std::lock_guard lock(mutex_);
  for (auto& [key, value] : values) store_[rank.value][key][sync] = std::move(value);
}

Result<Bytes> InProcessGroup::Lookup(Rank owner, std::string_view key, std::uint64_t syncs_done) const {
  if (owner.value < 0 || owner.value >= world_size_) {
    return InvalidArgument(fmt::format("rank {} outside 0..{}", owner.value, world_size_ - 1));
  }
  std::lock_guard lock(mutex_);
  const auto& values = store_[owner.value];
  auto it = values.find(key);
  if (it != values.end()) {
    // The newest version published by a Sync the reader has completed.
    auto version = it->second.lower_bound(syncs_done);
    if (version != it->second.begin()) return std::prev(version)->second;
  }
  return NotFound(fmt::format("bootstrap key '{}' of rank {} not found", key, owner.value));
}

// ---- InProcessBootstrap ----

namespace {

template <class T>
Bytes ToBytes(std::span<const T> values) {
  Bytes bytes(values.size_bytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Combines every rank's share into `values`, in rank order so that all ranks
// compute bit-identical results.
template <class T, class Combine>
void ReduceInto(const std::vector<Bytes>& shares, std::span<T> values, Combine combine) {
  for (std::size_t r = 0; r < shares.size(); ++r) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      T element;
      std::memcpy(&element, shares[r].data() + i * sizeof(T), sizeof(T));
      values[i] = r == 0 ? element : combine(values[i], element);
    }
  }
}

}  // namespace

Result<std::vector<Bytes>> InProcessBootstrap::Round(const std::string& what, Bytes contribution) {
  return group_->Exchange(rank_, next_round_++, what, std::move(contribution));
}

template <class T, class Combine>
Status InProcessBootstrap::ReduceRound(std::string_view name, std::span<T> values, Combine combine) {
  // The length is part of the tag, so ranks with different lengths get a
  // mismatch error instead of reading past a share.
  STALELEARN_ASSIGN_OR_RETURN(std::vector<Bytes> shares,
                              Round(fmt::format("{}[{}]", name, values.size()),
                                    ToBytes(std::span<const T>(values.data(), values.size()))));
  ReduceInto(shares, values, combine);
  return Status::Ok();
}

Status InProcessBootstrap::Put(std::string_view key, std::span<const std::byte> value) {
  pending_[std::string(key)] = Bytes(value.begin(), value.end());
  return Status::Ok();
}

Result<Bytes> InProcessBootstrap::Get(Rank owner, std::string_view key) {
  return group_->Lookup(owner, key, syncs_done_);
}

Status InProcessBootstrap::Sync() {
  group_->Publish(rank_, syncs_done_, std::exchange(pending_, {}));
  STALELEARN_RETURN_IF_ERROR(Round("sync", {}).status());
  ++syncs_done_;
  return Status::Ok();
}

Result<std::vector<Bytes>> InProcessBootstrap::AllGather(std::string_view key, std::span<const std::byte> mine) {
  return Round(fmt::format("allgather:{}", key), Bytes(mine.begin(), mine.end()));
}

Status InProcessBootstrap::AllReduceSum(std::span<float> values) {
  return ReduceRound("allreduce_sum_float", values, std::plus<float>());
}

Status InProcessBootstrap::AllReduceSum(std::span<double> values) {
  return ReduceRound("allreduce_sum_double", values, std::plus<double>());
}

Status InProcessBootstrap::AllReduceMax(std::span<std::int64_t> values) {
  return ReduceRound("allreduce_max_int64", values,
                     [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
}

Status InProcessBootstrap::Barrier() { return Round("barrier", {}).status(); }

Status InProcessGroup::Post(Rank to, Bytes bytes) {
  if (to.value < 0 || to.value >= world_size_) {
    return InvalidArgument(fmt::format("bootstrap message to rank {} of {}", to.value, world_size_));
  }
  std::lock_guard lock(mutex_);
  mail_[to.value].push_back(std::move(bytes));
  return Status::Ok();
}

std::vector<Bytes> InProcessGroup::TakeMail(Rank rank) {
  std::lock_guard lock(mutex_);
  auto it = mail_.find(rank.value);
  if (it == mail_.end()) return {};
  std::vector<Bytes> mail = std::move(it->second);
  mail_.erase(it);
  return mail;
}

Status InProcessBootstrap::SendMessage(Rank to, std::span<const std::byte> bytes) {
  return group_->Post(to, Bytes(bytes.begin(), bytes.end()));
}

Result<std::vector<Bytes>> InProcessBootstrap::ReceiveMessages() { return group_->TakeMail(rank_); }

// ---- RunRanks ----

namespace {

std::string Describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// kUnavailable: the rank failed because a peer left (a freed region, a
// departed rank in a collective), a consequence rather than a cause.
bool PeerGone(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.status().code() == StatusCode::kUnavailable;
  } catch (...) {
    return false;
  }
}

}  // namespace

void RunRanks(const std::shared_ptr<InProcessGroup>& group, const std::function<void(Bootstrap&)>& body) {
  const int world_size = group->world_size();
  std::vector<std::exception_ptr> errors(world_size);
  std::vector<std::chrono::steady_clock::time_point> failed_at(world_size);
  {
    std::vector<std::jthread> threads;
    threads.reserve(world_size);
    for (int r = 0; r < world_size; ++r) {
      threads.emplace_back([&, r] {
        log::SetThreadRank(r);
        try {
          std::unique_ptr<Bootstrap> bootstrap = ValueOrThrow(group->MakeBootstrap(Rank{r}));
          body(*bootstrap);
          group->MarkDeparted(Rank{r}, "finished its work");
        } catch (...) {
          errors[r] = std::current_exception();
          failed_at[r] = std::chrono::steady_clock::now();
          group->MarkDeparted(Rank{r}, "failed: " + Describe(errors[r]));
        }
        log::SetThreadRank(-1);
      });
    }
  }  // jthreads join here
  // Ranks often fail alike (every rank of a bad config), or fail because one
  // did (its reason is in their "rank N failed: ..." message): repeating what
  // the rethrown message already says would bury it, so only news is logged.
  // The rethrown failure: the first (in time) that is a cause, or a
  // consequence naming its cause; else the first. Ranks stuck behind a
  // failed one fail later (a deadline, a scheduler's deadlock), often
  // without naming it.
  std::vector<std::string> messages(world_size);
  for (int r = 0; r < world_size; ++r) {
    if (errors[r]) messages[r] = Describe(errors[r]);
  }
  const auto explains = [&](int r) {
    if (!PeerGone(errors[r])) return true;
    for (int other = 0; other < world_size; ++other) {
      if (other != r && errors[other] && !PeerGone(errors[other]) &&
          messages[r].find(messages[other]) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  const auto first_of = [&](bool causes_only) {
    int first = -1;
    for (int r = 0; r < world_size; ++r) {
      if (!errors[r] || (causes_only && !explains(r))) continue;
      if (first < 0 || failed_at[r] < failed_at[first]) first = r;  // ties: the lower rank
    }
    return first;
  };
  int chosen = first_of(/*causes_only=*/true);
  if (chosen < 0) chosen = first_of(/*causes_only=*/false);
  if (chosen >= 0 && !PeerGone(errors[chosen])) {
    // A consequence that names the cause says the same and where it surfaced.
    for (int r = 0; r < world_size; ++r) {
      if (r != chosen && errors[r] && PeerGone(errors[r]) && messages[r].find(messages[chosen]) != std::string::npos) {
        chosen = r;
        break;
      }
    }
  }
  if (chosen < 0) return;
  const std::exception_ptr first = errors[chosen];
  const std::string& first_message = messages[chosen];
  // Each other failure once, with the ranks that had it: 64 ranks stuck
  // alike behind one that diverged are one line, not 64 above the cause.
  std::vector<std::pair<std::string, std::vector<int>>> others;  // in order of their lowest rank
  for (int r = 0; r < world_size; ++r) {
    if (!errors[r] || r == chosen || first_message.find(messages[r]) != std::string::npos) continue;
    // A rank that failed only because a peer left adds nothing to the cause.
    if (PeerGone(errors[r]) && !PeerGone(first)) continue;
    const auto same = std::ranges::find_if(others, [&](const auto& o) { return o.first == messages[r]; });
    if (same != others.end()) {
      same->second.push_back(r);
    } else {
      others.push_back({messages[r], {r}});
    }
  }
  for (const auto& [message, ranks] : others) {
    if (ranks.size() == 1) {
      log::Error("rank {} also failed: {}", ranks[0], message);
      continue;
    }
    constexpr std::size_t kNamed = 4;
    const std::vector<int> named(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(std::min(kNamed, ranks.size())));
    const std::string more = ranks.size() > kNamed ? fmt::format(" and {} more", ranks.size() - kNamed) : "";
    log::Error("ranks {}{} also failed: {}", fmt::join(named, ", "), more, message);
  }
  std::rethrow_exception(first);
}

void RunRanks(int world_size, const std::function<void(Bootstrap&)>& body, std::chrono::milliseconds deadline) {
  RunRanks(ValueOrThrow(InProcessGroup::Create(world_size, deadline)), body);
}

}  // namespace stalelearn::transport

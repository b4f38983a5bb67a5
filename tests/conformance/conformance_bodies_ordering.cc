// Ordering and atomics bodies: commit words, contention, election, barrier.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "tests/conformance/conformance_bodies.h"

namespace stalelearn::conformance {
namespace {

using transport::CompareSwapBlocking;
using transport::FetchAddBlocking;
using transport::GetBlocking;
using transport::LoadAcquire64;

enum CaseId : std::uint64_t { kOrderingCase = 3 };

// Layout of the reader's region in OrderingCommitWord: one commit word per
// rank, then one 64-byte slot per (writer, round). Slots are never reused,
// so a writer never overwrites what the reader may still be checking.
struct CommitLayout {
  static constexpr std::uint64_t kTotalRounds = 100000;
  static constexpr std::size_t kSlotBytes = 64;

  int world_size;
  std::uint64_t rounds_per_writer;

  explicit CommitLayout(int n)
      : world_size(n), rounds_per_writer((kTotalRounds + (n - 1) - 1) / (n - 1)) {}
  std::uint64_t CommitOffset(int writer) const { return 8 * static_cast<std::uint64_t>(writer); }
  std::uint64_t SlotOffset(int writer, std::uint64_t round) const {
    const std::uint64_t slots_begin = 8 * static_cast<std::uint64_t>(world_size);
    return slots_begin + ((writer - 1) * rounds_per_writer + (round - 1)) * kSlotBytes;
  }
  std::size_t bytes() const { return SlotOffset(world_size, 1); }
  // Payloads of 1..56 bytes at offsets 0..7 inside the slot: unaligned too.
  static std::uint64_t PayloadShift(std::uint64_t round) { return round % 8; }
  static std::size_t PayloadBytes(std::uint64_t round) { return 1 + (round * 7) % (kSlotBytes - 8); }
  // Mostly fence, sometimes flush, so that a backend that fails to order has
  // long stretches to be caught in.
  static bool FlushRound(std::uint64_t round) { return round % 16 == 0; }
  // After these rounds (one fence, one flush round in 64) the writer waits
  // until the reader acknowledged them, so a payload that lags its commit
  // word is caught whatever the thread timing.
  static bool AckRound(std::uint64_t round) { return round % 64 == 63 || round % 64 == 32; }
  static constexpr std::uint64_t kAckOffset = 0;  // in each writer's region
};

void WriteCommits(RankEnv& env, const RemoteRegion& reader, MemoryRegion& acks, const CommitLayout& layout) {
  Transport& t = env.transport();
  const int me = env.rank().value;
  for (std::uint64_t round = 1; round <= layout.rounds_per_writer; ++round) {
    const Bytes payload = Pattern(PatternSeed(me, kOrderingCase, round), CommitLayout::PayloadBytes(round));
    env.RequireOk(Complete(t.Put(payload.data(), payload.size(), reader,
                                 layout.SlotOffset(me, round) + CommitLayout::PayloadShift(round))),
                  "put payload");
    // Both ways of ordering payload before the commit word...
    if (CommitLayout::FlushRound(round)) {
      env.RequireOk(t.Flush(Rank{0}, kOpTimeout), "flush");
    } else {
      env.RequireOk(t.Fence(Rank{0}), "fence");
    }
    // ...and the two ways of writing it: both leave the word equal to `round`.
    if (round % 3 == 0) {
      env.RequireOk(Complete(t.Put(&round, sizeof round, reader, layout.CommitOffset(me))), "put commit word");
    } else {
      env.RequireOk(Complete(t.AtomicAdd(reader, layout.CommitOffset(me), 1)), "atomic add commit word");
    }
    if (CommitLayout::AckRound(round)) {
      env.WaitUntil([&] { return transport::LoadAcquire64(acks.data() + CommitLayout::kAckOffset) >= round; },
                    "acknowledgement of the reader");
    }
  }
  env.RequireOk(t.Flush(Rank{0}, kOpTimeout), "final flush");
}

void ReadCommits(RankEnv& env, MemoryRegion& region, const std::vector<std::unique_ptr<RemoteRegion>>& writers,
                 const CommitLayout& layout) {
  const std::byte* base = region.data();
  std::vector<std::uint64_t> seen(layout.world_size, 0);
  const auto deadline = std::chrono::steady_clock::now() + kOpTimeout;
  auto all_seen = [&] {
    return std::all_of(seen.begin() + 1, seen.end(), [&](std::uint64_t s) { return s == layout.rounds_per_writer; });
  };
  while (!all_seen()) {
    bool advanced = false;
    for (int writer = 1; writer < layout.world_size; ++writer) {
      const std::uint64_t committed = LoadAcquire64(base + layout.CommitOffset(writer));
      if (committed < seen[writer] || committed > layout.rounds_per_writer) {
        env.Fail(fmt::format("commit word of rank {} went from {} to {}", writer, seen[writer], committed));
      }
      for (std::uint64_t round = seen[writer] + 1; round <= committed; ++round) {
        const std::span<const std::byte> slot(base + layout.SlotOffset(writer, round), CommitLayout::kSlotBytes);
        const std::size_t shift = CommitLayout::PayloadShift(round);
        const std::size_t bytes = CommitLayout::PayloadBytes(round);
        const std::size_t bad = FirstMismatch(slot.subspan(shift, bytes), PatternSeed(writer, kOrderingCase, round));
        // One failure is enough: abort rather than report 100,000 of them.
        if (bad != bytes) {
          env.Fail(fmt::format("rank {} round {}: commit word seen but payload byte {} of {} not written", writer,
                               round, bad, bytes));
        }
        if (!AllZero(slot.first(shift)) || !AllZero(slot.subspan(shift + bytes))) {
          env.Fail(fmt::format("rank {} round {}: bytes outside the payload written", writer, round));
        }
        if (CommitLayout::AckRound(round)) {
          env.RequireOk(Complete(env.transport().Put(&round, sizeof round, *writers[writer], CommitLayout::kAckOffset)),
                        "put acknowledgement");
          env.RequireOk(env.transport().Flush(Rank{writer}, kOpTimeout), "flush acknowledgement");
        }
      }
      advanced |= committed > seen[writer];
      seen[writer] = committed;
    }
    if (!advanced) {
      env.StopIfAnyRankFailed();
      env.Require(std::chrono::steady_clock::now() < deadline,
                  fmt::format("commit words stuck at {} of {}", fmt::join(seen, ","), layout.rounds_per_writer));
      env.transport().Progress();
      std::this_thread::yield();
    }
  }
}

}  // namespace

void OrderingCommitWord(RankEnv& env) {
  const CommitLayout layout(env.world_size());
  const bool reader = env.rank().value == 0;
  auto region = env.RequireValue(env.transport().Register(reader ? layout.bytes() : 64, Access::kAll), "register");
  auto remotes = ImportAll(env, *region, "ordering");
  if (reader) {
    ReadCommits(env, *region, remotes, layout);
  } else {
    WriteCommits(env, *remotes[0], *region, layout);
  }
  env.Barrier();
}

void AtomicContention(RankEnv& env) {
  constexpr std::uint64_t kOps = 10000;
  constexpr std::uint64_t kSumOffset = 0;
  constexpr std::uint64_t kTicketOffset = 8;
  Transport& t = env.transport();
  auto region = env.RequireValue(t.Register(64, Access::kAll), "register");
  auto remotes = ImportAll(env, *region, "atomics");
  const RemoteRegion& word_owner = *remotes[0];

  // Every rank, rank 0 included, hammers the two words of rank 0. The adds'
  // requests are dropped: the flush below must still wait for them.
  std::vector<std::uint64_t> tickets;
  tickets.reserve(kOps);
  for (std::uint64_t i = 0; i < kOps; ++i) {
    env.RequireOk(t.AtomicAdd(word_owner, kSumOffset, env.rank().value + 1).status(), "atomic add");
    tickets.push_back(env.RequireValue(FetchAddBlocking(t, word_owner, kTicketOffset, 1, kOpTimeout), "fetch-add"));
  }
  env.RequireOk(t.Flush(Rank{0}, kOpTimeout), "flush");
  env.Check(std::is_sorted(tickets.begin(), tickets.end()) &&
                std::adjacent_find(tickets.begin(), tickets.end()) == tickets.end(),
            "one rank's fetch-add tickets are not strictly increasing");
  env.Barrier();

  const auto n = static_cast<std::uint64_t>(env.world_size());
  std::uint64_t sum = 0, next_ticket = 0;
  env.CheckOk(GetBlocking(t, &sum, 8, word_owner, kSumOffset, kOpTimeout), "get sum");
  env.CheckOk(GetBlocking(t, &next_ticket, 8, word_owner, kTicketOffset, kOpTimeout), "get ticket counter");
  env.Check(sum == kOps * n * (n + 1) / 2, fmt::format("sum of atomic adds {} != {}", sum, kOps * n * (n + 1) / 2));
  env.Check(next_ticket == kOps * n, fmt::format("fetch-add counter {} != {}", next_ticket, kOps * n));
  env.Barrier();  // rank 0 progresses until every get above is served

  // Every ticket 0..n*kOps-1 went to exactly one rank.
  const std::span<const std::byte> my_tickets = std::as_bytes(std::span(tickets));
  auto all = env.RequireValue(env.bootstrap().AllGather("tickets", my_tickets), "gather tickets");
  std::vector<std::uint64_t> merged(kOps * n);
  for (std::uint64_t r = 0; r < n; ++r) {
    env.Require(all[r].size() == kOps * 8, "ticket list of the wrong size");
    std::memcpy(merged.data() + r * kOps, all[r].data(), kOps * 8);
  }
  std::sort(merged.begin(), merged.end());
  for (std::uint64_t i = 0; i < merged.size(); ++i) {
    if (merged[i] != i) {
      env.Check(false, fmt::format("ticket {} handed out {} times", i, std::count(merged.begin(), merged.end(), i)));
      break;
    }
  }
  env.Barrier();
}

void CompareSwapElection(RankEnv& env) {
  constexpr std::uint64_t kElections = 200;
  Transport& t = env.transport();
  auto region = env.RequireValue(t.Register(8 * kElections, Access::kAll), "register");
  auto remotes = ImportAll(env, *region, "election");
  const std::uint64_t my_vote = env.rank().value + 1;  // never 0, the "no winner yet" value

  std::vector<std::uint64_t> olds;
  for (std::uint64_t e = 0; e < kElections; ++e) {
    olds.push_back(env.RequireValue(CompareSwapBlocking(t, *remotes[0], 8 * e, 0, my_vote, kOpTimeout), "compare-swap"));
  }
  env.Barrier();  // rank 0 progresses until every compare-swap is served
  auto all = env.RequireValue(env.bootstrap().AllGather("elections", std::as_bytes(std::span(olds))), "gather");
  std::vector<std::uint64_t> final_words(kElections);
  env.RequireOk(GetBlocking(t, final_words.data(), 8 * kElections, *remotes[0], 0, kOpTimeout), "get words");
  for (std::uint64_t e = 0; e < kElections; ++e) {
    int winners = 0;
    for (int r = 0; r < env.world_size(); ++r) {
      std::uint64_t old;
      std::memcpy(&old, all[r].data() + 8 * e, 8);
      if (old == 0) {
        ++winners;
        env.Check(final_words[e] == static_cast<std::uint64_t>(r) + 1,
                  fmt::format("election {}: rank {} won but the word holds {}", e, r, final_words[e]));
      } else {
        env.Check(old == final_words[e], fmt::format("election {}: rank {} lost to {}, the word holds {}", e, r, old,
                                                     final_words[e]));
      }
    }
    env.Check(winners == 1, fmt::format("election {} had {} winners", e, winners));
  }
  env.Barrier();
}

void BarrierOverRma(RankEnv& env) {
  constexpr std::uint64_t kBarriers = 50;
  Transport& t = env.transport();
  auto region = env.RequireValue(t.Register(64, Access::kAll), "register");
  auto remotes = ImportAll(env, *region, "barrier");
  const auto n = static_cast<std::uint64_t>(env.world_size());
  for (std::uint64_t i = 1; i <= kBarriers; ++i) {
    env.RequireOk(Complete(t.AtomicAdd(*remotes[0], 0, 1)), "arrive");
    env.RequireOk(t.Flush(Rank{0}, kOpTimeout), "flush");
    env.RmaBarrier();
    std::uint64_t count = 0;
    env.RequireOk(transport::GetBlocking(t, &count, 8, *remotes[0], 0, kOpTimeout), "get count");
    // Everybody's i-th add happened; nobody's (i+2)-th can have.
    env.Check(count >= i * n && count <= (i + 1) * n,
              fmt::format("after barrier {} the count is {}, expected {}..{}", i, count, i * n, (i + 1) * n));
  }
  env.RmaBarrier();
}

}  // namespace stalelearn::conformance

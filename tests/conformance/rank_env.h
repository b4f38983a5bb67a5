// What a conformance body sees on one rank: its Transport, its Bootstrap,
// checks that report failures (through a CheckSink, e.g. gtest) and a
// barrier that is safe with outstanding RMA. The same RankEnv serves ranks
// that are threads (in-process bootstrap) and ranks that are processes
// (MPI bootstrap), so a body never knows how it was launched.
//
// Threading: a RankEnv belongs to its rank's main thread. A CheckSink is
// shared by all ranks of a process and must be thread-safe.
// Lifetimes: the transport, bootstrap and sink outlive the RankEnv.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"

namespace stalelearn::conformance {

using transport::Access;
using transport::Bootstrap;
using transport::Bytes;
using transport::Capabilities;
using transport::MemoryRegion;
using transport::Rank;
using transport::RemoteRegion;
using transport::Transport;

// Deadline of one blocking operation and of every polling loop in a body:
// generous, it only turns a hang into a failure.
inline constexpr std::chrono::seconds kOpTimeout{60};

// Where failures and skips go. Thread-safe.
class CheckSink {
 public:
  virtual ~CheckSink() = default;
  virtual void Fail(Rank rank, const std::string& message, const std::source_location& where) = 0;
  // The backend lacks a capability the body needs; the rest was checked.
  virtual void Skip(Rank rank, const std::string& reason) = 0;
  // True once any rank sharing this sink failed: ranks that wait for a peer
  // give up at once instead of at their deadline. A sink of one process
  // under mpirun only knows its own rank.
  virtual bool AnyFailure() const = 0;
};

// Thrown by the Require* checks after the failure was reported: the body
// cannot go on on this rank.
class ConformanceAbort : public std::exception {
 public:
  const char* what() const noexcept override { return "conformance check failed (reported)"; }
};

class RankEnv {
 public:
  using TransportFactory = std::function<Result<std::unique_ptr<Transport>>()>;

  // Collective: registers this env's barrier word and exchanges its key.
  // `make_transport` makes another transport of the same backend
  // (collectively, e.g. for teardown tests).
  static Result<std::unique_ptr<RankEnv>> Create(Transport& transport, Bootstrap& bootstrap,
                                                 TransportFactory make_transport, CheckSink& sink);
  RankEnv(const RankEnv&) = delete;
  RankEnv& operator=(const RankEnv&) = delete;

  Transport& transport() { return transport_; }
  Bootstrap& bootstrap() { return bootstrap_; }
  Rank rank() const { return transport_.rank(); }
  int world_size() const { return transport_.world_size(); }
  Capabilities caps() const { return transport_.capabilities(); }
  // rank + k, modulo the world size.
  Rank Peer(int k) const;

  // Checks: report a failure with `what` and return false (never throw).
  bool Check(bool condition, std::string_view what, std::source_location where = std::source_location::current());
  bool CheckOk(const Status& status, std::string_view what,
               std::source_location where = std::source_location::current());
  // Checks that `status` is an error with `expected` code.
  bool CheckError(const Status& status, StatusCode expected, std::string_view what,
                  std::source_location where = std::source_location::current());
  // Requires: report and throw ConformanceAbort.
  [[noreturn]] void Fail(std::string_view what, std::source_location where = std::source_location::current());
  void Require(bool condition, std::string_view what, std::source_location where = std::source_location::current());
  void RequireOk(const Status& status, std::string_view what,
                 std::source_location where = std::source_location::current());
  template <class T>
  T RequireValue(Result<T> result, std::string_view what,
                 std::source_location where = std::source_location::current()) {
    RequireOk(result.status(), what, where);
    return std::move(result).value();
  }
  void Skip(const std::string& reason) { sink_.Skip(rank(), reason); }

  // Collective. All ranks have arrived when it returns. Safe while peers
  // still have to progress for RMA to complete: with target_must_progress it
  // is built from RMA on a word of rank 0 and progresses while it waits (a
  // rank blocked in an MPI collective would not), else Bootstrap::Barrier.
  //
  // Rule for bodies, from this: with target_must_progress a rank must not
  // enter a bootstrap collective while a peer may still wait for its
  // progress; RMA towards peers is followed by Barrier() before any
  // bootstrap collective (AllGather, MakeTransport, the runner's end).
  void Barrier();
  // The RMA form of Barrier(), whatever the capabilities (for its own test).
  void RmaBarrier();
  // Polls `done()` until true, progressing the transport and yielding;
  // Fail()s naming `what` after kOpTimeout. Stops (StopIfAnyRankFailed) when
  // another rank failed.
  void WaitUntil(const std::function<bool()>& done, std::string_view what);
  // Throws ConformanceAbort, reporting nothing more, if a rank failed already:
  // for loops that wait on peers.
  void StopIfAnyRankFailed();
  // Collective: a new transport of the backend under test.
  Result<std::unique_ptr<Transport>> MakeTransport() { return make_transport_(); }

 private:
  RankEnv(Transport& transport, Bootstrap& bootstrap, TransportFactory make_transport, CheckSink& sink)
      : transport_(transport), bootstrap_(bootstrap), make_transport_(std::move(make_transport)), sink_(sink) {}

  Transport& transport_;
  Bootstrap& bootstrap_;
  TransportFactory make_transport_;
  CheckSink& sink_;
  std::unique_ptr<MemoryRegion> barrier_words_;  // on every rank; rank 0's is used
  std::unique_ptr<RemoteRegion> barrier_on_rank0_;
  std::uint64_t barriers_ = 0;
};

// ---- helpers shared by the bodies ----

// Waits for an issued operation, or returns the error of issuing it.
Status Complete(Result<transport::RequestPtr> issued);

// Collective: exchanges `region`'s key under `name` and imports every rank's
// region (this rank's own included) into `transport`, indexed by rank.
std::vector<std::unique_ptr<RemoteRegion>> ImportAll(RankEnv& env, Transport& transport, const MemoryRegion& region,
                                                     std::string_view name);
// The same into the env's transport.
inline std::vector<std::unique_ptr<RemoteRegion>> ImportAll(RankEnv& env, const MemoryRegion& region,
                                                            std::string_view name) {
  return ImportAll(env, env.transport(), region, name);
}

// Deterministic pseudo-random bytes: the same (seed, size) gives the same
// bytes on every rank, different seeds differ almost everywhere.
Bytes Pattern(std::uint64_t seed, std::size_t size);
// A seed naming (rank, case, round) for Pattern.
std::uint64_t PatternSeed(int rank, std::uint64_t test_case, std::uint64_t round = 0);
// Index of the first byte of `actual` that differs from Pattern(seed, size),
// or actual.size() if none.
std::size_t FirstMismatch(std::span<const std::byte> actual, std::uint64_t seed);
// True if every byte is zero.
bool AllZero(std::span<const std::byte> bytes);

}  // namespace stalelearn::conformance

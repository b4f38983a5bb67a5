// Bootstrap and collectives over MPI: the only file of the framework and the
// backends that includes mpi.h (framework/README.md). Every call runs on a duplicate of
// MPI_COMM_WORLD with MPI_ERRORS_RETURN, so an MPI failure becomes a Status
// instead of an abort, and our traffic never matches the application's.
#include "framework/transport/mpi_bootstrap.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <list>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "framework/core/log.h"
#include "framework/core/wait.h"

namespace stalelearn::transport {
namespace {

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<std::size_t>(length));
}

Status CheckMpi(int code, std::string_view call) {
  if (code == MPI_SUCCESS) return Status::Ok();
  return Unavailable(fmt::format("{} failed: {}", call, MpiErrorText(code)));
}

bool MpiIsRunning() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

// MPI counts are int; larger exchanges are refused rather than truncated.
Result<int> ToMpiCount(std::size_t n, std::string_view what) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    return InvalidArgument(fmt::format("{}: {} elements exceed MPI's int count limit", what, n));
  }
  return static_cast<int>(n);
}

// Length-prefixed records: [u64 length][bytes]... Used to carry a key with its
// value through a single byte exchange.
void AppendRecord(Bytes& out, std::span<const std::byte> record) {
  const std::uint64_t length = record.size();
  const auto* length_bytes = reinterpret_cast<const std::byte*>(&length);
  out.insert(out.end(), length_bytes, length_bytes + sizeof(length));
  out.insert(out.end(), record.begin(), record.end());
}

std::span<const std::byte> AsBytes(std::string_view text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

// Reads the next record of `in` starting at *pos; kDataLoss if truncated.
Result<std::span<const std::byte>> ReadRecord(std::span<const std::byte> in, std::size_t* pos) {
  std::uint64_t length = 0;
  if (in.size() - *pos < sizeof(length)) return DataLoss("bootstrap record: truncated length");
  std::memcpy(&length, in.data() + *pos, sizeof(length));
  *pos += sizeof(length);
  if (in.size() - *pos < length) return DataLoss("bootstrap record: truncated value");
  auto record = in.subspan(*pos, length);
  *pos += length;
  return record;
}

std::string ToString(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}

  ~MpiBootstrap() override {
    // Freeing after MPI_Finalize is erroneous; a bootstrap that outlives the
    // session only loses its communicator, which Finalize reclaimed anyway.
    if (!MpiIsRunning()) {
      log::Warning("MPI bootstrap destroyed after MPI_Finalize; communicator not freed");
      return;
    }
    // After a rank died, freeing (collective in the standard) could wait for
    // it: the communicators are left to MPI_Finalize.
    if (dead_ >= 0) return;
    // Announcements: take what arrived, finish (or cancel) what was sent, so
    // that freeing the communicator leaves no message behind.
    (void)Announced();
    (void)ReceiveMessages();
    for (MessageSend& send : message_sends_) announce_sends_.push_back(send.request);
    for (MPI_Request& request : announce_sends_) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done == 0) {
        MPI_Cancel(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      }
    }
    for (MPI_Comm& without : without_) {
      if (without != MPI_COMM_NULL) MPI_Comm_free(&without);
    }
    int code = MPI_Comm_free(&comm_);
    if (code != MPI_SUCCESS) log::Warning("MPI_Comm_free failed: {}", MpiErrorText(code));
  }
  MpiBootstrap(const MpiBootstrap&) = delete;
  MpiBootstrap& operator=(const MpiBootstrap&) = delete;

  Rank rank() const override { return Rank{rank_}; }
  int world_size() const override { return size_; }

  Status Put(std::string_view key, std::span<const std::byte> value) override {
    pending_[std::string(key)] = Bytes(value.begin(), value.end());
    return Status::Ok();
  }

  Result<Bytes> Get(Rank owner, std::string_view key) override {
    if (owner.value < 0 || owner.value >= size_) {
      return InvalidArgument(fmt::format("bootstrap Get: rank {} outside 0..{}", owner.value, size_ - 1));
    }
    auto it = published_.find({owner.value, std::string(key)});
    if (it == published_.end()) {
      return NotFound(fmt::format("bootstrap Get: rank {} stored nothing under '{}'", owner.value, key));
    }
    return it->second;
  }

  Status Sync() override {
    Bytes mine;
    for (const auto& [key, value] : pending_) {
      AppendRecord(mine, AsBytes(key));
      AppendRecord(mine, value);
    }
    STALELEARN_ASSIGN_OR_RETURN(std::vector<Bytes> all, GatherBytes(mine));
    for (int owner = 0; owner < size_; ++owner) {
      if (owner == dead_) continue;
      std::span<const std::byte> records(all[owner]);
      std::size_t pos = 0;
      while (pos < records.size()) {
        STALELEARN_ASSIGN_OR_RETURN(auto key, ReadRecord(records, &pos));
        STALELEARN_ASSIGN_OR_RETURN(auto value, ReadRecord(records, &pos));
        published_[{owner, ToString(key)}] = Bytes(value.begin(), value.end());
      }
    }
    pending_.clear();
    return Status::Ok();
  }

  Result<std::vector<Bytes>> AllGather(std::string_view key, std::span<const std::byte> mine) override {
    // The key travels with the data so that a mismatched collective (ranks
    // calling different exchanges) is caught instead of mixing payloads.
    Bytes tagged;
    AppendRecord(tagged, AsBytes(key));
    AppendRecord(tagged, mine);
    STALELEARN_ASSIGN_OR_RETURN(std::vector<Bytes> all, GatherBytes(tagged));
    std::vector<Bytes> values(size_);
    for (int owner = 0; owner < size_; ++owner) {
      if (owner == dead_) continue;
      std::size_t pos = 0;
      STALELEARN_ASSIGN_OR_RETURN(auto their_key, ReadRecord(all[owner], &pos));
      STALELEARN_ASSIGN_OR_RETURN(auto value, ReadRecord(all[owner], &pos));
      if (ToString(their_key) != key) {
        return FailedPrecondition(fmt::format("bootstrap AllGather: rank {} called '{}' while rank {} called '{}'",
                                              rank_, key, owner, ToString(their_key)));
      }
      values[owner].assign(value.begin(), value.end());
    }
    return values;
  }

  Status AllReduceSum(std::span<float> values) override {
    return AllReduceInPlace(values.data(), values.size(), MPI_FLOAT, MPI_SUM);
  }
  Status AllReduceSum(std::span<double> values) override {
    return AllReduceInPlace(values.data(), values.size(), MPI_DOUBLE, MPI_SUM);
  }
  Status AllReduceMax(std::span<std::int64_t> values) override {
    return AllReduceInPlace(values.data(), values.size(), MPI_INT64_T, MPI_MAX);
  }

  Status AllReduceMaxProgressing(std::span<std::int64_t> values, const std::function<void()>& progress,
                                 std::chrono::nanoseconds timeout) override {
    STALELEARN_ASSIGN_OR_RETURN(int n, ToMpiCount(values.size(), "MPI_Iallreduce"));
    MPI_Request request = MPI_REQUEST_NULL;
    STALELEARN_RETURN_IF_ERROR(
        CheckMpi(MPI_Iallreduce(MPI_IN_PLACE, values.data(), n, MPI_INT64_T, MPI_MAX, comm_, &request),
                 "MPI_Iallreduce"));
    // Yields on every idle poll: the other ranks of the allreduce may share this core.
    const WaitSpec spec{.timeout = timeout, .backoff = {.spins = 0, .yields = std::numeric_limits<std::int64_t>::max()}};
    const auto waited = WaitFor(
        spec,
        [&]() -> Result<bool> {
          int done = 0;
          STALELEARN_RETURN_IF_ERROR(CheckMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test"));
          return done != 0;
        },
        progress);
    if (waited.ok() || waited.status().code() != StatusCode::kTimeout) return waited.status();
    // The request stays pending: the caller fails the run (MPI_Abort).
    return TimeoutError(fmt::format("rank {}: an allreduce waited {:.0f} s for the other ranks", rank_,
                                    std::chrono::duration<double>(timeout).count()));
  }

  // Point-to-point on its own tag of the bootstrap's communicator: an 8-byte
  // message goes eagerly, so the sends complete without the receiver.
  Status Announce(std::int64_t value) override {
    announced_value_ = value;  // the send buffer must live until the sends complete
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request request = MPI_REQUEST_NULL;
      STALELEARN_RETURN_IF_ERROR(CheckMpi(
          MPI_Isend(&announced_value_, 1, MPI_INT64_T, r, kAnnounceTag, comm_, &request), "MPI_Isend"));
      announce_sends_.push_back(request);
    }
    return Status::Ok();
  }

  Result<std::int64_t> Announced() override {
    STALELEARN_RETURN_IF_ERROR(ReceiveEachOn(kAnnounceTag, [&](const MPI_Status& status) -> Status {
      std::int64_t value = 0;
      STALELEARN_RETURN_IF_ERROR(CheckMpi(
          MPI_Recv(&value, 1, MPI_INT64_T, status.MPI_SOURCE, kAnnounceTag, comm_, MPI_STATUS_IGNORE), "MPI_Recv"));
      if (heard_ == 0) heard_ = value;
      return Status::Ok();
    }));
    return heard_;
  }

  // Point-to-point on its own tag; the bytes stay in message_sends_ until
  // the send completed (tested at each send).
  Status SendMessage(Rank to, std::span<const std::byte> bytes) override {
    std::erase_if(message_sends_, [](MessageSend& send) {
      int done = 0;
      MPI_Test(&send.request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    STALELEARN_ASSIGN_OR_RETURN(int count, ToMpiCount(bytes.size(), "MPI_Isend"));
    message_sends_.push_back(MessageSend{Bytes(bytes.begin(), bytes.end()), MPI_REQUEST_NULL});
    MessageSend& send = message_sends_.back();
    return CheckMpi(MPI_Isend(send.bytes.data(), count, MPI_BYTE, to.value, kMessageTag, comm_, &send.request),
                    "MPI_Isend");
  }

  Result<std::vector<Bytes>> ReceiveMessages() override {
    std::vector<Bytes> received;
    STALELEARN_RETURN_IF_ERROR(ReceiveEachOn(kMessageTag, [&](const MPI_Status& status) -> Status {
      int count = 0;
      STALELEARN_RETURN_IF_ERROR(CheckMpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count"));
      Bytes bytes(static_cast<std::size_t>(count));
      STALELEARN_RETURN_IF_ERROR(CheckMpi(MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, kMessageTag,
                                                   comm_, MPI_STATUS_IGNORE),
                                          "MPI_Recv"));
      received.push_back(std::move(bytes));
      return Status::Ok();
    }));
    return received;
  }

  Status Barrier() override { return CheckMpi(MPI_Barrier(comm_), "MPI_Barrier"); }

  Status PrepareForRankLoss() override {
    if (!without_.empty()) return Status::Ok();
    without_.resize(static_cast<std::size_t>(size_), MPI_COMM_NULL);
    for (int r = 0; r < size_; ++r) {
      STALELEARN_RETURN_IF_ERROR(CheckMpi(
          MPI_Comm_split(comm_, r == rank_ ? MPI_UNDEFINED : 0, rank_, &without_[static_cast<std::size_t>(r)]),
          "MPI_Comm_split"));
    }
    return Status::Ok();
  }

  Status ExcludeDeadRank(Rank dead) override {
    if (dead.value < 0 || dead.value >= size_ || dead.value == rank_ || without_.empty()) {
      return FailedPrecondition(fmt::format("bootstrap: cannot exclude rank {} (not prepared, or this rank)",
                                            dead.value));
    }
    if (dead_ >= 0) {
      if (dead_ == dead.value) return Status::Ok();
      return Unimplemented(fmt::format("bootstrap: rank {} died after rank {}: only one dead rank is survived",
                                       dead.value, dead_));
    }
    dead_ = dead.value;
    comm_ = without_[static_cast<std::size_t>(dead_)];
    return Status::Ok();
  }

 private:
  // Calls `receive` (which must MPI_Recv it) for every message on `tag` that
  // has arrived, without blocking: the probe loop of Announced and
  // ReceiveMessages.
  template <class Receive>
  Status ReceiveEachOn(int tag, Receive&& receive) {
    for (;;) {
      int arrived = 0;
      MPI_Status status;
      STALELEARN_RETURN_IF_ERROR(CheckMpi(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm_, &arrived, &status), "MPI_Iprobe"));
      if (arrived == 0) return Status::Ok();
      STALELEARN_RETURN_IF_ERROR(receive(status));
    }
  }

  Status AllReduceInPlace(void* data, std::size_t count, MPI_Datatype type, MPI_Op op) {
    STALELEARN_ASSIGN_OR_RETURN(int n, ToMpiCount(count, "MPI_Allreduce"));
    return CheckMpi(MPI_Allreduce(MPI_IN_PLACE, data, n, type, op, comm_), "MPI_Allreduce");
  }

  // Variable-size allgather: sizes first, then MPI_Allgatherv of the bytes.
  // With a dead rank excluded the gather runs among the survivors; the
  // result is still indexed by world rank (the dead one's entry empty).
  Result<std::vector<Bytes>> GatherBytes(std::span<const std::byte> mine) {
    STALELEARN_ASSIGN_OR_RETURN(std::vector<Bytes> gathered, GatherBytesIn(mine, dead_ >= 0 ? size_ - 1 : size_));
    if (dead_ < 0) return gathered;
    std::vector<Bytes> out(static_cast<std::size_t>(size_));
    for (int r = 0, i = 0; r < size_; ++r) {
      if (r != dead_) out[static_cast<std::size_t>(r)] = std::move(gathered[static_cast<std::size_t>(i++)]);
    }
    return out;
  }

  Result<std::vector<Bytes>> GatherBytesIn(std::span<const std::byte> mine, int members) {
    STALELEARN_ASSIGN_OR_RETURN(int my_count, ToMpiCount(mine.size(), "bootstrap exchange"));
    std::vector<int> counts(members);
    STALELEARN_RETURN_IF_ERROR(
        CheckMpi(MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_), "MPI_Allgather"));
    std::vector<int> displacements(members);
    std::size_t total = 0;
    for (int r = 0; r < members; ++r) {
      STALELEARN_ASSIGN_OR_RETURN(displacements[r], ToMpiCount(total, "bootstrap exchange total"));
      total += static_cast<std::size_t>(counts[r]);
    }
    STALELEARN_RETURN_IF_ERROR(ToMpiCount(total, "bootstrap exchange total").status());
    Bytes all(total);
    STALELEARN_RETURN_IF_ERROR(CheckMpi(MPI_Allgatherv(mine.data(), my_count, MPI_BYTE, all.data(), counts.data(),
                                                       displacements.data(), MPI_BYTE, comm_),
                                        "MPI_Allgatherv"));
    std::vector<Bytes> out(members);
    for (int r = 0; r < members; ++r) {
      auto begin = all.begin() + displacements[r];
      out[r].assign(begin, begin + counts[r]);
    }
    return out;
  }

  MPI_Comm comm_;
  int rank_;
  int size_;
  std::vector<MPI_Comm> without_;  // [r]: every rank but r (PrepareForRankLoss)
  int dead_ = -1;                  // the excluded rank, or -1
  std::map<std::string, Bytes> pending_;                   // Put since the last Sync
  std::map<std::pair<int, std::string>, Bytes> published_;  // (owner, key) -> value
  static constexpr int kAnnounceTag = 7301;  // collectives do not match point-to-point tags
  std::int64_t announced_value_ = 0;          // Announce's send buffer
  std::vector<MPI_Request> announce_sends_;
  std::int64_t heard_ = 0;                    // the first value announced to this rank
  static constexpr int kMessageTag = 7302;    // SendMessage
  struct MessageSend {
    Bytes bytes;  // the send buffer, alive until the send completed
    MPI_Request request;
  };
  std::list<MessageSend> message_sends_;  // a list: buffers and requests stay put
};

}  // namespace

Result<std::unique_ptr<MpiSession>> MpiSession::Start(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized != 0) return FailedPrecondition("MPI already initialised: only one MpiSession per process");
  int provided = 0;
  // FUNNELED: only the main thread calls MPI; worker threads use UCX only.
  STALELEARN_RETURN_IF_ERROR(
      CheckMpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread"));
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    return Unavailable(fmt::format("MPI provides thread level {}, need MPI_THREAD_FUNNELED", provided));
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiSession>(new MpiSession(rank, size));
}

MpiSession::~MpiSession() {
  if (!MpiIsRunning()) return;
  int code = MPI_Finalize();
  if (code != MPI_SUCCESS) log::Warning("MPI_Finalize failed: {}", MpiErrorText(code));
}

void MpiSession::Abort(int code) {
  if (MpiIsRunning()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI not running (or MPI_Abort returned): leave anyway
}

bool LaunchedByMpiLauncher() {
  // OpenMPI's mpirun, PMI-1/2 (MPICH, srun --mpi=pmi2), PMIx (srun --mpi=pmix).
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

Result<std::unique_ptr<Bootstrap>> MakeMpiBootstrap() {
  if (!MpiIsRunning()) return FailedPrecondition("MPI bootstrap needs a running MpiSession");
  MPI_Comm comm = MPI_COMM_NULL;
  STALELEARN_RETURN_IF_ERROR(CheckMpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup"));
  // Errors on our communicator come back as codes (turned into Status).
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::unique_ptr<Bootstrap>(std::make_unique<MpiBootstrap>(comm, rank, size));
}

std::string MpiLibraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown MPI library";
  std::string version(text, static_cast<std::size_t>(std::max(length, 0)));
  // Open MPI adds its release date and more lines; the first line names it.
  version = version.substr(0, version.find_first_of("\r\n"));
  while (!version.empty() && (std::isspace(static_cast<unsigned char>(version.back())) != 0 ||
                              version.back() == ',' || version.back() == '\0')) {
    version.pop_back();
  }
  return version;
}

}  // namespace stalelearn::transport

#include "tests/conformance/defective_transport.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>

#include "backends/local/register.h"

namespace stalelearn::conformance {
namespace {

using transport::Access;
using transport::Bytes;
using transport::MemoryRegion;
using transport::Rank;
using transport::RemoteRegion;
using transport::RequestPtr;
using transport::Timeout;
using transport::Transport;

constexpr std::array<DefectName, 9> kDefects{{
    {"truncates_large_puts", Defect::kTruncatesLargePuts},
    {"fence_does_not_order", Defect::kFenceDoesNotOrder},
    {"flush_does_not_complete", Defect::kFlushDoesNotComplete},
    {"loses_atomic_adds", Defect::kLosesAtomicAdds},
    {"everyone_wins_compare_swap", Defect::kEveryoneWinsCompareSwap},
    {"ignores_access_rights", Defect::kIgnoresAccessRights},
    {"ignores_bounds", Defect::kIgnoresBounds},
    {"duplicates_atomic_adds", Defect::kDuplicatesAtomicAdds},
    {"teardown_breaks_other_transports", Defect::kTeardownBreaksOtherTransports},
}};

// Transports destroyed so far, per rank: a transport made before the latest
// teardown of its rank is "torn down" under kTeardownBreaksOtherTransports.
class TeardownLedger {
 public:
  std::uint64_t teardowns(Rank rank) const {
    std::lock_guard lock(mutex_);
    auto it = teardowns_.find(rank.value);
    return it == teardowns_.end() ? 0 : it->second;
  }
  void RecordTeardown(Rank rank) {
    std::lock_guard lock(mutex_);
    ++teardowns_[rank.value];
  }

 private:
  mutable std::mutex mutex_;
  std::map<int, std::uint64_t> teardowns_;
};

class DoneRequest final : public transport::Request {
 public:
  bool Test() override { return true; }
  Status Wait(Timeout) override { return Status::Ok(); }
};
Result<RequestPtr> Done() { return RequestPtr(std::make_unique<DoneRequest>()); }

class DefectiveTransport final : public Transport {
 public:
  DefectiveTransport(std::unique_ptr<Transport> inner, Defect defect, std::shared_ptr<TeardownLedger> ledger)
      : inner_(std::move(inner)),
        defect_(defect),
        ledger_(std::move(ledger)),
        born_after_teardowns_(ledger_->teardowns(inner_->rank())) {}
  ~DefectiveTransport() override { ledger_->RecordTeardown(inner_->rank()); }

  Rank rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  transport::Capabilities capabilities() const override { return inner_->capabilities(); }
  const char* name() const override { return "defective"; }

  Result<std::unique_ptr<MemoryRegion>> Register(std::size_t bytes, Access access) override {
    return inner_->Register(bytes, access);
  }
  Result<std::unique_ptr<RemoteRegion>> Import(Rank owner, std::span<const std::byte> key) override {
    return inner_->Import(owner, key);
  }

  Result<RequestPtr> Put(const void* src, std::size_t bytes, const RemoteRegion& dst, std::uint64_t offset) override {
    STALELEARN_RETURN_IF_ERROR(CheckNotTornDown());
    const bool word = bytes == 8 && offset % 8 == 0;  // commit words still go straight through
    if (!word && (defect_ == Defect::kFenceDoesNotOrder || defect_ == Defect::kFlushDoesNotComplete)) {
      const auto* first = static_cast<const std::byte*>(src);
      deferred_.push_back({&dst, offset, Bytes(first, first + bytes)});
      return Done();
    }
    if (defect_ == Defect::kTruncatesLargePuts && bytes > 4096) --bytes;
    return Forgive(inner_->Put(src, bytes, dst, offset));
  }
  Result<RequestPtr> Get(void* dst, std::size_t bytes, const RemoteRegion& src, std::uint64_t offset) override {
    STALELEARN_RETURN_IF_ERROR(CheckNotTornDown());
    return Forgive(inner_->Get(dst, bytes, src, offset));
  }
  Result<RequestPtr> AtomicAdd(const RemoteRegion& dst, std::uint64_t offset, std::uint64_t value) override {
    STALELEARN_RETURN_IF_ERROR(CheckNotTornDown());
    if (defect_ == Defect::kLosesAtomicAdds && ++adds_ % 1000 == 0) return Done();
    if (defect_ == Defect::kDuplicatesAtomicAdds && ++adds_ % 7 == 0) {
      auto first = inner_->AtomicAdd(dst, offset, value);
      if (first.ok()) STALELEARN_RETURN_IF_ERROR((*first)->Wait(std::chrono::seconds(10)));
    }
    return Forgive(inner_->AtomicAdd(dst, offset, value));
  }
  Result<RequestPtr> FetchAdd(const RemoteRegion& dst, std::uint64_t offset, std::uint64_t value,
                              std::uint64_t* old) override {
    return Forgive(inner_->FetchAdd(dst, offset, value, old));
  }
  Result<RequestPtr> CompareSwap(const RemoteRegion& dst, std::uint64_t offset, std::uint64_t expected,
                                 std::uint64_t desired, std::uint64_t* old) override {
    auto issued = Forgive(inner_->CompareSwap(dst, offset, expected, desired, old));
    if (issued.ok() && defect_ == Defect::kEveryoneWinsCompareSwap && old != nullptr) *old = expected;
    return issued;
  }

  Status Fence(Rank peer) override {
    if (defect_ == Defect::kFenceDoesNotOrder) return Status::Ok();
    STALELEARN_RETURN_IF_ERROR(ApplyDeferred());
    return inner_->Fence(peer);
  }
  Status Flush(Rank peer, Timeout timeout) override {
    STALELEARN_RETURN_IF_ERROR(CheckNotTornDown());
    if (defect_ == Defect::kFlushDoesNotComplete) return Status::Ok();
    STALELEARN_RETURN_IF_ERROR(ApplyDeferred());
    return inner_->Flush(peer, timeout);
  }
  Status FlushAll(Timeout timeout) override {
    if (defect_ == Defect::kFlushDoesNotComplete) return Status::Ok();
    STALELEARN_RETURN_IF_ERROR(ApplyDeferred());
    return inner_->FlushAll(timeout);
  }
  void Progress() override { inner_->Progress(); }

 private:
  struct DeferredPut {
    const RemoteRegion* dst;
    std::uint64_t offset;
    Bytes bytes;
  };

  Status ApplyDeferred() {
    for (const DeferredPut& put : std::exchange(deferred_, {})) {
      auto issued = inner_->Put(put.bytes.data(), put.bytes.size(), *put.dst, put.offset);
      STALELEARN_RETURN_IF_ERROR(issued.status());
      STALELEARN_RETURN_IF_ERROR((*issued)->Wait(std::chrono::seconds(10)));
    }
    return Status::Ok();
  }

  Status CheckNotTornDown() const {
    if (defect_ != Defect::kTeardownBreaksOtherTransports) return Status::Ok();
    if (ledger_->teardowns(inner_->rank()) == born_after_teardowns_) return Status::Ok();
    return Unavailable("endpoint closed: another transport of this rank was destroyed");
  }

  // Turns the errors this defect ignores into success.
  Result<RequestPtr> Forgive(Result<RequestPtr> issued) const {
    const StatusCode code = issued.status().code();
    if ((defect_ == Defect::kIgnoresAccessRights && code == StatusCode::kPermissionDenied) ||
        (defect_ == Defect::kIgnoresBounds && code == StatusCode::kOutOfRange)) {
      return Done();
    }
    return issued;
  }

  std::unique_ptr<Transport> inner_;
  const Defect defect_;
  std::shared_ptr<TeardownLedger> ledger_;
  const std::uint64_t born_after_teardowns_;
  std::vector<DeferredPut> deferred_;
  std::atomic<std::uint64_t> adds_{0};
};

Result<std::unique_ptr<Transport>> CreateDefective(const transport::BackendContext& context,
                                                   const std::shared_ptr<TeardownLedger>& ledger) {
  auto option = context.options.find("defect");
  const std::string_view wanted = option == context.options.end() ? "" : std::string_view(option->second);
  for (const DefectName& entry : kDefects) {
    if (entry.name != wanted) continue;
    const std::map<std::string, std::string> no_options;  // 'local' takes none
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<Transport> inner,
                                context.registry.Create("local", {context.bootstrap, no_options, context.registry}));
    return std::unique_ptr<Transport>(std::make_unique<DefectiveTransport>(std::move(inner), entry.defect, ledger));
  }
  return InvalidArgument(fmt::format("unknown defect '{}'", wanted));
}

}  // namespace

std::span<const DefectName> DefectNames() { return kDefects; }

Status RegisterDefectiveBackends(transport::BackendRegistry& registry) {
  STALELEARN_RETURN_IF_ERROR(backends::local::RegisterBackend(registry));
  auto ledger = std::make_shared<TeardownLedger>();
  return registry.Add("defective", "the local backend with one deliberate defect (tests only)",
                      [ledger](const transport::BackendContext& context) { return CreateDefective(context, ledger); });
}

}  // namespace stalelearn::conformance

// One rank on the local backend that is both the writer (compute index 0) and
// the memory rank (memory index 0) of one ring: ring tests run in a single
// thread, so they are deterministic. Puts go through a FaultInjectingTransport
// whose policy a test sets.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/ring_writer.h"
#include "framework/sync/snapshot.h"
#include "framework/transport/inprocess_bootstrap.h"
#include "tests/integration/fault_injecting_transport.h"

namespace stalelearn::sync::testing {

using stalelearn::testing::FaultInjectingTransport;
using stalelearn::testing::PutCall;
using stalelearn::testing::PutFault;

class RingFixture {
 public:
  // The default model is one int32 table "counts" of 16 x 2, merged by sum;
  // `policies` (one per table, or empty for sum) pick other merge policies.
  // `reply_bytes`: the writer's reply area for row requests (none: 0).
  explicit RingFixture(int slots = 4, int memory_ranks = 1,
                       std::vector<model::TableSpec> tables = {{"counts", model::ElementType::kInt32, 16, 2}},
                       const std::vector<MergePolicySpec>& policies = {}, std::size_t reply_bytes = 0)
      : layout_(std::move(tables), memory_ranks, model::PartitionScheme::kRange) {
    group_ = ValueOrThrow(transport::InProcessGroup::Create(1));
    bootstrap_ = ValueOrThrow(group_->MakeBootstrap(transport::Rank{0}));
    const transport::BackendContext context{*bootstrap_, options_, backends::BuiltinRegistry()};
    base_ = ValueOrThrow(backends::BuiltinRegistry().Create("local", context));
    faulty_ = std::make_unique<FaultInjectingTransport>(*base_, [this](const PutCall& c) {
      return policy_ ? policy_(c) : PutFault::kNone;
    });
    ring_geometry_.slots = slots;
    ring_geometry_.slot_bytes = 4096;
    published_geometry_.compute_ranks = 1;
    published_geometry_.shard_bytes = layout_.ShardBytes(model::MemoryIndex{0});
    published_geometry_.reply_bytes = reply_bytes;
    ring_ = ValueOrThrow(base_->Register(ring_geometry_.region_bytes(), transport::Access::kAll));
    published_ = ValueOrThrow(base_->Register(published_geometry_.region_bytes(), transport::Access::kRemoteReadOnly));
    remote_published_ = ValueOrThrow(base_->Import(transport::Rank{0}, published_->key()));
    merger_ = std::make_unique<ShardMerger>(
        layout_, model::MemoryIndex{0}, 1, ValueOrThrow(CreateMergePolicies(policies, layout_, model::MemoryIndex{0})));
    poller_ = std::make_unique<RingPoller>(layout_, model::MemoryIndex{0}, ring_geometry_,
                                           std::vector<transport::MemoryRegion*>{ring_.get()}, *published_,
                                           published_geometry_, *merger_);
    WaitOptions wait;
    wait.timeout = std::chrono::milliseconds(200);
    writer_ = std::make_unique<RingWriter>(*faulty_, ValueOrThrow(base_->Import(transport::Rank{0}, ring_->key())),
                                           *remote_published_, model::ComputeIndex{0}, ring_geometry_,
                                           published_geometry_, wait);
  }

  // A batch adding `amount` to column 0 of each of `rows`, sealed with the
  // writer's next sequence.
  std::vector<std::byte> Batch(std::vector<std::int64_t> rows, std::int32_t amount, std::uint64_t clock = 0) {
    BatchEncoder encoder(layout_.tables());
    for (std::int64_t r : rows) {
      const std::int32_t delta[2] = {amount, 0};
      encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
    }
    return encoder.Seal(writer_->next_sequence(), clock, kEndOfClock);
  }

  std::int64_t MasterSum() const {
    std::int64_t sum = 0;
    const model::RowBlock& block = merger_->master()[0];
    for (std::int64_t r = 0; r < block.rows(); ++r) sum += block.IntRow(r)[0];
    return sum;
  }
  std::int32_t Master(std::int64_t local_row) const { return merger_->master()[0].IntRow(local_row)[0]; }

  std::uint64_t CommitWord(int slot) const {
    return transport::LoadAcquire64(ring_->data() + ring_geometry_.commit_word_offset(slot));
  }

  void set_policy(std::function<PutFault(const PutCall&)> p) { policy_ = std::move(p); }
  bool IsCommitWord(const PutCall& c) const {
    return c.bytes == 8 && c.offset >= ring_geometry_.commit_word_offset(0) &&
           c.offset < ring_geometry_.slots_offset();
  }

  const model::ModelLayout& layout() const { return layout_; }
  RingGeometry ring_geometry() const { return ring_geometry_; }
  PublishedGeometry published_geometry() const { return published_geometry_; }
  transport::Transport& transport() { return *base_; }
  transport::MemoryRegion& ring_region() { return *ring_; }
  transport::MemoryRegion& published_region() { return *published_; }
  const transport::RemoteRegion& remote_published() { return *remote_published_; }
  RingWriter& writer() { return *writer_; }
  // Gets the writer made (its reads of the head).
  std::int64_t writer_gets() const { return faulty_->gets(); }
  // The head of the writer's ring as the memory rank published it (what a
  // ClockTable refresh reads with the control block).
  std::uint64_t PublishedHead() const {
    return transport::LoadAcquire64(published_->data() + published_geometry_.head_offset(model::ComputeIndex{0}));
  }
  RingPoller& poller() { return *poller_; }
  ShardMerger& merger() { return *merger_; }

 private:
  model::ModelLayout layout_;
  std::map<std::string, std::string> options_;
  std::shared_ptr<transport::InProcessGroup> group_;
  std::unique_ptr<transport::Bootstrap> bootstrap_;
  std::unique_ptr<transport::Transport> base_;
  std::unique_ptr<FaultInjectingTransport> faulty_;
  std::function<PutFault(const PutCall&)> policy_;
  RingGeometry ring_geometry_;
  PublishedGeometry published_geometry_;
  std::unique_ptr<transport::MemoryRegion> ring_;
  std::unique_ptr<transport::MemoryRegion> published_;
  std::unique_ptr<transport::RemoteRegion> remote_published_;
  std::unique_ptr<ShardMerger> merger_;
  std::unique_ptr<RingPoller> poller_;
  std::unique_ptr<RingWriter> writer_;
};

}  // namespace stalelearn::sync::testing

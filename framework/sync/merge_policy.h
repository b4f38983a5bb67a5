// Memory-side merge policies: how a memory rank folds a pushed row delta into
// its master row. The policy of each table is chosen by name; the memory rank
// keeps any optimizer state next to its master rows, so the "PIM" does the
// optimizer step, not only an addition.
//
//   sum       master += d. int32 wraps (exact integer totals, I4). No state.
//   staleness_aware  master += d / (1 + e), e the batch's staleness in
//             epochs (BatchHeader::stale_epochs_x1024 / 1024); e = 0 (always
//             so with one compute rank) merges exactly as sum. float32 only.
//             No state. What it costs and why sum stays the default:
//             merge_policy_staleness.cc.
//   average   within one merge window, each row's deltas are averaged over the
//             number of batches of the window that named the row, then added:
//             master += (d_1 + ... + d_k) / k (summed in merge order, one
//             float division per element). A window is one RingPoller::PollOnce
//             pass, or ShardMerger::BeginWindow .. EndWindow. A row named once
//             in a window gets its delta unchanged. float32 only.
//   adagrad   the delta is a pseudo-gradient g = -d (the server-optimizer view
//             of Reddi et al., "Adaptive Federated Optimization", ICLR 2021:
//             FedAdagrad), one step per (batch, row), per element:
//               a += g * g;   master -= (lr * g) / (sqrt(a) + epsilon)
//             a starts at initial_accumulator. float32 only.
//   adam      g = -d as above (FedAdam), one step per (batch, row), with a
//             per-row step count t (1 at a row's first step) for Kingma & Ba's
//             bias correction, per element:
//               m = beta1 * m + (1 - beta1) * g
//               v = beta2 * v + (1 - beta2) * g * g
//               master -= (lr' * (m / c1)) / (sqrt(v / c2) + epsilon)
//             with lr' = lr / batches_per_clock: a clock's N batches (one per
//             compute rank) together move a weight about lr, as one step of
//             the clock's global batch would.
//             where c1 = 1 - beta1^t and c2 = 1 - beta2^t are computed in
//             double per row and rounded to float; every other operation is
//             float, in the order written. m and v start at 0. float32 only.
// adagrad and adam do not depend on windows: each batch that names a row is
// one step of that row, in merge order. average does (a window is its round).
//
// Every policy reports the work of what it did (WorkCounters: flops, bytes
// read and written including its state, random row accesses), so a timing
// backend charges the optimizer step to the memory rank.
//
// Optimizer state is private to the policy: snapshots publish master rows
// only, and sum tables hold no state.
//
// Adding a policy: one file that defines the class (Clone included) and a
// Register<Name>MergePolicy function (with its options message, a .proto
// beside it, when it has parameters: its factory reads them with
// OptionsOf<Message>(spec)), and one registration line in
// RegisterBuiltinMergePolicies (merge_policy.cc); or a registration of an
// app's program into runtime::Registries::merge_policies. A policy's options
// become its config section (`merge { key: "w" value { policy: "adam" adam {
// beta1: 0.95 } } }`, framework/core/config_schema.h), with the defaults and
// ranges declared as field options in its .proto.
//
//   MergePolicyRegistry registry = BuiltinMergePolicyRegistry();
//   std::vector<MergePolicySpec> specs = {registry.Resolve({.name = "adam"}).value()};  // one per table
//   STALELEARN_RETURN_IF_ERROR(ValidateMergePolicies(specs, layout.tables(), registry));  // at config time
//   auto policies = CreateMergePolicies(specs, layout, shard);  // on the memory rank
//   ShardMerger merger(layout, shard, threads, std::move(policies).value());
//
// Thread-safety: MergePolicySpec is a value type. A MergePolicy is used by its
// ShardMerger only: Apply may run concurrently for distinct rows of one batch,
// never concurrently with EndWindow. The registry: Add during start-up only,
// then const use from any thread. Lifetimes: a spec's factory is a copy,
// independent of the registry that resolved it, and its options are shared
// (immutable) by its copies; an options prototype is a generated default
// instance (lives for the program).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message.h>

#include "framework/core/status.h"
#include "framework/metrics/work_counters.h"
#include "framework/model/shard_layout.h"

namespace stalelearn::sync {

class MergePolicy;
struct MergePolicyShape;
struct MergePolicySpec;
// Builds a policy for one table's shard rows; the spec is validated and the
// element type is one the policy merges.
using MergePolicyFactory =
    std::function<std::unique_ptr<MergePolicy>(const MergePolicySpec& spec, const MergePolicyShape& shape)>;

// A table's merge policy: its name, its own parameters and what the runtime
// adds. A policy's parameters are its options message (e.g. AdamOptions,
// merge_policy_adam.proto, the config section `adam { ... }`), resolved:
// zero fields take the declared defaults. Only the policy reads them
// (OptionsOf below), so adding a policy with parameters changes no shared
// struct.
//
//   MergePolicySpec sum{.name = "sum"};                      // built in code
//   AdamOptions adam;
//   adam.set_beta2(0.999f);
//   MergePolicySpec spec = BuiltinSpec("adam", &adam);     // resolved, defaults filled
struct MergePolicySpec {
  std::string name = "sum";  // a registered policy: sum, staleness_aware, average, adagrad, adam
  // The policy's options message, resolved; null for a policy without one,
  // or a spec built in code that wants the declared defaults
  // (MergePolicyRegistry::Resolve fills them). Shared and immutable, so
  // copies of a spec are cheap and independent.
  std::shared_ptr<const google::protobuf::Message> options;
  // Set by the runtime, not the config: the batches one clock brings (the
  // compute ranks, each pushing its share of the clock's global samples),
  // >= 1. adam divides its step by it (merge_policy_adam.cc).
  int batches_per_clock = 1;
  // The policy's factory, set by MergePolicyRegistry::Resolve (so that the
  // memory rank needs no registry). Empty: `name` among the built-in policies.
  MergePolicyFactory factory;
};

// The resolved options of a spec as the policy's message type, for the
// policy's factory (and tests). Aborts when the spec holds none or another
// message: a spec reaches a factory only through Resolve, which sets them.
template <typename Options>
const Options& OptionsOf(const MergePolicySpec& spec) {
  if (spec.options == nullptr || spec.options->GetDescriptor() != Options::descriptor()) std::abort();
  return static_cast<const Options&>(*spec.options);
}

// A spec of built-in policy `name` built in code (tests, benchmarks), with
// `options` (its options message, zero fields the declared defaults; null:
// all declared defaults), resolved. Aborts on an unknown name or options
// that are not the policy's or out of range (programming errors).
MergePolicySpec BuiltinSpec(std::string name, const google::protobuf::Message* options = nullptr);

// kInvalidArgument with one line naming the field ("merge_policy.beta1 must be
// in [0, 1), got 1") if the spec's options are out of their declared ranges
// or batches_per_clock < 1. Does not look the name up (ValidateMergePolicies
// does).
Status ValidateMergePolicySpec(const MergePolicySpec& spec);

// Rows of one table in one memory rank's shard.
struct MergePolicyShape {
  model::ElementType type = model::ElementType::kFloat32;
  std::int64_t rows = 0;  // rows of this shard (local rows 0..rows-1)
  std::int32_t width = 0;
};

// Runs body(begin, end) over chunks covering [0, n); distinct chunks may run
// concurrently. ShardMerger supplies one bound to its task arena.
using ParallelChunks = std::function<void(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body)>;

// The merge of one table of one shard, with its state.
class MergePolicy {
 public:
  virtual ~MergePolicy() = default;
  virtual std::string_view name() const = 0;
  // An independent copy with all its state, also what an open window holds:
  // a checkpoint forks the shard, possibly inside a window, and merges on
  // into both (framework/runtime/checkpoint_cut.h).
  virtual std::unique_ptr<MergePolicy> Clone() const = 0;

  // Folds one batch's `delta` (width elements of the table's type, possibly
  // unaligned) for `local_row` into `master` (the table's shard rows), or
  // holds it until EndWindow. Concurrent calls name distinct rows.
  virtual void Apply(model::RowBlock& master, std::int64_t local_row, const std::byte* delta) = 0;
  // The work of one Apply call (the same for every row of the table).
  virtual metrics::WorkCounters ApplyWork() const = 0;

  // The merge window closes: applies what was held. Returns its work.
  virtual metrics::WorkCounters EndWindow(model::RowBlock& master, const ParallelChunks& parallel) {
    (void)master;
    (void)parallel;
    return {};
  }

  // Bytes of state held beside the master rows (0 for sum).
  virtual std::size_t state_bytes() const { return 0; }
  // Checkpoints (framework/runtime/checkpointer.h): the state as bytes,
  // outside a merge window; RestoreState takes what SaveState returned for
  // the same spec and shape (kDataLoss, nothing changed, if the size does
  // not fit). Stateless policies save nothing and accept only nothing.
  virtual std::vector<std::byte> SaveState() const { return {}; }
  virtual Status RestoreState(std::span<const std::byte> bytes);

  // True when the merge is exactly master += DeltaScale(batch) x delta in
  // the element type's arithmetic and holds nothing: the merger then adds
  // the rows itself in one vectorised loop, without a call per row.
  virtual bool adds_delta() const { return false; }
  // adds_delta policies: the factor every float delta of a batch is
  // multiplied by, from the batch's staleness (BatchHeader::
  // stale_epochs_x1024). 1: the delta as pushed (x * 1 is exact, so 1 is
  // sum bit for bit).
  virtual float DeltaScale(std::uint32_t stale_epochs_x1024) const {
    (void)stale_epochs_x1024;
    return 1.0f;
  }
};

class MergePolicyRegistry {
 public:
  // kInvalidArgument if `name` is taken. `options`: the policy's options
  // message (its generated default instance), or null for a policy without
  // parameters.
  Status Add(std::string name, std::string description, bool merges_int32, MergePolicyFactory factory,
             const google::protobuf::Message* options = nullptr);

  // The spec of policy `spec.name` with its options resolved (`options` if
  // given, else spec.options, else none; zero fields take the declared
  // defaults) and its factory set. kNotFound listing the known names if the
  // name is unknown, kInvalidArgument if the options are not the policy's
  // options message or out of their declared ranges.
  Result<MergePolicySpec> Resolve(MergePolicySpec spec, const google::protobuf::Message* options = nullptr) const;
  // The policy's options prototype, or nullptr (unknown name or none).
  const google::protobuf::Message* OptionsOf(std::string_view name) const;

  // ValidateMergePolicySpec, then: kNotFound listing the known names if the
  // name is unknown; kInvalidArgument naming the table if the policy cannot
  // merge its element type.
  Status Validate(const MergePolicySpec& spec, const model::TableSpec& table) const;
  // Validate, then the policy for `rows` shard rows of `table`.
  Result<std::unique_ptr<MergePolicy>> Create(const MergePolicySpec& spec, const model::TableSpec& table,
                                              std::int64_t rows) const;

  bool Contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  std::vector<std::string> names() const;
  // "adagrad, adam, average, staleness_aware, sum"
  std::string KnownNames() const;

 private:
  struct Entry {
    std::string description;
    bool merges_int32;
    MergePolicyFactory factory;
    const google::protobuf::Message* options;  // prototype, or null
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// Registers sum, staleness_aware, average, adagrad and adam (explicitly: no
// static initialisers).
Status RegisterBuiltinMergePolicies(MergePolicyRegistry& registry);
// A new registry holding the built-in policies (runtime::Registries starts
// with one; there is no process-global registry).
MergePolicyRegistry BuiltinMergePolicyRegistry();

// `specs`: one per table of `tables`, in table order, or empty (sum for every
// table). Errors name the table ("table 'w': ...").
Status ValidateMergePolicies(const std::vector<MergePolicySpec>& specs, const std::vector<model::TableSpec>& tables,
                             const MergePolicyRegistry& registry);
// The policies of shard `shard`, one per table, for ShardMerger: each made
// by its spec's factory (specs from MergePolicyRegistry::Resolve); a spec
// without one names a built-in policy.
Result<std::vector<std::unique_ptr<MergePolicy>>> CreateMergePolicies(const std::vector<MergePolicySpec>& specs,
                                                                      const model::ModelLayout& layout,
                                                                      model::MemoryIndex shard);

}  // namespace stalelearn::sync

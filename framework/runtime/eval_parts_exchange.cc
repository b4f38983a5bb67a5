#include "framework/runtime/eval_parts_exchange.h"

#include <fmt/format.h>

#include <algorithm>

#include "framework/core/wait.h"
#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/runtime/epoch_evaluator.h"

namespace stalelearn::runtime {

EvalPartsExchange::Pending& EvalPartsExchange::At(const proto::EvalPart& part) {
  Pending& pending = pending_[Key{part.final(), part.epoch()}];
  if (pending.parts.empty()) pending.parts.resize(static_cast<std::size_t>(std::max(compute_ranks_, 1)));
  return pending;
}

Status EvalPartsExchange::Add(proto::EvalPart part) {
  const int from = part.compute_rank();
  if (from < 0 || from >= compute_ranks_) {
    return Internal(fmt::format("an evaluation part from compute rank {} of {}", from, compute_ranks_));
  }
  Pending& pending = At(part);
  std::optional<proto::EvalPart>& slot = pending.parts[static_cast<std::size_t>(from)];
  if (slot.has_value()) {
    return Internal(fmt::format("compute rank {} sent two parts of the evaluation after epoch {}", from, part.epoch()));
  }
  slot = std::move(part);
  ++pending.arrived;
  return Status::Ok();
}

Status EvalPartsExchange::Share(proto::EvalPart part, const TableSet& model) {
  part.set_compute_rank(me_.value);
  if (!decides()) {
    const std::string bytes = part.SerializeAsString();
    Status sent = bootstrap_.SendMessage(decider_, std::as_bytes(std::span(bytes.data(), bytes.size())));
    return sent.ok() ? sent : sent.WithContext("early stopping: sending an evaluation part");
  }
  Pending& pending = At(part);
  pending.checksum = model::HexDigest(model::ModelChecksum(model));
  if (early_ != nullptr && early_->keeps_best_model()) pending.model = model;
  return Add(std::move(part));
}

Result<bool> EvalPartsExchange::Poll() {
  if (!decides()) return false;
  Result<std::vector<transport::Bytes>> received = bootstrap_.ReceiveMessages();
  if (!received.ok()) return received.status().WithContext("early stopping: receiving evaluation parts");
  for (const transport::Bytes& bytes : *received) {
    proto::EvalPart part;
    if (!part.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return Internal("early stopping: a compute rank sent an unreadable evaluation part");
    }
    STALELEARN_RETURN_IF_ERROR(Add(std::move(part)));
  }
  bool exhausted = false;
  while (!pending_.empty() && pending_.begin()->second.arrived == compute_ranks_) {
    Pending done = std::move(pending_.begin()->second);
    const int epoch = pending_.begin()->first.second;
    pending_.erase(pending_.begin());
    // Added in compute-rank order, as GatherReport adds them.
    std::vector<double> sums;
    double wall = 0, simulated = 0;
    for (const std::optional<proto::EvalPart>& p : done.parts) {
      if (sums.empty()) sums.assign(static_cast<std::size_t>(p->sums().size()), 0.0);
      if (static_cast<std::size_t>(p->sums().size()) != sums.size()) {
        return Internal(fmt::format("evaluation parts of epoch {} differ in length", epoch));
      }
      for (int i = 0; i < p->sums().size(); ++i) sums[static_cast<std::size_t>(i)] += p->sums(i);
      wall = std::max(wall, p->wall_seconds());
      simulated = std::max(simulated, p->simulated_seconds());
    }
    if (early_ == nullptr || !done.checksum) continue;
    const Evaluation whole = combiner_.CombineParts(sums);
    STALELEARN_ASSIGN_OR_RETURN(
        const bool now, early_->Observe(epoch, MakeCurvePoint(epoch, wall, simulated, whole), whole.metric,
                                        *done.checksum, done.model ? &*done.model : nullptr));
    exhausted = exhausted || now;
  }
  return exhausted;
}

Status EvalPartsExchange::AwaitAll(std::chrono::nanoseconds timeout) {
  if (!decides()) return Status::Ok();
  WaitSpec spec;
  spec.timeout = timeout;
  spec.who = "compute rank 0 (early stopping)";
  spec.describe = [this] {
    const Pending& first = pending_.begin()->second;
    return fmt::format("the parts of the evaluation after epoch {} ({} of {} compute ranks' arrived)",
                       pending_.begin()->first.second, first.arrived, compute_ranks_);
  };
  return WaitFor(spec, [this]() -> Result<bool> {
           STALELEARN_RETURN_IF_ERROR(Poll().status());
           return pending_.empty();
         }).status();
}

}  // namespace stalelearn::runtime

// Early stopping and the best evaluation (training.early_stopping): the
// evaluating compute rank shows it every evaluation of the whole model; it
// keeps the best one (epoch, value, checksum of the evaluated model, and the
// model itself when asked: checkpointed runs write it beside the checkpoints) and,
// after `patience` evaluations in a row that do not beat the best by more
// than min_delta, asks for a stop (stop_request.h: kEarlyStopRequest), which
// the stop agreement turns into one clock every compute rank stops before.
//
//   EarlyStopping early(config.training().early_stopping());
//   STALELEARN_ASSIGN_OR_RETURN(bool stop, early.Observe(epoch, point, metric, model));
//   if (stop) RequestStop(kEarlyStopRequest);
//   *report.mutable_best() = *early.best();
//
// Apps that evaluate in parts: compute rank 0 shows it each evaluation once
// every compute rank's part of it arrived (eval_parts_exchange.h).
//
// Not thread-safe: the evaluating rank's thread.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

// The direction of `metric` under `config`: true when higher is better
// (config.direction "max", or by default a name holding "accuracy" or "auc").
bool HigherIsBetter(const proto::EarlyStoppingConfig& config, const std::string& metric);

class EarlyStopping {
 public:
  explicit EarlyStopping(proto::EarlyStoppingConfig config) : config_(std::move(config)) {}

  // One evaluation after `epoch` (the curve point), its headline metric's
  // name and the model it evaluated. Returns true when the patience ran out
  // at this evaluation (once: later calls return false). kInvalidArgument
  // if the watched metric is not in the point.
  Result<bool> Observe(int epoch, const proto::CurvePoint& point, const std::string& headline,
                       const TableSet& model);
  // The same for an evaluation whose model is known by its checksum (hex
  // digest, model::ModelChecksum) and, when the best model is kept, `model`
  // (else nullptr): an evaluation in parts (eval_parts_exchange.h).
  Result<bool> Observe(int epoch, const proto::CurvePoint& point, const std::string& headline,
                       const std::string& model_checksum, const TableSet* model);
  // The best evaluation so far (none before the first Observe).
  const std::optional<proto::Best>& best() const { return best_; }
  // Keeps a copy of the best evaluation's model (checkpointed runs write it:
  // best_model()); off, only its checksum is kept.
  void set_keep_best_model(bool on) { keep_best_model_ = on; }
  bool keeps_best_model() const { return keep_best_model_; }
  // The best evaluation's model, if kept; nullptr otherwise.
  const TableSet* best_model() const { return best_model_ ? &*best_model_ : nullptr; }
  int evaluations_since_best() const { return since_best_; }

 private:
  // `model_checksum` is called for a new best only (hashing a model costs).
  Result<bool> ObserveWith(int epoch, const proto::CurvePoint& point, const std::string& headline,
                           const std::function<std::string()>& model_checksum, const TableSet* model);

  proto::EarlyStoppingConfig config_;
  std::optional<proto::Best> best_;
  bool keep_best_model_ = false;
  std::optional<TableSet> best_model_;
  int since_best_ = 0;
  bool asked_ = false;
};

}  // namespace stalelearn::runtime

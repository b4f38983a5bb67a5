#include "framework/runtime/early_stopping.h"

#include <fmt/format.h>

#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/model/row_block.h"

namespace stalelearn::runtime {

bool HigherIsBetter(const proto::EarlyStoppingConfig& config, const std::string& metric) {
  if (config.direction() == "max") return true;
  if (config.direction() == "min") return false;
  return metric.find("accuracy") != std::string::npos || metric.find("auc") != std::string::npos;
}

Result<bool> EarlyStopping::Observe(int epoch, const proto::CurvePoint& point, const std::string& headline,
                                    const TableSet& model) {
  return ObserveWith(epoch, point, headline, [&] { return model::HexDigest(model::ModelChecksum(model)); }, &model);
}

Result<bool> EarlyStopping::Observe(int epoch, const proto::CurvePoint& point, const std::string& headline,
                                    const std::string& model_checksum, const TableSet* model) {
  return ObserveWith(epoch, point, headline, [&] { return model_checksum; }, model);
}

Result<bool> EarlyStopping::ObserveWith(int epoch, const proto::CurvePoint& point, const std::string& headline,
                                        const std::function<std::string()>& model_checksum, const TableSet* model) {
  const std::string& metric = config_.metric().empty() ? headline : config_.metric();
  double value = point.metric_value();
  if (metric != headline) {
    const auto it = point.metrics().find(metric);
    if (it == point.metrics().end()) {
      std::string known = headline;
      for (const auto& [name, v] : point.metrics()) known += ", " + name;
      return InvalidArgument(
          fmt::format("training.early_stopping.metric: the app reports no metric '{}' (it reports: {})", metric, known));
    }
    value = it->second;
  }
  const bool higher = HigherIsBetter(config_, metric);
  const double delta = config_.min_delta();
  const bool better = !best_ || (higher ? value > best_->value() + delta : value < best_->value() - delta);
  if (better) {
    proto::Best best;
    best.set_epoch(epoch);
    best.set_metric(metric);
    best.set_value(value);
    best.set_model_checksum(model_checksum());  // only for a new best
    best_ = std::move(best);
    if (keep_best_model_ && model != nullptr) best_model_ = *model;
    since_best_ = 0;
    return false;
  }
  ++since_best_;
  if (asked_ || config_.patience() == 0 || since_best_ < config_.patience()) return false;
  asked_ = true;
  return true;
}

}  // namespace stalelearn::runtime

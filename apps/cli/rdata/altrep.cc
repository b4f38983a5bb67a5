#include "apps/cli/rdata/altrep.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace stalelearn::data::rdata {
namespace {

// Sequence state (length, first, step): a double vector since R 3.6, an
// integer vector in R 3.5.
Result<std::array<double, 3>> SequenceState(const RObject& state, std::string_view class_name) {
  std::array<double, 3> values{};
  if (state.type == SexpType::kReal && state.reals.size() == 3) {
    for (std::size_t i = 0; i < 3; ++i) values[i] = state.reals[i];
  } else if (state.type == SexpType::kInteger && state.integers.size() == 3) {
    for (std::size_t i = 0; i < 3; ++i) values[i] = state.integers[i];
  } else {
    return DataLoss(fmt::format("ALTREP {} state is not (length, first, step)", class_name));
  }
  return values;
}

Result<RObjectPtr> ExpandSequence(const RObject& state, std::string_view class_name, bool integer,
                                  std::size_t max_elements) {
  STALELEARN_ASSIGN_OR_RETURN(auto seq, SequenceState(state, class_name));
  const auto [length, first, step] = seq;
  if (!(length >= 0 && length <= static_cast<double>(max_elements)) || length != std::floor(length) ||
      !std::isfinite(first) || !std::isfinite(step)) {
    return DataLoss(fmt::format("ALTREP {} with bad length {} (at most {})", class_name, length, max_elements));
  }
  const double last = first + (length - 1) * step;
  constexpr double kIntMin = std::numeric_limits<std::int32_t>::min() + 1.0;  // INT_MIN is NA
  constexpr double kIntMax = std::numeric_limits<std::int32_t>::max();
  if (integer && length > 0 && (std::fmin(first, last) < kIntMin || std::fmax(first, last) > kIntMax)) {
    return DataLoss(fmt::format("ALTREP {} leaves the integer range", class_name));
  }
  auto object = std::make_shared<RObject>();
  const auto n = static_cast<std::size_t>(length);
  if (integer) {
    object->type = SexpType::kInteger;
    object->integers.resize(n);
    for (std::size_t i = 0; i < n; ++i) object->integers[i] = static_cast<std::int32_t>(first + i * step);
  } else {
    object->type = SexpType::kReal;
    object->reals.resize(n);
    for (std::size_t i = 0; i < n; ++i) object->reals[i] = first + static_cast<double>(i) * step;
  }
  return RObjectPtr(object);
}

// wrap_* state: (wrapped vector, metadata) as a pairlist or a list.
Result<RObjectPtr> Unwrap(const RObject& state, std::string_view class_name) {
  if (state.type == SexpType::kPairList && !state.cells.empty()) return state.cells.front().value;
  if (state.type == SexpType::kList && !state.elements.empty()) return state.elements.front();
  return DataLoss(fmt::format("ALTREP {} state holds no wrapped vector", class_name));
}

}  // namespace

Result<RObjectPtr> ExpandAltrep(const RObject& info, const RObject& state, std::vector<RTagged> attributes,
                                std::size_t max_elements) {
  if (info.type != SexpType::kPairList || info.cells.empty() || info.cells[0].value->type != SexpType::kSymbol) {
    return DataLoss("ALTREP class info is not a pairlist starting with the class name");
  }
  const std::string& class_name = info.cells[0].value->text;
  RObjectPtr plain;
  if (class_name == "compact_intseq" || class_name == "compact_realseq") {
    STALELEARN_ASSIGN_OR_RETURN(plain, ExpandSequence(state, class_name, class_name == "compact_intseq", max_elements));
  } else if (class_name.starts_with("wrap_")) {
    STALELEARN_ASSIGN_OR_RETURN(plain, Unwrap(state, class_name));
  } else {
    return Unimplemented(fmt::format("unsupported ALTREP class '{}'", class_name));
  }
  if (attributes.empty()) return plain;
  auto with_attributes = std::make_shared<RObject>(*plain);
  with_attributes->attributes = std::move(attributes);
  return RObjectPtr(with_attributes);
}

}  // namespace stalelearn::data::rdata

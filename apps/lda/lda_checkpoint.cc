// The lda app's local state in a checkpoint (HasLocalState::SaveLocalState): the batch
// number, then the topic of every training token and the document-topic
// counts, as int32 arrays (each led by its length). The sparse sampler's
// per-word caches are not saved: a restored state has none cached, and the
// first batch after a restore rebuilds them as it would have anyway (every
// cache entry is stamped with an older batch).
#include <fmt/format.h>

#include <cstring>

#include "apps/lda/lda_app.h"
#include "apps/lda/lda_state.h"

namespace stalelearn::apps::lda {
namespace {

using internal::LdaState;

template <class T>
void Append(std::vector<std::byte>& out, const T& value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof value);
}

void AppendArray(std::vector<std::byte>& out, const std::vector<std::int32_t>& values) {
  Append(out, static_cast<std::uint64_t>(values.size()));
  const auto bytes = std::as_bytes(std::span(values));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

// Reads what AppendArray wrote into `values` (whose size must match).
Status ReadArray(std::span<const std::byte>& in, std::vector<std::int32_t>& values, const char* what) {
  std::uint64_t n = 0;
  if (in.size() < sizeof n) return DataLoss(fmt::format("lda state: truncated before {}", what));
  std::memcpy(&n, in.data(), sizeof n);
  in = in.subspan(sizeof n);
  if (n != values.size() || in.size() < n * sizeof(std::int32_t)) {
    return DataLoss(fmt::format("lda state: {} holds {} entries, this run has {}", what, n, values.size()));
  }
  std::memcpy(values.data(), in.data(), n * sizeof(std::int32_t));
  in = in.subspan(n * sizeof(std::int32_t));
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::byte>> LdaApp::SaveLocalState(const runtime::LocalState* state) const {
  const auto& lda = *static_cast<const LdaState*>(state);
  std::vector<std::byte> out;
  Append(out, std::int64_t{0});  // format word kept (was the batch counter; word topic sets are per clock now)
  AppendArray(out, lda.topic);
  AppendArray(out, lda.doc_topic);
  return out;
}

Status LdaApp::RestoreLocalState(std::span<const std::byte> bytes, runtime::LocalState* state) const {
  auto& lda = *static_cast<LdaState*>(state);
  std::int64_t batch = 0;
  if (bytes.size() < sizeof batch) return DataLoss("lda state: truncated");
  std::memcpy(&batch, bytes.data(), sizeof batch);
  bytes = bytes.subspan(sizeof batch);
  STALELEARN_RETURN_IF_ERROR(ReadArray(bytes, lda.topic, "topic assignments"));
  STALELEARN_RETURN_IF_ERROR(ReadArray(bytes, lda.doc_topic, "document-topic counts"));
  if (!bytes.empty()) return DataLoss(fmt::format("lda state: {} bytes left over", bytes.size()));
  (void)batch;
  return Status::Ok();
}

}  // namespace stalelearn::apps::lda

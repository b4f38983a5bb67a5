// Fuzzes the lda app's token corpus reader (apps/lda/corpus.h,
// ReadTokenCorpus) the way `stalelearn train` meets it: a corpus file and,
// when the input holds the line "--vocab--", a vocabulary file beside it (the
// text after that line). The reader takes paths, so each input is written to
// two files in a per-process scratch directory first.
//
// Properties: a rejection is a non-empty one-line message; an accepted corpus
// has a name per document, at least one document, and every word id inside
// the vocabulary (so the sampler never indexes past its count tables).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "apps/lda/corpus.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const std::filesystem::path& Scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("stalelearn-fuzz-corpus." + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void WriteFile(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  const auto [corpus_text, vocabulary_text] = fuzz::SplitAt(fuzz::AsText(data, size), "\n--vocab--\n");
  const std::filesystem::path corpus_file = Scratch() / "fuzz.docs";
  const std::filesystem::path vocabulary_file = apps::lda::VocabularyPathFor(corpus_file);
  WriteFile(corpus_file, corpus_text);
  std::error_code ec;
  std::filesystem::remove(vocabulary_file, ec);
  if (fuzz::AsText(data, size).find("\n--vocab--\n") != std::string_view::npos) {
    WriteFile(vocabulary_file, vocabulary_text);
  }
  Result<apps::lda::TokenCorpus> corpus = apps::lda::ReadTokenCorpus(corpus_file);
  if (!corpus.ok()) {
    FUZZ_CHECK(!corpus.status().message().empty());
    FUZZ_CHECK(corpus.status().message().find('\n') == std::string::npos);
    return 0;
  }
  FUZZ_CHECK(!corpus->documents.empty());
  FUZZ_CHECK(corpus->document_names.size() == corpus->documents.size());
  FUZZ_CHECK(!corpus->vocabulary.empty());
  std::uint64_t tokens = 0;
  for (const std::vector<std::uint32_t>& document : corpus->documents) {
    tokens += document.size();
    for (std::uint32_t id : document) FUZZ_CHECK(id < corpus->vocabulary.size());
  }
  FUZZ_CHECK(tokens == corpus->tokens());
  return 0;
}

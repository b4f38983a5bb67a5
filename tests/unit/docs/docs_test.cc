// The repository stands alone: every file the documentation, the build files,
// the scripts and the code point to is in the repository, and nothing points
// to the design notes, facts or data lists that lived outside it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace stalelearn::docs {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = STALELEARN_SOURCE_DIR;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Source, build, script and documentation files of the repository (not build
// directories, not .git, not data).
std::vector<fs::path> RepositoryFiles() {
  static const std::set<std::string> kKinds = {".cc", ".h", ".txt", ".cmake", ".sh", ".md", ".proto", ".pbtxt", ".py"};
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(kSource); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == ".git" || name.starts_with("build") || name == "_deps")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && (kKinds.contains(it->path().extension().string()) || name == "run")) {
      files.push_back(it->path());
    }
  }
  return files;
}

TEST(Repository, NothingPointsToDocumentsOutsideIt) {
  // The notes the project started from; their content lives in
  // framework/README.md, deploy/README.md and backends/timing/README.md.
  const std::regex outside(R"((DESIGN|FACTS|DATA|STYLE|PRESETS)\.md|\.\./shared/|/work/shared)");
  int files = 0;
  for (const fs::path& file : RepositoryFiles()) {
    if (fs::relative(file, kSource) == "tests/unit/docs/docs_test.cc") continue;  // this test names them
    ++files;
    std::istringstream lines(ReadAll(file));
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      EXPECT_FALSE(std::regex_search(line, outside))
          << fs::relative(file, kSource).string() << ":" << number << ": " << line;
    }
  }
  EXPECT_GT(files, 100) << "the walk of " << kSource << " found too few files";
}

// Paths inside the repository named in `text` (in backticks or parentheses),
// e.g. `framework/sync/ring_layout.h` or (deploy/fetch-data.sh).
std::set<std::string> RepositoryPathsIn(const std::string& text) {
  static const std::regex path(
      R"([`(]((?:framework|backends|apps|deploy|tests|cmake)/[A-Za-z0-9_./*<>-]*[A-Za-z0-9_*>])[`),:])");
  std::set<std::string> paths;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), path); it != std::sregex_iterator(); ++it) {
    paths.insert((*it)[1].str());
  }
  return paths;
}

// A path with a pattern (`*`, `{a,b}` or `<name>`) names a family; it is
// checked up to the first pattern character.
fs::path ConcretePrefix(const std::string& path) {
  const std::size_t cut = path.find_first_of("*{<");
  fs::path prefix = path.substr(0, cut);
  if (cut != std::string::npos) prefix = prefix.parent_path();
  return prefix;
}

TEST(Repository, EveryPathTheDocumentsNameExists) {
  const std::vector<fs::path> documents = {"README.md",
                                           "framework/README.md",
                                           "deploy/README.md",
                                           "backends/timing/README.md",
                                           "apps/README.md",
                                           "docs/guide/data.md",
                                           "docs/guide/configuration.md",
                                           "docs/guide/faults-and-checkpoints.md",
                                           "docs/guide/timing-backend.md",
                                           "docs/guide/experiments.md",
                                           "docs/guide/clusters.md",
                                           "docs/measurements.md"};
  for (const fs::path& document : documents) {
    ASSERT_TRUE(fs::exists(kSource / document)) << document;
    const std::set<std::string> paths = RepositoryPathsIn(ReadAll(kSource / document));
    EXPECT_GT(paths.size(), 2u) << document << " names almost no file: is the path pattern still right?";
    for (const std::string& path : paths) {
      EXPECT_TRUE(fs::exists(kSource / ConcretePrefix(path))) << document.string() << " names " << path;
    }
  }
}

TEST(Repository, EveryRelativeLinkOfEveryDocumentResolves) {
  // [text](target): a target without a scheme, relative to the document.
  static const std::regex link(R"(\]\(([^)#:\s]+)(#[^)]*)?\))");
  int links = 0;
  for (const fs::path& file : RepositoryFiles()) {
    if (file.extension() != ".md") continue;
    const std::string text = ReadAll(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      ++links;
      EXPECT_TRUE(fs::exists(file.parent_path() / (*it)[1].str()))
          << fs::relative(file, kSource).string() << " links to " << (*it)[1].str();
    }
  }
  EXPECT_GT(links, 10) << "almost no links found: is the link pattern still right?";
}

TEST(Repository, TheReadmeIsAnEntryPointNotTheReference) {
  // Reference, measurements and history live in docs/ (README, "Where to go next").
  std::istringstream lines(ReadAll(kSource / "README.md"));
  int count = 0;
  for (std::string line; std::getline(lines, line);) ++count;
  EXPECT_LE(count, 150) << "README.md has " << count << " lines; move reference material to docs/";
}

TEST(Repository, DatedFiguresLiveInTheMeasurementsPageOnly) {
  // A guide or the design that quotes a dated run goes stale with the next
  // build; docs/measurements.md holds those figures with their commands.
  static const std::regex date(R"(\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b)");
  std::vector<fs::path> documents = {"README.md", "framework/README.md"};
  for (const auto& entry : fs::directory_iterator(kSource / "docs/guide")) {
    documents.push_back(fs::relative(entry.path(), kSource));
  }
  for (const fs::path& document : documents) {
    const std::string text = ReadAll(kSource / document);
    std::smatch found;
    EXPECT_FALSE(std::regex_search(text, found, date))
        << document.string() << " quotes a dated figure (" << found.str() << "): move it to docs/measurements.md";
  }
  EXPECT_TRUE(std::regex_search(ReadAll(kSource / "docs/measurements.md"), date))
      << "docs/measurements.md names no date: is the date pattern still right?";
}

TEST(Repository, TheDesignListsEveryInvariantWithItsTest) {
  const std::string design = ReadAll(kSource / "framework/README.md");
  for (int i = 1; i <= 7; ++i) {
    const std::regex row("\\| I" + std::to_string(i) + " \\|[^\n]*\\|[^\n]*test[^\n]*\\|\n");
    EXPECT_TRUE(std::regex_search(design, row)) << "no table row for I" << i << " naming a test";
  }
}

}  // namespace
}  // namespace stalelearn::docs

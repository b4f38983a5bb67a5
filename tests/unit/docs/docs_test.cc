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

// The guides the README's "Where to go next" table sends readers to, one per
// audience section of issue 27 (configuration, report, apps and data,
// clusters and Slurm, faults and checkpoints, experiments, the timing
// backend), and the contributor guide.
const std::vector<fs::path>& Guides() {
  static const std::vector<fs::path> guides = {
      "docs/guide/configuration.md", "docs/guide/report.md",      "docs/guide/data.md",
      "docs/guide/clusters.md",      "docs/guide/faults-and-checkpoints.md", "docs/guide/experiments.md",
      "docs/guide/timing-backend.md", "docs/guide/extending.md"};
  return guides;
}

TEST(Repository, EveryPathTheDocumentsNameExists) {
  std::vector<fs::path> documents = {"README.md",       "framework/README.md",       "deploy/README.md",
                                     "apps/README.md",  "backends/timing/README.md", "docs/measurements.md"};
  documents.insert(documents.end(), Guides().begin(), Guides().end());
  for (const fs::path& document : documents) {
    ASSERT_TRUE(fs::exists(kSource / document)) << document;
    EXPECT_GT(RepositoryPathsIn(ReadAll(kSource / document)).size(), 2u)
        << document << " names almost no file: is the path pattern still right?";
  }
  // Every Markdown file of the repository, the ones above included.
  int checked = 0;
  for (const fs::path& file : RepositoryFiles()) {
    if (file.extension() != ".md") continue;
    ++checked;
    for (const std::string& path : RepositoryPathsIn(ReadAll(file))) {
      EXPECT_TRUE(fs::exists(kSource / ConcretePrefix(path)))
          << fs::relative(file, kSource).string() << " names " << path;
    }
  }
  EXPECT_GE(checked, static_cast<int>(documents.size()));
}

TEST(Repository, TheGuidesCoverEveryAudienceAndTheReadmeLinksThem) {
  const std::string readme = ReadAll(kSource / "README.md");
  for (const fs::path& guide : Guides()) {
    EXPECT_TRUE(fs::exists(kSource / guide)) << guide << " is missing";
    EXPECT_NE(readme.find("](" + guide.string() + ")"), std::string::npos)
        << "README.md's \"Where to go next\" does not link " << guide;
    const std::string text = ReadAll(kSource / guide);
    EXPECT_TRUE(text.starts_with("# ")) << guide << " does not start with a title";
    EXPECT_NE(text.find("](../../README.md)"), std::string::npos) << guide << " has no way back to the README";
  }
  // The report guide describes every field of the report.
  const std::string report_guide = ReadAll(kSource / "docs/guide/report.md");
  const std::string proto = ReadAll(kSource / "framework/proto/report.proto");
  static const std::regex field(R"(\n\s+(?:repeated\s+|map<[^>]*>\s+)?[A-Za-z0-9_.]+\s+([a-z_0-9]+)\s*=\s*[0-9]+;)");
  int fields = 0;
  for (auto it = std::sregex_iterator(proto.begin(), proto.end(), field); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1].str();
    if (name == "sums" || name == "compute_rank") continue;  // EvalPart: internal, never in a written report
    ++fields;
    EXPECT_NE(report_guide.find("`" + name + "`"), std::string::npos)
        << "docs/guide/report.md does not describe the report field " << name;
  }
  EXPECT_GT(fields, 40) << "almost no fields found in report.proto: is the field pattern still right?";
}

TEST(Repository, TheDesignHoldsNoUsageReference) {
  // framework/README.md is the design: how to run things lives in docs/guide,
  // how to write an app in apps/README.md, how to add a backend, a mode or an
  // invariant in docs/guide/extending.md.
  std::istringstream lines(ReadAll(kSource / "framework/README.md"));
  static const std::regex usage(R"(^(```(sh|bash|console|shell)\b|#+ How to|\$? ?(build/bin/stalelearn|mpirun|deploy/[a-z-]+\.sh) ))");
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    EXPECT_FALSE(std::regex_search(line, usage))
        << "framework/README.md:" << number << ": " << line << " (usage: move it to docs/guide or apps/README.md)";
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
  std::vector<fs::path> documents = {"README.md", "framework/README.md", "apps/README.md"};
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
  // One table (a blank line between rows would end it and print the rest as
  // text), its rows I1, I2, ... in order, each naming a test.
  std::istringstream lines(ReadAll(kSource / "framework/README.md"));
  static const std::regex row(R"(^\| I([0-9]+) \|.*\|.*test.*\|$)");
  static const std::regex any_row(R"(^\| I[0-9]+ \|)");
  int rows_anywhere = 0, rows_in_table = 0;
  bool in_table = false, table_seen = false;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with("| | invariant |")) in_table = table_seen = true;
    if (!line.starts_with("|")) in_table = false;
    if (!std::regex_search(line, any_row)) continue;
    ++rows_anywhere;
    std::smatch found;
    EXPECT_TRUE(std::regex_match(line, found, row)) << "invariant row naming no test: " << line.substr(0, 60);
    if (!in_table) continue;
    ++rows_in_table;
    if (!found.empty()) {
      EXPECT_EQ(std::stoi(found[1].str()), rows_in_table) << "invariant rows out of order";
    }
  }
  EXPECT_TRUE(table_seen) << "no invariants table (header \"| | invariant |\")";
  EXPECT_EQ(rows_in_table, rows_anywhere) << "invariant rows outside the one table";
  EXPECT_GE(rows_in_table, 9) << "fewer invariants than the design had (I1-I9)";
}

}  // namespace
}  // namespace stalelearn::docs

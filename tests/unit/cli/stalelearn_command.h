// Runs the built `stalelearn` program from a CLI test and captures its exit
// code, stdout and stderr (shared by the CLI test programs).
//
// CTest runs each test in its own process, several at once: every process
// gets its own scratch directory, so no two share output files.
// Needs STALELEARN_BINARY_DIR (a compile definition). Not thread-safe.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stalelearn::cli::testing {

struct CommandRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::filesystem::path ScratchDir(const std::string& name) {
  return std::filesystem::path(::testing::TempDir()) / (name + "." + std::to_string(::getpid()));
}

// `stalelearn <arguments>` with stdin closed; output goes through files in
// ScratchDir(scratch_name).
inline CommandRun RunStalelearn(const std::string& arguments, const std::string& scratch_name) {
  const std::filesystem::path dir = ScratchDir(scratch_name);
  std::filesystem::create_directories(dir);
  const std::filesystem::path out = dir / "out.txt", err = dir / "err.txt";
  const std::string command = "'" STALELEARN_BINARY_DIR "/bin/stalelearn' " + arguments + " >'" + out.string() +
                              "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(command.c_str());
  CommandRun run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadAll(out), ReadAll(err)};
  // Nothing left behind in the temporary directory: the output files, and
  // the directory when nothing else (a caller's files) is in it.
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  std::filesystem::remove(dir, ec);
  return run;
}

}  // namespace stalelearn::cli::testing

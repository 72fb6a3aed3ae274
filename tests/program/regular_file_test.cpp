// RegularFile and the readers built on it: a path that is not a regular file
// (FIFO, directory, device) is an error naming it, at once, never a hang; a
// file truncated after it was opened makes a read an error, never a SIGBUS.
// Each FIFO case runs under a deadline: before these checks, open() of a FIFO
// waited forever for a writer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "kiln/module.h"
#include "kiln/signing.h"
#include "program/regular_file.h"
#include "program/zip_archive.h"
#include "core/settings.h"
#include "runtime/signature_policy.h"

namespace kiln {
namespace {

using testing_util::TempDir;

// Runs `call` (returning an Error) on a thread and ends the test run if it is
// not done in 10 s: a blocked thread cannot be joined. The error message is
// thread-local, so it is passed back and recorded again on this thread.
template <typename F>
Error within_deadline(F call) {
  auto future = std::async(std::launch::async, [&] {
    const Error error = call();
    return std::make_pair(error, last_error_message());
  });
  if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the call blocked";
    std::quick_exit(1);
  }
  auto [error, message] = future.get();
  return error == Error::Ok ? error : set_error(error, message);
}

std::string make_fifo(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

void expect_named(Error got, Error want, const std::string& path, const std::string& what) {
  EXPECT_EQ(got, want) << last_error_message();
  EXPECT_NE(last_error_message().find(path), std::string::npos) << last_error_message();
  EXPECT_NE(last_error_message().find(what), std::string::npos) << last_error_message();
}

TEST(RegularFile, EveryKindOfNonRegularPathIsRefusedNamingWhatItIs) {
  TempDir dir("kiln-regular-file");
  const std::string fifo = make_fifo(dir, "pipe");
  expect_named(within_deadline([&] { return RegularFile::open(fifo, "program file").error(); }), Error::IoError, fifo,
               "is a FIFO (named pipe), not a regular file");
  expect_named(RegularFile::open(dir.path(), "program file").error(), Error::IoError, dir.path(),
               "is a directory, not a regular file");
  expect_named(RegularFile::open("/dev/null", "program file").error(), Error::IoError, "/dev/null",
               "is a character device, not a regular file");
  expect_named(RegularFile::open(dir.file("missing"), "program file").error(), Error::NotFound, dir.file("missing"),
               "cannot open");
}

TEST(RegularFile, ReadsOfATruncatedFileAreErrorsNamingIt) {
  TempDir dir("kiln-regular-file");
  const std::string path = dir.file("data");
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> bytes(10000, 7);
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
  auto file = RegularFile::open(path, "test file");
  ASSERT_TRUE(file.ok()) << last_error_message();
  EXPECT_EQ(file->size(), 10000u);
  auto head = file->read(0, 100);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->data()[99], 7);
  ASSERT_EQ(::truncate(path.c_str(), 5000), 0);
  expect_named(file->read(4000, 2000).error(), Error::IoError, path, "truncated after it was opened");
  expect_named(file->read(9000, 2000).error(), Error::IoError, path, "past its end");
  EXPECT_TRUE(file->read(0, 5000).ok());
  expect_named(file->read_all(100).error(), Error::InvalidArgument, path, "more than the 100 bytes");
}

TEST(RegularFile, FifosGivenToEveryReaderAreRefusedAtOnce) {
  TempDir dir("kiln-regular-file");
  const std::string fifo = make_fifo(dir, "pipe");
  // Program, package and key readers.
  expect_named(within_deadline([&] { return ProgramFile::open(fifo).error(); }), Error::IoError, fifo, "FIFO");
  expect_named(within_deadline([&] { return ZipArchive::open(fifo).error(); }), Error::IoError, fifo, "FIFO");
  expect_named(within_deadline([&] { return read_public_keys(fifo).error(); }), Error::IoError, fifo, "FIFO");
  expect_named(within_deadline([&] { return read_secret_key(fifo).error(); }), Error::IoError, fifo, "FIFO");
  // A Module given a FIFO as program, and a load policy naming one as keys.
  Module module(fifo);
  expect_named(within_deadline([&] { return module.load(); }), Error::IoError, fifo, "FIFO");
  BackendOptions program;
  program.set("require_signature", true);
  program.set("trusted_keys_file", fifo);
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, program);
  Module keyed(fifo);
  expect_named(within_deadline([&] { return keyed.load(options); }), Error::IoError, fifo, "FIFO");
}

TEST(RegularFile, AFifoInKilnTrustedKeysIsRefusedAtOnce) {
  TempDir dir("kiln-regular-file");
  const std::string fifo = make_fifo(dir, "keys");
  ::setenv("KILN_REQUIRE_SIGNATURE", "1", 1);
  ::setenv("KILN_TRUSTED_KEYS", fifo.c_str(), 1);
  const Settings settings;  // reads the environment, as the process's settings do at start
  ::unsetenv("KILN_REQUIRE_SIGNATURE");
  ::unsetenv("KILN_TRUSTED_KEYS");
  const Error got = within_deadline([&] { return SignaturePolicy::from(settings, nullptr).error(); });
  const std::string message = last_error_message();
  EXPECT_NE(got, Error::Ok);
  EXPECT_NE(message.find("KILN_TRUSTED_KEYS"), std::string::npos) << message;
  EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
}

}  // namespace
}  // namespace kiln

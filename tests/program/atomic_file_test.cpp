// Files are replaced atomically (program/atomic_file.h): ProgramWriter::write
// over a program another reader has open or mapped leaves that reader's bytes
// as they were, and a write that fails leaves the old files and no temporary
// file behind.
#include "program/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "kiln/program_file.h"
#include "program/program_writer.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing_util::pattern;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

// A one-method program whose library bytes are pattern(n, mul, 1); its
// weights (pattern(n, mul, 2)) go to the external data file.
ProgramWriter program_with(size_t n, unsigned mul) {
  ProgramWriter writer;
  MethodInfo m;
  m.name = "forward";
  m.backend = "aoti";
  m.device = "cpu";
  m.library_key = "lib";
  m.weights_key = "weights";
  EXPECT_EQ(writer.add_method(m), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("lib", pattern(n, mul, 1)), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("weights", pattern(n, mul, 2), 64, /*external=*/true), Error::Ok)
      << last_error_message();
  return writer;
}

std::set<std::string> names_in(const TempDir& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    names.insert(entry.path().filename());
  return names;
}

// The whole file through a descriptor opened before the rewrite.
std::vector<uint8_t> read_descriptor(int fd) {
  std::vector<uint8_t> bytes;
  uint8_t buffer[4096];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof(buffer), offset);
    if (n <= 0) break;
    bytes.insert(bytes.end(), buffer, buffer + n);
    offset += n;
  }
  return bytes;
}

// A read-only mapping of a whole file, unmapped and closed on destruction.
class Mapping {
 public:
  explicit Mapping(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    EXPECT_GE(fd_, 0) << path;
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) size_ = static_cast<size_t>(st.st_size);
    void* data = size_ > 0 ? ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0) : MAP_FAILED;
    EXPECT_NE(data, MAP_FAILED) << path;
    if (data != MAP_FAILED) data_ = static_cast<const uint8_t*>(data);
  }
  ~Mapping() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  std::vector<uint8_t> bytes() const {
    return data_ ? std::vector<uint8_t>(data_, data_ + size_) : std::vector<uint8_t>{};
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  const uint8_t* data_ = nullptr;
};

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

TEST(AtomicFile, RewritingAProgramLeavesOpenAndMappedReadersTheOldBytes) {
  const TempDir dir;
  const std::string path = dir.file("m.kiln"), data = dir.file("m.kiln.data");
  ASSERT_EQ(program_with(3000, 7).write(path), Error::Ok) << last_error_message();
  const auto old_program = read_file(path), old_data = read_file(data);
  Mapping program_map(path), data_map(data);
  auto opened = ProgramFile::open(path);
  ASSERT_TRUE(opened.ok()) << last_error_message();

  ASSERT_EQ(program_with(5000, 11).write(path), Error::Ok) << last_error_message();

  // The readers still see what they opened, byte for byte.
  EXPECT_EQ(program_map.bytes(), old_program);
  EXPECT_EQ(data_map.bytes(), old_data);
  EXPECT_EQ(read_descriptor(program_map.fd()), old_program);
  auto old_lib = (*opened)->read_named_data("lib");
  ASSERT_TRUE(old_lib.ok()) << last_error_message();
  EXPECT_EQ(std::vector<uint8_t>(old_lib->begin(), old_lib->end()), pattern(3000, 7, 1));
  // The path holds the new program, consistent with its new data file.
  EXPECT_NE(read_file(path), old_program);
  auto reopened = ProgramFile::open(path);
  ASSERT_TRUE(reopened.ok()) << last_error_message();
  auto weights = (*reopened)->read_named_data("weights");
  ASSERT_TRUE(weights.ok()) << last_error_message();
  EXPECT_EQ(std::vector<uint8_t>(weights->begin(), weights->end()), pattern(5000, 11, 2));
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"m.kiln", "m.kiln.data"}));  // no temporary left
}

TEST(AtomicFile, FailedRenameOfTheDataFileLeavesTheOldProgramAndNoTemporary) {
  const TempDir dir;
  const std::string path = dir.file("m.kiln"), data = dir.file("weights.bin");
  ASSERT_EQ(program_with(3000, 7).write(path, data), Error::Ok) << last_error_message();
  const auto old_program = read_file(path);
  // A directory where the data file should go: everything is written, then
  // the first rename fails.
  ASSERT_EQ(::mkdir(dir.file("blocked").c_str(), 0700), 0);
  EXPECT_EQ(program_with(5000, 11).write(path, dir.file("blocked")), Error::IoError);
  EXPECT_NE(last_error_message().find(dir.file("blocked")), std::string::npos) << last_error_message();
  EXPECT_EQ(read_file(path), old_program);
  EXPECT_TRUE(ProgramFile::open(path, {data}).ok()) << last_error_message();
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"m.kiln", "weights.bin", "blocked"}));
}

TEST(AtomicFile, WriteFailingMidwayLeavesTheOldFilesAndNoTemporary) {
  const TempDir dir;
  const std::string path = dir.file("m.kiln");
  ASSERT_EQ(program_with(1000, 7).write(path), Error::Ok) << last_error_message();
  const auto old_program = read_file(path), old_data = read_file(path + ".data");
  // A file size limit below the new program's size makes write() fail with
  // EFBIG part way through (SIGXFSZ ignored, so the failure is returned).
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ignore {};
  struct sigaction old_action {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const Error error = program_with(200 * 1024, 11).write(path);
  const std::string message = last_error_message();
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);
  EXPECT_EQ(error, Error::IoError);
  EXPECT_NE(message.find("m.kiln"), std::string::npos) << message;
  EXPECT_EQ(read_file(path), old_program);
  EXPECT_EQ(read_file(path + ".data"), old_data);
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"m.kiln", "m.kiln.data"}));
}

// No temporary file can be created (here: no descriptor is left, which holds
// for root too, unlike a read-only directory): the write fails naming the
// target, and the old files stay.
TEST(AtomicFile, NoTemporaryFileFailsNamingTheTargetAndKeepsTheFile) {
  const TempDir dir;
  const std::string path = dir.file("m.kiln");
  ASSERT_EQ(program_with(1000, 7).write(path), Error::Ok) << last_error_message();
  const auto old_program = read_file(path);
  const ProgramWriter next = program_with(2000, 11);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowest_free = ::dup(0);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  struct rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);  // the next open() gets EMFILE
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  const Error error = next.write(path);
  const std::string message = last_error_message();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(error, Error::IoError);
  EXPECT_NE(message.find("cannot create a temporary file"), std::string::npos) << message;
  EXPECT_NE(message.find(dir.path()), std::string::npos) << message;
  EXPECT_EQ(read_file(path), old_program);
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"m.kiln", "m.kiln.data"}));
}

TEST(AtomicFile, ModeIsTheOldFilesOrWhatCreatingTheFileGives) {
  const TempDir dir;
  const std::string fresh = dir.file("fresh.bin"), kept = dir.file("kept.bin");
  const std::vector<uint8_t> bytes = pattern(100, 3, 1);
  ASSERT_EQ(replace_file_atomically(fresh, {bytes}), Error::Ok) << last_error_message();
  struct stat st {};
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666 & ~current_umask());
  EXPECT_EQ(read_file(fresh), bytes);

  write_file(kept, {1, 2, 3});
  ASSERT_EQ(::chmod(kept.c_str(), 0640), 0);
  ASSERT_EQ(replace_file_atomically(kept, {bytes}), Error::Ok) << last_error_message();
  ASSERT_EQ(::stat(kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(read_file(kept), bytes);

  ASSERT_EQ(replace_file_atomically(kept, {bytes}, mode_t{0600}), Error::Ok) << last_error_message();
  ASSERT_EQ(::stat(kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(AtomicFile, ALinkIsFollowedAndStaysALink) {
  const TempDir dir;
  const std::string target = dir.file("target.bin"), link = dir.file("link.bin");
  write_file(target, {1, 2, 3});
  ASSERT_EQ(::symlink("target.bin", link.c_str()), 0);
  const std::vector<uint8_t> bytes = pattern(10, 5, 5);
  ASSERT_EQ(replace_file_atomically(link, {bytes}), Error::Ok) << last_error_message();
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(read_file(target), bytes);
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"target.bin", "link.bin"}));
}

TEST(AtomicFile, UncommittedFileLeavesNothing) {
  const TempDir dir;
  const std::string path = dir.file("out.bin");
  std::string temp;
  {
    auto file = AtomicFile::create(path);
    ASSERT_TRUE(file.ok()) << last_error_message();
    temp = file->temp_path();
    EXPECT_EQ(temp.rfind(dir.path() + "/", 0), 0u) << temp;  // next to the target
    const std::vector<uint8_t> bytes = pattern(10, 1, 1);
    EXPECT_EQ(file->write(bytes), Error::Ok) << last_error_message();
    EXPECT_TRUE(std::filesystem::exists(temp));
  }
  EXPECT_FALSE(std::filesystem::exists(temp));
  EXPECT_TRUE(names_in(dir).empty());
  EXPECT_EQ(AtomicFile::create(dir.file("missing/out.bin")).error(), Error::IoError);
  EXPECT_NE(last_error_message().find(dir.file("missing/out.bin")), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A rename replaces whatever the name holds: a FIFO given as the output (or a
// link to one; as root, /dev/null itself) used to become a regular file.
// Now anything but a regular file is refused by name and left as it was.
TEST(AtomicFile, ATargetThatIsNotARegularFileIsRefusedAndLeftAsItIs) {
  const testing_util::TempDir dir;
  const std::string fifo = dir.file("out.kiln"), link = dir.file("link.kiln"), sub = dir.file("sub");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  const std::vector<uint8_t> bytes = {1, 2, 3};
  for (const std::string& target : {fifo, link, sub}) {
    EXPECT_EQ(replace_file_atomically(target, {bytes}), Error::IoError) << target;
    EXPECT_NE(last_error_message().find("which Kiln does not replace"), std::string::npos) << last_error_message();
    EXPECT_NE(last_error_message().find(target), std::string::npos) << last_error_message();
  }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"out.kiln", "link.kiln", "sub"}));  // no temporary left
}

}  // namespace
}  // namespace kiln

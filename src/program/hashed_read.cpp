#include "program/hashed_read.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace kiln {

namespace {

// Read (and hashed) this much at a time: each chunk stays in the cache
// between the two.
constexpr uint64_t kChunk = uint64_t{4} << 20;
// Reading ahead on a second thread pays off from this size, on machines with
// cores to spare (hashed_read.h says why).
constexpr uint64_t kReadAheadMinBytes = uint64_t{64} << 20;
constexpr unsigned kReadAheadMinThreads = 4;

}  // namespace

Error read_then_hash(const ChunkReader& read, std::span<uint8_t> out, Sha256* hasher) {
  for (uint64_t done = 0; done < out.size();) {
    const uint64_t n = std::min<uint64_t>(kChunk, out.size() - done);
    const std::span<uint8_t> chunk = out.subspan(static_cast<size_t>(done), static_cast<size_t>(n));
    KILN_RETURN_IF_ERROR(read(done, chunk));
    if (hasher) hasher->update(chunk);
    done += n;
  }
  return Error::Ok;
}

Error read_ahead_and_hash(const ChunkReader& read, std::span<uint8_t> out, Sha256& hasher) {
  std::mutex mutex;
  std::condition_variable progress;
  uint64_t ready = 0;  // bytes read, in order
  bool failed = false;
  Error error = Error::Ok;
  std::string message;  // error messages are per thread: passed back
  auto read_all = [&] {
    for (uint64_t done = 0; done < out.size();) {
      const uint64_t n = std::min<uint64_t>(kChunk, out.size() - done);
      const Error e = read(done, out.subspan(static_cast<size_t>(done), static_cast<size_t>(n)));
      std::lock_guard<std::mutex> lock(mutex);
      if (e != Error::Ok) {
        failed = true;
        error = e;
        message = last_error_message();
        progress.notify_one();
        return;
      }
      done += n;
      ready = done;
      progress.notify_one();
    }
  };
  std::thread reader;
  try {
    reader = std::thread(read_all);
  } catch (const std::system_error&) {
    return read_then_hash(read, out, &hasher);  // no thread to be had
  }
  for (uint64_t hashed = 0; hashed < out.size();) {
    uint64_t until = 0;
    {
      std::unique_lock<std::mutex> lock(mutex);
      progress.wait(lock, [&] { return failed || ready > hashed; });
      if (failed) break;
      until = ready;
    }
    hasher.update(out.subspan(static_cast<size_t>(hashed), static_cast<size_t>(until - hashed)));
    hashed = until;
  }
  reader.join();
  return failed ? set_error(error, message) : Error::Ok;
}

Error read_hashed(const ChunkReader& read, std::span<uint8_t> out, Sha256* hasher) {
  static const bool spare_cores = std::thread::hardware_concurrency() >= kReadAheadMinThreads;
  if (hasher && spare_cores && out.size() >= kReadAheadMinBytes) return read_ahead_and_hash(read, out, *hasher);
  return read_then_hash(read, out, hasher);
}

}  // namespace kiln

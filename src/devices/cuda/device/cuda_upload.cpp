#include "devices/cuda/device/cuda_upload.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/settings.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "kiln/log.h"

namespace kiln::cudadev {
namespace {

constexpr size_t kChunkBytes = size_t{2} << 20;
// Below this, staging costs more than it saves while the staging buffers are
// not pinned yet (~0.6 ms per MiB, 32 MiB in all).
constexpr size_t kStagingThreshold = size_t{64} << 20;
// Once they are (kept for the process after the first large upload), only
// threads and streams are left to pay for: staging beats a pageable
// cudaMemcpy (~8 GB/s, one CPU thread) from a few chunks on, e.g. a second
// method's weights that are mostly shared with the first's.
constexpr size_t kStagingThresholdPinned = 2 * kChunkBytes;
constexpr unsigned kMaxWorkers = 8;
// Setting cuda_upload_workers overrides the count, up to this many.
constexpr unsigned kMaxWorkersAsked = 32;

struct Chunk {
  void* dst;
  const void* src;                       // host bytes, or null: read through `reader`
  size_t nbytes;
  const UploadReader* reader = nullptr;  // fills the staging buffer from the source
  uint64_t src_offset = 0;
};

// Setting cuda_upload_workers, or else half the cores, at most kMaxWorkers
// (read once). On the 16-core H100 host bench/micro/h2d_upload_bench.sh copies
// a page-cached blob at 45 GB/s with 8 workers and 49 GB/s with 12 or 16, but
// in a model load 12 or 16 workers measured no faster than 8.
unsigned upload_workers() {
  static const unsigned workers = [] {
    const int64_t asked = process_settings().get_int(SettingId::CudaUploadWorkers);
    if (asked > 0) return static_cast<unsigned>(std::min<int64_t>(asked, kMaxWorkersAsked));
    return std::clamp<unsigned>(std::thread::hardware_concurrency() / 2, 1, kMaxWorkers);
  }();
  return workers;
}

// Pinned staging buffers of kChunkBytes, kept for the process once made
// (pinning is the slow part). Thread-safe.
//
// The first large upload of a process would wait for the pinning (17 ms for
// 32 MiB with cudaHostAlloc on the H100 host), so prepare_upload() starts it
// on a background thread as the method starts loading. There the buffers are
// one region of transparent huge pages registered with cudaHostRegister: the
// driver pins 2 MiB per page instead of 4 KiB (7 ms for 32 MiB;
// bench/micro/h2d_upload_bench.sh), in slices pinned in parallel and handed out one by
// one, because the upload itself starts at once (WeightPlacement) and its
// workers wait for buffers. Where that fails, and for buffers needed beyond
// the prepared ones, take() pins with cudaHostAlloc.
class StagingBuffers {
 public:
  static StagingBuffers& instance() {
    static auto* buffers = new StagingBuffers();  // never destroyed: pinned memory goes with the process
    return *buffers;
  }

  /// Starts pinning `count` buffers for `device`'s uploads on a background
  /// thread, once per process.
  void pin_async(int device, unsigned count) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pin_started_ || kept_) return;
    pin_started_ = true;
    pinning_now_ = true;
    try {
      pinning_ = std::async(std::launch::async, [this, device, count] { pin_region(device, count); }).share();
    } catch (...) {  // no thread: take() pins on demand
      pinning_now_ = false;
      return;
    }
    // Joined at exit before the CUDA runtime tears down (its exit handler was
    // registered earlier, so it runs later): no pinning during the teardown.
    std::atexit([] { instance().wait_for_pinning(); });
  }

  /// Returns once a background pin started by pin_async has finished.
  void wait_for_pinning() {
    std::shared_future<void> pinning;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pinning = pinning_;
    }
    if (pinning.valid()) pinning.wait();
  }

  /// A pinned buffer: a kept one, else the next one a background pin hands
  /// out (waiting for it, not for the whole pin), else a new cudaHostAlloc.
  Result<void*> take() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      handed_out_.wait(lock, [&] { return !free_.empty() || !pinning_now_; });
      if (!free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    void* p = nullptr;
    const auto start = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(cuda_status(cudaHostAlloc(&p, kChunkBytes, cudaHostAllocPortable),
                                     "cudaHostAlloc of a " + std::to_string(kChunkBytes >> 20) +
                                         " MiB staging buffer"));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    pinned_count_.fetch_add(1);
    pinned_ns_.fetch_add(static_cast<uint64_t>(ns.count()));
    return p;
  }

  /// Buffers take() pinned on demand and the time their cudaHostAlloc took
  /// (summed over threads): an upload nobody prepared pays it.
  uint64_t pinned_count() const { return pinned_count_.load(); }
  uint64_t pinned_ns() const { return pinned_ns_.load(); }

  void give_back(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(p);
    kept_ = true;
  }

  /// Whether pinned buffers are ready or on their way (kept by an earlier
  /// upload, or being pinned by pin_async). Does not wait.
  bool kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_ || pinning_now_;
  }

 private:
  // On the background thread: `count` buffers carved from one region of huge
  // pages. The region is pinned in slices of two buffers (one upload
  // worker's), each faulted in and registered with cudaHostRegister on a
  // thread of its own and handed to free_ as soon as it is pinned, so the
  // first upload starts after one slice's pinning instead of the whole
  // region's (8 ms for 32 MiB in one piece on the H100 host). Failures only
  // log: take() falls back to cudaHostAlloc.
  void pin_region(int device, unsigned count) {
    const auto start = std::chrono::steady_clock::now();
    const size_t bytes = size_t{count} * kChunkBytes;
    // kChunkBytes is the huge page size: aligned to it, every page of the
    // region can be a huge page.
    void* raw = mmap(nullptr, bytes + kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::atomic<unsigned> pinned{0};
    std::string failure;  // the first slice's error, under mutex_
    if (raw == MAP_FAILED) {
      failure = "no memory for staging buffers now";
    } else {
      const uintptr_t aligned = (reinterpret_cast<uintptr_t>(raw) + kChunkBytes - 1) / kChunkBytes * kChunkBytes;
      char* region = reinterpret_cast<char*>(aligned);
      (void)madvise(region, bytes, MADV_HUGEPAGE);  // a hint: plain pages where huge pages are off
      const auto pin_slice = [&](unsigned first, unsigned n) {
        char* slice = region + size_t{first} * kChunkBytes;
        const size_t slice_bytes = size_t{n} * kChunkBytes;
        ScopedDevice scoped(device);
        cudaError_t status = cudaErrorInvalidDevice;
        if (scoped.status() == Error::Ok) {
          std::memset(slice, 0, slice_bytes);  // fault the pages in before they are pinned
          status = cudaHostRegister(slice, slice_bytes, cudaHostRegisterPortable);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (status != cudaSuccess) {
          (void)cudaGetLastError();
          if (failure.empty()) failure = std::string("registering staging buffers failed (") + cudaGetErrorString(status) + ")";
          return;  // this slice stays mapped but unused: a few MiB, once per process
        }
        for (unsigned i = 0; i < n; ++i) free_.push_back(slice + size_t{i} * kChunkBytes);
        kept_ = true;
        pinned += n;
        handed_out_.notify_all();
      };
      std::vector<std::thread> threads;
      for (unsigned first = 2; first < count; first += 2) {
        try {
          threads.emplace_back(pin_slice, first, std::min(2u, count - first));
        } catch (...) {  // no more threads: the rest are pinned on demand
          break;
        }
      }
      pin_slice(0, std::min(2u, count));
      for (std::thread& t : threads) t.join();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pinning_now_ = false;
      handed_out_.notify_all();
    }
    char line[200];
    std::snprintf(line, sizeof line, "upload: pinned %u of %u staging buffers (%zu MiB) in %.4f s on background threads%s%s",
                  pinned.load(), count, size_t{pinned.load()} * (kChunkBytes >> 20),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  failure.empty() ? "" : "; the rest are pinned when needed: ", failure.c_str());
    KILN_LOG(Info, line);
  }

  std::mutex mutex_;
  std::condition_variable handed_out_;  // free_ grew, or a background pin ended
  std::vector<void*> free_;
  bool kept_ = false;
  bool pin_started_ = false;
  bool pinning_now_ = false;  // a background pin has buffers still to hand out
  std::shared_future<void> pinning_;
  std::atomic<uint64_t> pinned_count_{0};
  std::atomic<uint64_t> pinned_ns_{0};
};

// One worker: two pinned buffers, one stream, one event per buffer.
class Worker {
 public:
  explicit Worker(int device) : device_(device) {}
  ~Worker() {
    ScopedDevice scoped(device_);
    // run() synchronises on success; after an error it returns early, so wait
    // here: the buffers go back to the shared pool only once no copy reads them.
    if (stream_) (void)cudaStreamSynchronize(stream_);
    for (int i = 0; i < 2; ++i) {
      if (events_[i]) (void)cudaEventDestroy(events_[i]);
      if (buffers_[i]) StagingBuffers::instance().give_back(buffers_[i]);
    }
    if (stream_) (void)cudaStreamDestroy(stream_);
    (void)cudaGetLastError();
  }

  Error run(const std::vector<Chunk>& chunks, std::atomic<size_t>* next) {
    ScopedDevice scoped(device_);
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (int i = 0; i < 2; ++i) {
      KILN_ASSIGN_OR_RETURN(buffers_[i], StagingBuffers::instance().take());
      KILN_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&events_[i], cudaEventDisableTiming));
    }
    int slot = 0;
    bool used[2] = {false, false};
    for (size_t i = next->fetch_add(1); i < chunks.size(); i = next->fetch_add(1)) {
      const Chunk& c = chunks[i];
      if (used[slot]) KILN_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events_[slot]));
      if (c.src) std::memcpy(buffers_[slot], c.src, c.nbytes);
      else KILN_RETURN_IF_ERROR((*c.reader)(c.src_offset, {static_cast<uint8_t*>(buffers_[slot]), c.nbytes}));
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(c.dst, buffers_[slot], c.nbytes, cudaMemcpyHostToDevice, stream_));
      KILN_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[slot], stream_));
      used[slot] = true;
      slot ^= 1;
    }
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Error::Ok;
  }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  void* buffers_[2] = {nullptr, nullptr};
  cudaEvent_t events_[2] = {nullptr, nullptr};
};

// Regions that continue each other on both sides (the next one starts where
// the previous one ended, in the source and on the device) become one, and
// empty ones go: fewer cudaMemcpy calls below the staging threshold and fewer
// short tail chunks above it. WeightStore hands over merged regions already;
// other callers get the same for free.
std::vector<UploadRegion> merged(std::span<const UploadRegion> regions) {
  std::vector<UploadRegion> out;
  out.reserve(regions.size());
  for (const UploadRegion& r : regions) {
    if (r.nbytes == 0) continue;
    if (!out.empty()) {
      UploadRegion& last = out.back();
      const bool source_continues =
          last.src ? r.src == static_cast<const char*>(last.src) + last.nbytes
                   : !r.src && r.reader == last.reader && r.src_offset == last.src_offset + last.nbytes;
      if (static_cast<char*>(last.dst) + last.nbytes == r.dst && source_continues) {
        last.nbytes += r.nbytes;
        continue;
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace

void prepare_upload(int device, size_t nbytes) {
  if (nbytes >= kStagingThreshold) StagingBuffers::instance().pin_async(device, 2 * upload_workers());
}

Error upload_regions(int device, std::span<const UploadRegion> given) {
  const std::vector<UploadRegion> regions = merged(given);
  size_t total = 0;
  for (const UploadRegion& r : regions) total += r.nbytes;
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  for (const UploadRegion& r : regions)
    if (!r.src && !r.reader) return set_error(Error::Internal, "an upload region has neither bytes nor a reader");
  if (total < (StagingBuffers::instance().kept() ? kStagingThresholdPinned : kStagingThreshold)) {
    std::vector<uint8_t> read;  // a region read through its reader, one at a time
    for (const UploadRegion& r : regions) {
      const void* src = r.src;
      if (!src) {
        read.resize(r.nbytes);
        KILN_RETURN_IF_ERROR((*r.reader)(r.src_offset, read));
        src = read.data();
      }
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpy(r.dst, src, r.nbytes, cudaMemcpyHostToDevice));
    }
    return Error::Ok;
  }
  std::vector<Chunk> chunks;
  chunks.reserve(total / kChunkBytes + regions.size());
  for (const UploadRegion& r : regions)
    for (size_t off = 0; off < r.nbytes; off += kChunkBytes)
      chunks.push_back(Chunk{static_cast<char*>(r.dst) + off, r.src ? static_cast<const char*>(r.src) + off : nullptr,
                             std::min(kChunkBytes, r.nbytes - off), r.reader, r.src_offset + off});

  // No more workers than chunks (small uploads once the buffers are kept): an
  // idle worker would still make a stream and take two staging buffers.
  const unsigned workers = static_cast<unsigned>(std::min<size_t>(upload_workers(), chunks.size()));
  StagingBuffers& staging = StagingBuffers::instance();
  const uint64_t pinned_before = staging.pinned_count(), pinned_ns_before = staging.pinned_ns();
  std::atomic<size_t> next{0};
  std::vector<Error> status(workers, Error::Ok);
  std::vector<std::string> messages(workers);
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      Worker worker(device);
      status[w] = worker.run(chunks, &next);
      if (status[w] != Error::Ok) {
        messages[w] = last_error_message();
        next.store(chunks.size());  // the others stop after their current chunk
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (const uint64_t pinned = staging.pinned_count() - pinned_before; pinned > 0) {
    char line[160];
    std::snprintf(line, sizeof line, "upload: pinned %llu staging buffers (%llu MiB) in %.4f s (summed over %u workers)",
                  static_cast<unsigned long long>(pinned), static_cast<unsigned long long>(pinned * (kChunkBytes >> 20)),
                  (staging.pinned_ns() - pinned_ns_before) / 1e9, workers);
    KILN_LOG(Info, line);
  }
  for (unsigned w = 0; w < workers; ++w)
    if (status[w] != Error::Ok) return set_error(status[w], "uploading weights: " + messages[w]);
  return Error::Ok;
}

}  // namespace kiln::cudadev

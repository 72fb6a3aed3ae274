// Host-to-device upload strategies for a weights file already in the page
// cache, measured side by side: what limits Kiln's weight loading? Built by
// bench/micro/h2d_upload_bench.sh (needs the CUDA toolkit); run on the GPU machine:
//   bench/micro/h2d_upload_bench.sh [GiB=2.25]
// Prints one line per strategy: seconds (median of 3) and GB/s, next to the
// pinned-buffer H2D bandwidth that is the ceiling.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <thread>
#include <vector>

namespace {

#define CHECK(expr)                                                                \
  do {                                                                             \
    cudaError_t e_ = (expr);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s: %s (line %d)\n", #expr, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Source {
  int fd;
  const char* map;  // fresh mapping per run: page tables start empty, as in a fresh load
  size_t size;
};

// Staging: each worker owns two pinned chunk buffers and a stream; `fill`
// copies one chunk of the source into a pinned buffer. The pinned buffers are
// allocated first and timed apart (`alloc_s`): a loader may keep them.
double staged(const Source& s, char* dst, unsigned workers, size_t chunk,
              const std::function<void(char*, size_t, size_t)>& fill, double* alloc_s) {
  const size_t n = (s.size + chunk - 1) / chunk;
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  std::vector<void*> buffers(2 * workers);
  const double a0 = now();
  for (void*& b : buffers) CHECK(cudaHostAlloc(&b, chunk, cudaHostAllocDefault));
  *alloc_s = now() - a0;
  const double t0 = now();
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      cudaStream_t stream;
      CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      void* buf[2] = {buffers[2 * w], buffers[2 * w + 1]};
      cudaEvent_t ev[2];
      for (int i = 0; i < 2; ++i) CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
      bool used[2] = {false, false};
      int slot = 0;
      for (size_t i = next++; i < n; i = next++) {
        const size_t off = i * chunk, len = std::min(chunk, s.size - off);
        if (used[slot]) CHECK(cudaEventSynchronize(ev[slot]));
        fill(static_cast<char*>(buf[slot]), off, len);
        CHECK(cudaMemcpyAsync(dst + off, buf[slot], len, cudaMemcpyHostToDevice, stream));
        CHECK(cudaEventRecord(ev[slot], stream));
        used[slot] = true;
        slot ^= 1;
      }
      CHECK(cudaStreamSynchronize(stream));
      for (int i = 0; i < 2; ++i) CHECK(cudaEventDestroy(ev[i]));
      CHECK(cudaStreamDestroy(stream));
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = now() - t0;
  for (void* b : buffers) CHECK(cudaFreeHost(b));
  return elapsed;
}

Source open_source(const std::string& path) {
  Source s;
  s.fd = open(path.c_str(), O_RDONLY);
  s.size = static_cast<size_t>(lseek(s.fd, 0, SEEK_END));
  s.map = static_cast<const char*>(mmap(nullptr, s.size, PROT_READ, MAP_PRIVATE, s.fd, 0));
  if (s.fd < 0 || s.map == MAP_FAILED) {
    std::perror(path.c_str());
    std::exit(1);
  }
  return s;
}

void close_source(Source& s) {
  munmap(const_cast<char*>(s.map), s.size);
  close(s.fd);
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 2.25;
  const size_t size = static_cast<size_t>(gib * (1ull << 30)) & ~size_t{4095};
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/kiln_h2d_bench.bin";
  {
    // Random bytes, written once; reading them back leaves them in the page cache.
    std::vector<char> block(64 << 20);
    std::mt19937_64 rng(1);
    for (size_t i = 0; i + 8 <= block.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(&block[i], &v, 8);
    }
    FILE* f = std::fopen(path.c_str(), "wb");
    for (size_t off = 0; off < size; off += block.size())
      std::fwrite(block.data(), 1, std::min(block.size(), size - off), f);
    std::fclose(f);
  }
  void* raw = nullptr;
  CHECK(cudaMalloc(&raw, size));
  char* dst = static_cast<char*>(raw);
  const unsigned cores = std::thread::hardware_concurrency();
  std::printf("blob %.2f GB, %u cores\n", size / 1e9, cores);
  {
    // Device allocation of the weights' memory: plain cudaMalloc against a
    // fresh stream-ordered pool growing to the same size (Kiln's allocator).
    const size_t one = size_t{1} << 30;
    void* p = nullptr;
    double t0 = now();
    CHECK(cudaMalloc(&p, one));
    const double malloc_s = now() - t0;
    CHECK(cudaFree(p));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t threshold = UINT64_MAX;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    t0 = now();
    CHECK(cudaMallocFromPoolAsync(&p, one, pool, nullptr));
    CHECK(cudaStreamSynchronize(nullptr));
    const double pool_s = now() - t0;
    CHECK(cudaFreeAsync(p, nullptr));
    t0 = now();
    std::vector<void*> pieces(256);
    for (void*& q : pieces) CHECK(cudaMallocFromPoolAsync(&q, one / 256, pool, nullptr));
    CHECK(cudaStreamSynchronize(nullptr));
    const double reuse_s = now() - t0;
    for (void* q : pieces) CHECK(cudaFreeAsync(q, nullptr));
    CHECK(cudaStreamSynchronize(nullptr));
    CHECK(cudaMemPoolDestroy(pool));
    std::printf("1 GiB device allocation: cudaMalloc %.4f s, new pool %.4f s, 256 pieces from the grown pool %.4f s\n",
                malloc_s, pool_s, reuse_s);
  }

  {
    // Pinning the staging memory (32 MiB, what Kiln's 8 workers take): the
    // first load of a process pays for it. Is it the 4 KiB pages? A region of
    // transparent huge pages registered with cudaHostRegister pins 2 MiB per page.
    char thp[128] = "?";
    if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
      if (!std::fgets(thp, sizeof thp, f)) thp[0] = 0;
      std::fclose(f);
      thp[strcspn(thp, "\n")] = 0;
    }
    std::printf("transparent huge pages: %s\n", thp);
    const size_t total = size_t{32} << 20, huge = size_t{2} << 20;
    auto registered = [&](bool use_thp) {
      const double t0 = now();
      char* raw = static_cast<char*>(mmap(nullptr, total + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      char* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + huge - 1) / huge * huge);
      if (use_thp) madvise(p, total, MADV_HUGEPAGE);
      std::memset(p, 0, total);
      CHECK(cudaHostRegister(p, total, cudaHostRegisterPortable));
      const double t = now() - t0;
      CHECK(cudaHostUnregister(p));
      munmap(raw, total + huge);
      return t;
    };
    auto host_alloc = [&](size_t pieces, unsigned flags) {
      std::vector<void*> bufs(pieces);
      const double t0 = now();
      for (void*& b : bufs) CHECK(cudaHostAlloc(&b, total / pieces, flags));
      const double t = now() - t0;
      for (void* b : bufs) CHECK(cudaFreeHost(b));
      return t;
    };
    const std::vector<std::pair<std::string, std::function<double()>>> ways = {
        {"cudaHostAlloc 16 x 2 MiB", [&] { return host_alloc(16, cudaHostAllocPortable); }},
        {"cudaHostAlloc 1 x 32 MiB", [&] { return host_alloc(1, cudaHostAllocPortable); }},
        {"cudaHostAlloc 16 x 2 MiB write-combined", [&] { return host_alloc(16, cudaHostAllocPortable | cudaHostAllocWriteCombined); }},
        {"mmap 4 KiB pages + cudaHostRegister", [&] { return registered(false); }},
        {"mmap MADV_HUGEPAGE + cudaHostRegister", [&] { return registered(true); }},
    };
    for (const auto& [name, way] : ways) {
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) t.push_back(way());
      std::sort(t.begin(), t.end());
      std::printf("pin 32 MiB: %-42s %8.4f s (median of 3)\n", name.c_str(), t[1]);
    }
  }

  {  // Ceiling: one pinned buffer, one copy.
    void* pinned;
    CHECK(cudaHostAlloc(&pinned, size_t{1} << 30, cudaHostAllocDefault));
    std::memset(pinned, 1, size_t{1} << 30);
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      const double t0 = now();
      CHECK(cudaMemcpy(dst, pinned, size_t{1} << 30, cudaMemcpyHostToDevice));
      t.push_back(now() - t0);
    }
    std::sort(t.begin(), t.end());
    std::printf("%-44s %8.4f s  %6.1f GB/s\n", "pinned H2D, 1 GiB (ceiling)", t[1], (1 << 30) / t[1] / 1e9);
    CHECK(cudaFreeHost(pinned));
  }

  struct Strategy {
    std::string name;
    std::function<double(const Source&, double*)> run;
  };
  std::vector<Strategy> strategies;
  auto mmap_copy = [&](unsigned w, size_t chunk_mb) {
    strategies.push_back({"mmap + memcpy, " + std::to_string(w) + " thr, " + std::to_string(chunk_mb) + " MiB",
                          [=](const Source& s, double* a) {
                            return staged(s, dst, w, chunk_mb << 20, [&](char* b, size_t off, size_t len) {
                              std::memcpy(b, s.map + off, len);
                            }, a);
                          }});
  };
  auto pread_copy = [&](unsigned w, size_t chunk_mb) {
    strategies.push_back({"pread, " + std::to_string(w) + " thr, " + std::to_string(chunk_mb) + " MiB",
                          [=](const Source& s, double* a) {
                            return staged(s, dst, w, chunk_mb << 20, [&](char* b, size_t off, size_t len) {
                              size_t done = 0;
                              while (done < len) {
                                const ssize_t got = pread(s.fd, b + done, len - done, off + done);
                                if (got <= 0) std::exit(2);
                                done += static_cast<size_t>(got);
                              }
                            }, a);
                          }});
  };
  for (unsigned w : {2u, 4u, 6u, 8u})
    for (size_t mb : {2u, 8u}) mmap_copy(w, mb);
  // More workers than Kiln's 8 (half the cores of the 16-core GPU host): is
  // the copy CPU-bound? A fresh mapping's page faults cost about as much CPU
  // as the memcpy itself (dev machine: 12 vs 23 GB/s on 2 threads).
  for (unsigned w : {12u, 16u}) mmap_copy(w, 2);
  strategies.push_back({"memcpy, mapping faulted in first, 8 thr, 2 MiB", [=](const Source& s, double* a) {
                          // What the copy costs without the page faults (not a strategy: the
                          // faulting is untimed here).
                          volatile char sink = 0;
                          for (size_t off = 0; off < s.size; off += 4096) sink = sink + s.map[off];
                          return staged(s, dst, 8, size_t{2} << 20, [&](char* b, size_t off, size_t len) {
                            std::memcpy(b, s.map + off, len);
                          }, a);
                        }});
  pread_copy(4, 8);
  pread_copy(8, 2);
  strategies.push_back({"MADV_POPULATE_READ + memcpy, 4 thr, 8 MiB", [=](const Source& s, double* a) {
                          return staged(s, dst, 4, size_t{8} << 20, [&](char* b, size_t off, size_t len) {
#ifdef MADV_POPULATE_READ
                            madvise(const_cast<char*>(s.map) + off, len, MADV_POPULATE_READ);
#endif
                            std::memcpy(b, s.map + off, len);
                          }, a);
                        }});
  for (const Strategy& st : strategies) {
    std::vector<double> t, alloc;
    for (int r = 0; r < 3; ++r) {
      Source s = open_source(path);
      double a = 0;
      t.push_back(st.run(s, &a));
      alloc.push_back(a);
      close_source(s);
    }
    std::sort(t.begin(), t.end());
    std::sort(alloc.begin(), alloc.end());
    std::printf("%-44s %8.4f s  %6.1f GB/s  (pinned alloc %.4f s)\n", st.name.c_str(), t[1], size / t[1] / 1e9,
                alloc[1]);
    std::fflush(stdout);
  }
  {  // Plain pageable copy: what cudaMemcpy from the mapping does by itself.
    Source s = open_source(path);
    const double t0 = now();
    CHECK(cudaMemcpy(dst, s.map, s.size, cudaMemcpyHostToDevice));
    const double t = now() - t0;
    std::printf("%-44s %8.4f s  %6.1f GB/s\n", "cudaMemcpy from the mapping (pageable)", t, size / t / 1e9);
    close_source(s);
  }
  {
    // Zero-copy DMA from the page cache: register a shared read-only mapping.
    // Last, under an alarm: it may take very long on some kernels.
    alarm(60);
    const int fd = open(path.c_str(), O_RDONLY);
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    std::printf("cudaHostRegister(shared mapping, read-only): registering...\n");
    std::fflush(stdout);
    const double t0 = now();
    cudaError_t e = cudaHostRegister(map, size, cudaHostRegisterReadOnly);
    const double t1 = now();
    if (e != cudaSuccess) {
      std::printf("    cudaHostRegister failed after %.3f s: %s\n", t1 - t0, cudaGetErrorString(e));
    } else {
      CHECK(cudaMemcpy(dst, map, size, cudaMemcpyHostToDevice));
      const double t2 = now();
      CHECK(cudaHostUnregister(map));
      const double t3 = now();
      std::printf("%-44s %8.4f s  %6.1f GB/s  (register %.4f, copy %.4f, unregister %.4f)\n",
                  "cudaHostRegister + 1 copy", t3 - t0, size / (t3 - t0) / 1e9, t1 - t0, t2 - t1, t3 - t2);
    }
    alarm(0);
    munmap(map, size);
    close(fd);
  }
  CHECK(cudaFree(dst));
  unlink(path.c_str());
  return 0;
}

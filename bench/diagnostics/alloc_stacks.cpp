// Preloaded allocation tracer for bench/diagnostics/leak_trace.sh: records the call stack of
// every heap allocation made between kiln_alloc_stacks_start() and
// kiln_alloc_stacks_dump(PATH), and writes the stacks of those still live at the
// dump. glibc's mtrace only records the immediate caller, which for anything
// allocated with operator new (the CUDA driver's C++ code, libstdc++ containers)
// is libstdc++ itself; the full stack says who asked.
//
// Built as a shared library and put in LD_PRELOAD; it forwards to glibc's
// __libc_* allocator entry points and keeps its own tables in mmap'd memory so
// recording never allocates on the heap. One spin lock guards the tables: slow,
// and meant for a few hundred load/unload cycles, not production.
#include <execinfo.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {

constexpr int kMaxFrames = 20;
constexpr int kSkipFrames = 2;            // this file's hook and record()
constexpr size_t kLiveSlots = 1u << 22;   // open addressing: live allocations
constexpr size_t kStackSlots = 1u << 18;  // distinct stacks

struct Live {
  uintptr_t ptr;  // 0: empty, 1: deleted
  size_t size;
  uint32_t stack;
};

struct Stack {
  uint64_t hash;  // 0: empty
  int depth;
  void* frames[kMaxFrames];
};

Live* g_live = nullptr;
Stack* g_stacks = nullptr;
std::atomic<bool> g_on{false};
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
thread_local bool t_inside = false;  // the hooks' own calls (backtrace, dump) are not recorded

struct Guard {
  Guard() {
    while (g_lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Guard() { g_lock.clear(std::memory_order_release); }
};

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h ? h : 1;
}

void* map_table(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

uint32_t intern_stack(void** frames, int depth) {
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < depth; ++i) h = mix(h ^ reinterpret_cast<uintptr_t>(frames[i]));
  for (size_t i = h & (kStackSlots - 1);; i = (i + 1) & (kStackSlots - 1)) {
    Stack& s = g_stacks[i];
    if (s.hash == 0) {
      s.hash = h;
      s.depth = depth;
      std::memcpy(s.frames, frames, sizeof(void*) * depth);
      return static_cast<uint32_t>(i);
    }
    if (s.hash == h && s.depth == depth && std::memcmp(s.frames, frames, sizeof(void*) * depth) == 0)
      return static_cast<uint32_t>(i);
  }
}

__attribute__((noinline)) void record(void* ptr, size_t size) {
  if (!ptr || !g_on.load(std::memory_order_relaxed) || t_inside) return;
  t_inside = true;
  void* frames[kMaxFrames + kSkipFrames];
  int depth = backtrace(frames, kMaxFrames + kSkipFrames) - kSkipFrames;
  if (depth < 0) depth = 0;
  {
    Guard guard;
    const uint32_t stack = intern_stack(frames + kSkipFrames, depth);
    const uintptr_t key = reinterpret_cast<uintptr_t>(ptr);
    for (size_t i = mix(key) & (kLiveSlots - 1);; i = (i + 1) & (kLiveSlots - 1)) {
      if (g_live[i].ptr <= 1) {
        g_live[i] = {key, size, stack};
        break;
      }
    }
  }
  t_inside = false;
}

void forget(void* ptr) {
  if (!ptr || !g_live) return;
  Guard guard;
  const uintptr_t key = reinterpret_cast<uintptr_t>(ptr);
  for (size_t i = mix(key) & (kLiveSlots - 1);; i = (i + 1) & (kLiveSlots - 1)) {
    if (g_live[i].ptr == 0) return;  // allocated before start or by a hook
    if (g_live[i].ptr == key) {
      g_live[i].ptr = 1;
      return;
    }
  }
}

}  // namespace

extern "C" {

// Starts recording (tables are allocated on the first call).
__attribute__((visibility("default"))) void kiln_alloc_stacks_start() {
  if (!g_live) {
    g_live = static_cast<Live*>(map_table(sizeof(Live) * kLiveSlots));
    g_stacks = static_cast<Stack*>(map_table(sizeof(Stack) * kStackSlots));
    if (!g_live || !g_stacks) {
      std::fprintf(stderr, "alloc_stacks: cannot map the tables\n");
      return;
    }
    void* warm[4];
    t_inside = true;
    backtrace(warm, 4);  // loads the unwinder now, not inside a hook
    t_inside = false;
  }
  g_on = true;
}

// Stops recording and writes one line per stack with live allocations:
// "<count> <bytes> <frame> <frame> ..." (frames as hex return addresses).
__attribute__((visibility("default"))) int kiln_alloc_stacks_dump(const char* path) {
  g_on = false;
  if (!g_live) return -1;
  t_inside = true;
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    t_inside = false;
    return -errno;
  }
  // Per-stack totals reuse a table the size of the stack table.
  struct Total {
    uint64_t count, bytes;
  };
  auto* totals = static_cast<Total*>(map_table(sizeof(Total) * kStackSlots));
  for (size_t i = 0; i < kLiveSlots; ++i)
    if (g_live[i].ptr > 1) {
      totals[g_live[i].stack].count++;
      totals[g_live[i].stack].bytes += g_live[i].size;
    }
  char line[64 + kMaxFrames * 20];
  for (size_t i = 0; i < kStackSlots; ++i) {
    if (!totals[i].count) continue;
    int n = std::snprintf(line, sizeof line, "%llu %llu", static_cast<unsigned long long>(totals[i].count),
                          static_cast<unsigned long long>(totals[i].bytes));
    for (int f = 0; f < g_stacks[i].depth; ++f)
      n += std::snprintf(line + n, sizeof line - n, " %p", g_stacks[i].frames[f]);
    line[n++] = '\n';
    if (write(fd, line, n) != n) break;
  }
  munmap(totals, sizeof(Total) * kStackSlots);
  close(fd);
  t_inside = false;
  return 0;
}

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  record(p, n);
  return p;
}

void free(void* p) {
  forget(p);
  __libc_free(p);
}

void* calloc(size_t n, size_t m) {
  void* p = __libc_calloc(n, m);
  record(p, n * m);
  return p;
}

void* realloc(void* old, size_t n) {
  forget(old);
  void* p = __libc_realloc(old, n);
  if (!p && old && n) record(old, n);  // failed: the old block stays live (size approximate)
  record(p, n);
  return p;
}

void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  record(p, n);
  return p;
}

void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void** out, size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  record(p, n);
  *out = p;
  return 0;
}

}  // extern "C"

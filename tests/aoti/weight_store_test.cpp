// WeightStore::place with a weight arena: the constants of one call share one
// device allocation laid out like the blob, the upload is a few merged regions,
// every constant is aligned and holds its own bytes, constants shared by FQN
// between calls are placed once, and the arena lives until the last tensor in
// it is gone. A counting fake device (host memory that claims to be a GPU)
// sees every allocation, free and upload.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "aoti/device_weights.h"
#include "aoti/weight_arena.h"
#include "aoti/weight_placement.h"
#include "core/device_interface.h"

namespace {

using kiln::Device;
using kiln::DeviceType;
using kiln::Error;
using kiln::Result;
using kiln::Tensor;
using kiln::UploadRegion;
using kiln::aoti::WeightsSource;
using kiln::aoti::ArenaSlot;
using kiln::aoti::ConstantEntry;
using kiln::aoti::kWeightAlignment;
using kiln::aoti::plan_weight_arena;
using kiln::aoti::WeightPlacement;
using kiln::aoti::WeightStore;

// Host memory behind a device type of the test's choice. Blocks are 64-byte
// aligned but never 128-byte aligned: the store must align its constants itself.
class CountingDevice final : public kiln::DeviceInterface {
 public:
  explicit CountingDevice(DeviceType type) : type_(type) {}
  ~CountingDevice() override {
    for (auto& [p, raw] : live_) std::free(raw);
  }

  DeviceType type() const noexcept override { return type_; }
  int device_count() const noexcept override { return 1; }

  Result<void*> allocate(size_t nbytes, int, kiln::StreamHandle) override {
    if (fail_allocation) return kiln::set_error(Error::OutOfMemory, "fake device is full");
    ++allocations;
    events.push_back("allocate");
    allocated_bytes.push_back(nbytes);
    void* raw = std::aligned_alloc(256, (nbytes + 64 + 255) / 256 * 256);
    void* p = static_cast<char*>(raw) + 64;
    live_[p] = raw;
    return p;
  }
  void free(void* ptr, int, kiln::StreamHandle) noexcept override {
    if (!ptr) return;
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      ++bad_frees;
      return;
    }
    std::free(it->second);
    live_.erase(it);
    ++frees;
  }
  Error copy(void* dst, const void* src, size_t nbytes, kiln::CopyKind, int, kiln::StreamHandle) override {
    std::memcpy(dst, src, nbytes);
    return Error::Ok;
  }
  Error synchronize(int, kiln::StreamHandle) override {
    events.push_back("synchronize");
    if (fail_synchronize) return kiln::set_error(Error::BackendFailed, "fake device lost");
    return Error::Ok;
  }
  Error upload(std::span<const UploadRegion> regions, int index) override {
    ++uploads;
    events.push_back("upload");
    upload_thread = std::this_thread::get_id();
    last_regions.assign(regions.begin(), regions.end());
    if (fail_upload) return kiln::set_error(Error::BackendFailed, "fake upload failed");
    return DeviceInterface::upload(regions, index);
  }

  size_t live() const { return live_.size(); }

  int allocations = 0, frees = 0, bad_frees = 0, uploads = 0;
  std::vector<size_t> allocated_bytes;
  std::vector<UploadRegion> last_regions;
  std::vector<std::string> events;  // allocate / synchronize / upload, in order
  bool fail_allocation = false, fail_upload = false, fail_synchronize = false;
  std::thread::id upload_thread;  // of the last upload

 private:
  DeviceType type_;
  std::map<void*, void*> live_;  // handed-out pointer -> malloc'ed block
};

std::vector<uint8_t> random_blob(size_t n, unsigned seed) {
  std::vector<uint8_t> blob(n);
  std::mt19937 rng(seed);
  for (uint8_t& b : blob) b = static_cast<uint8_t>(rng());
  return blob;
}

// `blob` as the private copy a program hands out; the test keeps the vector
// alive, so the owner frees nothing.
WeightsSource named(const std::vector<uint8_t>& blob) {
  WeightsSource source;
  source.bytes = kiln::NamedBytes(std::shared_ptr<const void>(blob.data(), [](const void*) {}), blob);
  return source;
}

// `blob` read through a reader, as a device upload of unchecked weights reads
// the program file; counts the bytes it reads.
WeightsSource read_through(const std::vector<uint8_t>& blob, std::atomic<uint64_t>* bytes_read) {
  WeightsSource source;
  source.reader = [&blob, bytes_read](uint64_t offset, std::span<uint8_t> out) -> Error {
    if (offset > blob.size() || out.size() > blob.size() - offset)
      return kiln::set_error(Error::IoError, "read past the end of the fake file");
    std::memcpy(out.data(), blob.data() + offset, out.size());
    *bytes_read += out.size();
    return Error::Ok;
  };
  return source;
}

// A 1-D uint8 constant of `nbytes` at `blob_offset`.
ConstantEntry constant(const std::string& name, uint64_t blob_offset, uint64_t nbytes,
                       const std::string& type = "Parameter") {
  ConstantEntry e;
  e.name = name;
  e.original_fqn = "model." + name;
  e.dtype = kiln::DType::UInt8;
  e.type = type;
  e.data_size = nbytes;
  e.blob_offset = blob_offset;
  e.sizes = {static_cast<int64_t>(nbytes)};
  e.strides = {1};
  e.sha256 = "digest-of-" + name;  // distinct per name: what share_key compares
  return e;
}

// Back to back from `start`, in the order given.
std::vector<ConstantEntry> packed(const std::vector<uint64_t>& sizes, uint64_t start = 0) {
  std::vector<ConstantEntry> out;
  uint64_t off = start;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(constant(std::string("c").append(std::to_string(i)), off, sizes[i]));
    off += sizes[i];
  }
  return out;
}

const Device kGpu{DeviceType::CUDA, 0};

void expect_placed(const std::vector<ConstantEntry>& entries, const std::vector<Tensor>& tensors,
                   const std::vector<uint8_t>& blob) {
  ASSERT_EQ(tensors.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const ConstantEntry& e = entries[i];
    const Tensor& t = tensors[i];
    ASSERT_TRUE(t.storage()) << e.name;
    EXPECT_EQ(t.storage()->nbytes(), e.data_size) << e.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.storage()->data()) % kWeightAlignment, 0u) << e.name;
    if (e.data_size > 0) {
      EXPECT_EQ(std::memcmp(t.storage()->data(), blob.data() + e.blob_offset, e.data_size), 0)
          << e.name << " does not hold its blob bytes";
    }
  }
  // No two constants share a byte.
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const Tensor& t : tensors)
    if (t.storage()->nbytes() > 0) {
      auto p = reinterpret_cast<uintptr_t>(t.storage()->data());
      ranges.emplace_back(p, p + t.storage()->nbytes());
    }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first);
}

TEST(WeightArenaLayout, BackToBackAlignedConstantsAreOneCopy) {
  const std::vector<ArenaSlot> slots = {{0, 1024}, {1024, 256}, {1280, 4096}, {5376, 512}};
  const auto layout = plan_weight_arena(slots);
  ASSERT_EQ(layout.copies.size(), 1u);
  EXPECT_EQ(layout.copies[0].blob_offset, 0u);
  EXPECT_EQ(layout.copies[0].arena_offset, 0u);
  EXPECT_EQ(layout.copies[0].nbytes, 5888u);
  EXPECT_EQ(layout.size, 5888u);
  for (size_t i = 0; i < slots.size(); ++i) EXPECT_EQ(layout.offsets[i], slots[i].blob_offset);
}

TEST(WeightArenaLayout, MisalignedNeighbourStartsANewAlignedCopy) {
  // 6 bytes put the next constant at blob offset 1030: not 256-aligned.
  const std::vector<ArenaSlot> slots = {{0, 1024}, {1024, 6}, {1030, 300}};
  const auto layout = plan_weight_arena(slots);
  ASSERT_EQ(layout.copies.size(), 2u);
  EXPECT_EQ(layout.copies[0].nbytes, 1030u);
  EXPECT_EQ(layout.offsets[2] % kWeightAlignment, 0u);
  EXPECT_EQ(layout.copies[1].blob_offset, 1030u);
  EXPECT_EQ(layout.copies[1].arena_offset, layout.offsets[2]);
  EXPECT_LT(layout.size, 1030u + 300u + kWeightAlignment);
}

TEST(WeightArenaLayout, SmallPaddingThatKeepsAlignmentStaysInTheCopy) {
  // Constants padded to 256 bytes in the blob (200 bytes + 56 of padding).
  const std::vector<ArenaSlot> slots = {{0, 200}, {256, 200}, {512, 200}};
  const auto layout = plan_weight_arena(slots);
  ASSERT_EQ(layout.copies.size(), 1u);
  EXPECT_EQ(layout.copies[0].nbytes, 712u);
  EXPECT_EQ(layout.offsets[1], 256u);
  EXPECT_EQ(layout.offsets[2], 512u);
}

TEST(WeightArenaLayout, FarApartConstantsDoNotCopyTheGap) {
  // A constant between them was shared from an earlier call: its bytes are not copied again.
  const std::vector<ArenaSlot> slots = {{0, 512}, {1 << 20, 512}};
  const auto layout = plan_weight_arena(slots);
  ASSERT_EQ(layout.copies.size(), 2u);
  EXPECT_EQ(layout.size, 1024u);
  EXPECT_EQ(layout.copies[1].blob_offset, uint64_t{1} << 20);
  EXPECT_EQ(layout.copies[1].arena_offset, 512u);
}

TEST(WeightArenaLayout, CallerOrderDoesNotMatterAndEmptySlotsCopyNothing) {
  const std::vector<ArenaSlot> slots = {{512, 256}, {0, 512}, {768, 0}, {768, 256}};
  const auto layout = plan_weight_arena(slots);
  ASSERT_EQ(layout.copies.size(), 1u);
  EXPECT_EQ(layout.copies[0].nbytes, 1024u);
  EXPECT_EQ(layout.offsets[0], 512u);
  EXPECT_EQ(layout.offsets[1], 0u);
  EXPECT_EQ(layout.offsets[2] % kWeightAlignment, 0u);
  EXPECT_LE(layout.offsets[2], layout.size);
  EXPECT_EQ(layout.offsets[3], 768u);
}

TEST(WeightStore, OneCallIsOneAllocationAndOneUploadRegion) {
  CountingDevice dev(DeviceType::CUDA);
  const auto entries = packed({1 << 16, 4096, 256, 3 << 14, 1 << 12});
  const auto blob = random_blob(entries.back().blob_offset + entries.back().data_size, 1);
  {
    WeightStore store(nullptr, kGpu, &dev);
    auto tensors = store.place(entries, named(blob));
    ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
    EXPECT_EQ(dev.allocations, 1);
    EXPECT_EQ(dev.uploads, 1);
    ASSERT_EQ(dev.last_regions.size(), 1u);
    EXPECT_EQ(dev.last_regions[0].nbytes, blob.size());
    expect_placed(entries, *tensors, blob);
    // The arena wastes no more than the alignment of its base.
    EXPECT_LE(dev.allocated_bytes[0], blob.size() + kWeightAlignment);
  }
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(dev.live(), 0u);
  EXPECT_EQ(dev.bad_frees, 0);
}

TEST(WeightStore, OddSizesGapsAndEmptyConstantsHoldTheirBytes) {
  CountingDevice dev(DeviceType::CUDA);
  // Odd sizes (6, 1000, 3, 513: each misaligns what follows it), a gap of
  // 1000 bytes (not copied), a gap of 40 bytes that keeps the next constant
  // aligned (copied along), an empty constant, and a table not in blob order.
  // By the rule (weight_arena.h) the copies are a+b, c, d+e, f+g.
  std::vector<ConstantEntry> entries = {
      constant("a", 0, 1024),    constant("b", 1024, 6),    constant("c", 1030, 1000),
      constant("d", 3030, 216),  constant("e", 3286, 513),  constant("empty", 3799, 0),
      constant("f", 3799, 2048), constant("g", 5847, 700),
  };
  std::swap(entries[0], entries[4]);
  std::swap(entries[2], entries[7]);
  const auto blob = random_blob(5847 + 700, 2);
  WeightStore store(nullptr, kGpu, &dev);
  auto tensors = store.place(entries, named(blob));
  ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
  EXPECT_EQ(dev.allocations, 1);
  expect_placed(entries, *tensors, blob);
  uint64_t bytes = 0;
  for (const auto& e : entries) bytes += e.data_size;
  EXPECT_LE(dev.allocated_bytes[0], bytes + kWeightAlignment * (entries.size() + 1));
  // Regions are merged: 4 for 7 non-empty constants.
  EXPECT_EQ(dev.last_regions.size(), 4u);
  uint64_t copied = 0;
  for (const UploadRegion& r : dev.last_regions) copied += r.nbytes;
  EXPECT_GE(copied, bytes);
  EXPECT_LT(copied, bytes + 40 + 1);  // at most the small gap is copied along
}

TEST(WeightStore, BuffersOfAMethodOnTheCpuShareAnArenaAndParametersStayBorrowed) {
  CountingDevice dev(DeviceType::CPU);
  std::vector<ConstantEntry> entries = {constant("w", 0, 4096), constant("running_mean", 4096, 100, "Buffer"),
                                        constant("running_var", 4196, 100, "Buffer")};
  const auto blob = random_blob(4296, 3);
  WeightStore store(nullptr, Device{DeviceType::CPU, 0}, &dev);
  const WeightsSource source = named(blob);
  auto tensors = store.place(entries, source);
  ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
  EXPECT_EQ((*tensors)[0].storage()->data(), blob.data());  // read-only: a view of the blob, no copy
  EXPECT_GT(source.bytes.owner().use_count(), 1);           // which the view keeps alive
  EXPECT_EQ(dev.allocations, 1);  // both buffers in one arena
  EXPECT_TRUE((*tensors)[1].storage()->owns_memory());
  expect_placed({entries[1], entries[2]}, {(*tensors)[1], (*tensors)[2]}, blob);
}

TEST(WeightStore, SharedConstantsArePlacedOnceAndTheArenaLivesWithItsLastTensor) {
  CountingDevice dev(DeviceType::CUDA);
  const auto blob = random_blob(3 << 12, 4);
  // Two methods ("prefill", "decode") with one constant in common (same FQN,
  // digest and geometry), each with one of its own.
  const ConstantEntry shared = constant("embed", 0, 4096);
  const std::vector<ConstantEntry> first = {shared, constant("head_a", 4096, 4096)};
  const std::vector<ConstantEntry> second = {constant("head_b", 8192, 4096), shared};
  Tensor kept;
  {
    auto store = std::make_shared<WeightStore>(nullptr, kGpu, &dev);
    auto a = store->place(first, named(blob));
    ASSERT_TRUE(a.ok()) << kiln::last_error_message();
    auto b = store->place(second, named(blob));
    ASSERT_TRUE(b.ok()) << kiln::last_error_message();
    EXPECT_EQ(dev.allocations, 2);  // one arena per call; the shared constant is not placed again
    EXPECT_EQ((*b)[1].storage().get(), (*a)[0].storage().get());
    EXPECT_EQ(dev.last_regions.size(), 1u);
    EXPECT_EQ(dev.last_regions[0].nbytes, 4096u);  // only head_b is uploaded
    expect_placed(first, *a, blob);
    expect_placed(second, *b, blob);
    kept = (*a)[1];  // head_a, in the first arena
  }
  // The store and both calls' tensors are gone; head_a still holds its arena.
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(dev.live(), 1u);
  EXPECT_EQ(std::memcmp(kept.storage()->data(), blob.data() + 4096, 4096), 0);
  kept = Tensor();
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.live(), 0u);
  EXPECT_EQ(dev.bad_frees, 0);
}

TEST(WeightStore, AllocationFailureNamesTheWeightsAndPlacesNothing) {
  CountingDevice dev(DeviceType::CUDA);
  dev.fail_allocation = true;
  const auto entries = packed({4096, 4096});
  const auto blob = random_blob(8192, 5);
  WeightStore store(nullptr, kGpu, &dev);
  auto tensors = store.place(entries, named(blob));
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.error(), Error::OutOfMemory);
  const std::string msg = kiln::last_error_message();
  EXPECT_NE(msg.find("2 weights"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fake device is full"), std::string::npos) << msg;
  // Nothing was published: a later call places them.
  dev.fail_allocation = false;
  auto again = store.place(entries, named(blob));
  ASSERT_TRUE(again.ok()) << kiln::last_error_message();
  expect_placed(entries, *again, blob);
}

// The arena comes from allocate_long_lived: on a device without an override
// that is allocate() on the current stream, then a synchronisation, so the
// memory is free for the upload's own streams before the upload starts.
TEST(WeightStore, ArenaIsReadyForEveryStreamBeforeTheUpload) {
  CountingDevice dev(DeviceType::CUDA);
  const auto entries = packed({4096, 8192});
  const auto blob = random_blob(12288, 9);
  WeightStore store(nullptr, kGpu, &dev);
  auto tensors = store.place(entries, named(blob));
  ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
  const auto& ev = dev.events;
  const auto first = [&](const char* what) { return std::find(ev.begin(), ev.end(), what) - ev.begin(); };
  ASSERT_LT(first("allocate"), static_cast<long>(ev.size()));
  ASSERT_LT(first("upload"), static_cast<long>(ev.size()));
  EXPECT_LT(first("allocate"), first("synchronize"));
  EXPECT_LT(first("synchronize"), first("upload"));
  expect_placed(entries, *tensors, blob);
}

TEST(WeightStore, ArenaThatNeverBecomesReadyIsFreedAndNamed) {
  CountingDevice dev(DeviceType::CUDA);
  dev.fail_synchronize = true;
  const auto entries = packed({4096});
  const auto blob = random_blob(4096, 10);
  WeightStore store(nullptr, kGpu, &dev);
  auto tensors = store.place(entries, named(blob));
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.error(), Error::BackendFailed);
  const std::string msg = kiln::last_error_message();
  EXPECT_NE(msg.find("fake device lost"), std::string::npos) << msg;
  EXPECT_EQ(dev.uploads, 0);
  EXPECT_EQ(dev.live(), 0u);
  EXPECT_EQ(dev.allocations, dev.frees);
}

TEST(WeightStore, UploadFailureFreesTheArenaAndPublishesNothing) {
  CountingDevice dev(DeviceType::CUDA);
  dev.fail_upload = true;
  const auto entries = packed({4096, 4096});
  const auto blob = random_blob(8192, 6);
  WeightStore store(nullptr, kGpu, &dev);
  auto tensors = store.place(entries, named(blob));
  ASSERT_FALSE(tensors.ok());
  EXPECT_NE(kiln::last_error_message().find("fake upload failed"), std::string::npos);
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(dev.live(), 0u);
  dev.fail_upload = false;
  auto again = store.place(entries, named(blob));
  ASSERT_TRUE(again.ok()) << kiln::last_error_message();
  EXPECT_EQ(dev.allocations, 2);  // placed anew, not taken from the failed call
  expect_placed(entries, *again, blob);
}

// WeightPlacement (what AotiMethod::load starts before the library loads): on
// a thread, the upload happens off the caller's thread and the tensors are
// the store's; an error crosses back with its message; a placement dropped
// untaken joins its thread and leaves nothing allocated.
TEST(WeightPlacement, OnAThreadUploadsElsewhereAndHandsTheStoresTensors) {
  CountingDevice dev(DeviceType::CUDA);
  const auto entries = packed({4096, 8192, 100});
  const auto blob = random_blob(12388, 21);
  auto store = std::make_shared<WeightStore>(nullptr, kGpu, &dev);
  auto placement = WeightPlacement::start(store, entries, named(blob), /*on_thread=*/true);
  auto tensors = placement->take();
  ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
  expect_placed(entries, *tensors, blob);
  EXPECT_EQ(dev.uploads, 1);
  EXPECT_NE(dev.upload_thread, std::this_thread::get_id());
  EXPECT_EQ(placement->store(), store);
  // The store shares them: placing the same constants again uploads nothing.
  auto again = store->place(entries, named(blob));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[1].storage()->data(), (*tensors)[1].storage()->data());
  EXPECT_EQ(dev.uploads, 1);
  // A second take is a clear error, not a second copy of the tensors.
  auto twice = placement->take();
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(), Error::Internal);
}

TEST(WeightPlacement, InlineRunsOnTheCallersThread) {
  CountingDevice dev(DeviceType::CUDA);
  const auto entries = packed({4096});
  const auto blob = random_blob(4096, 22);
  auto placement =
      WeightPlacement::start(std::make_shared<WeightStore>(nullptr, kGpu, &dev), entries, named(blob), /*on_thread=*/false);
  EXPECT_EQ(dev.uploads, 1);  // before take()
  EXPECT_EQ(dev.upload_thread, std::this_thread::get_id());
  auto tensors = placement->take();
  ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
  expect_placed(entries, *tensors, blob);
}

TEST(WeightPlacement, ErrorOnTheThreadComesBackWithItsMessage) {
  CountingDevice dev(DeviceType::CUDA);
  dev.fail_upload = true;
  const auto entries = packed({4096, 4096});
  const auto blob = random_blob(8192, 23);
  kiln::clear_error();
  auto placement =
      WeightPlacement::start(std::make_shared<WeightStore>(nullptr, kGpu, &dev), entries, named(blob), /*on_thread=*/true);
  auto tensors = placement->take();
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.error(), Error::BackendFailed);
  EXPECT_NE(kiln::last_error_message().find("fake upload failed"), std::string::npos) << kiln::last_error_message();
  EXPECT_EQ(dev.live(), 0u);
}

TEST(WeightPlacement, DroppedUntakenJoinsAndFreesTheArena) {
  CountingDevice dev(DeviceType::CUDA);
  const auto entries = packed({1 << 20, 1 << 20});
  const auto blob = random_blob(2 << 20, 24);
  {
    auto placement = WeightPlacement::start(std::make_shared<WeightStore>(nullptr, kGpu, &dev), entries, named(blob),
                                            /*on_thread=*/true);
  }  // joined here, without take()
  EXPECT_EQ(dev.uploads, 1);
  EXPECT_EQ(dev.allocations, 1);
  EXPECT_EQ(dev.live(), 0u);
  EXPECT_EQ(dev.bad_frees, 0);
}

}  // namespace

namespace {

// Unchecked weights of a device method go from the program file straight to
// the upload: the regions hold the reader and every byte placed is read
// once, with no host copy of the blob; a read that fails fails the placement.
TEST(WeightStore, AReaderSourceIsReadByTheUploadItself) {
  CountingDevice dev(DeviceType::CUDA);
  const auto entries = packed({1 << 16, 4096, 256});
  const auto blob = random_blob(entries.back().blob_offset + entries.back().data_size, 31);
  std::atomic<uint64_t> bytes_read{0};
  {
    WeightStore store(nullptr, kGpu, &dev);
    auto tensors = store.place(entries, read_through(blob, &bytes_read));
    ASSERT_TRUE(tensors.ok()) << kiln::last_error_message();
    ASSERT_EQ(dev.last_regions.size(), 1u);
    EXPECT_EQ(dev.last_regions[0].src, nullptr);
    EXPECT_NE(dev.last_regions[0].reader, nullptr);
    EXPECT_EQ(bytes_read.load(), blob.size());
    expect_placed(entries, *tensors, blob);
  }
  std::vector<uint8_t> short_file(blob.begin(), blob.begin() + 1000);  // "truncated"
  WeightStore store(nullptr, kGpu, &dev);
  auto failed = store.place(entries, read_through(short_file, &bytes_read));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), Error::IoError);
  EXPECT_NE(kiln::last_error_message().find("past the end of the fake file"), std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(dev.live(), 0u);
}

// CPU parameters are views of the blob's private copy: a reader cannot serve them.
TEST(WeightStore, CpuViewsNeedTheBlobInMemory) {
  CountingDevice dev(DeviceType::CPU);
  const auto entries = packed({4096});
  const auto blob = random_blob(4096, 32);
  std::atomic<uint64_t> bytes_read{0};
  WeightStore store(nullptr, Device{DeviceType::CPU, 0}, &dev);
  auto placed = store.place(entries, read_through(blob, &bytes_read));
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.error(), Error::Internal);
}

}  // namespace

// Tests for the device-neutral aoti_torch_* shims: codes, creation, views and
// their lifetimes, copies, getters, item/scalar conversions, misc hooks and
// error reporting. Expected values come from the ABI's documented semantics
// (c10 codes, ATen view/copy rules), never from running the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "shims/common/layout_util.h"
#include "shims/common/shim_abi.h"
#include "shims/common/shim_state.h"
#include "shims/common/tensor_handle.h"
#include "core/half_float.h"
#include "kiln/error.h"

namespace {

using kiln::aoti::from_handle;

// Owns a handle for the duration of a test.
struct Handle {
  AtenTensorHandle h = nullptr;
  Handle() = default;
  explicit Handle(AtenTensorHandle handle) : h(handle) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { aoti_torch_delete_tensor_object(h); }
  AtenTensorHandle* out() { return &h; }
  operator AtenTensorHandle() const { return h; }
};

std::vector<int64_t> get_sizes(AtenTensorHandle h) {
  int64_t dim = 0, *sizes = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
  EXPECT_EQ(aoti_torch_get_sizes(h, &sizes), 0);
  return {sizes, sizes + dim};
}
std::vector<int64_t> get_strides(AtenTensorHandle h) {
  int64_t dim = 0, *strides = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
  EXPECT_EQ(aoti_torch_get_strides(h, &strides), 0);
  return {strides, strides + dim};
}
float* fdata(AtenTensorHandle h) {
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &p), 0);
  return static_cast<float*>(p);
}

TEST(ShimCodes, MatchC10) {
  EXPECT_EQ(aoti_torch_dtype_uint8(), 0);
  EXPECT_EQ(aoti_torch_dtype_int8(), 1);
  EXPECT_EQ(aoti_torch_dtype_int16(), 2);
  EXPECT_EQ(aoti_torch_dtype_int32(), 3);
  EXPECT_EQ(aoti_torch_dtype_int64(), 4);
  EXPECT_EQ(aoti_torch_dtype_float16(), 5);
  EXPECT_EQ(aoti_torch_dtype_float32(), 6);
  EXPECT_EQ(aoti_torch_dtype_float64(), 7);
  EXPECT_EQ(aoti_torch_dtype_bool(), 11);
  EXPECT_EQ(aoti_torch_dtype_bfloat16(), 15);
  EXPECT_EQ(aoti_torch_dtype_float8_e5m2(), 23);
  EXPECT_EQ(aoti_torch_dtype_float8_e4m3fn(), 24);
  EXPECT_EQ(aoti_torch_dtype_uint16(), 27);
  EXPECT_EQ(aoti_torch_dtype_uint32(), 28);
  EXPECT_EQ(aoti_torch_dtype_uint64(), 29);
  EXPECT_EQ(aoti_torch_device_type_cpu(), 0);
  EXPECT_EQ(aoti_torch_device_type_cuda(), 1);
  EXPECT_EQ(aoti_torch_device_type_mps(), 13);
  EXPECT_EQ(aoti_torch_layout_strided(), 0);
  EXPECT_EQ(aoti_torch_memory_format_contiguous_format(), 0);
  EXPECT_EQ(aoti_torch_memory_format_preserve_format(), 1);
  EXPECT_EQ(aoti_torch_memory_format_channels_last(), 2);
  EXPECT_EQ(aoti_torch_memory_format_channels_last_3d(), 3);
  EXPECT_EQ(aoti_torch_dtype_element_size(15), 2u);
  EXPECT_EQ(aoti_torch_dtype_element_size(7), 8u);
  EXPECT_EQ(aoti_torch_dtype_element_size(99), 0u);
  EXPECT_EQ(aoti_torch_abi_version() >> 48, (2u << 8) | 11u);  // 2.11
}

TEST(ShimCreate, EmptyStridedGeometryAndGetters) {
  const int64_t sizes[] = {2, 3, 4};
  const int64_t strides[] = {1, 8, 2};  // permuted layout with gaps
  Handle t;
  ASSERT_EQ(aoti_torch_empty_strided(3, sizes, strides, 6, 0, 0, t.out()), 0);
  EXPECT_EQ(get_sizes(t), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(get_strides(t), (std::vector<int64_t>{1, 8, 2}));
  int32_t dtype = -1, dev = -1, idx = 0, layout = -1;
  int64_t numel = 0, off = -1, storage = 0, storage_numel = 0, sz = 0, st = 0;
  bool contig = true, defined = false;
  EXPECT_EQ(aoti_torch_get_dtype(t, &dtype), 0);
  EXPECT_EQ(dtype, 6);
  EXPECT_EQ(aoti_torch_get_device_type(t, &dev), 0);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(aoti_torch_get_device_index(t, &idx), 0);
  EXPECT_EQ(idx, -1);
  EXPECT_EQ(aoti_torch_get_layout(t, &layout), 0);
  EXPECT_EQ(layout, 0);
  EXPECT_EQ(aoti_torch_get_numel(t, &numel), 0);
  EXPECT_EQ(numel, 24);
  EXPECT_EQ(aoti_torch_get_storage_offset(t, &off), 0);
  EXPECT_EQ(off, 0);
  // Largest element index reached: 1*1 + 2*8 + 3*2 = 23 -> 24 floats.
  EXPECT_EQ(aoti_torch_get_storage_size(t, &storage), 0);
  EXPECT_EQ(storage, 24 * 4);
  EXPECT_EQ(aoti_torch_get_storage_numel(t, &storage_numel), 0);
  EXPECT_EQ(storage_numel, 24);
  EXPECT_EQ(aoti_torch_get_size(t, -1, &sz), 0);
  EXPECT_EQ(sz, 4);
  EXPECT_EQ(aoti_torch_get_stride(t, 1, &st), 0);
  EXPECT_EQ(st, 8);
  EXPECT_EQ(aoti_torch_is_contiguous(t, &contig), 0);
  EXPECT_FALSE(contig);
  EXPECT_EQ(aoti_torch_is_defined(t, &defined), 0);
  EXPECT_TRUE(defined);
  EXPECT_EQ(aoti_torch_get_size(t, 3, &sz), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_get_size"), std::string::npos);
}

TEST(ShimCreate, EmptyStridedNullStridesIsContiguousAndZeroDim) {
  const int64_t sizes[] = {2, 5};
  Handle t;
  ASSERT_EQ(aoti_torch_empty_strided(2, sizes, nullptr, 4, 0, 0, t.out()), 0);
  EXPECT_EQ(get_strides(t), (std::vector<int64_t>{5, 1}));
  Handle s;
  ASSERT_EQ(aoti_torch_empty_strided(0, nullptr, nullptr, 6, 0, 0, s.out()), 0);
  int64_t numel = 0;
  EXPECT_EQ(aoti_torch_get_numel(s, &numel), 0);
  EXPECT_EQ(numel, 1);
}

TEST(ShimCreate, BadArgumentsFailWithMessage) {
  const int64_t sizes[] = {2, 2};
  AtenTensorHandle h = nullptr;
  EXPECT_EQ(aoti_torch_empty_strided(2, sizes, nullptr, 99, 0, 0, &h), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_empty_strided: unsupported dtype code 99"),
            std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_empty_strided(2, sizes, nullptr, 6, 7, 0, &h), 1);
  EXPECT_NE(kiln::last_error_message().find("device type"), std::string::npos);
  EXPECT_EQ(aoti_torch_empty_strided(2, nullptr, nullptr, 6, 0, 0, &h), 1);
  EXPECT_EQ(aoti_torch_empty_strided(2, sizes, nullptr, 6, 0, 0, nullptr), 1);
  const int64_t neg[] = {-1, 2};
  EXPECT_EQ(aoti_torch_empty_strided(2, neg, nullptr, 6, 0, 0, &h), 1);
  EXPECT_EQ(h, nullptr);
  // Null handles anywhere are errors, never crashes.
  int64_t v = 0;
  EXPECT_EQ(aoti_torch_get_numel(nullptr, &v), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_get_numel: argument 'tensor' is a null tensor handle"),
            std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_clone(nullptr, &h), 1);
  EXPECT_EQ(aoti_torch_copy_(nullptr, nullptr, 0), 1);
  EXPECT_EQ(aoti_torch_delete_tensor_object(nullptr), 0);
  EXPECT_EQ(aoti_torch_empty_strided_pinned(2, sizes, nullptr, 6, 1, 0, &h), 1);
  Handle pinned;
  EXPECT_EQ(aoti_torch_empty_strided_pinned(2, sizes, nullptr, 6, 0, 0, pinned.out()), 0);
}

TEST(ShimBlob, HonoursStorageOffsetAndDoesNotOwn) {
  std::vector<float> buf(20);
  for (int i = 0; i < 20; ++i) buf[i] = static_cast<float>(i);
  const int64_t sizes[] = {2, 3};
  const int64_t strides[] = {5, 1};
  {
    Handle t;
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(buf.data(), 2, sizes, strides, 4, 6, 0, 0, t.out()), 0);
    EXPECT_EQ(fdata(t), buf.data() + 4);
    int64_t off = 0, storage = 0;
    EXPECT_EQ(aoti_torch_get_storage_offset(t, &off), 0);
    EXPECT_EQ(off, 4);
    // Storage spans the offset and the view: (4 + 1*5 + 2*1 + 1) floats.
    EXPECT_EQ(aoti_torch_get_storage_size(t, &storage), 0);
    EXPECT_EQ(storage, 12 * 4);
    float x = 0;
    Handle v;
    const int64_t one[] = {1};
    const int64_t unit[] = {1};
    // Element (1, 2) = buf[4 + 5 + 2] = 11, via a 1-element view with an offset increment.
    ASSERT_EQ(aoti_torch__reinterpret_tensor(t, 1, one, unit, 7, v.out()), 0);
    EXPECT_EQ(aoti_torch_item_float32(v, &x), 0);
    EXPECT_EQ(x, 11.0f);
  }
  EXPECT_EQ(buf[0], 0.0f);  // still ours and intact after the handles went
  Handle v2;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob_v2(buf.data(), 2, sizes, strides, 0, 6, 0, 0, v2.out(), 0, nullptr, 0),
            0);
  AtenTensorHandle bad = nullptr;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob_v2(buf.data(), 2, sizes, strides, 0, 6, 0, 0, &bad, 3, nullptr, 0), 1);
  EXPECT_NE(kiln::last_error_message().find("layout 3"), std::string::npos);
  // A null blob allocates fresh memory (ATen's convention for empty constants).
  Handle fresh;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob(nullptr, 2, sizes, strides, 0, 6, 0, 0, fresh.out()), 0);
  EXPECT_NE(fdata(fresh), nullptr);
}

TEST(ShimViews, ReinterpretIsRelativeAndBoundsChecked) {
  const int64_t sizes[] = {10};
  Handle base;
  ASSERT_EQ(aoti_torch_empty_strided(1, sizes, nullptr, 6, 0, 0, base.out()), 0);
  float* p = fdata(base);
  for (int i = 0; i < 10; ++i) p[i] = static_cast<float>(i * i);
  const int64_t vs[] = {4};
  const int64_t vst[] = {1};
  Handle a;
  ASSERT_EQ(aoti_torch__reinterpret_tensor(base, 1, vs, vst, 2, a.out()), 0);
  Handle b;  // offset 2 relative to a's offset 2 -> absolute 4
  ASSERT_EQ(aoti_torch__reinterpret_tensor(a, 1, vs, vst, 2, b.out()), 0);
  int64_t off = 0;
  EXPECT_EQ(aoti_torch_get_storage_offset(b, &off), 0);
  EXPECT_EQ(off, 4);
  EXPECT_EQ(fdata(b)[0], 16.0f);
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(aoti_torch__reinterpret_tensor(base, 1, vs, vst, 7, &out), 1);  // 7 + 4 > 10
  EXPECT_NE(kiln::last_error_message().find("aoti_torch__reinterpret_tensor"), std::string::npos);
  EXPECT_EQ(out, nullptr);
  // as_strided keeps self's rank and offset.
  const int64_t s2[] = {2};
  const int64_t st2[] = {3};
  Handle c;
  ASSERT_EQ(aoti_torch_as_strided(a, s2, st2, c.out()), 0);
  EXPECT_EQ(fdata(c)[3], 25.0f);  // base[2 + 3]
}

TEST(ShimViews, ViewOutlivesBaseHandle) {
  const int64_t sizes[] = {6};
  AtenTensorHandle base = nullptr;
  ASSERT_EQ(aoti_torch_empty_strided(1, sizes, nullptr, 6, 0, 0, &base), 0);
  for (int i = 0; i < 6; ++i) fdata(base)[i] = static_cast<float>(i + 1);
  const auto* storage = from_handle(base)->storage().get();
  EXPECT_EQ(storage->use_count(), 1);
  const int64_t vs[] = {3};
  const int64_t vst[] = {2};
  Handle view;
  ASSERT_EQ(aoti_torch__reinterpret_tensor(base, 1, vs, vst, 1, view.out()), 0);
  Handle alias;
  ASSERT_EQ(aoti_torch_new_tensor_handle(base, alias.out()), 0);
  EXPECT_EQ(storage->use_count(), 3);
  ASSERT_EQ(aoti_torch_delete_tensor_object(base), 0);
  EXPECT_EQ(storage->use_count(), 2);
  EXPECT_EQ(fdata(view)[0], 2.0f);
  EXPECT_EQ(fdata(view)[4], 6.0f);
  EXPECT_EQ(fdata(alias)[5], 6.0f);
}

TEST(ShimViews, AllocFromPoolRetypes) {
  const int64_t sizes[] = {64};
  Handle pool;
  ASSERT_EQ(aoti_torch_empty_strided(1, sizes, nullptr, 0, 0, 0, pool.out()), 0);  // 64 bytes
  const int64_t vs[] = {2, 3};
  const int64_t vst[] = {3, 1};
  Handle v;
  ASSERT_EQ(aoti_torch__alloc_from_pool(pool, 16, 6, 2, vs, vst, v.out()), 0);
  int32_t dt = 0;
  int64_t off = 0;
  EXPECT_EQ(aoti_torch_get_dtype(v, &dt), 0);
  EXPECT_EQ(dt, 6);
  EXPECT_EQ(aoti_torch_get_storage_offset(v, &off), 0);
  EXPECT_EQ(off, 4);
  void* pool_ptr = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(pool, &pool_ptr), 0);
  EXPECT_EQ(fdata(v), reinterpret_cast<float*>(static_cast<char*>(pool_ptr) + 16));
  AtenTensorHandle bad = nullptr;
  EXPECT_EQ(aoti_torch__alloc_from_pool(pool, 6, 6, 2, vs, vst, &bad), 1);   // misaligned
  EXPECT_EQ(aoti_torch__alloc_from_pool(pool, 48, 6, 2, vs, vst, &bad), 1);  // 48 + 24 > 64
}

TEST(ShimCopy, CloneVariantsAndStridedCopy) {
  // A transposed (dense, non-contiguous) 2x3 view of a 3x2 buffer.
  const int64_t sizes[] = {2, 3};
  const int64_t strides[] = {1, 2};
  Handle t;
  ASSERT_EQ(aoti_torch_empty_strided(2, sizes, strides, 6, 0, 0, t.out()), 0);
  for (int i = 0; i < 6; ++i) fdata(t)[i] = static_cast<float>(10 + i);
  Handle c;
  ASSERT_EQ(aoti_torch_clone(t, c.out()), 0);
  EXPECT_EQ(get_strides(c), (std::vector<int64_t>{1, 2}));  // dense: strides preserved
  EXPECT_NE(fdata(c), fdata(t));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(fdata(c)[i], 10.0f + i);

  // A view with gaps: clone makes it contiguous, clone_preserve_strides keeps the gaps.
  const int64_t gs[] = {2, 2};
  const int64_t gst[] = {4, 2};
  Handle g;
  ASSERT_EQ(aoti_torch_empty_strided(2, gs, gst, 6, 0, 0, g.out()), 0);
  for (int i = 0; i < 7; ++i) fdata(g)[i] = static_cast<float>(i);
  Handle gc, gp;
  ASSERT_EQ(aoti_torch_clone(g, gc.out()), 0);
  EXPECT_EQ(get_strides(gc), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(std::vector<float>(fdata(gc), fdata(gc) + 4), (std::vector<float>{0, 2, 4, 6}));
  ASSERT_EQ(aoti_torch_clone_preserve_strides(g, gp.out()), 0);
  EXPECT_EQ(get_strides(gp), (std::vector<int64_t>{4, 2}));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(fdata(gp)[i], static_cast<float>(i));

  // copy_ into a strided destination.
  const int64_t cs[] = {3, 2};
  Handle dst;
  ASSERT_EQ(aoti_torch_empty_strided(2, cs, nullptr, 6, 0, 0, dst.out()), 0);
  const int64_t ts[] = {3, 2};
  const int64_t tst[] = {1, 3};
  Handle src;
  ASSERT_EQ(aoti_torch_empty_strided(2, ts, tst, 6, 0, 0, src.out()), 0);
  for (int i = 0; i < 6; ++i) fdata(src)[i] = static_cast<float>(i);
  ASSERT_EQ(aoti_torch_copy_(dst, src, 0), 0);
  // dst[r][c] = src[r][c] = buf[r + 3c]
  EXPECT_EQ(std::vector<float>(fdata(dst), fdata(dst) + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(ShimCopy, BroadcastAndDtypeConversion) {
  const int64_t ds[] = {2, 3};
  Handle dst;
  ASSERT_EQ(aoti_torch_empty_strided(2, ds, nullptr, 15, 0, 0, dst.out()), 0);  // bf16
  const int64_t ss[] = {3};
  Handle src;
  ASSERT_EQ(aoti_torch_empty_strided(1, ss, nullptr, 6, 0, 0, src.out()), 0);  // f32
  fdata(src)[0] = 1.5f;
  fdata(src)[1] = -2.25f;
  fdata(src)[2] = 1.0f / 3.0f;
  ASSERT_EQ(aoti_torch_copy_(dst, src, 0), 0);
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(dst, &p), 0);
  const auto* bits = static_cast<const uint16_t*>(p);
  // bf16 patterns: 1.5 = 0x3FC0, -2.25 = 0xC010, 1/3 rounds to 0x3EAB.
  const uint16_t expected[] = {0x3FC0, 0xC010, 0x3EAB};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(bits[r * 3 + c], expected[c]) << r << "," << c;

  // float -> int64 truncates toward zero; int -> bool is != 0.
  Handle i64;
  ASSERT_EQ(aoti_torch_empty_strided(1, ss, nullptr, 4, 0, 0, i64.out()), 0);
  ASSERT_EQ(aoti_torch_copy_(i64, src, 0), 0);
  ASSERT_EQ(aoti_torch_get_data_ptr(i64, &p), 0);
  EXPECT_EQ(static_cast<int64_t*>(p)[0], 1);
  EXPECT_EQ(static_cast<int64_t*>(p)[1], -2);
  EXPECT_EQ(static_cast<int64_t*>(p)[2], 0);
  Handle bl;
  ASSERT_EQ(aoti_torch_empty_strided(1, ss, nullptr, 11, 0, 0, bl.out()), 0);
  ASSERT_EQ(aoti_torch_tensor_copy_(i64, bl), 0);  // deprecated order: (src, dst)
  ASSERT_EQ(aoti_torch_get_data_ptr(bl, &p), 0);
  EXPECT_EQ(static_cast<uint8_t*>(p)[0], 1);
  EXPECT_EQ(static_cast<uint8_t*>(p)[1], 1);
  EXPECT_EQ(static_cast<uint8_t*>(p)[2], 0);

  const int64_t bad_sizes[] = {4};
  Handle bad;
  ASSERT_EQ(aoti_torch_empty_strided(1, bad_sizes, nullptr, 6, 0, 0, bad.out()), 0);
  EXPECT_EQ(aoti_torch_copy_(dst, bad, 0), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_copy_: cannot broadcast"), std::string::npos)
      << kiln::last_error_message();
}

TEST(ShimCopy, ZeroAssignAndUninitialized) {
  const int64_t s[] = {2, 2};
  const int64_t st[] = {1, 2};
  Handle t;
  ASSERT_EQ(aoti_torch_empty_strided(2, s, st, 7, 0, 0, t.out()), 0);
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(t, &p), 0);
  for (int i = 0; i < 4; ++i) static_cast<double*>(p)[i] = 3.0;
  ASSERT_EQ(aoti_torch_zero_(t), 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(static_cast<double*>(p)[i], 0.0);

  Handle u;
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(u.out()), 0);
  bool defined = true;
  EXPECT_EQ(aoti_torch_is_defined(u, &defined), 0);
  EXPECT_FALSE(defined);
  ASSERT_EQ(aoti_torch_assign_tensors(t, u), 0);
  EXPECT_EQ(aoti_torch_is_defined(u, &defined), 0);
  EXPECT_TRUE(defined);
  void* q = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(u, &q), 0);
  EXPECT_EQ(p, q);
  Handle o;
  ASSERT_EQ(aoti_torch_assign_tensors_out(t, o.out()), 0);
  ASSERT_EQ(aoti_torch_get_data_ptr(o, &q), 0);
  EXPECT_EQ(p, q);
  EXPECT_NE(o.h, t.h);
}

TEST(ShimItem, ConvertsLikeATen) {
  Handle f;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_float32(-3.75f, f.out()), 0);
  EXPECT_TRUE(get_sizes(f).empty());
  float fv = 0;
  double dv = 0;
  int64_t iv = 0;
  int32_t i32 = 0;
  bool bv = false;
  uint8_t u8 = 0;
  uint16_t hbits = 0, bbits = 0;
  EXPECT_EQ(aoti_torch_item_float32(f, &fv), 0);
  EXPECT_EQ(fv, -3.75f);
  EXPECT_EQ(aoti_torch_item_float64(f, &dv), 0);
  EXPECT_EQ(dv, -3.75);
  EXPECT_EQ(aoti_torch_item_int64(f, &iv), 0);
  EXPECT_EQ(iv, -3);
  EXPECT_EQ(aoti_torch_item_bool(f, &bv), 0);
  EXPECT_TRUE(bv);
  EXPECT_EQ(aoti_torch_item_float16(f, &hbits), 0);
  EXPECT_EQ(hbits, 0xC380);  // -3.75 in IEEE half
  EXPECT_EQ(aoti_torch_item_bfloat16(f, &bbits), 0);
  EXPECT_EQ(bbits, 0xC070);

  Handle big;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_int64(int64_t{1} << 60, big.out()), 0);
  EXPECT_EQ(aoti_torch_item_int64(big, &iv), 0);
  EXPECT_EQ(iv, int64_t{1} << 60);  // no precision lost through a double
  Handle u;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_uint8(200, u.out()), 0);
  EXPECT_EQ(aoti_torch_item_int32(u, &i32), 0);
  EXPECT_EQ(i32, 200);
  EXPECT_EQ(aoti_torch_item_uint8(u, &u8), 0);
  EXPECT_EQ(u8, 200);
  Handle b;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_bool(true, b.out()), 0);
  EXPECT_EQ(aoti_torch_item_float32(b, &fv), 0);
  EXPECT_EQ(fv, 1.0f);
  int32_t dt = 0;
  EXPECT_EQ(aoti_torch_get_dtype(b, &dt), 0);
  EXPECT_EQ(dt, 11);
  // A one-element 1-d tensor works; more elements do not.
  const int64_t one[] = {1};
  Handle o;
  ASSERT_EQ(aoti_torch_empty_strided(1, one, nullptr, 3, 0, 0, o.out()), 0);
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(o, &p), 0);
  *static_cast<int32_t*>(p) = -7;
  EXPECT_EQ(aoti_torch_item_float64(o, &dv), 0);
  EXPECT_EQ(dv, -7.0);
  const int64_t two[] = {2};
  Handle t2;
  ASSERT_EQ(aoti_torch_empty_strided(1, two, nullptr, 6, 0, 0, t2.out()), 0);
  EXPECT_EQ(aoti_torch_item_float32(t2, &fv), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_item_float32: item() needs a tensor with one element"),
            std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_item_float32(f, nullptr), 1);
}

TEST(ShimMisc, GradModeCheckWarn) {
  EXPECT_FALSE(aoti_torch_grad_mode_is_enabled());
  aoti_torch_grad_mode_set_enabled(true);
  EXPECT_TRUE(aoti_torch_grad_mode_is_enabled());
  aoti_torch_grad_mode_set_enabled(false);
  EXPECT_FALSE(aoti_torch_grad_mode_is_enabled());

  EXPECT_FALSE(kiln::aoti::take_check_failure());
  aoti_torch_check(true, "f", "file.cpp", 1, "fine");
  EXPECT_FALSE(kiln::aoti::take_check_failure());
  aoti_torch_check(false, "run_impl", "model.cpp", 42, "input 0 has the wrong size");
  EXPECT_NE(kiln::last_error_message().find("run_impl at model.cpp:42: input 0 has the wrong size"),
            std::string::npos)
      << kiln::last_error_message();
  EXPECT_TRUE(kiln::aoti::take_check_failure());
  EXPECT_FALSE(kiln::aoti::take_check_failure());  // taking clears it
  aoti_torch_check(false, nullptr, nullptr, 0, nullptr);  // null strings do not crash
  EXPECT_TRUE(kiln::aoti::take_check_failure());
  aoti_torch_warn("f", "x.cpp", 3, "just a warning");
  aoti_torch_print_tensor_handle(nullptr, "null handle");
}

TEST(HalfFloat, RoundTripsAndRounds) {
  using namespace kiln;
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);            // rounds to infinity
  EXPECT_EQ(float_to_half(5.9604644775390625e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048.0f), 0x3C00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048.0f), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(half_to_float(0x0001), 5.9604644775390625e-8f);
  EXPECT_EQ(half_to_float(0xC380), -3.75f);
  EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256.0f), 0x3F80);  // tie -> even
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256.0f), 0x3F82);
  EXPECT_EQ(bf16_to_float(0xC070), -3.75f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h < 0x7C00; ++h) EXPECT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h);
}

}  // namespace

namespace kiln::aoti {
namespace {
// Reference strides printed by eager torch 2.11 for empty_like(x) of each x.
TEST(LayoutUtil, StridesLikeFollowsEmptyLikeForNonDenseInputs) {
  // q = randn(2,16,192)[..., :64].reshape(2,16,4,16).transpose(1,2)
  EXPECT_EQ(strides_like(std::vector<int64_t>{2, 4, 16, 16}, std::vector<int64_t>{3072, 16, 192, 1}),
            (std::vector<int64_t>{1024, 16, 64, 1}));
  // dense but transposed: kept as is
  EXPECT_EQ(strides_like(std::vector<int64_t>{2, 4, 16, 16}, std::vector<int64_t>{1024, 16, 64, 1}),
            (std::vector<int64_t>{1024, 16, 64, 1}));
  // randn(4, 10)[:, ::2] -> contiguous
  EXPECT_EQ(strides_like(std::vector<int64_t>{4, 5}, std::vector<int64_t>{10, 2}), (std::vector<int64_t>{5, 1}));
  // randn(10, 4).t()[:, ::2] (sizes [4, 5], strides [1, 8]) -> column-major dense
  EXPECT_EQ(strides_like(std::vector<int64_t>{4, 5}, std::vector<int64_t>{1, 8}), (std::vector<int64_t>{1, 4}));
}
}  // namespace
}  // namespace kiln::aoti

/* Tests the Kiln C API from plain C11, linked against the shared libkiln.so.
 *
 * Besides checking behaviour, compiling this file as C proves that
 * include/kiln/c_api.h is valid C, and linking it against the shared library
 * proves the C API is exported while everything else stays hidden.
 *
 * Optional real-program part: KILN_TEST_PROGRAM=<program.kiln> runs its
 * "forward" method (or the first method). With KILN_TEST_INPUTS and
 * KILN_TEST_OUTPUTS (raw little-endian bytes of every input / expected output,
 * contiguous, concatenated in order) the outputs are compared with the
 * expected values (floating point: relative tolerance 1e-5). The test prints
 * which parts ran and which were skipped. */
#define _POSIX_C_SOURCE 200809L

#include <dlpack/dlpack.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/c_api.h"

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond)                                                          \
  do {                                                                       \
    ++g_checks;                                                              \
    if (!(cond)) {                                                           \
      ++g_failures;                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                        \
  } while (0)

/* Checks a status and, on mismatch, prints the last error message. */
#define CHECK_STATUS(call, expected)                                                   \
  do {                                                                                 \
    kiln_status_t status_ = (call);                                                    \
    ++g_checks;                                                                        \
    if (status_ != (expected)) {                                                       \
      ++g_failures;                                                                    \
      fprintf(stderr, "%s:%d: %s returned %s (expected %s): %s\n", __FILE__, __LINE__, \
              #call, kiln_status_name(status_), kiln_status_name(expected),            \
              kiln_last_error_message());                                              \
    }                                                                                  \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, KILN_OK)

static int contains(const char* haystack, const char* needle) {
  return haystack != NULL && strstr(haystack, needle) != NULL;
}

/* ---- library information ------------------------------------------------ */

static void test_library_info(void) {
  CHECK(kiln_abi_version() == KILN_ABI_VERSION);
  CHECK(kiln_version_string() != NULL && strlen(kiln_version_string()) > 0);
  CHECK(strcmp(kiln_status_name(KILN_OK), "Ok") == 0);
  CHECK(strcmp(kiln_status_name(KILN_ERROR_NOT_FOUND), "NotFound") == 0);
  CHECK(strcmp(kiln_status_name(KILN_ERROR_INVALID_PROGRAM), "InvalidProgram") == 0);
  CHECK(strcmp(kiln_status_name(KILN_ERROR_INTEGRITY_ERROR), "IntegrityError") == 0);
  CHECK(strcmp(kiln_status_name(12345), "Unknown") == 0);
  CHECK(strcmp(kiln_status_name(-1), "Unknown") == 0);
  CHECK(strcmp(kiln_dtype_name(KILN_DTYPE_FLOAT32), "float32") == 0);
  CHECK(strcmp(kiln_dtype_name(KILN_DTYPE_BFLOAT16), "bfloat16") == 0);
  CHECK(kiln_dtype_name(8) == NULL); /* c10 ComplexHalf: not a Kiln dtype */
  CHECK(kiln_dtype_element_size(KILN_DTYPE_FLOAT64) == 8);
  CHECK(kiln_dtype_element_size(KILN_DTYPE_BOOL) == 1);
  CHECK(kiln_dtype_element_size(8) == 0);
  CHECK(kiln_last_error_message() != NULL);
}

/* ---- NULL handling --------------------------------------------------------- */

static void test_null_arguments(void) {
  size_t dim = 0;
  kiln_tensor_t* tensor = NULL;
  kiln_module_t* module = NULL;
  kiln_options_t* options = NULL;
  int64_t sizes[1] = {2};

  /* Every _free accepts NULL. */
  kiln_tensor_free(NULL);
  kiln_tensor_array_free(NULL, 3);
  kiln_module_free(NULL);
  kiln_options_free(NULL);
  kiln_method_meta_free(NULL);

  CHECK_STATUS(kiln_tensor_dim(NULL, &dim), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "kiln_tensor_dim"));
  CHECK(contains(kiln_last_error_message(), "'tensor'"));

  CHECK_STATUS(kiln_tensor_create_empty(KILN_DTYPE_FLOAT32, sizes, 1, KILN_DEVICE_CPU, 0, NULL),
               KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "'out'"));

  CHECK_STATUS(kiln_module_create(NULL, NULL, 0, &module), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "'path'"));
  CHECK(module == NULL);
  CHECK_STATUS(kiln_module_create("x.kiln", NULL, 2, &module), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "'data_files'"));
  CHECK_STATUS(kiln_module_load(NULL, NULL), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_module_execute(NULL, "forward", NULL, 0, NULL, NULL), KILN_ERROR_INVALID_ARGUMENT);

  CHECK_STATUS(kiln_tensor_from_dlpack(NULL, &tensor), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "dl_managed_tensor"));
  CHECK_STATUS(kiln_tensor_to_dlpack(NULL, NULL), KILN_ERROR_INVALID_ARGUMENT);

  CHECK_OK(kiln_options_create(&options));
  CHECK_STATUS(kiln_options_set_int(options, NULL, "k", 1), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "'backend'"));
  CHECK_STATUS(kiln_options_set_string(options, "aoti", "k", NULL), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "'value'"));
  kiln_options_free(options);

  /* A successful call clears the message. */
  CHECK_STATUS(kiln_tensor_dim(NULL, &dim), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_OK(kiln_options_create(&options));
  CHECK(strcmp(kiln_last_error_message(), "") == 0);
  kiln_options_free(options);
}

/* ---- tensors ------------------------------------------------------------- */

typedef struct {
  int calls;
  void* last_data;
} DeleterRecord;

static void record_and_free(void* data, void* context) {
  DeleterRecord* record = (DeleterRecord*)context;
  record->calls++;
  record->last_data = data;
  free(data);
}

static void record_only(void* data, void* context) {
  DeleterRecord* record = (DeleterRecord*)context;
  record->calls++;
  record->last_data = data;
}

static void test_tensor_borrowed(void) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  int64_t sizes[2] = {2, 3};
  kiln_tensor_t* t = NULL;
  kiln_dtype_t dtype = -1;
  size_t dim = 0, nbytes = 0;
  const int64_t* got_sizes = NULL;
  const int64_t* got_strides = NULL;
  int64_t offset = -1, numel = 0;
  void* data = NULL;
  kiln_device_type_t device_type = -1;
  int32_t device_index = -1;

  CHECK_OK(kiln_tensor_create_from_data(buffer, KILN_DTYPE_FLOAT32, sizes, NULL, 2, KILN_DEVICE_CPU, 0, NULL,
                                        NULL, &t));
  CHECK(t != NULL);
  CHECK_OK(kiln_tensor_dtype(t, &dtype));
  CHECK(dtype == KILN_DTYPE_FLOAT32);
  CHECK_OK(kiln_tensor_dim(t, &dim));
  CHECK(dim == 2);
  CHECK_OK(kiln_tensor_sizes(t, &got_sizes));
  CHECK(got_sizes != NULL && got_sizes[0] == 2 && got_sizes[1] == 3);
  CHECK_OK(kiln_tensor_strides(t, &got_strides));
  CHECK(got_strides != NULL && got_strides[0] == 3 && got_strides[1] == 1);
  CHECK_OK(kiln_tensor_storage_offset(t, &offset));
  CHECK(offset == 0);
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK(data == (void*)buffer);
  CHECK_OK(kiln_tensor_device(t, &device_type, &device_index));
  CHECK(device_type == KILN_DEVICE_CPU && device_index == 0);
  CHECK_OK(kiln_tensor_device(t, NULL, NULL));
  CHECK_OK(kiln_tensor_numel(t, &numel));
  CHECK(numel == 6);
  CHECK_OK(kiln_tensor_nbytes(t, &nbytes));
  CHECK(nbytes == 6 * sizeof(float));
  kiln_tensor_free(t);
  CHECK(buffer[5] == 5.0f); /* borrowed memory untouched */

  /* A scalar: ndim 0 with NULL sizes. */
  t = NULL;
  CHECK_OK(kiln_tensor_create_from_data(buffer, KILN_DTYPE_FLOAT32, NULL, NULL, 0, KILN_DEVICE_CPU, 0, NULL, NULL,
                                        &t));
  CHECK_OK(kiln_tensor_dim(t, &dim));
  CHECK(dim == 0);
  CHECK_OK(kiln_tensor_numel(t, &numel));
  CHECK(numel == 1);
  kiln_tensor_free(t);

  /* A transposed view: strides are kept as given. */
  {
    int64_t tsizes[2] = {3, 2};
    int64_t tstrides[2] = {1, 3};
    t = NULL;
    CHECK_OK(kiln_tensor_create_from_data(buffer, KILN_DTYPE_FLOAT32, tsizes, tstrides, 2, KILN_DEVICE_CPU, 0,
                                          NULL, NULL, &t));
    CHECK_OK(kiln_tensor_strides(t, &got_strides));
    CHECK(got_strides[0] == 1 && got_strides[1] == 3);
    kiln_tensor_free(t);
  }
}

static void test_tensor_owned_and_errors(void) {
  int64_t sizes[1] = {4};
  int64_t bad_strides[1] = {-1};
  DeleterRecord record = {0, NULL};
  kiln_tensor_t* t = NULL;
  float* owned = (float*)malloc(4 * sizeof(float));
  float local[4] = {0};

  CHECK_OK(kiln_tensor_create_from_data(owned, KILN_DTYPE_FLOAT32, sizes, NULL, 1, KILN_DEVICE_CPU, 0,
                                        record_and_free, &record, &t));
  CHECK(record.calls == 0);
  kiln_tensor_free(t);
  CHECK(record.calls == 1);
  CHECK(record.last_data == (void*)owned);

  /* Failures: ownership does not pass, the deleter is never called. */
  record.calls = 0;
  t = NULL;
  CHECK_STATUS(kiln_tensor_create_from_data(local, 8, sizes, NULL, 1, KILN_DEVICE_CPU, 0, record_only, &record, &t),
               KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "dtype"));
  CHECK_STATUS(kiln_tensor_create_from_data(local, KILN_DTYPE_FLOAT32, sizes, bad_strides, 1, KILN_DEVICE_CPU, 0,
                                            record_only, &record, &t),
               KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "negative"));
  CHECK_STATUS(kiln_tensor_create_from_data(local, KILN_DTYPE_FLOAT32, NULL, NULL, 1, KILN_DEVICE_CPU, 0,
                                            record_only, &record, &t),
               KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "sizes"));
  CHECK_STATUS(kiln_tensor_create_from_data(NULL, KILN_DTYPE_FLOAT32, sizes, NULL, 1, KILN_DEVICE_CPU, 0,
                                            record_only, &record, &t),
               KILN_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_tensor_create_from_data(local, KILN_DTYPE_FLOAT32, sizes, NULL, 1, 7, 0, record_only, &record,
                                            &t),
               KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "device"));
  CHECK(record.calls == 0);
  CHECK(t == NULL);
}

static void test_tensor_copy_and_empty(void) {
  /* Source: a 2x3 row-major int32 buffer viewed transposed as 3x2. */
  int32_t source[6] = {10, 11, 12, 20, 21, 22};
  int64_t sizes[2] = {3, 2};
  int64_t strides[2] = {1, 3};
  kiln_tensor_t* copy = NULL;
  const int64_t* got_strides = NULL;
  int32_t* data = NULL;
  int64_t i, j;

  CHECK_OK(kiln_tensor_create_copy(source, KILN_DTYPE_INT32, sizes, strides, 2, &copy));
  CHECK_OK(kiln_tensor_strides(copy, &got_strides));
  CHECK(got_strides[0] == 2 && got_strides[1] == 1);
  CHECK_OK(kiln_tensor_data(copy, (void**)&data));
  CHECK(data != source);
  for (i = 0; i < 3; ++i)
    for (j = 0; j < 2; ++j) CHECK(data[i * 2 + j] == source[i * 1 + j * 3]);
  source[0] = -1; /* the copy is independent */
  CHECK(data[0] == 10);
  kiln_tensor_free(copy);

  {
    int64_t esizes[2] = {4, 5};
    kiln_tensor_t* empty = NULL;
    size_t nbytes = 0;
    int64_t* values = NULL;
    CHECK_OK(kiln_tensor_create_empty(KILN_DTYPE_INT64, esizes, 2, KILN_DEVICE_CPU, 0, &empty));
    CHECK_OK(kiln_tensor_nbytes(empty, &nbytes));
    CHECK(nbytes == 20 * sizeof(int64_t));
    CHECK_OK(kiln_tensor_strides(empty, &got_strides));
    CHECK(got_strides[0] == 5 && got_strides[1] == 1);
    CHECK_OK(kiln_tensor_data(empty, (void**)&values));
    CHECK(values != NULL);
    for (i = 0; i < 20; ++i) values[i] = i * 3; /* writable, whole extent */
    CHECK(values[19] == 57);
    kiln_tensor_free(empty);
  }
}

/* ---- DLPack ------------------------------------------------------------------ */

typedef struct {
  DLManagedTensor managed;
  int64_t shape[4];
  int deleter_calls;
} HandMadeTensor;

static void hand_made_deleter(DLManagedTensor* self) {
  HandMadeTensor* owner = (HandMadeTensor*)self->manager_ctx;
  owner->deleter_calls++;
}

static void init_hand_made(HandMadeTensor* h, void* data, uint8_t code, uint8_t bits, int ndim, const int64_t* shape,
                           uint64_t byte_offset) {
  int i;
  memset(h, 0, sizeof(*h));
  for (i = 0; i < ndim; ++i) h->shape[i] = shape[i];
  h->managed.dl_tensor.data = data;
  h->managed.dl_tensor.device.device_type = kDLCPU;
  h->managed.dl_tensor.device.device_id = 0;
  h->managed.dl_tensor.ndim = ndim;
  h->managed.dl_tensor.dtype.code = code;
  h->managed.dl_tensor.dtype.bits = bits;
  h->managed.dl_tensor.dtype.lanes = 1;
  h->managed.dl_tensor.shape = h->shape;
  h->managed.dl_tensor.strides = NULL;
  h->managed.dl_tensor.byte_offset = byte_offset;
  h->managed.manager_ctx = h;
  h->managed.deleter = hand_made_deleter;
}

static void test_dlpack_import(void) {
  float values[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 2};
  HandMadeTensor h;
  kiln_tensor_t* t = NULL;
  void* data = NULL;
  const int64_t* strides = NULL;
  kiln_dtype_t dtype = -1;

  /* byte_offset skips two floats; strides NULL means contiguous. */
  init_hand_made(&h, values, kDLFloat, 32, 2, shape, 2 * sizeof(float));
  CHECK_OK(kiln_tensor_from_dlpack(&h.managed, &t));
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK(data == (void*)(values + 2));
  CHECK(((float*)data)[3] == 5.0f);
  CHECK_OK(kiln_tensor_strides(t, &strides));
  CHECK(strides[0] == 2 && strides[1] == 1);
  CHECK_OK(kiln_tensor_dtype(t, &dtype));
  CHECK(dtype == KILN_DTYPE_FLOAT32);
  CHECK(h.deleter_calls == 0);
  kiln_tensor_free(t);
  CHECK(h.deleter_calls == 1);

  /* bool (DLPack code 6) and bfloat16. */
  {
    uint8_t flags[2] = {1, 0};
    uint16_t halves[2] = {0x3f80, 0x4000};
    int64_t n2[1] = {2};
    init_hand_made(&h, flags, 6, 8, 1, n2, 0);
    CHECK_OK(kiln_tensor_from_dlpack(&h.managed, &t));
    CHECK_OK(kiln_tensor_dtype(t, &dtype));
    CHECK(dtype == KILN_DTYPE_BOOL);
    kiln_tensor_free(t);
    init_hand_made(&h, halves, kDLBfloat, 16, 1, n2, 0);
    CHECK_OK(kiln_tensor_from_dlpack(&h.managed, &t));
    CHECK_OK(kiln_tensor_dtype(t, &dtype));
    CHECK(dtype == KILN_DTYPE_BFLOAT16);
    kiln_tensor_free(t);
    CHECK(h.deleter_calls == 1);
  }

  /* Explicit strides. */
  {
    int64_t tshape[2] = {3, 2};
    int64_t tstrides[2] = {1, 3};
    init_hand_made(&h, values, kDLFloat, 32, 2, tshape, 0);
    h.managed.dl_tensor.strides = tstrides;
    CHECK_OK(kiln_tensor_from_dlpack(&h.managed, &t));
    CHECK_OK(kiln_tensor_strides(t, &strides));
    CHECK(strides[0] == 1 && strides[1] == 3);
    kiln_tensor_free(t);
  }

  /* kDLCUDA maps to KILN_DEVICE_CUDA and back, keeping the device index. The
   * memory is never touched, so a host address stands in for device memory. */
  {
    void* exported = NULL;
    DLManagedTensor* out_managed;
    kiln_device_type_t device_type = -1;
    int32_t device_index = -1;
    init_hand_made(&h, values, kDLFloat, 32, 2, shape, 0);
    h.managed.dl_tensor.device.device_type = kDLCUDA;
    h.managed.dl_tensor.device.device_id = 1;
    CHECK_OK(kiln_tensor_from_dlpack(&h.managed, &t));
    CHECK_OK(kiln_tensor_device(t, &device_type, &device_index));
    CHECK(device_type == KILN_DEVICE_CUDA && device_index == 1);
    CHECK_OK(kiln_tensor_to_dlpack(t, &exported));
    out_managed = (DLManagedTensor*)exported;
    CHECK(out_managed->dl_tensor.device.device_type == kDLCUDA);
    CHECK(out_managed->dl_tensor.device.device_id == 1);
    kiln_tensor_free(t);
    CHECK(h.deleter_calls == 0); /* the export still holds the storage */
    out_managed->deleter(out_managed);
    CHECK(h.deleter_calls == 1);
  }

  /* Rejected tensors stay owned by the caller: no deleter call. */
  init_hand_made(&h, values, kDLComplex, 32, 2, shape, 0); /* complex32: not a Kiln dtype */
  t = NULL;
  CHECK_STATUS(kiln_tensor_from_dlpack(&h.managed, &t), KILN_ERROR_NOT_SUPPORTED);
  CHECK(contains(kiln_last_error_message(), "dtype"));
  init_hand_made(&h, values, kDLFloat, 32, 2, shape, 0);
  h.managed.dl_tensor.dtype.lanes = 4;
  CHECK_STATUS(kiln_tensor_from_dlpack(&h.managed, &t), KILN_ERROR_NOT_SUPPORTED);
  init_hand_made(&h, values, kDLFloat, 32, 2, shape, 0);
  h.managed.dl_tensor.device.device_type = kDLOpenCL;
  CHECK_STATUS(kiln_tensor_from_dlpack(&h.managed, &t), KILN_ERROR_NOT_SUPPORTED);
  CHECK(contains(kiln_last_error_message(), "device"));
  init_hand_made(&h, values, kDLFloat, 32, 2, shape, 0);
  h.managed.dl_tensor.shape = NULL;
  CHECK_STATUS(kiln_tensor_from_dlpack(&h.managed, &t), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(h.deleter_calls == 0);
  CHECK(t == NULL);
}

static void test_dlpack_export_and_round_trip(void) {
  double* owned = (double*)malloc(6 * sizeof(double));
  int64_t sizes[2] = {2, 3};
  DeleterRecord record = {0, NULL};
  kiln_tensor_t* t = NULL;
  kiln_tensor_t* back = NULL;
  void* exported = NULL;
  DLManagedTensor* managed;
  void* data = NULL;
  int i;

  for (i = 0; i < 6; ++i) owned[i] = i * 0.5;
  CHECK_OK(kiln_tensor_create_from_data(owned, KILN_DTYPE_FLOAT64, sizes, NULL, 2, KILN_DEVICE_CPU, 0,
                                        record_and_free, &record, &t));
  CHECK_OK(kiln_tensor_to_dlpack(t, &exported));
  managed = (DLManagedTensor*)exported;
  CHECK(managed != NULL && managed->deleter != NULL);
  kiln_tensor_free(t); /* the export keeps the storage alive */
  CHECK(record.calls == 0);
  CHECK(managed->dl_tensor.data == (void*)owned);
  CHECK(managed->dl_tensor.byte_offset == 0);
  CHECK(managed->dl_tensor.device.device_type == kDLCPU);
  CHECK(managed->dl_tensor.ndim == 2);
  CHECK(managed->dl_tensor.shape[0] == 2 && managed->dl_tensor.shape[1] == 3);
  CHECK(managed->dl_tensor.strides != NULL && managed->dl_tensor.strides[0] == 3 &&
        managed->dl_tensor.strides[1] == 1);
  CHECK(managed->dl_tensor.dtype.code == kDLFloat && managed->dl_tensor.dtype.bits == 64 &&
        managed->dl_tensor.dtype.lanes == 1);
  CHECK(((double*)managed->dl_tensor.data)[5] == 2.5);

  /* Round trip: the re-imported tensor aliases the same memory, and the
   * original deleter runs once, after the last holder is gone. */
  CHECK_OK(kiln_tensor_from_dlpack(exported, &back));
  CHECK_OK(kiln_tensor_data(back, &data));
  CHECK(data == (void*)owned);
  CHECK(record.calls == 0);
  kiln_tensor_free(back);
  CHECK(record.calls == 1);

  /* Exports of bool and bfloat16 use DLPack codes 6 and kDLBfloat. */
  {
    int64_t n[1] = {3};
    kiln_tensor_t* b = NULL;
    CHECK_OK(kiln_tensor_create_empty(KILN_DTYPE_BOOL, n, 1, KILN_DEVICE_CPU, 0, &b));
    CHECK_OK(kiln_tensor_to_dlpack(b, &exported));
    managed = (DLManagedTensor*)exported;
    CHECK(managed->dl_tensor.dtype.code == 6 && managed->dl_tensor.dtype.bits == 8);
    managed->deleter(managed);
    kiln_tensor_free(b);
    CHECK_OK(kiln_tensor_create_empty(KILN_DTYPE_BFLOAT16, n, 1, KILN_DEVICE_CPU, 0, &b));
    CHECK_OK(kiln_tensor_to_dlpack(b, &exported));
    managed = (DLManagedTensor*)exported;
    CHECK(managed->dl_tensor.dtype.code == kDLBfloat && managed->dl_tensor.dtype.bits == 16);
    kiln_tensor_free(b);
    managed->deleter(managed); /* export outlives the handle */
  }
}

/* DLPack 1.x versioned layout, as published (the 0.6 header predates it). */
typedef struct VersionedTensor {
  struct {
    uint32_t major;
    uint32_t minor;
  } version;
  void* manager_ctx;
  void (*deleter)(struct VersionedTensor* self);
  uint64_t flags;
  DLTensor dl_tensor;
} VersionedTensor;

static void test_dlpack_versioned_wrapper(void) {
  float* owned = (float*)malloc(4 * sizeof(float));
  int64_t sizes[2] = {2, 2};
  DeleterRecord record = {0, NULL};
  kiln_tensor_t* t = NULL;
  void* exported = NULL;
  void* wrapped = NULL;
  VersionedTensor* v;

  CHECK_STATUS(kiln_dlpack_to_versioned(NULL, &wrapped), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_OK(kiln_tensor_create_from_data(owned, KILN_DTYPE_FLOAT32, sizes, NULL, 2, KILN_DEVICE_CPU, 0,
                                        record_and_free, &record, &t));
  CHECK_OK(kiln_tensor_to_dlpack(t, &exported));
  kiln_tensor_free(t);
  CHECK_STATUS(kiln_dlpack_to_versioned(exported, NULL), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_OK(kiln_dlpack_to_versioned(exported, &wrapped));
  v = (VersionedTensor*)wrapped;
  CHECK(v->version.major == 1 && v->version.minor == 0);
  CHECK(v->flags == 0); /* writable, not a copy */
  CHECK(v->manager_ctx == exported);
  CHECK(v->dl_tensor.data == (void*)owned && v->dl_tensor.ndim == 2 && v->dl_tensor.shape[1] == 2 &&
        v->dl_tensor.strides[0] == 2 && v->dl_tensor.dtype.code == kDLFloat && v->dl_tensor.dtype.bits == 32);
  CHECK(record.calls == 0);
  v->deleter(v); /* runs the wrapped export's deleter: the last storage reference */
  CHECK(record.calls == 1);
}

/* ---- options ------------------------------------------------------------ */

static void test_options(void) {
  kiln_options_t* options = NULL;
  CHECK_OK(kiln_options_create(&options));
  CHECK_OK(kiln_options_set_bool(options, "aoti", "flag", true));
  CHECK_OK(kiln_options_set_int(options, "aoti", "num_threads", 2));
  CHECK_OK(kiln_options_set_string(options, "aoti", "name", "x"));
  CHECK_OK(kiln_options_set_int(options, "aoti", "flag", 5)); /* replaces the bool */
  kiln_options_free(options);
}

/* ---- module errors ----------------------------------------------------------- */

static void test_module_errors(void) {
  const char* missing = "/nonexistent-kiln-dir/missing.kiln";
  kiln_module_t* module = NULL;
  kiln_status_t status;
  size_t count = 0;
  kiln_tensor_t** outputs = NULL;
  size_t n_outputs = 0;

  CHECK_OK(kiln_module_create(missing, NULL, 0, &module));
  status = kiln_module_load(module, NULL);
  CHECK(status == KILN_ERROR_NOT_FOUND || status == KILN_ERROR_IO_ERROR);
  CHECK(contains(kiln_last_error_message(), missing));
  /* Queries load implicitly and fail the same way. */
  status = kiln_module_method_count(module, &count);
  CHECK(status == KILN_ERROR_NOT_FOUND || status == KILN_ERROR_IO_ERROR);
  status = kiln_module_execute(module, "forward", NULL, 0, &outputs, &n_outputs);
  CHECK(status != KILN_OK);
  CHECK(outputs == NULL && n_outputs == 0);
  kiln_module_free(module);

  /* A corrupt file. */
  {
    /* Under $TMPDIR like every test file; removed below whatever the checks found. */
    const char* tmpdir = getenv("TMPDIR");
    char path[4096];
    int fd = -1;
    if (snprintf(path, sizeof(path), "%s/kiln_c_api_test_XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp") <
        (int)sizeof(path))
      fd = mkstemp(path);
    const char garbage[] = "this is not a kiln program file, just some bytes that are long enough..........";
    CHECK(fd >= 0);
    if (fd >= 0) {
      CHECK(write(fd, garbage, sizeof(garbage)) == (ssize_t)sizeof(garbage));
      close(fd);
      module = NULL;
      CHECK_OK(kiln_module_create(path, NULL, 0, &module));
      CHECK_STATUS(kiln_module_load(module, NULL), KILN_ERROR_INVALID_PROGRAM);
      CHECK(strlen(kiln_last_error_message()) > 0);
      kiln_module_free(module);
      unlink(path);
    }
  }
}

/* ---- runtimes and settings ------------------------------------------------------- */

static void test_runtime_and_settings(void) {
  kiln_runtime_t* runtime = NULL;
  kiln_runtime_t* other = NULL;
  kiln_runtime_t* shared = NULL;
  kiln_module_t* module = NULL;
  char text[64];
  size_t length = 0, i, found = 0;
  const size_t count = kiln_setting_count();
  CHECK(count > 0);
  for (i = 0; i < count; ++i) {
    const char *name = NULL, *type = NULL, *fallback = NULL, *scope = NULL, *doc = NULL;
    CHECK_OK(kiln_setting_describe(i, &name, &type, &fallback, &scope, &doc));
    CHECK(name && type && fallback && scope && doc && strlen(doc) > 0);
    CHECK(strcmp(scope, "process") == 0 || strcmp(scope, "runtime") == 0);
    if (name && strcmp(name, "require_signature") == 0) {
      ++found;
      CHECK(strcmp(type, "bool") == 0 && strcmp(fallback, "false") == 0 && strcmp(scope, "runtime") == 0);
    }
  }
  CHECK(found == 1);
  CHECK_STATUS(kiln_setting_describe(count, NULL, NULL, NULL, NULL, NULL), KILN_ERROR_INVALID_ARGUMENT);

  CHECK_OK(kiln_runtime_create(&runtime));
  CHECK_OK(kiln_runtime_create(&other));
  CHECK_OK(kiln_runtime_set_bool(runtime, "require_signature", true));
  CHECK_OK(kiln_runtime_get_setting(runtime, "require_signature", text, sizeof(text), &length));
  CHECK(strcmp(text, "true") == 0 && length == 4);
  CHECK_OK(kiln_runtime_get_setting(other, "require_signature", text, sizeof(text), &length));
  CHECK(strcmp(text, "false") == 0); /* runtime scope: the other runtime is untouched */
  CHECK_OK(kiln_runtime_set_string(runtime, "trusted_keys", "/keys/a.pub:/keys/b.pub"));
  CHECK_OK(kiln_runtime_get_setting(runtime, "trusted_keys", NULL, 0, &length));
  CHECK(length == strlen("/keys/a.pub:/keys/b.pub"));
  CHECK_OK(kiln_runtime_get_setting(runtime, "trusted_keys", text, 6, &length));
  CHECK(strcmp(text, "/keys") == 0); /* cut to fit, NUL-terminated */
  CHECK_OK(kiln_runtime_set_int(runtime, "cuda_upload_workers", 3));
  CHECK_OK(kiln_runtime_set_string(runtime, "cuda_upload_workers", "4")); /* text is parsed */
  CHECK_OK(kiln_runtime_get_setting(other, "cuda_upload_workers", text, sizeof(text), &length));
  CHECK(strcmp(text, "4") == 0); /* process scope: every runtime sees it */
  CHECK_OK(kiln_runtime_set_int(runtime, "cuda_upload_workers", 0));
  CHECK_STATUS(kiln_runtime_set_bool(runtime, "no_such_setting", true), KILN_ERROR_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error_message(), "no_such_setting"));
  CHECK_STATUS(kiln_runtime_set_int(runtime, "require_signature", 1), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_runtime_set_string(runtime, "require_signature", "perhaps"), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_runtime_get_setting(runtime, "no_such_setting", text, sizeof(text), &length),
               KILN_ERROR_NOT_FOUND);
  CHECK_STATUS(kiln_runtime_set_bool(NULL, "require_signature", true), KILN_ERROR_INVALID_ARGUMENT);

  /* A module keeps its runtime alive. */
  CHECK_OK(kiln_module_create_with_runtime(runtime, "missing.kiln", NULL, 0, &module));
  kiln_runtime_free(runtime);
  CHECK_STATUS(kiln_module_load(module, NULL), KILN_ERROR_NOT_FOUND);
  kiln_module_free(module);
  kiln_runtime_free(other);
  kiln_runtime_free(NULL);

  CHECK_OK(kiln_runtime_default(&shared));
  CHECK_OK(kiln_runtime_get_setting(shared, "log_level", text, sizeof(text), &length));
  CHECK(strcmp(text, "debug") == 0 || strcmp(text, "info") == 0 || strcmp(text, "warning") == 0 ||
        strcmp(text, "error") == 0 || strcmp(text, "off") == 0);
  kiln_runtime_free(shared);
}

static void test_module_from_buffer(void) {
  kiln_module_t* module = NULL;
  const char garbage[] = "not a program, and not a zip either: just bytes..........................";
  CHECK_STATUS(kiln_module_create_from_buffer(NULL, NULL, 10, &module), KILN_ERROR_INVALID_ARGUMENT);
  CHECK_OK(kiln_module_create_from_buffer(NULL, garbage, sizeof(garbage), &module));
  CHECK_STATUS(kiln_module_load(module, NULL), KILN_ERROR_INVALID_PROGRAM);
  kiln_module_free(module);
}

static void test_cuda_without_gpu_is_named(void) {
  void* stream = NULL;
  uint64_t in_use = 0;
  /* Runs on machines with and without a GPU: either an answer or NotSupported with a reason. */
  if (kiln_cuda_device_count() == 0) {
    CHECK_STATUS(kiln_cuda_current_stream(0, &stream), KILN_ERROR_NOT_SUPPORTED);
    CHECK(contains(kiln_last_error_message(), "CUDA"));
    CHECK_STATUS(kiln_cuda_memory_stats(0, &in_use, NULL, NULL, NULL), KILN_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(kiln_cuda_release_cached_memory(0), KILN_ERROR_NOT_SUPPORTED);
  } else {
    CHECK_OK(kiln_cuda_current_stream(0, &stream));
    CHECK_OK(kiln_cuda_memory_stats(0, &in_use, NULL, NULL, NULL));
  }
  CHECK_STATUS(kiln_cuda_current_stream(0, NULL), KILN_ERROR_INVALID_ARGUMENT);
}

/* ---- real program (optional) ------------------------------------------------------ */

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  unsigned char* bytes;
  long length;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  length = ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = (unsigned char*)malloc(length > 0 ? (size_t)length : 1);
  if (bytes && length > 0 && fread(bytes, 1, (size_t)length, f) != (size_t)length) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  *size = (size_t)length;
  return bytes;
}

static double element_as_double(const void* data, kiln_dtype_t dtype, size_t i) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32: return ((const float*)data)[i];
    case KILN_DTYPE_FLOAT64: return ((const double*)data)[i];
    case KILN_DTYPE_INT32: return ((const int32_t*)data)[i];
    case KILN_DTYPE_INT64: return (double)((const int64_t*)data)[i];
    case KILN_DTYPE_UINT8:
    case KILN_DTYPE_BOOL: return ((const uint8_t*)data)[i];
    default: return NAN;
  }
}

/* The program at `path` loaded from a copy of its bytes gives the same outputs
 * (programs with an external data file are not loadable from memory). */
static void test_same_program_from_memory(const char* path, const char* method, kiln_tensor_t* const* inputs,
                                          size_t n_in, kiln_tensor_t* const* outputs, size_t n_outputs) {
  char data_path[4096];
  size_t size = 0, n_again = 0, i;
  unsigned char* bytes;
  kiln_module_t* module = NULL;
  kiln_tensor_t** again = NULL;
  if (snprintf(data_path, sizeof(data_path), "%s.data", path) >= (int)sizeof(data_path) || access(data_path, F_OK) == 0)
    return;
  bytes = read_file(path, &size);
  CHECK(bytes != NULL);
  if (!bytes) return;
  CHECK_OK(kiln_module_create_from_buffer(NULL, bytes, size, &module));
  memset(bytes, 0xFF, size); /* copied at creation: later changes to the buffer do not matter */
  free(bytes);
  CHECK_OK(kiln_module_execute(module, method, inputs, n_in, &again, &n_again));
  CHECK(n_again == n_outputs);
  for (i = 0; i < n_again && i < n_outputs; ++i) {
    size_t want = 0, got = 0, k, elem;
    void *a = NULL, *b = NULL;
    kiln_dtype_t dtype = 0;
    int mismatches = 0;
    CHECK_OK(kiln_tensor_nbytes(outputs[i], &want));
    CHECK_OK(kiln_tensor_nbytes(again[i], &got));
    CHECK_OK(kiln_tensor_data(outputs[i], &a));
    CHECK_OK(kiln_tensor_data(again[i], &b));
    CHECK_OK(kiln_tensor_dtype(outputs[i], &dtype));
    CHECK(want == got);
    elem = kiln_dtype_element_size(dtype);
    for (k = 0; elem > 0 && want == got && k < want / elem; ++k) {
      const double x = element_as_double(a, dtype, k), y = element_as_double(b, dtype, k);
      if (fabs(x - y) > 1e-5 * fabs(x) + 1e-6) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
  printf("real program: the same outputs from a copy in memory\n");
  kiln_tensor_array_free(again, n_again);
  kiln_module_free(module);
}

/* Returns 1 if the real-program part ran. */
static int test_real_program(void) {
  const char* path = getenv("KILN_TEST_PROGRAM");
  const char* inputs_path = getenv("KILN_TEST_INPUTS");
  const char* outputs_path = getenv("KILN_TEST_OUTPUTS");
  kiln_module_t* module = NULL;
  kiln_method_meta_t* meta = NULL;
  size_t count = 0, n_in = 0, n_out = 0, i, d;
  const char* method = NULL;
  const char* name = NULL;
  kiln_tensor_t* inputs[16] = {0};
  kiln_tensor_t** outputs = NULL;
  size_t n_outputs = 0;
  unsigned char* input_bytes = NULL;
  unsigned char* expected_bytes = NULL;
  size_t input_size = 0, expected_size = 0, cursor = 0;
  bool loaded = false;

  if (!path || !*path) return 0;
  CHECK_OK(kiln_module_create(path, NULL, 0, &module));
  CHECK_OK(kiln_module_load(module, NULL));
  CHECK_OK(kiln_module_method_count(module, &count));
  CHECK(count > 0);
  for (i = 0; i < count; ++i) {
    CHECK_OK(kiln_module_method_name(module, i, &name));
    if (i == 0 || (name && strcmp(name, "forward") == 0)) method = name;
  }
  CHECK_STATUS(kiln_module_method_name(module, count, &name), KILN_ERROR_INVALID_ARGUMENT);
  if (!method) {
    kiln_module_free(module);
    return 1;
  }
  CHECK_STATUS(kiln_module_method_meta(module, "no_such_method", &meta), KILN_ERROR_NOT_FOUND);
  CHECK(contains(kiln_last_error_message(), "no_such_method"));
  CHECK_OK(kiln_module_method_meta(module, method, &meta));
  CHECK_OK(kiln_method_meta_input_count(meta, &n_in));
  CHECK_OK(kiln_method_meta_output_count(meta, &n_out));
  CHECK(n_in <= 16);
  if (inputs_path) input_bytes = read_file(inputs_path, &input_size);
  if (outputs_path) expected_bytes = read_file(outputs_path, &expected_size);
  printf("real program: %s method '%s' (%zu inputs, %zu outputs)%s\n", path, method, n_in, n_out,
         expected_bytes ? ", comparing with expected outputs" : ", shapes only (no expected outputs given)");

  for (i = 0; i < n_in && i < 16; ++i) {
    const kiln_tensor_spec_t* spec = NULL;
    kiln_dtype_t dtype = 0;
    size_t rank = 0, nbytes = 0;
    int64_t sizes[16];
    void* data = NULL;
    CHECK_OK(kiln_method_meta_input(meta, i, &spec));
    CHECK_OK(kiln_tensor_spec_dtype(spec, &dtype));
    CHECK_OK(kiln_tensor_spec_dim(spec, &rank));
    for (d = 0; d < rank && d < 16; ++d) CHECK_OK(kiln_tensor_spec_dim_size(spec, d, &sizes[d]));
    CHECK_OK(kiln_tensor_create_empty(dtype, sizes, rank, KILN_DEVICE_CPU, 0, &inputs[i]));
    CHECK_OK(kiln_tensor_nbytes(inputs[i], &nbytes));
    CHECK_OK(kiln_tensor_data(inputs[i], &data));
    if (input_bytes && cursor + nbytes <= input_size) {
      memcpy(data, input_bytes + cursor, nbytes);
      cursor += nbytes;
    } else {
      memset(data, 0, nbytes);
    }
  }
  if (input_bytes) CHECK(cursor == input_size);

  CHECK_OK(kiln_module_execute(module, method, inputs, n_in, &outputs, &n_outputs));
  CHECK(n_outputs == n_out);
  CHECK_OK(kiln_module_is_method_loaded(module, method, &loaded));
  CHECK(loaded);
  cursor = 0;
  for (i = 0; i < n_outputs && i < n_out; ++i) {
    const kiln_tensor_spec_t* spec = NULL;
    kiln_dtype_t spec_dtype = 0, dtype = 0;
    size_t rank = 0, dim = 0, nbytes = 0, k;
    const int64_t* sizes = NULL;
    void* data = NULL;
    CHECK_OK(kiln_method_meta_output(meta, i, &spec));
    CHECK_OK(kiln_tensor_spec_dtype(spec, &spec_dtype));
    CHECK_OK(kiln_tensor_spec_dim(spec, &rank));
    CHECK_OK(kiln_tensor_dtype(outputs[i], &dtype));
    CHECK(dtype == spec_dtype);
    CHECK_OK(kiln_tensor_dim(outputs[i], &dim));
    CHECK(dim == rank);
    CHECK_OK(kiln_tensor_sizes(outputs[i], &sizes));
    for (d = 0; d < rank && d < dim; ++d) {
      bool dynamic = true;
      int64_t expected_size = 0;
      CHECK_OK(kiln_tensor_spec_dim_is_dynamic(spec, d, &dynamic));
      CHECK_OK(kiln_tensor_spec_dim_size(spec, d, &expected_size));
      if (!dynamic) CHECK(sizes[d] == expected_size);
    }
    CHECK_OK(kiln_tensor_nbytes(outputs[i], &nbytes));
    CHECK_OK(kiln_tensor_data(outputs[i], &data));
    if (expected_bytes && cursor + nbytes <= expected_size) {
      /* Outputs of the parity models are contiguous; compare element-wise. */
      size_t elem = kiln_dtype_element_size(dtype);
      int mismatches = 0;
      for (k = 0; elem > 0 && k < nbytes / elem; ++k) {
        double got = element_as_double(data, dtype, k);
        double want = element_as_double(expected_bytes + cursor, dtype, k);
        if (fabs(got - want) > 1e-5 * fabs(want) + 1e-6) ++mismatches;
      }
      CHECK(mismatches == 0);
      cursor += nbytes;
    }
  }
  if (expected_bytes) CHECK(cursor == expected_size);
  test_same_program_from_memory(path, method, inputs, n_in, outputs, n_outputs);
  kiln_tensor_array_free(outputs, n_outputs);
  for (i = 0; i < n_in && i < 16; ++i) kiln_tensor_free(inputs[i]);

  CHECK_OK(kiln_module_unload_method(module, method));
  CHECK_STATUS(kiln_module_unload_method(module, method), KILN_ERROR_NOT_FOUND);
  kiln_method_meta_free(meta);
  kiln_module_free(module);
  free(input_bytes);
  free(expected_bytes);
  return 1;
}

int main(void) {
  int ran_real;
  test_library_info();
  test_null_arguments();
  test_tensor_borrowed();
  test_tensor_owned_and_errors();
  test_tensor_copy_and_empty();
  test_dlpack_import();
  test_dlpack_export_and_round_trip();
  test_dlpack_versioned_wrapper();
  test_options();
  test_module_errors();
  test_runtime_and_settings();
  test_module_from_buffer();
  test_cuda_without_gpu_is_named();
  printf("ran: library_info null_arguments tensor_borrowed tensor_owned_and_errors tensor_copy_and_empty "
         "dlpack_import dlpack_export_and_round_trip dlpack_versioned_wrapper options module_errors "
         "runtime_and_settings module_from_buffer cuda_without_gpu_is_named\n");
  ran_real = test_real_program();
  if (ran_real)
    printf("ran: real_program\n");
  else
    printf("skipped: real_program (KILN_TEST_PROGRAM is not set)\n");
  printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}

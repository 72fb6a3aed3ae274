// kiln_options_t: the C builder for a LoadBackendOptionsMap.
#include "capi/capi_internal.h"

namespace {

using kiln::Error;

// LoadBackendOptionsMap stores whole BackendOptions per backend, so a single
// key is set by copying the backend's options, changing one key and storing
// the result back. Option sets are tiny; the copy costs nothing that matters.
template <typename Value>
Error set_option(kiln_options_t* options, const char* backend, const char* key, Value value) {
  const kiln::BackendOptions* existing = options->map.options_for(backend);
  kiln::BackendOptions updated = existing ? *existing : kiln::BackendOptions{};
  updated.set(key, value);
  options->map.set_options(backend, std::move(updated));
  return Error::Ok;
}

}  // namespace

extern "C" {

kiln_status_t kiln_options_create(kiln_options_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    *out = new kiln_options_t{};
    return Error::Ok;
  });
}

kiln_status_t kiln_options_set_bool(kiln_options_t* options, const char* backend, const char* key,
                                    bool value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(options);
    KILN_CAPI_REQUIRE(backend);
    KILN_CAPI_REQUIRE(key);
    return set_option(options, backend, key, value);
  });
}

kiln_status_t kiln_options_set_int(kiln_options_t* options, const char* backend, const char* key,
                                   int64_t value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(options);
    KILN_CAPI_REQUIRE(backend);
    KILN_CAPI_REQUIRE(key);
    return set_option(options, backend, key, value);
  });
}

kiln_status_t kiln_options_set_string(kiln_options_t* options, const char* backend, const char* key,
                                      const char* value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(options);
    KILN_CAPI_REQUIRE(backend);
    KILN_CAPI_REQUIRE(key);
    KILN_CAPI_REQUIRE(value);
    return set_option(options, backend, key, value);
  });
}

void kiln_options_free(kiln_options_t* options) noexcept { delete options; }

}  // extern "C"

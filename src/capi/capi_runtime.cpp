// kiln_runtime_t and the settings table: the C face of kiln::Runtime.
#include <algorithm>
#include <cstring>
#include <string>

#include "capi/capi_internal.h"
#include "core/settings.h"

namespace {

using kiln::Error;

Error set_setting(const char* fn, kiln_runtime_t* runtime, const char* name, const kiln::SettingValue& value) {
  KILN_CAPI_REQUIRE(runtime);
  KILN_CAPI_REQUIRE(name);
  return runtime->runtime->set(name, value);
}

}  // namespace

extern "C" {

kiln_status_t kiln_runtime_create(kiln_runtime_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<kiln::Runtime> runtime, kiln::Runtime::create());
    *out = new kiln_runtime_t{std::move(runtime)};
    return Error::Ok;
  });
}

kiln_status_t kiln_runtime_default(kiln_runtime_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    *out = new kiln_runtime_t{kiln::Runtime::default_runtime()};
    return Error::Ok;
  });
}

kiln_status_t kiln_runtime_set_bool(kiln_runtime_t* runtime, const char* name, bool value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) { return set_setting(fn, runtime, name, value); });
}

kiln_status_t kiln_runtime_set_int(kiln_runtime_t* runtime, const char* name, int64_t value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) { return set_setting(fn, runtime, name, value); });
}

kiln_status_t kiln_runtime_set_string(kiln_runtime_t* runtime, const char* name, const char* value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(value);
    return set_setting(fn, runtime, name, std::string(value));
  });
}

kiln_status_t kiln_runtime_get_setting(const kiln_runtime_t* runtime, const char* name, char* buffer,
                                       size_t capacity, size_t* length) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(runtime);
    KILN_CAPI_REQUIRE(name);
    KILN_CAPI_REQUIRE(length);
    if (capacity > 0) KILN_CAPI_REQUIRE(buffer);
    KILN_ASSIGN_OR_RETURN(kiln::SettingValue value, runtime->runtime->get(name));
    const std::string text = kiln::format_setting(*kiln::find_setting(name), value);
    *length = text.size();
    if (capacity > 0) {
      const size_t n = std::min(text.size(), capacity - 1);
      std::memcpy(buffer, text.data(), n);
      buffer[n] = '\0';
    }
    return Error::Ok;
  });
}

void kiln_runtime_free(kiln_runtime_t* runtime) noexcept { delete runtime; }

size_t kiln_setting_count(void) noexcept { return kiln::kSettingCount; }

kiln_status_t kiln_setting_describe(size_t index, const char** name, const char** type, const char** default_value,
                                    const char** scope, const char** doc) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    if (index >= kiln::kSettingCount)
      return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": index " + std::to_string(index) +
                                                         " out of range (count " +
                                                         std::to_string(kiln::kSettingCount) + ")");
    // The table's strings are whole string literals, so each view's data is
    // NUL-terminated static storage.
    const kiln::SettingInfo& info = kiln::setting_table()[index];
    static constexpr const char* kTypes[] = {"bool", "int", "string"};
    if (name) *name = info.name.data();
    if (type)
      *type = info.type == kiln::SettingType::Choice ? info.choices.data() : kTypes[static_cast<int>(info.type)];
    if (default_value) *default_value = info.fallback.data();
    if (scope) *scope = info.scope == kiln::SettingScope::Process ? "process" : "runtime";
    if (doc) *doc = info.doc.data();
    return Error::Ok;
  });
}

}  // extern "C"

// What this build of Kiln has, in one place: the devices, backends and
// program importers every Runtime gets. The only file that knows every layer;
// nothing below it reaches up here (each registry is filled from here).
#include "aoti/aoti_backend.h"
#include "aoti/pt2_import.h"
#include "core/cpu_device.h"
#include "devices/cuda/loader/cuda_plugin_loader.h"
#include "program/zip_archive.h"
#include "runtime/runtime_state.h"

namespace kiln {
namespace {

const ProgramImporter kPt2Importer{
    "PyTorch .pt2 package",
    [](std::span<const uint8_t> head) { return ZipArchive::has_zip_magic(head); },
    [](const std::string& path) { return aoti::load_pt2_program(path); },
};

std::unique_ptr<Runtime::State> builtin_state() {
  auto state = std::make_unique<Runtime::State>();
  state->add_device(DeviceType::CPU, [](std::string*) -> DeviceInterface* { return &CpuDevice::instance(); });
  // The CUDA device lives in libkiln_cuda.so, so that libkiln itself needs no
  // CUDA library: loaded when a module first runs on CUDA.
  state->add_device(DeviceType::CUDA, [](std::string* unavailable) { return cuda_plugin::load(unavailable); });
  state->add_backend(&aoti::AotiBackend::instance());
  state->add_importer(&kPt2Importer);
  return state;
}

}  // namespace

Result<std::shared_ptr<Runtime>> Runtime::create(const SettingMap& settings) {
  auto runtime = std::make_shared<Runtime>(builtin_state());
  KILN_RETURN_IF_ERROR(runtime->state().check_environment());
  for (const auto& [name, value] : settings) KILN_RETURN_IF_ERROR(runtime->set(name, value));
  return runtime;
}

std::shared_ptr<Runtime> Runtime::default_runtime() {
  static const std::shared_ptr<Runtime> runtime = std::make_shared<Runtime>(builtin_state());
  return runtime;
}

}  // namespace kiln

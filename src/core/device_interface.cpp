// The defaults of DeviceInterface's optional members.
#include "core/device_interface.h"

#include <string>
#include <vector>

namespace kiln {

Error DeviceInterface::copy_strided(void*, const int64_t*, const void*, const int64_t*, const int64_t*, int64_t,
                                    size_t, int, StreamHandle) {
  return set_error(Error::NotSupported,
                   std::string("strided copies on ") + device_type_name(type()) + " are not supported");
}

Error DeviceInterface::upload(std::span<const UploadRegion> regions, int index) {
  std::vector<uint8_t> staged;  // for regions read through their reader
  for (const UploadRegion& r : regions) {
    const void* src = r.src;
    if (src == nullptr && r.nbytes > 0) {
      if (r.reader == nullptr) return set_error(Error::Internal, "an upload region has neither bytes nor a reader");
      staged.resize(r.nbytes);
      KILN_RETURN_IF_ERROR((*r.reader)(r.src_offset, staged));
      src = staged.data();
    }
    Error err = copy(r.dst, src, r.nbytes, CopyKind::HostToDevice, index, nullptr);
    if (err != Error::Ok) return err;
    // The copy may still read `staged`: finish it before the buffer is reused.
    if (src == staged.data()) KILN_RETURN_IF_ERROR(synchronize(index, nullptr));
  }
  return synchronize(index, nullptr);
}

Result<void*> DeviceInterface::allocate_long_lived(size_t nbytes, int index) {
  KILN_ASSIGN_OR_RETURN(void* ptr, allocate(nbytes, index, nullptr));
  // Stream-ordered on the current stream: ready for every stream once that is done.
  Error err = synchronize(index, nullptr);
  if (err != Error::Ok) {
    free(ptr, index, nullptr);
    return err;
  }
  return ptr;
}

Error DeviceInterface::begin_capture(int, StreamHandle) {
  return set_error(Error::NotSupported, std::string("graph capture on ") + device_type_name(type()) +
                                            " is not supported");
}

Result<GraphHandle> DeviceInterface::end_capture(int, StreamHandle) {
  return set_error(Error::NotSupported, std::string("graph capture on ") + device_type_name(type()) +
                                            " is not supported");
}

Error DeviceInterface::launch_graph(int, GraphHandle, StreamHandle) {
  return set_error(Error::NotSupported, std::string("graph replay on ") + device_type_name(type()) +
                                            " is not supported");
}

void DeviceInterface::destroy_graph(int, GraphHandle) noexcept {}

}  // namespace kiln

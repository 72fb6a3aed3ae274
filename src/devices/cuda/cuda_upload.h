// Bulk host-to-device upload of many regions (weights at load time), as fast
// as the link allows from pageable or file-mapped host memory.
//
// Why: cudaMemcpy from pageable memory is staged by the driver through a small
// pinned buffer with one CPU thread, far below the link's bandwidth. Here
// several worker threads each own two pinned staging buffers: a worker copies
// its next chunk into one buffer with the CPU while the DMA engine drains the
// other (cudaMemcpyAsync on the worker's own stream), so CPU copies run in
// parallel and overlap the transfers.
#pragma once

#include <span>

#include "kiln/device_interface.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Uploads every region to `device` and waits for completion. Small uploads
/// go straight through cudaMemcpy.
Error upload_regions(int device, std::span<const UploadRegion> regions);

}  // namespace kiln::cudadev

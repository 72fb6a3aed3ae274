// Bulk host-to-device upload of many regions (weights at load time), as fast
// as the link allows from pageable or file-mapped host memory.
//
// Why: cudaMemcpy from pageable memory is staged by the driver through a small
// pinned buffer with one CPU thread, far below the link's bandwidth. Here
// several worker threads each own two pinned staging buffers: a worker copies
// its next chunk into one buffer with the CPU while the DMA engine drains the
// other (cudaMemcpyAsync on the worker's own stream), so CPU copies run in
// parallel and overlap the transfers.
//
// Sizes come from bench/micro/h2d_upload_bench.sh on an H100 host (16 cores, 2.4 GB
// page-cached blob, pinned ceiling 55 GB/s): 8 workers with 2 MiB chunks copy
// at 47 GB/s against 29 GB/s for 4 workers with 8 MiB; pinning the buffers
// costs ~0.5 ms per MiB with cudaHostAlloc, so they are kept for the process
// after the first large upload (two 2 MiB buffers per worker: 32 MiB with the
// default 8 workers, more when setting cuda_upload_workers asks for more), and
// later loads skip that cost; the first one has them pinned ahead, on
// background threads, in huge pages (prepare_upload).
#pragma once

#include <span>

#include "core/device_interface.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Uploads every region to `device` and waits for completion. Regions that
/// continue each other on host and device are merged first. Small uploads
/// (below 64 MiB, or below two chunks once staging buffers are kept) go
/// straight through cudaMemcpy.
Error upload_regions(int device, std::span<const UploadRegion> regions);

/// Starts pinning the staging buffers on a background thread when an upload
/// of `nbytes` will use them and they are not pinned yet, so that the first
/// large upload of the process does not wait for the pinning.
void prepare_upload(int device, size_t nbytes);

}  // namespace kiln::cudadev

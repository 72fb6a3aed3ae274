// KILN_HOST_DEVICE marks a header function that both the C++ compiler and
// nvcc build (host code and CUDA kernels share one definition of the rule).
#pragma once

#if defined(__CUDACC__)
#define KILN_HOST_DEVICE __host__ __device__
#else
#define KILN_HOST_DEVICE
#endif

// Helpers shared by the delegate tests: a program file around one of the
// stand-in model libraries (fixtures/fake_model.cpp), tensors over caller
// vectors, and the process counters the leak tests watch.
#pragma once

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "kiln/tensor.h"
#include "program/program_writer.h"

namespace kiln {

inline std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The contract of the fake model's one method: "forward", x[n] -> y[n] with n
/// in 1..16, on the CPU, library "lib", weights "weights".
inline MethodInfo fake_forward_method() {
  MethodInfo method;
  method.name = "forward";
  method.backend = "aoti";
  method.device = "cpu";
  method.inputs = {TensorSpec{"x", DType::Float32, {DimSpec{4, true, 1, 16, "n"}}}};
  method.outputs = {TensorSpec{"y", DType::Float32, {DimSpec{4, true, 1, 16, "n"}}}};
  method.library_key = "lib";
  method.weights_key = "weights";
  return method;
}

/// Writes a one-method program ("forward": x[n] -> y[n], n in 1..16) running
/// `library_path` with `scale` as its 4 bytes of weights, in the external data
/// file when `external_weights`. Returns the program's path, `name`.kiln in
/// `dir`, which removes it (and its data file) with itself.
inline std::string write_program(const testing_util::TempDir& dir, const char* library_path, float scale,
                                 const std::string& name, bool external_weights = false) {
  ProgramWriter writer;
  const MethodInfo method = fake_forward_method();
  auto lib = read_file(library_path);
  EXPECT_FALSE(lib.empty()) << library_path;
  EXPECT_EQ(writer.add_method(method), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("lib", lib), Error::Ok) << last_error_message();
  uint8_t weights[sizeof(float)];
  std::memcpy(weights, &scale, sizeof(float));
  EXPECT_EQ(writer.add_named_data("weights", weights, 64, external_weights), Error::Ok) << last_error_message();
  const std::string path = dir.file(name + ".kiln");
  EXPECT_EQ(writer.write(path), Error::Ok) << last_error_message();
  return path;
}

inline Tensor vector_tensor(std::vector<float>& data) {
  return *Tensor::from_blob(data.data(), std::vector<int64_t>{static_cast<int64_t>(data.size())},
                            std::vector<int64_t>{1}, DType::Float32);
}

inline size_t open_descriptors() {
  size_t n = 0;
  for (auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) (void)entry, ++n;
  return n;
}

inline size_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

// Bytes glibc malloc has handed out and not had back (arena + mmapped blocks):
// what the process holds, unlike resident memory, which the allocator's caching
// blurs. Reads 0 under sanitizers that replace malloc.
inline size_t heap_in_use_bytes() {
  const struct mallinfo2 info = ::mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Mappings of files (memfd libraries included, "/memfd:... (deleted)"): what a
// library that dlclose did not really unload leaves behind. Anonymous regions
// are the allocator's business (a sanitizer's allocator maps more of them as its
// quarantine fills) and are watched through resident memory instead.
inline size_t file_mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode [path]
    std::istringstream fields(line);
    std::string address, perms, offset, dev, inode, path;
    fields >> address >> perms >> offset >> dev >> inode >> path;
    if (!path.empty() && path[0] == '/') ++n;
  }
  return n;
}

}  // namespace kiln

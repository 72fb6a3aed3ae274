// Opens a .kiln program through Kiln's C++ API and lists its methods; with a
// method name, runs that method on no inputs (a method that takes none).
//
//   kiln-consumer-cpp PROGRAM.kiln [METHOD]
//
// Exit status: 0 done, 1 Kiln reported an error, 2 usage error.
#include <kiln/dtype.h>
#include <kiln/module.h>
#include <kiln/version.h>

#include <cstdio>
#include <string>

namespace {

int fail(const std::string& what, kiln::Error error) {
  std::fprintf(stderr, "error: %s: %s: %s\n", what.c_str(), kiln::to_string(error),
               kiln::last_error_message().c_str());
  return 1;
}

std::string describe(const kiln::TensorSpec& spec) {
  std::string text = spec.name + ": " + kiln::dtype_name(spec.dtype) + "[";
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    const kiln::DimSpec& dim = spec.dims[d];
    if (d) text += ", ";
    text += dim.name.empty() ? std::to_string(dim.size) : dim.name;
  }
  return text + "]";
}

std::string describe(const std::vector<kiln::TensorSpec>& specs) {
  std::string text;
  for (const kiln::TensorSpec& spec : specs) text += (text.empty() ? "" : ", ") + describe(spec);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s PROGRAM.kiln [METHOD]\n", argv[0]);
    return 2;
  }
  std::printf("Kiln %s (C++ API)\n", KILN_VERSION_STRING);
  const std::string path = argv[1];
  kiln::Module module(path);
  if (kiln::Error e = module.load(); e != kiln::Error::Ok) return fail(path, e);
  auto names = module.method_names();
  if (!names.ok()) return fail(path, names.error());
  std::printf("%s: %zu method(s)\n", path.c_str(), names->size());
  for (const std::string& name : *names) {
    auto meta = module.method_meta(name);
    if (!meta.ok()) return fail(name, meta.error());
    std::printf("  %s (%s): (%s) -> (%s)\n", name.c_str(), meta->device.c_str(), describe(meta->inputs).c_str(),
                describe(meta->outputs).c_str());
  }
  if (argc == 3) {
    auto outputs = module.execute(argv[2], {});
    if (!outputs.ok()) return fail(argv[2], outputs.error());
    std::printf("%s: %zu output(s)\n", argv[2], outputs->size());
  }
  return 0;
}

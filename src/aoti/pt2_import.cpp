#include "aoti/pt2_import.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "aoti/elf_symbols.h"
#include "aoti/kernel_directory.h"
#include "aoti/wrapper_contract.h"
#include "kiln/pt2_import.h"

namespace kiln::aoti {
namespace {

// Where torch puts each model's AOTInductor files inside the archive root.
constexpr std::string_view kModelsDir = "data/aotinductor/";
// What torch's pickle_weights format adds (per-tensor pickles).
constexpr std::string_view kPickledWeightsDir = "data/weights/";

constexpr const char* kReexportHint =
    "Re-export it for Kiln with torch._inductor.aoti_compile_and_package(ep, inductor_configs={"
    "\"aot_inductor.link_libtorch\": False}), optionally adding \"aot_inductor.package_constants_in_so\": False, "
    "\"aot_inductor.package_constants_on_disk_format\": \"binary_blob\" to keep the weights in a separate blob, "
    "or use Kiln's own exporter (kiln.exporter).";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Error invalid(const ZipArchive& package, const std::string& what) {
  return set_error(Error::InvalidProgram, package.label() + ": " + what);
}

// A flat JSON object whose values are strings (torch's *_metadata.json);
// non-string values are kept as their raw text.
Result<std::map<std::string, std::string>> parse_flat_json(std::string_view text, const std::string& where) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  auto fail = [&](const std::string& why) {
    return set_error(Error::InvalidProgram, where + ": " + why + " at byte " + std::to_string(i));
  };
  auto skip_space = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  };
  auto read_string = [&](std::string* s) -> bool {
    if (i >= text.size() || text[i] != '"') return false;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      char ch = text[i];
      if (ch == '\\') {
        if (++i >= text.size()) return false;
        switch (text[i]) {
          case 'n': ch = '\n'; break;
          case 't': ch = '\t'; break;
          case 'r': ch = '\r'; break;
          case 'b': ch = '\b'; break;
          case 'f': ch = '\f'; break;
          case 'u':  // non-ASCII is not expected in these keys; keep a marker
            if (i + 4 >= text.size()) return false;
            i += 4;
            ch = '?';
            break;
          default: ch = text[i];  // \" \\ \/
        }
      }
      s->push_back(ch);
    }
    if (i >= text.size()) return false;
    ++i;  // closing quote
    return true;
  };
  skip_space();
  if (i >= text.size() || text[i] != '{') return fail("expected a JSON object");
  ++i;
  skip_space();
  if (i < text.size() && text[i] == '}') return out;
  while (true) {
    skip_space();
    std::string key, value;
    if (!read_string(&key)) return fail("expected a string key");
    skip_space();
    if (i >= text.size() || text[i] != ':') return fail("expected ':'");
    ++i;
    skip_space();
    if (i < text.size() && text[i] == '"') {
      if (!read_string(&value)) return fail("unterminated string");
    } else {
      const size_t start = i;
      while (i < text.size() && text[i] != ',' && text[i] != '}') ++i;
      value = std::string(text.substr(start, i - start));
      while (!value.empty() && (value.back() == ' ' || value.back() == '\n')) value.pop_back();
    }
    out[key] = value;
    skip_space();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == '}') return out;
    return fail("expected ',' or '}'");
  }
}

// The archive's root folder: torch names it after the package file and marks
// it with "<root>/archive_format" holding "pt2".
Result<std::string> archive_root(const ZipArchive& package) {
  for (const ZipEntry& entry : package.entries()) {
    if (!ends_with(entry.name, "archive_format")) continue;
    const std::string root = entry.name.substr(0, entry.name.size() - std::string_view("archive_format").size());
    if (!root.empty() && root.back() != '/') continue;
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, package.read(entry));
    if (std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "pt2") return root;
  }
  return invalid(package, "not a PyTorch .pt2 package (no '<root>/archive_format' entry holding \"pt2\")");
}

std::string list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string_view as_text(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

Error import_pt2(const ZipArchive& package, const Pt2ImportOptions& options, ProgramWriter* writer) {
  KILN_ASSIGN_OR_RETURN(std::string root, archive_root(package));
  const std::string models_prefix = root + std::string(kModelsDir);

  // model name -> the entries under its folder.
  std::map<std::string, std::vector<const ZipEntry*>> models;
  bool pickled_weights = false;
  for (const ZipEntry& entry : package.entries()) {
    if (starts_with(entry.name, root + std::string(kPickledWeightsDir))) pickled_weights = true;
    if (!starts_with(entry.name, models_prefix)) continue;
    const std::string rest = entry.name.substr(models_prefix.size());
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0) continue;
    models[rest.substr(0, slash)].push_back(&entry);
  }
  std::vector<std::string> model_names;
  for (const auto& [name, files] : models) model_names.push_back(name);
  if (models.empty())
    return set_error(Error::NotSupported, package.label() + ": the package holds no AOTInductor model (nothing under '" +
                                              models_prefix + "'); Kiln imports packages made by "
                                              "torch._inductor.aoti_compile_and_package");
  std::string model = options.model_name;
  if (model.empty()) {
    if (models.size() > 1)
      return set_error(Error::InvalidArgument, package.label() + ": the package holds " +
                                                   std::to_string(models.size()) + " models (" + list(model_names) +
                                                   "); choose one (kiln import --model-name NAME)");
    model = models.begin()->first;
  } else if (!models.count(model)) {
    return set_error(Error::NotFound, package.label() + ": no model '" + model + "' in the package (it holds: " +
                                          list(model_names) + ")");
  }
  const std::string where = package.label() + ": model '" + model + "'";

  const ZipEntry* library = nullptr;
  const ZipEntry* weights = nullptr;
  const ZipEntry* wrapper_source = nullptr;
  const ZipEntry* metadata_json = nullptr;
  std::vector<std::string> libraries, kernel_files;
  bool has_sources = false;
  for (const ZipEntry* entry : models[model]) {
    const std::string& n = entry->name;
    if (ends_with(n, ".so")) {
      if (library && ends_with(n, ".wrapper.so") && ends_with(library->name, ".wrapper.so"))
        return invalid(package, "model '" + model + "' has two *.wrapper.so libraries");
      libraries.push_back(n);
      if (!library || ends_with(n, ".wrapper.so")) library = entry;
    } else if (ends_with(n, "weights.blob")) {
      if (weights) return invalid(package, "model '" + model + "' has two weights blobs");
      weights = entry;
    } else if (ends_with(n, ".wrapper.cpp")) {
      wrapper_source = entry;
    } else if (ends_with(n, ".wrapper_metadata.json")) {
      metadata_json = entry;
    } else if (ends_with(n, ".cubin") || ends_with(n, ".fatbin") || ends_with(n, ".ptx") || ends_with(n, ".hsaco") ||
               ends_with(n, ".spv")) {
      kernel_files.push_back(n);
    }
    has_sources = has_sources || ends_with(n, ".cpp");
  }
  if (!library)
    return set_error(Error::NotSupported,
                     where + " has no compiled library" +
                         (has_sources ? std::string(" (a package_cpp_only package holds sources only)") : "") +
                         ". Kiln runs compiled AOTInductor libraries. " + kReexportHint);
  if (libraries.size() > 1 && !ends_with(library->name, ".wrapper.so"))
    return invalid(package, "model '" + model + "' has several libraries and none is a *.wrapper.so: " +
                                list(libraries));
  if (pickled_weights && !weights)
    return set_error(Error::NotSupported,
                     where + ": its weights are pickled per tensor under '" + root + std::string(kPickledWeightsDir) +
                         "' (package_constants_on_disk_format=\"pickle_weights\"), which only Python can read. " +
                         kReexportHint);

  KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> library_bytes, package.read(*library));
  auto symbols = read_dynamic_symbols(library_bytes);
  if (!symbols.ok())
    return set_error(Error::InvalidProgram, where + ": '" + library->name + "' is not a valid ELF64 library: " +
                                                last_error_message());
  std::vector<std::string> torch_libs;
  for (const std::string& needed : symbols->needed)
    if (starts_with(needed, "libtorch") || starts_with(needed, "libc10")) torch_libs.push_back(needed);
  if (!torch_libs.empty())
    return set_error(Error::NotSupported,
                     where + " was compiled against libtorch (its library needs " + list(torch_libs) +
                         "): torch's default aot_inductor.link_libtorch=True. Kiln runs AOTInductor libraries "
                         "without libtorch, through the aoti_torch_* C ABI only. " + kReexportHint);

  std::map<std::string, std::string> aoti_metadata;
  if (metadata_json) {
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> text, package.read(*metadata_json));
    KILN_ASSIGN_OR_RETURN(aoti_metadata, parse_flat_json(as_text(text), package.label() + ": '" + metadata_json->name + "'"));
  }
  auto device_it = aoti_metadata.find("AOTI_DEVICE_KEY");
  if (device_it == aoti_metadata.end())
    return invalid(package, "model '" + model + "' has no *.wrapper_metadata.json with AOTI_DEVICE_KEY (which "
                                               "device it was compiled for)");
  const std::string device = device_it->second;
  if (device != "cpu" && device != "cuda")
    return set_error(Error::NotSupported, where + " was compiled for device '" + device +
                                              "'; Kiln runs AOTInductor models on cpu and cuda");
  if (!kernel_files.empty() && device != "cuda")
    return set_error(Error::NotSupported, where + " (" + device + ") keeps GPU kernel files (" + list(kernel_files) +
                                              "), which Kiln loads for cuda models only");

  if (!wrapper_source)
    return invalid(package, "model '" + model + "' has no *.wrapper.cpp, from which Kiln reads the input contract "
                                               "(dtypes and shapes); a .pt2 records it nowhere else");
  KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> source, package.read(*wrapper_source));
  KILN_ASSIGN_OR_RETURN(WrapperContract contract, read_wrapper_contract(as_text(source), where));

  MethodInfo method;
  method.name = options.method_name;
  method.backend = "aoti";
  method.device = device;
  method.inputs = std::move(contract.inputs);
  method.outputs = std::move(contract.outputs);
  // Outputs the wrapper source does not describe in a form Kiln understands
  // keep a rank-0 placeholder spec; these metadata keys say which.
  std::string unknown;
  for (size_t i = 0; i < contract.output_known.size(); ++i)
    if (!contract.output_known[i]) unknown += (unknown.empty() ? "" : ",") + std::to_string(i);
  for (const auto& [key, value] : aoti_metadata)
    if (starts_with(key, "AOTI_")) method.metadata[key] = value;
  if (auto isa = aoti_metadata.find("AOTI_CPU_ISA"); isa != aoti_metadata.end() && device == "cpu")
    method.metadata["cpu_isa"] = isa->second;
  method.metadata["imported_from"] = "pt2";
  method.metadata["pt2_model"] = model;
  method.metadata["pt2_library"] = library->name;
  method.metadata["output_contract"] =
      unknown.empty() ? "inferred from the wrapper source (informational: outputs are not validated)"
                      : "inferred from the wrapper source except outputs " + unknown +
                            ", whose specs are placeholders (dtype and shape unknown)";
  if (!unknown.empty()) method.metadata[kUnknownOutputsKey] = unknown;
  std::string shims;
  for (const std::string& name : symbols->undefined)
    if (starts_with(name, "aoti_torch_")) shims += (shims.empty() ? "" : ",") + name;
  method.metadata["shim_imports"] = shims;

  method.library_key = options.method_name + ".library";
  KILN_RETURN_IF_ERROR(writer->add_named_data(method.library_key, library_bytes));
  if (weights) {
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> weight_bytes, package.read(*weights));
    method.weights_key = options.method_name + ".weights";
    KILN_RETURN_IF_ERROR(writer->add_named_data(method.weights_key, weight_bytes));
  }
  // Kernels stored beside the library (embed_kernel_binary=False): the runtime
  // writes them to a private directory the library loads them from
  // (kernel_directory.h); the library looks them up by file name only.
  std::set<std::string> kernel_names;
  std::string kernel_keys;
  for (const ZipEntry* entry : models[model]) {
    if (std::find(kernel_files.begin(), kernel_files.end(), entry->name) == kernel_files.end()) continue;
    const std::string name = entry->name.substr(entry->name.rfind('/') + 1);
    if (name.find(',') != std::string::npos)  // the metadata list is comma-separated
      return invalid(package, "kernel file '" + entry->name + "' has a ',' in its name");
    if (!kernel_names.insert(name).second)
      return invalid(package, "model '" + model + "' has two kernel files named '" + name + "'");
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, package.read(*entry));
    const std::string key = options.method_name + ".kernels/" + name;
    KILN_RETURN_IF_ERROR(writer->add_named_data(key, bytes));
    kernel_keys += (kernel_keys.empty() ? "" : ",") + key;
  }
  if (!kernel_keys.empty()) method.metadata[kKernelFilesKey] = kernel_keys;
  KILN_RETURN_IF_ERROR(writer->add_method(method));
  writer->set_metadata("imported_from", "pt2");
  return Error::Ok;
}

Result<std::shared_ptr<const ProgramFile>> load_pt2_program(const std::string& path, const Pt2ImportOptions& options) {
  KILN_ASSIGN_OR_RETURN(ZipArchive package, ZipArchive::open(path));
  ProgramWriter writer;
  KILN_RETURN_IF_ERROR(import_pt2(package, options, &writer));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, writer.to_bytes());
  return ProgramFile::from_bytes(bytes);
}

}  // namespace kiln::aoti

namespace kiln {

Error import_pt2_package(const std::string& package_path, const std::string& program_path,
                         const std::string& model_name, const std::string& method_name) {
  if (method_name.empty()) return set_error(Error::InvalidArgument, "import_pt2_package: the method name is empty");
  KILN_ASSIGN_OR_RETURN(ZipArchive package, ZipArchive::open(package_path));
  aoti::Pt2ImportOptions options;
  options.model_name = model_name;
  options.method_name = method_name;
  ProgramWriter writer;
  KILN_RETURN_IF_ERROR(aoti::import_pt2(package, options, &writer));
  return writer.write(program_path);
}

}  // namespace kiln

// `kiln import`: convert a PyTorch .pt2 package into a .kiln program.
#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "kiln/program_file.h"
#include "kiln/pt2_import.h"

namespace kiln::tools {

const char kImportUsage[] =
    "usage: kiln import MODEL.pt2 -o PROGRAM.kiln [--model-name NAME] [--method NAME]\n"
    "\n"
    "Converts a package made by torch._inductor.aoti_compile_and_package with\n"
    "inductor_configs={\"aot_inductor.link_libtorch\": False, ...} into a Kiln\n"
    "program: the model's compiled library, its weights (a binary blob, or none\n"
    "when they are inside the library) and its device / CPU ISA / compute\n"
    "capability metadata, checked against the machine at load. The input and\n"
    "output contract is read from the package's generated wrapper source.\n"
    "Prints the imported method's contract.\n"
    "(`kiln run MODEL.pt2` and Module also load a .pt2 directly.)\n"
    "\n"
    "  -o, --output FILE   the program file to write\n"
    "  --model-name NAME   which model of the package (default: the only one)\n"
    "  --method NAME       name of the method in the program (default: forward)\n";

int import_command(std::span<const std::string> args) {
  static constexpr OptionSpec kOptions[] = {
      {"--help", false}, {"--output", true}, {"-o", true}, {"--model-name", true}, {"--method", true}};
  ParsedArgs parsed;
  std::string problem;
  if (!parse_args(args, kOptions, &parsed, &problem)) return usage_error("import", problem, kImportUsage);
  if (parsed.has("--help")) {
    std::fputs(kImportUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.size() != 1)
    return usage_error("import", parsed.positional.empty() ? "missing the .pt2 package" : "expected exactly one package",
                       kImportUsage);
  auto output = parsed.last("-o");
  if (!output) output = parsed.last("--output");
  if (!output || output->empty()) return usage_error("import", "missing -o PROGRAM.kiln", kImportUsage);
  const std::string method = parsed.last("--method").value_or("forward");
  if (method.empty()) return usage_error("import", "--method needs a name", kImportUsage);

  const auto start = std::chrono::steady_clock::now();
  if (Error e = import_pt2_package(parsed.positional[0], *output, parsed.last("--model-name").value_or(""), method);
      e != Error::Ok)
    return runtime_error(e);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  // Read back what was written: the summary shows the file as the runtime sees it.
  auto program = ProgramFile::open(*output);
  if (!program.ok()) return runtime_error(program.error());
  const MethodInfo* info = (*program)->find_method(method);
  std::printf("wrote %s (%llu bytes) in %.1f ms\n", output->c_str(),
              static_cast<unsigned long long>((*program)->file_size()), ms);
  if (!info) return kExitOk;
  auto meta = [&](const char* key) {
    auto it = info->metadata.find(key);
    return it == info->metadata.end() ? std::string("-") : it->second;
  };
  std::printf("method %s: model '%s', device %s, cpu_isa %s, weights %s\n", info->name.c_str(),
              meta("pt2_model").c_str(), info->device.c_str(), meta("cpu_isa").c_str(),
              info->weights_key.empty() ? "inside the library" : "separate blob");
  for (const TensorSpec& spec : info->inputs) std::printf("  input  %s: %s\n", spec.name.c_str(), spec_text(spec).c_str());
  // Indices of outputs the package does not describe (see docs/pt2-import.md).
  std::set<std::string> unknown;
  if (auto it = info->metadata.find("unknown_outputs"); it != info->metadata.end()) {
    std::istringstream list(it->second);
    for (std::string index; std::getline(list, index, ',');) unknown.insert(index);
  }
  for (size_t i = 0; i < info->outputs.size(); ++i) {
    const TensorSpec& spec = info->outputs[i];
    if (unknown.count(std::to_string(i)))
      std::printf("  output %s: dtype and shape unknown\n", spec.name.c_str());
    else
      std::printf("  output %s: %s\n", spec.name.c_str(), spec_text(spec).c_str());
  }
  return kExitOk;
}

}  // namespace kiln::tools

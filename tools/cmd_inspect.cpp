// `kiln inspect`: everything a program file says about itself, as text or JSON.
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "json_writer.h"
#include "kiln/program_file.h"

namespace kiln::tools {

const char kInspectUsage[] =
    "usage: kiln inspect PROGRAM.kiln [--data FILE ...] [--json] [--verify]\n"
    "\n"
    "Prints the methods of a program file (backend, device, input/output\n"
    "contract, compile specs, metadata), its named data entries (size,\n"
    "alignment, SHA-256, in the file or external) and its metadata.\n"
    "Dynamic dimensions print as symbol:min..max (max 'inf' when unbounded).\n"
    "\n"
    "  --data FILE   external data file the program names (repeat, in order)\n"
    "  --json        print one JSON object instead of text\n"
    "  --verify      also check every named entry's SHA-256 (exit 1 on mismatch)\n";

namespace {

// The layout an input's library was compiled for, when it is not row-major
// (empty or the identity): "(0, 2, 3, 1)"; "" otherwise.
std::string dim_order_text(const TensorSpec& spec) {
  bool row_major = true;
  for (size_t k = 0; k < spec.dim_order.size(); ++k) row_major = row_major && spec.dim_order[k] == k;
  if (row_major) return "";
  std::string text = "(";
  for (size_t k = 0; k < spec.dim_order.size(); ++k)
    text += (k ? ", " : "") + std::to_string(spec.dim_order[k]);
  return text + ")";
}

// One input/output line of the text listing; inputs compiled for another
// layout than row-major say which (execute copies other layouts into it).
std::string spec_line(const TensorSpec& spec) {
  const std::string order = dim_order_text(spec);
  return spec_text(spec) + (order.empty() ? "" : "  dim order " + order);
}

void json_spec(JsonWriter& json, const TensorSpec& spec) {
  json.begin_object();
  json.key("name");
  json.string(spec.name);
  json.key("dtype");
  json.string(dtype_name(spec.dtype));
  json.key("shape");
  json.string(spec_text(spec));
  json.key("dims");
  json.begin_array();
  for (const auto& dim : spec.dims) {
    json.begin_object();
    json.key("size");
    json.number(dim.size);
    json.key("dynamic");
    json.boolean(dim.dynamic);
    if (dim.dynamic) {
      json.key("name");
      json.string(dim.name);
      json.key("min");
      json.number(dim.min);
      json.key("max");
      if (dim.max < 0) {
        json.null();
      } else {
        json.number(dim.max);
      }
    }
    json.end_object();
  }
  json.end_array();
  if (!dim_order_text(spec).empty()) {
    json.key("dim_order");
    json.begin_array();
    for (uint8_t d : spec.dim_order) json.number(static_cast<int64_t>(d));
    json.end_array();
  }
  json.end_object();
}

void json_map(JsonWriter& json, const std::map<std::string, std::string>& map) {
  json.begin_object();
  for (const auto& [key, value] : map) {
    json.key(key);
    json.string(value);
  }
  json.end_object();
}

std::string location(const ProgramFile& program, const NamedDataInfo& info) {
  if (info.external_file < 0) return "in-file";
  const auto& names = program.external_file_names();
  const auto index = static_cast<size_t>(info.external_file);
  std::string text = "external: ";
  text.append(index < names.size() ? names[index] : "file #" + std::to_string(info.external_file));
  return text;
}

// Digest status per named entry: "" when not checked, else "ok" or the failure.
std::vector<std::string> verify_all(const ProgramFile& program, bool* all_ok) {
  std::vector<std::string> status;
  *all_ok = true;
  for (const auto& info : program.named_data()) {
    auto bytes = program.read_named_data(info.key, /*verify_digest=*/true);
    if (bytes.ok()) {
      status.emplace_back("ok");
    } else {
      *all_ok = false;
      status.push_back(std::string(to_string(bytes.error())) + ": " + last_error_message());
    }
  }
  return status;
}

void print_json(const std::string& path, const ProgramFile& program, const std::vector<std::string>& verified) {
  JsonWriter json;
  json.begin_object();
  json.key("path");
  json.string(path);
  json.key("file_size");
  json.number(program.file_size());
  json.key("format_version");
  json.number(static_cast<int64_t>(program.format_version()));
  json.key("signature");
  if (const ProgramSignature* signature = program.signature()) {
    json.begin_object();
    json.key("algorithm");
    json.number(static_cast<int64_t>(signature->algorithm));
    json.key("public_key");
    json.string(hex(signature->public_key));
    json.end_object();
  } else {
    json.null();
  }
  json.key("metadata");
  json_map(json, program.metadata());
  json.key("methods");
  json.begin_array();
  for (const auto& method : program.methods()) {
    json.begin_object();
    json.key("name");
    json.string(method.name);
    json.key("backend");
    json.string(method.backend);
    json.key("device");
    json.string(method.device);
    json.key("inputs");
    json.begin_array();
    for (const auto& spec : method.inputs) json_spec(json, spec);
    json.end_array();
    json.key("outputs");
    json.begin_array();
    for (const auto& spec : method.outputs) json_spec(json, spec);
    json.end_array();
    json.key("compile_specs");
    json_map(json, method.compile_specs);
    json.key("metadata");
    json_map(json, method.metadata);
    json.key("library_key");
    json.string(method.library_key);
    json.key("weights_key");
    json.string(method.weights_key);
    json.end_object();
  }
  json.end_array();
  json.key("named_data");
  json.begin_array();
  const auto& named = program.named_data();
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& info = named[i];
    json.begin_object();
    json.key("key");
    json.string(info.key);
    json.key("size");
    json.number(info.size);
    json.key("alignment");
    json.number(info.alignment);
    json.key("sha256");
    json.string(hex(info.sha256));
    json.key("location");
    json.string(info.external_file < 0 ? "in-file" : "external");
    if (info.external_file >= 0) {
      json.key("external_file");
      json.number(static_cast<int64_t>(info.external_file));
    }
    if (!verified.empty()) {
      json.key("verified");
      json.string(verified[i]);
    }
    json.end_object();
  }
  json.end_array();
  json.key("external_files");
  json.begin_array();
  for (const auto& name : program.external_file_names()) json.string(name);
  json.end_array();
  json.end_object();
  std::printf("%s\n", json.str().c_str());
}

void print_map(const char* title, const std::map<std::string, std::string>& map, const char* indent) {
  if (map.empty()) return;
  std::printf("%s%s:\n", indent, title);
  for (const auto& [key, value] : map) std::printf("%s  %s = %s\n", indent, key.c_str(), value.c_str());
}

void print_text(const std::string& path, const ProgramFile& program, const std::vector<std::string>& verified) {
  std::printf("program: %s\n", path.c_str());
  std::printf("  file size: %llu bytes\n", static_cast<unsigned long long>(program.file_size()));
  std::printf("  format version: %u\n", program.format_version());
  if (const ProgramSignature* signature = program.signature())
    std::printf("  signature: %s key %s (not checked here: use kiln verify)\n",
                signature->algorithm == 1 ? "Ed25519" : ("algorithm " + std::to_string(signature->algorithm)).c_str(),
                hex(signature->public_key).c_str());
  else
    std::printf("  signature: none\n");
  print_map("metadata", program.metadata(), "  ");
  std::printf("methods (%zu):\n", program.methods().size());
  for (const auto& method : program.methods()) {
    std::printf("  %s  [backend %s, device %s]\n", method.name.c_str(), method.backend.c_str(),
                method.device.c_str());
    std::printf("    inputs (%zu):\n", method.inputs.size());
    for (size_t i = 0; i < method.inputs.size(); ++i)
      std::printf("      %zu %s: %s\n", i, method.inputs[i].name.c_str(),
                  spec_line(method.inputs[i]).c_str());
    std::printf("    outputs (%zu):\n", method.outputs.size());
    for (size_t i = 0; i < method.outputs.size(); ++i)
      std::printf("      %zu %s: %s\n", i, method.outputs[i].name.c_str(),
                  spec_line(method.outputs[i]).c_str());
    print_map("compile specs", method.compile_specs, "    ");
    print_map("metadata", method.metadata, "    ");
    std::printf("    library: %s\n", method.library_key.c_str());
    std::printf("    weights: %s\n", method.weights_key.empty() ? "(none)" : method.weights_key.c_str());
  }
  const auto& named = program.named_data();
  std::printf("named data (%zu):\n", named.size());
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& info = named[i];
    std::printf("  %s\n    size %llu, alignment %llu, %s\n    sha256 %s\n", info.key.c_str(),
                static_cast<unsigned long long>(info.size), static_cast<unsigned long long>(info.alignment),
                location(program, info).c_str(), hex(info.sha256).c_str());
    if (!verified.empty()) std::printf("    digest check: %s\n", verified[i].c_str());
  }
  if (!program.external_file_names().empty()) {
    std::printf("external data files (%zu):\n", program.external_file_names().size());
    for (size_t i = 0; i < program.external_file_names().size(); ++i)
      std::printf("  %zu %s\n", i, program.external_file_names()[i].c_str());
  }
}

}  // namespace

int inspect_command(std::span<const std::string> args) {
  static constexpr OptionSpec kOptions[] = {
      {"--help", false}, {"--json", false}, {"--verify", false}, {"--data", true}};
  ParsedArgs parsed;
  std::string problem;
  if (!parse_args(args, kOptions, &parsed, &problem)) return usage_error("inspect", problem, kInspectUsage);
  if (parsed.has("--help")) {
    std::fputs(kInspectUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.size() != 1)
    return usage_error("inspect",
                       parsed.positional.empty() ? "missing the program file" : "expected exactly one program file",
                       kInspectUsage);
  const std::string& path = parsed.positional[0];

  auto program = ProgramFile::open(path, parsed.all("--data"));
  if (!program.ok()) return runtime_error(program.error());

  std::vector<std::string> verified;
  bool all_ok = true;
  if (parsed.has("--verify")) verified = verify_all(**program, &all_ok);

  if (parsed.has("--json")) {
    print_json(path, **program, verified);
  } else {
    print_text(path, **program, verified);
  }
  if (!all_ok) {
    set_error(Error::IntegrityError, path + ": one or more named data entries failed the digest check");
    return runtime_error(Error::IntegrityError);
  }
  return kExitOk;
}

}  // namespace kiln::tools

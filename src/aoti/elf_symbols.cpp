#include "aoti/elf_symbols.h"

#include <elf.h>

#include <cstddef>
#include <cstring>

namespace kiln::aoti {
namespace {
template <typename T>
bool read_at(std::span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

Error bad_elf(const std::string& what) {
  return set_error(Error::InvalidProgram, "model library is not a valid ELF64 shared object: " + what);
}
// DT_NEEDED names from the SHT_DYNAMIC section, resolved through its linked
// string table.
Error read_needed(std::span<const uint8_t> elf, const Elf64_Ehdr& header, std::vector<std::string>& needed) {
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    if (!read_at(elf, header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &section))
      return bad_elf("section header " + std::to_string(i) + " out of bounds");
    if (section.sh_type != SHT_DYNAMIC) continue;
    Elf64_Shdr strtab;
    if (section.sh_link >= header.e_shnum ||
        !read_at(elf, header.e_shoff + uint64_t{section.sh_link} * sizeof(Elf64_Shdr), &strtab) ||
        strtab.sh_offset > elf.size() || elf.size() - strtab.sh_offset < strtab.sh_size)
      return bad_elf(".dynamic string table out of bounds");
    for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= section.sh_size; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn dyn;
      if (!read_at(elf, section.sh_offset + off, &dyn)) return bad_elf(".dynamic entry out of bounds");
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag != DT_NEEDED) continue;
      if (dyn.d_un.d_val >= strtab.sh_size) return bad_elf("DT_NEEDED name out of bounds");
      const char* start = reinterpret_cast<const char*>(elf.data() + strtab.sh_offset + dyn.d_un.d_val);
      const size_t max_len = strtab.sh_size - dyn.d_un.d_val;
      const size_t len = strnlen(start, max_len);
      if (len == max_len) return bad_elf("unterminated DT_NEEDED name");
      needed.emplace_back(start, len);
    }
    return Error::Ok;
  }
  return Error::Ok;  // no dynamic section: nothing needed
}

}  // namespace

Result<DynamicSymbols> read_dynamic_symbols(std::span<const uint8_t> elf) {
  Elf64_Ehdr header;
  if (!read_at(elf, 0, &header)) return bad_elf("shorter than an ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return bad_elf("bad magic");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return bad_elf("not a little-endian 64-bit ELF file");
  if (header.e_shentsize != sizeof(Elf64_Shdr)) return bad_elf("unexpected section header size");

  // Find .dynsym and its linked string table.
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    if (!read_at(elf, header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &section))
      return bad_elf("section header " + std::to_string(i) + " out of bounds");
    if (section.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr strtab;
    if (section.sh_link >= header.e_shnum ||
        !read_at(elf, header.e_shoff + uint64_t{section.sh_link} * sizeof(Elf64_Shdr), &strtab))
      return bad_elf(".dynsym string table out of bounds");
    if (strtab.sh_offset > elf.size() || elf.size() - strtab.sh_offset < strtab.sh_size)
      return bad_elf(".dynstr out of bounds");
    if (section.sh_entsize != sizeof(Elf64_Sym)) return bad_elf("unexpected .dynsym entry size");
    DynamicSymbols symbols;
    const uint64_t count = section.sh_size / sizeof(Elf64_Sym);
    for (uint64_t s = 1; s < count; ++s) {
      Elf64_Sym sym;
      if (!read_at(elf, section.sh_offset + s * sizeof(Elf64_Sym), &sym))
        return bad_elf("symbol " + std::to_string(s) + " out of bounds");
      if (sym.st_shndx != SHN_UNDEF) {
        if (ELF64_ST_BIND(sym.st_info) == STB_GNU_UNIQUE)
          symbols.unique_binding_offsets.push_back(section.sh_offset + s * sizeof(Elf64_Sym) +
                                                   offsetof(Elf64_Sym, st_info));
        continue;
      }
      if (sym.st_name == 0) continue;
      if (sym.st_name >= strtab.sh_size) return bad_elf("symbol name out of bounds");
      const char* start = reinterpret_cast<const char*>(elf.data() + strtab.sh_offset + sym.st_name);
      const size_t max_len = strtab.sh_size - sym.st_name;
      const size_t len = strnlen(start, max_len);
      if (len == max_len) return bad_elf("unterminated symbol name");
      symbols.undefined.emplace_back(start, len);
      symbols.undefined_name_offsets.push_back(strtab.sh_offset + sym.st_name);
    }
    KILN_RETURN_IF_ERROR(read_needed(elf, header, symbols.needed));
    return symbols;
  }
  return bad_elf("no .dynsym section");
}

}  // namespace kiln::aoti

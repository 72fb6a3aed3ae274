/* Opens a .kiln program through Kiln's C API and lists its methods; with a
 * method name, runs that method on no inputs (a method that takes none).
 *
 *   kiln-consumer-c PROGRAM.kiln [METHOD]
 *
 * Exit status: 0 done, 1 Kiln reported an error (printed with its status
 * name and message), 2 usage error. */
#include <kiln/c_api.h>
#include <kiln/version.h>
#include <stdio.h>

static int fail(const char* what, kiln_status_t status) {
  fprintf(stderr, "error: %s: %s: %s\n", what, kiln_status_name(status), kiln_last_error_message());
  return 1;
}

/* Prints "name: dtype[d0, d1, ...]" for one input or output. */
static void print_spec(const kiln_tensor_spec_t* spec) {
  const char* name = "";
  kiln_dtype_t dtype = 0;
  size_t rank = 0;
  kiln_tensor_spec_name(spec, &name);
  kiln_tensor_spec_dtype(spec, &dtype);
  kiln_tensor_spec_dim(spec, &rank);
  const char* dtype_name = kiln_dtype_name(dtype);
  printf("%s: %s[", name, dtype_name ? dtype_name : "?");
  for (size_t d = 0; d < rank; ++d) {
    const char* dim_name = "";
    int64_t size = 0;
    kiln_tensor_spec_dim_name(spec, d, &dim_name);
    kiln_tensor_spec_dim_size(spec, d, &size);
    if (dim_name[0] != '\0') {
      printf("%s%s", d ? ", " : "", dim_name);
    } else {
      printf("%s%lld", d ? ", " : "", (long long)size);
    }
  }
  printf("]");
}

static kiln_status_t print_method(kiln_module_t* module, const char* name) {
  kiln_method_meta_t* meta = NULL;
  kiln_status_t s = kiln_module_method_meta(module, name, &meta);
  if (s != KILN_OK) return s;
  const char* device = "";
  size_t n_inputs = 0, n_outputs = 0;
  kiln_method_meta_device(meta, &device);
  kiln_method_meta_input_count(meta, &n_inputs);
  kiln_method_meta_output_count(meta, &n_outputs);
  printf("  %s (%s): (", name, device);
  for (size_t i = 0; i < n_inputs; ++i) {
    const kiln_tensor_spec_t* spec = NULL;
    if (kiln_method_meta_input(meta, i, &spec) == KILN_OK) {
      if (i) printf(", ");
      print_spec(spec);
    }
  }
  printf(") -> (");
  for (size_t i = 0; i < n_outputs; ++i) {
    const kiln_tensor_spec_t* spec = NULL;
    if (kiln_method_meta_output(meta, i, &spec) == KILN_OK) {
      if (i) printf(", ");
      print_spec(spec);
    }
  }
  printf(")\n");
  kiln_method_meta_free(meta);
  return KILN_OK;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s PROGRAM.kiln [METHOD]\n", argv[0]);
    return 2;
  }
  /* The library must be at least as new as the header this was compiled with. */
  if (kiln_abi_version() < KILN_ABI_VERSION) {
    fprintf(stderr, "error: libkiln %s has C ABI version %u; this program needs %u\n", kiln_version_string(),
            kiln_abi_version(), KILN_ABI_VERSION);
    return 1;
  }
  printf("Kiln %s (C API, built against %s)\n", kiln_version_string(), KILN_VERSION_STRING);

  kiln_module_t* module = NULL;
  kiln_status_t s = kiln_module_create(argv[1], NULL, 0, &module);
  if (s != KILN_OK) return fail(argv[1], s);
  size_t n_methods = 0;
  s = kiln_module_method_count(module, &n_methods); /* opens and checks the program */
  if (s != KILN_OK) {
    kiln_module_free(module);
    return fail(argv[1], s);
  }
  printf("%s: %zu method(s)\n", argv[1], n_methods);
  for (size_t i = 0; i < n_methods && s == KILN_OK; ++i) {
    const char* name = NULL;
    s = kiln_module_method_name(module, i, &name);
    if (s == KILN_OK) s = print_method(module, name);
  }
  if (s != KILN_OK) {
    kiln_module_free(module);
    return fail(argv[1], s);
  }

  if (argc == 3) {
    kiln_tensor_t** outputs = NULL;
    size_t n_outputs = 0;
    s = kiln_module_execute(module, argv[2], NULL, 0, &outputs, &n_outputs);
    if (s == KILN_OK) printf("%s: %zu output(s)\n", argv[2], n_outputs);
    kiln_tensor_array_free(outputs, n_outputs);
    if (s != KILN_OK) {
      kiln_module_free(module);
      return fail(argv[2], s);
    }
  }
  kiln_module_free(module);
  return 0;
}

/* A minimal shared library shaped like an AOTInductor model library: it
 * imports aoti_torch_* shims and exports an entry point. Its bytes seed the
 * program reader fuzzer's ELF parsing; it is never loaded. */
typedef void* AtenTensorHandle;
int aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret);
int aoti_torch_get_numel(AtenTensorHandle tensor, long long* ret);

__attribute__((visibility("default"))) int AOTInductorModelContainerRun(AtenTensorHandle* inputs, void** out) {
  long long n = 0;
  if (aoti_torch_get_numel(inputs[0], &n)) return 1;
  return n > 0 ? aoti_torch_get_data_ptr(inputs[0], out) : 0;
}

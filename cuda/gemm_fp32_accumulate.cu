#include "cuda/gemm_fp32_accumulate.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

namespace {

// cuBLAS is opened on the first product, not linked: its libraries (cublasLt's 540 MB) cost
// every process 0.045 s of CPU to map and relocate at start-up, also the CPU runs of a CUDA build
// (prep on a login node, CI) that never call it. The pointers' types come from cublas_v2.h, so
// the compiler still checks every call against the toolkit's declarations.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // cublasGemmEx with a cublasComputeType_t (the header also has an inline one taking a
  // cudaDataType); the cast fails to compile unless the header declares exactly this one.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(static_cast<GemmEx>(&cublasGemmEx)) gemm_ex = nullptr;
  std::string error;  // empty once loaded
};

template <typename Function>
void find_symbol(void* library, const char* name, Function& function, std::string& missing) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (!function) missing += std::string(missing.empty() ? "" : ", ") + name;
}

Cublas load_cublas() {
  Cublas loaded;
  // The soname first (LD_LIBRARY_PATH, the program's run path, ld.so.cache), then the toolkit
  // this was built with.
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) library = dlopen((std::string(ST_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    loaded.error = "cannot load " + soname + " (the CUDA toolkit's cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
                   ", looked for as " + soname + " and in " + ST_CUDA_LIBRARY_DIR + "): " + (why ? why : "not found") +
                   "; add its directory to LD_LIBRARY_PATH";
    return loaded;
  }
  std::string missing;
  find_symbol(library, "cublasCreate_v2", loaded.create, missing);
  find_symbol(library, "cublasSetStream_v2", loaded.set_stream, missing);
  find_symbol(library, "cublasGemmEx", loaded.gemm_ex, missing);
  if (!missing.empty()) loaded.error = soname + " lacks " + missing + "; it is not the cuBLAS this was built with";
  return loaded;
}

const Cublas& cublas() {
  static const Cublas loaded = load_cublas();
  return loaded;
}

// One handle per thread and device (cuBLAS handles are neither shared across threads nor devices).
cublasHandle_t handle_for_current_device() {
  constexpr int kMaxDevices = 64;
  thread_local cublasHandle_t handles[kMaxDevices] = {};
  int device = 0;
  cudaGetDevice(&device);
  if (!handles[device]) cublas().create(&handles[device]);
  return handles[device];
}

}  // namespace

extern "C" const char* st_cublas_load_error(void) {
  const Cublas& loaded = cublas();
  return loaded.error.empty() ? nullptr : loaded.error.c_str();
}

extern "C" int st_gemm_tn_fp32_out(const void* d, const void* h, float* out, StGemmInput input, int64_t n,
                                   int64_t vocab, int64_t dim, int accumulate, cudaStream_t stream) {
  if (st_cublas_load_error()) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasHandle_t handle = handle_for_current_device();
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasStatus_t status = cublas().set_stream(handle, stream);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  const cudaDataType type = input == ST_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  // Column-major view: out^T [D, V] = h^T [D, n] x d [n, V]; h row-major [n, D] is h^T with
  // leading dimension D, d row-major [n, V] is d^T [V, n] with leading dimension V, transposed.
  status = cublas().gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(dim), static_cast<int>(vocab),
                        static_cast<int>(n), &alpha, h, type, static_cast<int>(dim), d, type,
                        static_cast<int>(vocab), &beta, out, CUDA_R_32F, static_cast<int>(dim),
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return status;
}

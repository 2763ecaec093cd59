# Spack recipe for shardtune (Spack's classic package API: `from spack.package import *`).
# Spack has no libtorch package: libtorch comes from py-torch, whose TorchConfig.cmake lives in
# its python site-packages; Torch_DIR points CMake there.

from spack.package import *


class Shardtune(CMakePackage, CudaPackage):
    """FSDP-style fine-tuning (SFT, DPO and variants) of Llama-family LLMs on GPU clusters:
    one MPI rank per GPU, NCCL collectives, sharded checkpoints, HF safetensors in and out."""

    homepage = "https://github.com/shardtune/shardtune"
    git = "https://github.com/shardtune/shardtune.git"

    maintainers("shardtune")

    version("main", branch="main")

    variant("nvtx", default=False, description="Annotate phases with NVTX ranges for Nsight", when="+cuda")

    depends_on("cxx", type="build")
    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")  # finds PCRE2 and ICU
    depends_on("mpi")
    depends_on("hdf5~mpi+threadsafe")  # checkpoints are written on a background thread
    depends_on("boost+program_options")
    depends_on("nlohmann-json@3.9:")
    depends_on("zlib-api")
    depends_on("pcre2")  # the tokenizer's pre-tokenizer regexes (libpcre2-8)
    depends_on("icu4c")  # the tokenizer's NFC normalizer (icu-uc)
    depends_on("protobuf")  # TensorBoard event files (messages compiled by protoc at build time)
    depends_on("py-torch")
    depends_on("py-torch+cuda", when="+cuda")
    depends_on("py-torch~cuda", when="~cuda")
    depends_on("nccl", when="+cuda")
    depends_on("googletest", type="test")

    conflicts("cuda_arch=none", when="+cuda", msg="set the GPU architecture, e.g. cuda_arch=90 for H100")

    def cmake_args(self):
        spec = self.spec
        torch_cmake = spec["py-torch"].package.cmake_prefix_paths[0]
        args = [
            self.define("Torch_DIR", join_path(torch_cmake, "Torch")),
            self.define("ST_ENABLE_CUDA", "ON" if spec.satisfies("+cuda") else "OFF"),
            self.define("ST_BUILD_TESTS", self.run_tests),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
            args.append(self.define_from_variant("ST_ENABLE_NVTX", "nvtx"))
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(spec.variants["cuda_arch"].value)))
        return args

    def check(self):
        # unit and single-node MPI tests; e2e needs Slurm daemons, cuda tests a GPU
        ctest = Executable(join_path(self.spec["cmake"].prefix.bin, "ctest"))
        with working_dir(self.build_directory):
            ctest("--output-on-failure", "-L", "unit|mpi")

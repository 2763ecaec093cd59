# Spack recipe for shardtune (Spack's classic package API: `from spack.package import *`).
# Supported Spack versions: docs/install.md (tried for real: 0.23.0.dev0, June 2024).
# Spack has no libtorch package: libtorch comes from py-torch (or a site's external libtorch
# registered as py-torch); _torch_cmake_dir finds its TorchConfig.cmake in either layout.

import glob
import os

import spack.repo
from spack.package import *


def _compilers_are_dependencies():
    """Spack 0.23 and later give a package a compiler only through its language dependencies
    (the c and cxx virtuals that gcc, llvm, ... provide); older Spack gives every package one and
    knows no such packages ("Package 'c' not found"). Whether gcc provides c tells them apart,
    development snapshots between releases included."""
    try:
        gcc = spack.repo.PATH.get_pkg_class("gcc")
    except Exception:
        return True  # a repository layout newer than this recipe: declare them
    provided = getattr(gcc, "provided", {})
    return any(virtual.name == "c" for virtuals in provided.values() for virtual in virtuals)


# Asked before the class body: loading another recipe there would hand it this one's pending
# directives.
_LANGUAGE_DEPENDENCIES = _compilers_are_dependencies()


class Shardtune(CMakePackage, CudaPackage):
    """FSDP-style fine-tuning (SFT, DPO and variants) of Llama-family LLMs on GPU clusters:
    one MPI rank per GPU, NCCL collectives, sharded checkpoints, HF safetensors in and out."""

    homepage = "https://github.com/shardtune/shardtune"
    git = "https://github.com/shardtune/shardtune.git"

    maintainers("shardtune")

    version("main", branch="main")

    variant("nvtx", default=False, description="Annotate phases with NVTX ranges for Nsight", when="+cuda")

    if _LANGUAGE_DEPENDENCIES:
        depends_on("c", type="build")
        depends_on("cxx", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")  # finds PCRE2 and ICU
    depends_on("mpi")
    depends_on("hdf5~mpi+threadsafe")  # checkpoints are written on a background thread
    depends_on("boost+program_options")
    depends_on("nlohmann-json@3.9:")
    depends_on("yaml-cpp@0.6:")
    depends_on("zlib-api")
    depends_on("pcre2")  # the tokenizer's pre-tokenizer regexes (libpcre2-8)
    depends_on("icu4c")  # the tokenizer's NFC normalizer (icu-uc)
    depends_on("protobuf")  # TensorBoard event files (messages compiled by protoc at build time)
    depends_on("py-torch")
    depends_on("py-torch~cuda", when="~cuda")
    depends_on("nccl", when="+cuda")
    # The GPU architectures reach the CUDA dependencies: `shardtune +cuda cuda_arch=90` alone
    # concretizes (nccl refuses cuda_arch=none; torch's kernels must cover the same GPUs).
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"py-torch+cuda cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"nccl cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
    depends_on("googletest", type="test")

    conflicts("cuda_arch=none", when="+cuda", msg="set the GPU architecture, e.g. cuda_arch=90 for H100")

    def _torch_cmake_dir(self):
        """The directory holding TorchConfig.cmake: py-torch's own site-packages layout, or a
        distribution's or pytorch.org's libtorch registered as an external py-torch."""
        torch = self.spec["py-torch"]
        candidates = []
        try:
            candidates += [join_path(p, "Torch") for p in torch.package.cmake_prefix_paths]
        except Exception:
            pass  # an external py-torch whose python is not in the DAG
        prefix = torch.prefix
        for pattern in ("lib/python3*/site-packages/torch/share/cmake/Torch",
                        "lib/python3*/dist-packages/torch/share/cmake/Torch",
                        "lib/python3/dist-packages/torch/share/cmake/Torch",
                        "lib/*/cmake/Torch", "lib/cmake/Torch", "share/cmake/Torch"):
            candidates += sorted(glob.glob(join_path(prefix, pattern)))
        for candidate in candidates:
            if os.path.isfile(join_path(candidate, "TorchConfig.cmake")):
                return candidate
        raise InstallError(
            f"shardtune: no TorchConfig.cmake under py-torch's prefix {prefix} (looked in: "
            + ", ".join(candidates) + "); register the libtorch directory that holds it as py-torch's prefix"
        )

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("Torch_DIR", self._torch_cmake_dir()),
            self.define("ST_ENABLE_CUDA", "ON" if spec.satisfies("+cuda") else "OFF"),
            self.define("ST_BUILD_TESTS", self.run_tests),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
            args.append(self.define_from_variant("ST_ENABLE_NVTX", "nvtx"))
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(spec.variants["cuda_arch"].value)))
        return args

    def setup_run_environment(self, env):
        # Spack-generated modules then point where launch.slurm's comments and the installed
        # modulefile do: $SHARDTUNE_ROOT/share/shardtune/slurm, .../examples, share/doc/shardtune.
        env.set("SHARDTUNE_ROOT", self.prefix)

    def check(self):
        # unit and single-node MPI tests; e2e needs Slurm daemons, cuda tests a GPU. The build
        # directory belongs to the builder in Spack >= 0.19, to the package before.
        builder = getattr(self, "builder", self)
        ctest = Executable(join_path(self.spec["cmake"].prefix.bin, "ctest"))
        with working_dir(builder.build_directory):
            ctest("--output-on-failure", "-j", str(make_jobs), "-L", "unit|mpi")

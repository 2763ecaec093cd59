#!/usr/bin/env python3
"""check_spack_recipe.py <source dir>: the Spack recipe and environment follow Spack's
conventions without Spack at hand (CI has none): package.py parses, its class is named after
the package and builds on CMakePackage + CudaPackage, declares the dependencies the build needs
with the right conditions, and passes Torch_DIR; spack.yaml adds the repo and asks for a CUDA
and a CPU build with views. Exits 1 naming every problem found."""
import ast
import pathlib
import re
import sys

import yaml

source = pathlib.Path(sys.argv[1])
recipe_path = source / "spack/repo/packages/shardtune/package.py"
problems = []


def call_strings(call):
    """The string literals among a call's positional and keyword arguments."""
    values = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    values += [f"{k.arg}={k.value.value}" for k in call.keywords if isinstance(k.value, ast.Constant)]
    return values


tree = ast.parse(recipe_path.read_text(), filename=str(recipe_path))
classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
if [c.name for c in classes] != ["Shardtune"]:
    problems.append(f"{recipe_path}: one class named Shardtune expected, found {[c.name for c in classes]}")
recipe = classes[0] if classes else ast.ClassDef(name="", bases=[], body=[])
bases = [b.id for b in recipe.bases if isinstance(b, ast.Name)]
if bases != ["CMakePackage", "CudaPackage"]:
    problems.append(f"{recipe_path}: Shardtune should derive from CMakePackage, CudaPackage (has {bases})")
if not any(isinstance(n, ast.ImportFrom) and n.module == "spack.package" for n in tree.body):
    problems.append(f"{recipe_path}: lacks `from spack.package import *`")
if not ast.get_docstring(recipe):
    problems.append(f"{recipe_path}: the class needs a docstring (spack info shows it)")

directives = {}
for statement in recipe.body:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        name = getattr(statement.value.func, "id", "")
        directives.setdefault(name, []).append(call_strings(statement.value))
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            directives.setdefault("=" + getattr(target, "id", ""), []).append([])

expected = {
    "depends_on": [["mpi"], ["boost+program_options"], ["py-torch"], ["nccl", "when=+cuda"],
                   ["googletest", "type=test"], ["cmake@3.18:", "type=build"], ["nlohmann-json@3.9:"],
                   ["yaml-cpp@0.6:"]],
    "version": [["main", "branch=main"]],
}
for directive, calls in expected.items():
    for call in calls:
        if call not in directives.get(directive, []):
            problems.append(f"{recipe_path}: missing {directive}({', '.join(call)})")
# Every dependency cmake/ looks for is declared: what CMake finds (find_package, pkg-config
# modules, find_library/find_path names) mapped to the Spack package providing it. A new
# lookup without a mapping here is a problem too, so the recipe cannot silently fall behind.
SPACK_PACKAGE = {
    "Torch": "py-torch", "MPI": "mpi", "HDF5": "hdf5", "hdf5_serial": "hdf5", "hdf5.h": "hdf5",
    "ZLIB": "zlib-api", "Boost": "boost", "PkgConfig": "pkgconfig", "libpcre2-8": "pcre2",
    "icu-uc": "icu4c", "nlohmann_json": "nlohmann-json", "Protobuf": "protobuf", "CUDAToolkit": "cuda", "nccl.h": "nccl",
    "nccl": "nccl", "GTest": "googletest", "yaml-cpp": "yaml-cpp", "GoogleTest": None,  # include(GoogleTest): CMake's own module
}
FROM_BASE_CLASS = {"cuda"}  # CudaPackage adds depends_on("cuda", when="+cuda")
lookups = set()
for path in sorted((source / "cmake").glob("*.cmake")) + [source / "CMakeLists.txt"]:
    text = path.read_text()
    lookups |= {(m, path.name) for m in re.findall(r"find_package\(([\w-]+)", text)}
    lookups |= {(m, path.name) for m in re.findall(r"pkg_check_modules\(\w+(?: [A-Z_]+)* ([\w.+-]+)\)", text)}
    lookups |= {(m, path.name) for m in re.findall(r"find_library\(\w+ NAMES (\w+)", text)}
    lookups |= {(m, path.name) for m in re.findall(r"find_path\(\w+ ([\w.]+)", text)}
declared = {c[0].split("@")[0].split("+")[0].split("~")[0] for c in directives.get("depends_on", []) if c}
for found, where in sorted(lookups):
    if found not in SPACK_PACKAGE:
        problems.append(f"cmake/{where} looks for {found}: map it to its Spack package in check_spack_recipe.py "
                        "and declare it in the recipe")
        continue
    package = SPACK_PACKAGE[found]
    if package and package not in declared and package not in FROM_BASE_CLASS:
        problems.append(f"{recipe_path}: cmake/{where} needs {found}; add depends_on(\"{package}\")")
if len(lookups) < 10:
    problems.append(f"found only {len(lookups)} dependency lookups in cmake/: the patterns above miss some")

if not any(c and c[0].startswith("hdf5") and "+threadsafe" in c[0] for c in directives.get("depends_on", [])):
    problems.append(f"{recipe_path}: hdf5 must be +threadsafe (ckpt.async)")
if not any(c and c[0] == "nvtx" for c in directives.get("variant", [])):
    problems.append(f"{recipe_path}: missing variant nvtx")
for attribute in ("homepage", "git"):
    if "=" + attribute not in directives:
        problems.append(f"{recipe_path}: missing the {attribute} attribute")
methods = {n.name: ast.unparse(n) for n in recipe.body if isinstance(n, ast.FunctionDef)}
for define in ("Torch_DIR", "ST_ENABLE_CUDA", "NCCL_ROOT", "CMAKE_CUDA_ARCHITECTURES"):
    if define not in methods.get("cmake_args", ""):
        problems.append(f"{recipe_path}: cmake_args does not set {define}")

# The three faults a real Spack found (docs/install.md): cuda_arch must reach nccl and py-torch
# (nccl refuses cuda_arch=none), check() must find the build directory on the builder (current
# Spack), and c/cxx may be declared only where Spack knows them (a condition, not unconditionally).
recipe_text = ast.unparse(recipe)
for package in ("nccl", "py-torch+cuda"):
    if not re.search(r"depends_on\(f'" + re.escape(package) + r"[^']* cuda_arch=\{arch\}'", recipe_text):
        problems.append(f"{recipe_path}: {package} does not get shardtune's cuda_arch (depends_on per arch)")
if "self.build_directory" in methods.get("check", "") or "builder" not in methods.get("check", ""):
    problems.append(f"{recipe_path}: check() must take the build directory from self.builder (Spack >= 0.19)")
if [c for c in directives.get("depends_on", []) if c and c[0] in ("c", "cxx")]:
    problems.append(f"{recipe_path}: depends_on('c'/'cxx') unconditionally fails on Spack without language virtuals")

environment = yaml.safe_load((source / "spack.yaml").read_text())["spack"]
for repo in environment.get("repos", []):
    if not (source / repo / "repo.yaml").is_file():
        problems.append(f"spack.yaml: repos lists {repo}, which has no repo.yaml")
specs = " ".join(str(s) for group in environment.get("definitions", []) for s in sum(group.values(), []))
specs += " ".join(str(s) for s in environment.get("specs", []))
for wanted in ("+cuda cuda_arch=90", "~cuda"):
    if wanted not in specs:
        problems.append(f"spack.yaml: no spec with {wanted}")
if "view" not in environment or "unify" not in environment.get("concretizer", {}):
    problems.append("spack.yaml: needs a view and concretizer: unify")

for problem in problems:
    print("FAIL:", problem)
print(f"checked {recipe_path} and spack.yaml: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)

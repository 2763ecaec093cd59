# Finds every external dependency; a missing one stops configure with the Debian package to
# install or the CMake variable to set, instead of a bare "not found".

function(st_require found what hint)
  if(NOT ${found})
    message(FATAL_ERROR "shardtune: ${what} not found. ${hint}")
  endif()
endfunction()

find_package(Torch QUIET)
st_require(Torch_FOUND "libtorch"
  "Install Debian's libtorch-dev (CPU), or point Torch_DIR / CMAKE_PREFIX_PATH at a libtorch 2.x \
with CUDA (python3 -c 'import torch;print(torch.utils.cmake_prefix_path)').")
set(ST_TORCH_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(ST_TORCH_CUDA ON)
endif()

find_package(MPI QUIET COMPONENTS C)
st_require(MPI_C_FOUND "MPI (C bindings)"
  "Install libopenmpi-dev and openmpi-bin, or set MPI_HOME to your MPI installation.")

find_package(HDF5 QUIET COMPONENTS C)
if(NOT HDF5_FOUND)
  # Debian's layout (include/hdf5/serial, lib/<arch>/libhdf5_serial) is found by FindHDF5 only
  # through the h5cc wrapper, which packages unpacked elsewhere (HDF5_ROOT) lack.
  find_path(ST_HDF5_INCLUDE_DIR hdf5.h HINTS ${HDF5_ROOT} $ENV{HDF5_ROOT}
    PATH_SUFFIXES include/hdf5/serial include)
  find_library(ST_HDF5_LIBRARY NAMES hdf5_serial hdf5 HINTS ${HDF5_ROOT} $ENV{HDF5_ROOT}
    PATH_SUFFIXES lib/${CMAKE_LIBRARY_ARCHITECTURE} lib)
  if(ST_HDF5_INCLUDE_DIR AND ST_HDF5_LIBRARY)
    set(HDF5_FOUND TRUE)
    set(HDF5_C_INCLUDE_DIRS ${ST_HDF5_INCLUDE_DIR})
    set(HDF5_C_LIBRARIES ${ST_HDF5_LIBRARY})
    file(STRINGS ${ST_HDF5_INCLUDE_DIR}/H5pubconf.h _st_h5_version REGEX "define H5_VERSION ")
    string(REGEX MATCH "\"([0-9.]+)\"" _st_h5_version "${_st_h5_version}")
    set(HDF5_VERSION ${CMAKE_MATCH_1})
  endif()
endif()
st_require(HDF5_FOUND "HDF5 (C API)" "Install libhdf5-dev, or set HDF5_ROOT.")

find_package(ZLIB QUIET)
st_require(ZLIB_FOUND "zlib" "Install zlib1g-dev, or set ZLIB_ROOT.")

find_package(Boost 1.71 QUIET COMPONENTS program_options)
st_require(Boost_FOUND "Boost.Program_options >= 1.71"
  "Install libboost-program-options-dev, or set Boost_ROOT.")

# TensorBoard event files: the messages compiled from lib/train/tensorboard_event.proto.
find_package(Protobuf 3.12 QUIET)
if(NOT Protobuf_PROTOC_EXECUTABLE)
  set(Protobuf_FOUND FALSE)
endif()
st_require(Protobuf_FOUND "Protocol Buffers (libprotobuf and protoc)"
  "Install libprotobuf-dev and protobuf-compiler, or set Protobuf_ROOT.")

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
endif()
st_require(PCRE2_FOUND "PCRE2 (libpcre2-8)"
  "Install libpcre2-dev (the tokenizer's pre-tokenizer regexes), or put libpcre2-8.pc on PKG_CONFIG_PATH.")
if(PkgConfig_FOUND)
  pkg_check_modules(ICU QUIET IMPORTED_TARGET icu-uc)
endif()
st_require(ICU_FOUND "ICU (icu-uc)"
  "Install libicu-dev (the tokenizer's NFC normalizer), or put icu-uc.pc on PKG_CONFIG_PATH.")

# LlamaFactory's and TRL's YAML configs (train --config run.yaml). 0.8 names its target
# yaml-cpp::yaml-cpp, 0.7 (Debian 12) yaml-cpp.
find_package(yaml-cpp 0.6 QUIET)
st_require(yaml-cpp_FOUND "yaml-cpp >= 0.6"
  "Install libyaml-cpp-dev (reads LlamaFactory's and TRL's YAML configs), or set yaml-cpp_DIR.")
if(TARGET yaml-cpp::yaml-cpp)
  set(ST_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(ST_YAML_TARGET yaml-cpp)
endif()

find_package(nlohmann_json 3.9 QUIET)
st_require(nlohmann_json_FOUND "nlohmann-json >= 3.9"
  "Install nlohmann-json3-dev, or set nlohmann_json_DIR.")

# CUDA runtime + NCCL: only host code here (no nvcc needed), so CI compiles and links the GPU
# backend against /usr/local/cuda even without a GPU.
set(ST_HAVE_CUDA OFF)
if(NOT ST_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND CUDAToolkit_NVCC_EXECUTABLE)
    set(ST_HAVE_CUDA ON)
    # cuda/'s kernels: nvcc with the C++ compiler as host compiler; Ampere and Hopper by default
    # (nvcc 13 builds nothing older than sm_75), -DCMAKE_CUDA_ARCHITECTURES=... for others.
    if(NOT CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    endif()
    if(NOT CMAKE_CUDA_HOST_COMPILER)
      set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    endif()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
  elseif(ST_ENABLE_CUDA STREQUAL "ON")
    st_require(CUDAToolkit_FOUND "CUDA toolkit"
      "Install the CUDA toolkit, set CUDAToolkit_ROOT, or configure with -DST_ENABLE_CUDA=OFF.")
    st_require(NCCL_INCLUDE_DIR "nccl.h"
      "Install NCCL (libnccl-dev) or set NCCL_ROOT, or configure with -DST_ENABLE_CUDA=OFF.")
    st_require(NCCL_LIBRARY "libnccl"
      "Install NCCL (libnccl2) or set NCCL_ROOT, or configure with -DST_ENABLE_CUDA=OFF.")
  endif()
endif()

message(STATUS "shardtune: libtorch ${Torch_VERSION} (CUDA in libtorch: ${ST_TORCH_CUDA})")
message(STATUS "shardtune: MPI standard ${MPI_C_VERSION}, HDF5 ${HDF5_VERSION}, Boost ${Boost_VERSION}")
if(ST_HAVE_CUDA)
  message(STATUS "shardtune: CUDA/NCCL code compiled: YES (CUDA ${CUDAToolkit_VERSION}, "
                 "nccl.h in ${NCCL_INCLUDE_DIR}, ${NCCL_LIBRARY})")
else()
  message(STATUS "shardtune: CUDA/NCCL code compiled: NO (ST_ENABLE_CUDA=${ST_ENABLE_CUDA})")
endif()

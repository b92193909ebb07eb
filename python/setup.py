"""Builds tutti_torch, the "tutti" backend for torch.distributed.

    TUTTI_HOME=/usr/local pip install ./python      # against an installed tutti
    python3 python/setup.py build_ext --inplace       # against ./build (the default)
    TUTTI_TORCH_CUDA=0 ...                           # without the CUDA-tensor path

TUTTI_HOME is a prefix with include/tutti/tutti.h and lib/libtutti.so; without
it the source tree's include/ and build/ are used.
"""
import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

here = os.path.dirname(os.path.abspath(__file__))
home = os.environ.get("TUTTI_HOME")
if home:
    include_dir = os.path.join(home, "include")
    library_dir = os.path.join(home, "lib")
else:
    include_dir = os.path.join(here, "..", "include")
    library_dir = os.environ.get("TUTTI_BUILD_DIR", os.path.join(here, "..", "build"))
library_dir = os.path.abspath(library_dir)

# A PyTorch built with CUDA: CUDA tensors go to tutti's stream-ordered device
# calls (csrc/device_stream.h); without it they are staged through the host.
# TUTTI_TORCH_CUDA=0 builds the host-staged path against a CUDA PyTorch too.
with_cuda = torch.version.cuda is not None and os.environ.get("TUTTI_TORCH_CUDA", "1") != "0"
Extension = CUDAExtension if with_cuda else CppExtension

sources = [os.path.join("csrc", f) for f in
           ("module.cpp", "process_group_tutti.cpp", "coalesced_calls.cpp", "sparse_allreduce.cpp",
            "monitored_barrier.cpp", "inbox.cpp", "point_to_point.cpp", "torch2_surface.cpp", "membership.cpp",
            "tensor_map.cpp", "tutti_work.cpp", "device_stream.cpp", "stream_work.cpp", "completion_pool.cpp",
            "live_groups.cpp")]
# tutti's own in-order worker runs the collectives (libtutti exports only the
# C API, so its source is compiled in).
sources.append(os.path.join("..", "src", "common", "serial_worker.cpp"))
# TUTTI_TORCH_REUSE_OBJECTS: another build's folder (CMake passes the CUDA
# variant's to the host-staged one). Only device_stream.cpp reads
# TUTTI_TORCH_CUDA, so every other file's object there is this build's too:
# linked, not compiled again (the second variant cost as much as the first).
extra_objects = []
reuse = os.environ.get("TUTTI_TORCH_REUSE_OBJECTS")
if reuse:
    own = [os.path.join("csrc", "device_stream.cpp")]
    names = {os.path.splitext(os.path.basename(f))[0] for f in sources if f not in own}
    found = {os.path.splitext(os.path.basename(o))[0]: o
             for o in glob.glob(os.path.join(reuse, "**", "*.o"), recursive=True)}
    missing = sorted(names - found.keys())
    if missing:
        raise SystemExit(f"TUTTI_TORCH_REUSE_OBJECTS={reuse}: no object for {', '.join(missing)}")
    extra_objects = [found[n] for n in sorted(names)]
    sources = own

setup(
    name="tutti_torch",
    version="0.1.0",
    description="tutti as a torch.distributed backend",
    packages=["tutti_torch"],
    ext_modules=[
        Extension(
            "tutti_torch._C",
            sources=sources,
            extra_objects=extra_objects,
            depends=extra_objects,  # relinked when the other build's objects change
            include_dirs=[os.path.abspath(include_dir), os.path.abspath(os.path.join(here, ".."))],
            library_dirs=[library_dir],
            libraries=["tutti"],
            runtime_library_dirs=[library_dir],
            define_macros=[("TUTTI_TORCH_CUDA", "1")] if with_cuda else [],
            extra_compile_args=["-O2", "-std=c++20",  # recent PyTorch headers need it (2.14's ATen refuses less)
                                "-Wno-deprecated-declarations",
                                # Line tables only: Python's -g gives every file full debug
                                # info of PyTorch's headers, 40% of the build's time (a
                                # file 52 s against 31 on this CI's cores).
                                "-g1"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)

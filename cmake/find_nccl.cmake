# Finds NCCL for the CUDA backend's multi-GPU parts; never fails the configure.
# Looks in LLMRT_NCCL_ROOT (cache) or $NCCL_ROOT / $NCCL_HOME, then in the CUDA toolkit's and the
# system's paths, then in the Python site-packages of PyPI's nvidia-nccl-cu13 wheel
# (nvidia/nccl/{include,lib}). libnccl is looked for next to the nccl.h found first.
# Sets LLMRT_NCCL_FOUND and LLMRT_NCCL_WHY (for the summary); when found, defines the INTERFACE
# target llmrt::nccl (nccl.h, libnccl, llmrt::cuda, LLMRT_HAVE_NCCL=1). The target lives in the
# build tree only: it is not installed or exported.
set(LLMRT_NCCL_FOUND OFF)
set(LLMRT_NCCL_ROOT "" CACHE PATH "Where NCCL is installed (a folder with include/nccl.h and lib/libnccl.so*)")

set(_llmrt_nccl_roots "")
set(_llmrt_nccl_wheel_roots "")
foreach(_root IN ITEMS "${LLMRT_NCCL_ROOT}" "$ENV{NCCL_ROOT}" "$ENV{NCCL_HOME}")
  if(_root)
    list(APPEND _llmrt_nccl_roots "${_root}")
  endif()
endforeach()

# The Python interpreter's package folders, where pip puts nvidia/nccl/. No Python is fine.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -c [=[
import os, sys, site, sysconfig
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
for key in ("purelib", "platlib"):
    try:
        dirs.append(sysconfig.get_paths()[key])
    except Exception:
        pass
dirs += [p for p in sys.path if p]
seen = []
for d in dirs:
    if d not in seen and os.path.isdir(os.path.join(d, "nvidia", "nccl")):
        seen.append(d)
print(";".join(os.path.join(d, "nvidia", "nccl") for d in seen), end="")
]=]
    RESULT_VARIABLE _llmrt_py_rc
    OUTPUT_VARIABLE _llmrt_py_out
    ERROR_QUIET
    TIMEOUT 30)
  if(_llmrt_py_rc EQUAL 0 AND _llmrt_py_out)
    set(_llmrt_nccl_wheel_roots ${_llmrt_py_out})
  endif()
endif()

# PATHS come after the system's paths: a system NCCL is preferred to the wheel's.
find_path(LLMRT_NCCL_INCLUDE_DIR nccl.h
  HINTS ${_llmrt_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS}
  PATHS ${_llmrt_nccl_wheel_roots}
  PATH_SUFFIXES include
  DOC "The folder of nccl.h")
set(_llmrt_nccl_header_root "")
if(LLMRT_NCCL_INCLUDE_DIR)
  get_filename_component(_llmrt_nccl_header_root "${LLMRT_NCCL_INCLUDE_DIR}" DIRECTORY)
endif()
# The wheel ships libnccl.so.2 alone (no libnccl.so link), so that name is asked for too, in each
# folder in turn (NAMES_PER_DIR), so that the library next to the header wins.
find_library(LLMRT_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
  HINTS ${_llmrt_nccl_header_root} ${_llmrt_nccl_roots} ${CUDAToolkit_LIBRARY_DIR}
  PATHS ${_llmrt_nccl_wheel_roots}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu
  DOC "libnccl")

if(LLMRT_NCCL_INCLUDE_DIR AND LLMRT_NCCL_LIBRARY)
  set(LLMRT_NCCL_FOUND ON)
  set(LLMRT_NCCL_WHY "found at ${LLMRT_NCCL_LIBRARY} (nccl.h in ${LLMRT_NCCL_INCLUDE_DIR})")
  if(NOT TARGET llmrt_nccl)
    add_library(llmrt_nccl INTERFACE)
    add_library(llmrt::nccl ALIAS llmrt_nccl)
    target_include_directories(llmrt_nccl SYSTEM INTERFACE "${LLMRT_NCCL_INCLUDE_DIR}")
    target_link_libraries(llmrt_nccl INTERFACE llmrt::cuda "${LLMRT_NCCL_LIBRARY}")
    target_compile_definitions(llmrt_nccl INTERFACE LLMRT_HAVE_NCCL=1)
  endif()
else()
  set(LLMRT_NCCL_WHY "not found (tensor parallelism on the CPU backend only; set LLMRT_NCCL_ROOT, or pip install nvidia-nccl-cu13)")
endif()

# Fails when a kernel of framework/ops could race under programmatic dependent
# launch (Note [programmatic dependent launch], framework/ops/kernels/kernel_launch_cuda.h):
# a launch that bypasses launch_kernel() (a `<<<` launch), or a __global__
# function whose body does not start with grid_dependency_begin(). Run at build
# time for tr_ops:
#   cmake -DROOT=<source dir> -DSTAMP=<file> -P check_kernel_launch.cmake
cmake_minimum_required(VERSION 3.20)
file(GLOB_RECURSE files "${ROOT}/framework/ops/*.cu" "${ROOT}/framework/ops/*_cuda.h")
list(FILTER files EXCLUDE REGEX "kernel_launch_cuda\\.h$")  # states the rule
set(bad "")
foreach(f IN LISTS files)
  file(RELATIVE_PATH rel "${ROOT}" "${f}")
  file(READ "${f}" text)
  string(FIND "${text}" "<<<" at)
  if(NOT at EQUAL -1)
    string(APPEND bad "\n  ${rel}: a <<<...>>> launch (use launch_kernel)")
  endif()
  set(rest "${text}")
  while(TRUE)
    string(FIND "${rest}" "__global__" g)
    if(g EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" ${g} -1 rest)
    string(FIND "${rest}" "{" brace)
    string(SUBSTRING "${rest}" 0 ${brace} head)
    math(EXPR after "${brace} + 1")
    string(SUBSTRING "${rest}" ${after} -1 rest)
    string(STRIP "${rest}" body)
    if(NOT body MATCHES "^(cuda::)?grid_dependency_begin\\(\\);")
      string(REGEX REPLACE "[ \t\n]+" " " head "${head}")
      string(APPEND bad "\n  ${rel}: ${head}{ does not start with grid_dependency_begin();")
    endif()
  endwhile()
endforeach()
if(bad)
  message(FATAL_ERROR "kernels that bypass Note [programmatic dependent launch]:${bad}")
endif()
file(WRITE "${STAMP}" "ok\n")

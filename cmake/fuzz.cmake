# Note [fuzzing]: TR_FUZZ=ON builds the libFuzzer targets of tests/fuzz/ (one
# per parser: ci/fuzz.sh runs them). It needs clang, builds CPU-only, and
# compiles every library with coverage, ASan and UBSan, so a target only links
# libFuzzer's main. UBSan does not recover: undefined behaviour is a crash the
# fuzzer keeps. The tools and tests configure as usual but are not built by
# ci/fuzz.sh (it builds the `tr_fuzz` target alone).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TR_FUZZ=ON needs clang (-DCMAKE_CXX_COMPILER=clang++), got ${CMAKE_CXX_COMPILER_ID}")
endif()
set(TR_CUDA OFF CACHE STRING "Build the CUDA backend: AUTO, ON or OFF" FORCE)
set(tr_fuzz_sanitize -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
add_compile_options(-fsanitize=fuzzer-no-link ${tr_fuzz_sanitize} -g)
add_link_options(${tr_fuzz_sanitize})

# tests/fuzz/fuzz_<name>.cpp -> build-fuzz/bin/fuzz_<name>; called after tr_harness exists.
function(tr_add_fuzz_targets)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.cpp)
  add_custom_target(tr_fuzz)
  foreach(src ${srcs})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE tr_harness)
    add_dependencies(tr_fuzz ${name})
  endforeach()
endfunction()

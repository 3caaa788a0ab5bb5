# tessera_cross_runtime(TRIPLE ARCHIVE_VAR RUNNER_VAR): for another architecture, with LLVM's
# clang: the runtime archive (src/runtime/*.cpp), so that `tessera build --target "llvm
# -mtriple=TRIPLE"` links a library that machine loads, and tessera-run-model
# (src/model_runner/), which runs such a library there (or under qemu-user here). Needs Debian's
# cross C and C++ libraries for TRIPLE (libc6-dev-<arch>-cross, libstdc++-12-dev-<arch>-cross:
# scripts/setup.sh installs the aarch64 ones); without them both variables stay empty and such
# builds say what is missing.
function(tessera_cross_runtime triple out_var runner_var)
  set(${out_var} "" PARENT_SCOPE)
  set(${runner_var} "" PARENT_SCOPE)
  set(clangxx "${LLVM_TOOLS_BINARY_DIR}/clang++")
  set(llvm_ar "${LLVM_TOOLS_BINARY_DIR}/llvm-ar")
  if(NOT EXISTS "${clangxx}" OR NOT EXISTS "${llvm_ar}"
     OR NOT EXISTS "/usr/${triple}/include/stdio.h")
    message(STATUS "tessera: no runtime for ${triple} (clang++ or its cross headers missing)")
    return()
  endif()
  file(GLOB runtime_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/runtime/*.cpp)
  file(GLOB runtime_hdrs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/include/tessera/runtime/*.h)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/runtime-${triple}")
  set(objects "")
  foreach(src ${runtime_srcs})
    get_filename_component(stem ${src} NAME_WE)
    set(obj "${dir}/${stem}.o")
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND ${clangxx} --target=${triple} -std=c++17 -O2 -fPIC -DNDEBUG
              -I${CMAKE_CURRENT_SOURCE_DIR}/include -c ${src} -o ${obj}
      DEPENDS ${src} ${runtime_hdrs}
      COMMENT "runtime for ${triple}: ${stem}.cpp" VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(archive "${dir}/libtessera_runtime.a")
  add_custom_command(OUTPUT ${archive}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${archive}
    COMMAND ${llvm_ar} rcs ${archive} ${objects}
    DEPENDS ${objects} VERBATIM)

  # The measurement worker: its sources, the runtime's objects, and fmt and nlohmann-json as
  # headers only (from a folder that holds just those two, not the host's /usr/include).
  set(inc "${dir}/include")
  file(MAKE_DIRECTORY ${inc})
  file(CREATE_LINK /usr/include/fmt ${inc}/fmt SYMBOLIC)
  file(CREATE_LINK /usr/include/nlohmann ${inc}/nlohmann SYMBOLIC)
  set(worker "${dir}/tessera-measure-worker")
  set(worker_srcs
    ${CMAKE_CURRENT_SOURCE_DIR}/src/model_runner/measure_worker_main.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/tuner/measure_worker.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/tuner/runner.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/tuner/host_buffer.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/tuner/measure_error.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/tuner/pair_ratios.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/src/support/error.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/src/support/rng.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/src/ir/type.cpp)
  file(GLOB_RECURSE all_hdrs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/include/*.h)
  add_custom_command(OUTPUT ${worker}
    COMMAND ${clangxx} --target=${triple} -fuse-ld=lld -std=c++17 -O2 -DNDEBUG -DFMT_HEADER_ONLY
            -I${CMAKE_CURRENT_SOURCE_DIR}/include -isystem ${inc} ${worker_srcs} ${objects}
            -o ${worker} -ldl -pthread -Wl,--export-dynamic
    DEPENDS ${worker_srcs} ${objects} ${all_hdrs}
    COMMENT "tessera-measure-worker for ${triple}" VERBATIM)
  # The model runner, with the command's library loader (src/cli/model_library.cpp).
  set(runner "${dir}/tessera-run-model")
  set(runner_srcs
    ${CMAKE_CURRENT_SOURCE_DIR}/src/model_runner/run_model.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/src/cli/model_library.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/src/graph/dtype.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/src/support/error.cpp)
  add_custom_command(OUTPUT ${runner}
    COMMAND ${clangxx} --target=${triple} -fuse-ld=lld -std=c++17 -O2 -DNDEBUG -DFMT_HEADER_ONLY
            -I${CMAKE_CURRENT_SOURCE_DIR}/include -isystem ${inc} ${runner_srcs} -o ${runner}
            -ldl
    DEPENDS ${runner_srcs} ${all_hdrs}
    COMMENT "tessera-run-model for ${triple}" VERBATIM)
  string(REPLACE "-" "_" target_suffix ${triple})
  add_custom_target(tessera_runtime_${target_suffix} ALL DEPENDS ${archive} ${runner} ${worker})
  set(${out_var} "${archive}" PARENT_SCOPE)
  set(${runner_var} "${runner}" PARENT_SCOPE)
  set(${runner_var}_WORKER "${worker}" PARENT_SCOPE)
endfunction()

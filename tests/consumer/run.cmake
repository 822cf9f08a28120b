# run.cmake — installs the build under test into a fresh prefix, then
# configures, builds and runs tests/consumer against it (cmake -P, with
# GROVE_BUILD_DIR, GROVE_SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok\n${out}")
endfunction()

step("cmake --install" ${CMAKE_COMMAND} --install ${GROVE_BUILD_DIR} --prefix ${prefix})
foreach(header include/grove/grove.h include/grove/internal/runtime/core/plan.h lib/cmake/Grove/GroveConfig.cmake)
  if(NOT EXISTS ${prefix}/${header})
    message(FATAL_ERROR "the install lacks ${header}")
  endif()
endforeach()
# Nothing of the compiler's private headers is installed.
file(GLOB_RECURSE ir_headers ${prefix}/include/*/ir.h ${prefix}/include/*/codegen.h)
if(ir_headers)
  message(FATAL_ERROR "compiler headers were installed: ${ir_headers}")
endif()
step("configure the consumer" ${CMAKE_COMMAND} -S ${GROVE_SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build
     -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_BUILD_TYPE=Release)
# libedit-dev (scripts/install-deps.sh installs it): where it is present,
# LLVM's CMake package checks a C header, which broke C++-only projects
# that loaded that package through Grove's. The consumer above was
# configured with it present (when it is); configured again as if it were
# absent, it must configure the same.
find_file(GROVE_HISTEDIT_H histedit.h PATHS /usr/include /usr/local/include)  # (no system paths in cmake -P)
if(GROVE_HISTEDIT_H)
  message(STATUS "libedit-dev is installed (${GROVE_HISTEDIT_H}): the consumer configured with it present")
else()
  message(STATUS "libedit-dev is not installed here: the consumer configured without it")
endif()
step("configure the consumer as if libedit-dev were absent" ${CMAKE_COMMAND} -S ${GROVE_SOURCE_DIR}/tests/consumer
     -B ${WORK_DIR}/build-no-libedit -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_DISABLE_FIND_PACKAGE_LibEdit=TRUE)
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step("use_grove" ${WORK_DIR}/build/use_grove)
step("use_runtime" ${WORK_DIR}/build/use_runtime)
if(EXISTS ${WORK_DIR}/build/has_vdb)
  step("use_vdb" ${WORK_DIR}/build/use_vdb)
endif()

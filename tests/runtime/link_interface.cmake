# link_interface.cmake — grove_runtime links no part of the compiler
# (DESIGN.md, "Compile time and run time"): neither its declared link
# libraries nor the symbols of an executable that links it alone
# (grove_runtime_tests) mention grove_ir, grove_spirv, SPIRV-Tools, glslang
# or LLVM. Run with cmake -P, given LINK_FILE (the generated list of
# grove_runtime's link libraries) and EXECUTABLE.
file(READ ${LINK_FILE} libraries)
foreach(forbidden grove_ir grove_spirv SPIRV glslang LLVM)
  string(FIND "${libraries}" "${forbidden}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "grove_runtime links ${forbidden}: ${libraries}")
  endif()
endforeach()
message(STATUS "grove_runtime links: ${libraries}")

execute_process(COMMAND nm -C ${EXECUTABLE} RESULT_VARIABLE rc OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${EXECUTABLE} failed: ${err}")
endif()
foreach(forbidden "grove::ir::" "grove::spirv::" "spvtools::" "glslang::" "llvm::")
  string(FIND "${symbols}" "${forbidden}" at)
  if(NOT at EQUAL -1)
    string(SUBSTRING "${symbols}" ${at} 200 context)
    message(FATAL_ERROR "${EXECUTABLE}, linked with grove_runtime alone, holds ${forbidden} symbols: ${context}")
  endif()
endforeach()
message(STATUS "no compiler symbols in ${EXECUTABLE}")

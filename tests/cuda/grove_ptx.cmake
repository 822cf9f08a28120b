# tests/cuda/grove_ptx.cmake — `grove ptx` as a user runs it: sparse_life on
# the interpreter with GROVE_DUMP_DIR set, then `grove ptx <dump dir>`,
# which must write one PTX module per kernel (seed, count, update, prune,
# snapshot); where the CUDA toolkit is installed, ptxas assembles each.
# Inputs: EXAMPLE, GROVE, WORK_DIR, PTXAS ("" when none was found).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E env GROVE_DUMP_DIR=${WORK_DIR}/dump
                        ${EXAMPLE} --arch interp --size 256 --steps 1 --out ${WORK_DIR}/frames
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sparse_life failed (${rc})")
endif()
execute_process(COMMAND ${GROVE} ptx ${WORK_DIR}/dump --sm 80 -o ${WORK_DIR}/ptx RESULT_VARIABLE rc
                OUTPUT_VARIABLE said ERROR_VARIABLE said)
message("${said}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "grove ptx failed (${rc})")
endif()
foreach(kernel IN ITEMS seed count update prune snapshot)
  set(ptx ${WORK_DIR}/ptx/${kernel}.sm_80.ptx)
  if(NOT EXISTS ${ptx})
    message(FATAL_ERROR "grove ptx wrote no ${ptx}")
  endif()
  file(READ ${ptx} text)
  if(NOT text MATCHES "\\.target sm_80" OR NOT text MATCHES "\\.entry ${kernel}_t0_")
    message(FATAL_ERROR "${ptx} is not PTX for sm_80 with the kernel's entries")
  endif()
  if(PTXAS)
    execute_process(COMMAND ${PTXAS} --warning-as-error -arch=sm_80 -o ${WORK_DIR}/${kernel}.cubin ${ptx}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE said ERROR_VARIABLE said)
    if(NOT rc EQUAL 0 OR NOT said STREQUAL "")
      message(FATAL_ERROR "ptxas refused ${ptx}:\n${said}")
    endif()
  endif()
endforeach()
if(PTXAS)
  message("ptxas assembled the 5 modules")
else()
  message("no CUDA toolkit found: the modules were not assembled")
endif()

# Installs the build into a scratch prefix, builds a consumer against the
# exported package, and runs it (exit 77: compiled its plan, no GPU to launch).
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install -B ${WORK}/consumer
                        -DCMAKE_PREFIX_PATH=${WORK}/prefix -DEXAMPLE_SOURCE=${SOURCE_DIR}/examples/example.c
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "building the consumer failed:\n${out}")
endif()
execute_process(COMMAND ${WORK}/consumer/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT (rc EQUAL 0 OR rc EQUAL 77))
  message(FATAL_ERROR "the installed consumer failed (${rc}):\n${out}")
endif()
message(STATUS "installed consumer ran: ${out}")

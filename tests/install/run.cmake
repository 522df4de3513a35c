# CTest install_consumer: installs the build tree into a fresh prefix, then configures (once,
# from scratch), builds and runs tests/install against it, as a library user would.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DGENERATOR=...] -P run.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: `${ARGN}` failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
set(gen)
if(GENERATOR)
  set(gen -G "${GENERATOR}")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/install" -B "${WORK_DIR}/build" ${gen}
    "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")

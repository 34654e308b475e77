# cmake -DSOURCE=.. -DBINARY=.. -DRadix_DIR=.. -DCXX=.. -DGENERATOR=.. -P run.cmake
# Builds tests/relink without and then with unrelated code, runs both with one private cache
# directory, and checks that the relinked program loads its model from the cache.
file(REMOVE_RECURSE ${BINARY})
set(cache ${BINARY}/cache)
set(previous "")
foreach(extra OFF ON)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY}/build -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${CXX} -DRadix_DIR=${Radix_DIR} -DRELINK_EXTRA=${extra}
                          "-DCMAKE_CXX_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}"
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configure (RELINK_EXTRA=${extra}) failed")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY}/build RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "build (RELINK_EXTRA=${extra}) failed:\n${log}")
  endif()
  file(SHA256 ${BINARY}/build/relink binary)
  if(binary STREQUAL previous)
    message(FATAL_ERROR "the second build produced the same binary: the test checks nothing")
  endif()
  set(previous ${binary})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env RADIX_CACHE_DIR=${cache} ${BINARY}/build/relink
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "RELINK_EXTRA=${extra}: ${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "relink (RELINK_EXTRA=${extra}) failed: ${out}${err}")
  endif()
  if(extra STREQUAL "OFF" AND NOT out MATCHES "\\(cold\\)")
    message(FATAL_ERROR "the first run should compile cold: ${out}")
  endif()
  if(extra STREQUAL "ON" AND NOT out MATCHES "\\(from the cache\\)")
    message(FATAL_ERROR "the relinked program compiled its unchanged model again instead of loading it from the cache: ${out}")
  endif()
endforeach()

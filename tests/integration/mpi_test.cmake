# Helpers for GoogleTest binaries run under mpirun from CTest (deploy/README.md: a
# deadline below CTest's, no stdin, per-rank output, result reduced over
# ranks). Included by every test directory that registers MPI tests.
include_guard(GLOBAL)

# main() for GoogleTest under mpirun: tests/integration/mpi_gtest_main.h.
add_library(stalelearn_mpi_gtest_main STATIC ${CMAKE_CURRENT_LIST_DIR}/mpi_gtest_main.cc)
stalelearn_target_defaults(stalelearn_mpi_gtest_main)
target_link_libraries(stalelearn_mpi_gtest_main PUBLIC stalelearn_mpi GTest::gtest)

# stalelearn_add_mpi_test(NAME RANKS n SOURCES ... [LIBS ...] [TIMEOUT s]
#                         [ENVIRONMENT VAR=value ...] [ARGS ...] [EXECUTABLE target])
# Builds the test binary (unless EXECUTABLE names an existing one) and
# registers one CTest test that runs it on n ranks. mpirun's own --timeout is
# kept below CTest's TIMEOUT: a CTest kill leaks /dev/shm segments.
function(stalelearn_add_mpi_test name)
  cmake_parse_arguments(ARG "" "RANKS;TIMEOUT;EXECUTABLE" "SOURCES;LIBS;ENVIRONMENT;ARGS;LABELS" ${ARGN})
  if(NOT ARG_RANKS)
    message(FATAL_ERROR "stalelearn_add_mpi_test(${name}): RANKS is required")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(ARG_EXECUTABLE)
    set(exe ${ARG_EXECUTABLE})
  else()
    set(exe ${name})
    add_executable(${exe} ${ARG_SOURCES})
    stalelearn_target_defaults(${exe})
    target_link_libraries(${exe} PRIVATE ${ARG_LIBS} stalelearn_mpi_gtest_main)
  endif()
  math(EXPR mpirun_timeout "${ARG_TIMEOUT} - 15")
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} -n ${ARG_RANKS} --allow-run-as-root --oversubscribe --bind-to none
            --stdin none --timeout ${mpirun_timeout}
            $<TARGET_FILE:${exe}> --gtest_output=xml:${CMAKE_CURRENT_BINARY_DIR}/${name}.xml ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${ARG_TIMEOUT}
    LABELS "mpi;${ARG_LABELS}"
    ENVIRONMENT "UCX_WARN_UNUSED_ENV_VARS=n;OMPI_MCA_rmaps_base_oversubscribe=1;${ARG_ENVIRONMENT}")
endfunction()

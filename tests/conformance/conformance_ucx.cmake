# Conformance variants of the 'ucx' backend (included by
# tests/conformance/CMakeLists.txt when STALELEARN_WITH_UCX is on).

# Shared memory, ranks as threads of one process.
stalelearn_add_conformance_threads_test(conformance_ucx_threads_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/conformance_ucx_threads_test.cc
  LIBS stalelearn_backend_ucx
  TIMEOUT 300)

# Under mpirun, one rank per process: shared memory and tcp, each its own job.
# Over tcp every RMA is emulated in software by the target's worker: once with
# the ranks progressing themselves while they wait, once with the worker's
# progress thread (progress_thread=on) serving peers meanwhile.
include(${PROJECT_SOURCE_DIR}/tests/integration/mpi_test.cmake)
add_executable(conformance_ucx_mpi_test ${CMAKE_CURRENT_LIST_DIR}/conformance_ucx_mpi_test.cc)
stalelearn_target_defaults(conformance_ucx_mpi_test)
target_link_libraries(conformance_ucx_mpi_test PRIVATE stalelearn_conformance stalelearn_backend_ucx
  stalelearn_mpi_gtest_main)
stalelearn_add_mpi_test(conformance_ucx_mpi_shm RANKS 3 TIMEOUT 300 EXECUTABLE conformance_ucx_mpi_test
  ARGS --gtest_filter=UcxMpiShm/* LABELS conformance)
stalelearn_add_mpi_test(conformance_ucx_mpi_tcp RANKS 3 TIMEOUT 300 EXECUTABLE conformance_ucx_mpi_test
  ARGS --gtest_filter=UcxMpiTcp/* LABELS conformance)
stalelearn_add_mpi_test(conformance_ucx_mpi_tcp_progress_thread RANKS 3 TIMEOUT 300 EXECUTABLE conformance_ucx_mpi_test
  ARGS --gtest_filter=UcxMpiTcpProgressThread/* LABELS conformance)

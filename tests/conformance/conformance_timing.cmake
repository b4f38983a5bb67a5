# Conformance variants of the hardware-timing backend (included by
# tests/conformance/CMakeLists.txt): 'timing' over 'local', ranks as threads.
stalelearn_add_conformance_threads_test(conformance_timing_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/conformance_timing_test.cc
  LIBS stalelearn_backend_timing stalelearn_backend_local
  TIMEOUT 300)

# 'timing' over 'ucx' on shared memory, ranks as threads.
if(STALELEARN_WITH_UCX)
  stalelearn_add_conformance_threads_test(conformance_timing_ucx_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/conformance_timing_ucx_test.cc
    LIBS stalelearn_backend_timing stalelearn_backend_ucx
    TIMEOUT 300)
endif()

# Helpers applied to every stalelearn target: C++20, warnings, optional sanitizers.
# Targets only; no global flags (framework/README.md, convention 15).
include_guard(GLOBAL)

function(stalelearn_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  # The default build (deploy/build.sh: RelWithDebInfo) optimises at -O3, not
  # CMake's -O2 (a later -O wins): GCC 12 at -O2 vectorises only loops whose
  # trip count it knows, and the data plane's row loops (delta, merge, copy;
  # width set at run time) are not. -O3 does not reassociate float sums (no
  # -ffast-math), so models stay bit-identical. At -O3 GCC 12 also reports
  # false positives inside libstdc++'s string and vector code (-Wrestrict,
  # GCC bug 105329; -Wstringop-overflow on vector inserts): off for GCC there.
  target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo>:-O3>
    $<$<AND:$<CONFIG:RelWithDebInfo>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict -Wno-stringop-overflow>)
  if(STALELEARN_SANITIZE STREQUAL "address")
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  elseif(STALELEARN_SANITIZE STREQUAL "thread")
    target_compile_options(${target} PUBLIC -fsanitize=thread)
    target_link_options(${target} PUBLIC -fsanitize=thread)
  elseif(NOT STALELEARN_SANITIZE STREQUAL "")
    message(FATAL_ERROR "STALELEARN_SANITIZE must be '', 'address' or 'thread', not '${STALELEARN_SANITIZE}'")
  endif()
  if(STALELEARN_FUZZ)
    # Coverage feedback for libFuzzer; undefined behaviour stops the fuzzer like a crash.
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
    target_compile_options(${target} PUBLIC -fno-sanitize-recover=undefined)
  endif()
endfunction()

# stalelearn_add_unit_test(NAME SOURCES ... [LIBS ...]): one GoogleTest binary
# registered with CTest, every test case listed separately, under a deadline.
function(stalelearn_add_unit_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  stalelearn_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  include(GoogleTest)
  # gtest_discover_tests writes list-valued properties unquoted, so a test
  # gets one label: its area's (LABELS), or "unit".
  set(label unit)
  if(ARG_LABELS)
    list(GET ARG_LABELS 0 label)
  endif()
  set(extra_properties "")
  # ThreadSanitizer builds (deploy/tsan.sh): the tests named in
  # STALELEARN_TSAN_TESTS (tests/CMakeLists.txt) get the label tsan, the
  # target tsan_tests builds them, and they run with the justified suppressions.
  if(STALELEARN_SANITIZE STREQUAL "thread" AND name IN_LIST STALELEARN_TSAN_TESTS)
    set(label tsan)
    add_dependencies(tsan_tests ${name})
    # TSan slows code 5-15x, and more on a loaded machine: the longest test,
    # parallel_kernel_test's two-thread MF run (three MovieLens trainings),
    # takes 8-11 s, but took up to 208 s before TBB's ordering was annotated
    # (framework/core/sanitizer.h).
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 3")
    set(extra_properties ENVIRONMENT
      "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/tests/tsan/suppressions.txt")
  endif()
  gtest_discover_tests(${name}
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS ${label} ${extra_properties}
    DISCOVERY_TIMEOUT 60)
endfunction()

# stalelearn_app_protos(TARGET a.proto ...): compiles an app's protos (its
# config section) into TARGET_proto (cmake/StalelearnAppProgram.cmake,
# stalelearn_add_proto_library: generated code, without our warning flags,
# the project root as import path) and links it to TARGET.
include(${CMAKE_CURRENT_LIST_DIR}/StalelearnAppProgram.cmake)
function(stalelearn_app_protos target)
  stalelearn_add_proto_library(${target}_proto ${ARGN})
  # framework/proto/options.proto: the field rules an app's protos may declare.
  target_link_libraries(${target}_proto PUBLIC stalelearn_proto_options)
  target_link_libraries(${target} PUBLIC ${target}_proto)
endfunction()

# stalelearn_backend_options(NAME options.proto): a backend's options message
# (its config section `backend { NAME { ... } }`), compiled into
# stalelearn_backend_NAME_proto, installed with its header for the package,
# and linked to the backend's library stalelearn_backend_NAME.
function(stalelearn_backend_options name proto)
  set(target stalelearn_backend_${name}_proto)
  stalelearn_add_proto_library(${target} ${proto})
  target_link_libraries(${target} PUBLIC stalelearn_proto_options)
  set_target_properties(${target} PROPERTIES EXPORT_NAME backend_${name}_proto)
  install(TARGETS ${target} EXPORT stalelearnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  file(RELATIVE_PATH dir "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  string(REGEX REPLACE "\\.proto$" ".pb.h" header "${proto}")
  install(FILES ${PROJECT_BINARY_DIR}/${dir}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
  target_link_libraries(stalelearn_backend_${name} PUBLIC ${target})
endfunction()

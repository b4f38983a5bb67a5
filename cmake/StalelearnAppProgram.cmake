# Building a program of your own apps: installed with the stalelearn CMake
# package (find_package(stalelearn) includes it) and used in the source tree
# too (cmake/StalelearnTargets.cmake). apps/README.md:
#
#   find_package(stalelearn 0.1 REQUIRED)
#   stalelearn_add_app_program(count_example
#     SOURCES count_app.cc
#     PROTOS count_config.proto
#     REGISTER count_example::RegisterApp)
#
# makes the program `count_example`: the stalelearn command line (train,
# data, bench, version; under mpirun or with --ranks C:M) with the apps the
# REGISTER functions add, each declared as
#   stalelearn::Status NAMESPACE::Fn(stalelearn::runtime::Registries&);
include_guard(GLOBAL)

# stalelearn_add_proto_library(TARGET a.proto ...): a static library of the
# C++ code protoc generates for the protos. protoc runs with the calling
# project's root as import path, so "apps/x/x_config.proto" is included as
# "apps/x/x_config.pb.h" and its descriptor has a file name unique in the
# program (protobuf aborts on two generated files of the same name). Against
# the installed package (stalelearn_INCLUDE_DIR set by find_package), the
# package's include dir is an import path too, so a proto outside the tree
# imports "framework/proto/options.proto" (the field rules) as one inside does.
function(stalelearn_add_proto_library target)
  if(NOT ARGN)
    message(FATAL_ERROR "stalelearn_add_proto_library(${target}): no .proto files given")
  endif()
  set(import_dirs "${PROJECT_SOURCE_DIR}")
  if(stalelearn_INCLUDE_DIR)
    list(APPEND import_dirs "${stalelearn_INCLUDE_DIR}")
  endif()
  list(TRANSFORM import_dirs PREPEND "-I" OUTPUT_VARIABLE import_args)
  set(generated)
  foreach(proto IN LISTS ARGN)
    get_filename_component(abs "${proto}" ABSOLUTE)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${abs}")
    if(rel MATCHES "^\\.\\./" OR NOT rel MATCHES "\\.proto$")
      message(FATAL_ERROR "${target}: '${proto}' must be a .proto file under ${PROJECT_SOURCE_DIR}")
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    set(cc "${PROJECT_BINARY_DIR}/${stem}.pb.cc")
    set(h "${PROJECT_BINARY_DIR}/${stem}.pb.h")
    # The protos it imports from the import dirs (e.g. framework/proto/options.proto)
    # are dependencies too: an edit to one regenerates this one's code.
    file(STRINGS "${abs}" imports REGEX "^import \"[^\"]+\";")
    set(imported)
    foreach(line IN LISTS imports)
      string(REGEX REPLACE "^import \"([^\"]+)\";.*" "\\1" path "${line}")
      foreach(dir IN LISTS import_dirs)
        if(EXISTS "${dir}/${path}")
          list(APPEND imported "${dir}/${path}")
          break()
        endif()
      endforeach()
    endforeach()
    add_custom_command(OUTPUT "${cc}" "${h}"
      COMMAND protobuf::protoc --cpp_out "${PROJECT_BINARY_DIR}" ${import_args} "${abs}"
      DEPENDS "${abs}" ${imported} protobuf::protoc
      COMMENT "protoc ${rel}" VERBATIM)
    list(APPEND generated "${cc}" "${h}")
  endforeach()
  # Generated code: compiled without the project's warning flags.
  add_library(${target} STATIC ${generated})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
  if(TARGET stalelearn::proto_options)
    # Installed package: the field rules' generated code, for protos that import them.
    target_link_libraries(${target} PUBLIC stalelearn::proto_options)
  endif()
  target_compile_features(${target} PUBLIC cxx_std_20)
  # Never a unity build: protoc gives every .pb.cc the same file-level names.
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON UNITY_BUILD OFF)
endfunction()

# stalelearn_add_app_program(NAME SOURCES file... [PROTOS file.proto...] REGISTER fn...):
# the executable NAME from the app's sources and protos, with a generated
# main() that calls stalelearn::cli::Main with the REGISTER functions in order.
function(stalelearn_add_app_program name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PROTOS;REGISTER" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "stalelearn_add_app_program(${name}): unexpected arguments '${ARG_UNPARSED_ARGUMENTS}' "
                        "(expected SOURCES, PROTOS, REGISTER)")
  endif()
  if(NOT ARG_SOURCES OR NOT ARG_REGISTER)
    message(FATAL_ERROR "stalelearn_add_app_program(${name}): SOURCES and REGISTER are required")
  endif()
  set(declarations "")
  set(registrations "")
  foreach(fn IN LISTS ARG_REGISTER)
    if(fn MATCHES "^(::)?(([A-Za-z_][A-Za-z0-9_]*::)*)([A-Za-z_][A-Za-z0-9_]*)$")
      set(id "${CMAKE_MATCH_4}")
      string(REGEX REPLACE "::$" "" ns "${CMAKE_MATCH_2}")
    else()
      message(FATAL_ERROR "stalelearn_add_app_program(${name}): REGISTER '${fn}' is not a function name like my_app::RegisterApp")
    endif()
    set(declaration "stalelearn::Status ${id}(stalelearn::runtime::Registries& registries);")
    if(ns)
      set(declaration "namespace ${ns} {\n${declaration}\n}")
    endif()
    string(APPEND declarations "${declaration}\n")
    string(APPEND registrations "&${fn}, ")
  endforeach()
  set(main "${CMAKE_CURRENT_BINARY_DIR}/${name}_main.cc")
  file(CONFIGURE OUTPUT "${main}" @ONLY CONTENT
"// Generated by stalelearn_add_app_program(${name}): the stalelearn command line
// with this program's apps (apps/cli/cli_main.h).
#include \"apps/cli/cli_main.h\"

@declarations@
int main(int argc, char** argv) { return stalelearn::cli::Main(argc, argv, {@registrations@}); }
")
  add_executable(${name} ${ARG_SOURCES} "${main}")
  target_link_libraries(${name} PRIVATE stalelearn::cli)
  if(ARG_PROTOS)
    stalelearn_add_proto_library(${name}_protos ${ARG_PROTOS})
    target_link_libraries(${name} PRIVATE ${name}_protos)
  endif()
endfunction()

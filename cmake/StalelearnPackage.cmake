# `cmake --install build --prefix P` installs the headers, the static library
# of every layer, the backends and the command line, and the CMake package
# P/lib/cmake/stalelearn (targets stalelearn::<layer>, stalelearn::cli, ...,
# and stalelearn_add_app_program). Included once by the top-level CMakeLists.txt
# after every target is declared.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

install(EXPORT stalelearnTargets NAMESPACE stalelearn:: DESTINATION ${STALELEARN_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/stalelearnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/stalelearnConfig.cmake
  INSTALL_DESTINATION ${STALELEARN_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR STALELEARN_INSTALL_PRESETDIR)
# 0.x: minor versions may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/stalelearnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/stalelearnConfig.cmake
  ${PROJECT_BINARY_DIR}/stalelearnConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/StalelearnAppProgram.cmake
  DESTINATION ${STALELEARN_INSTALL_CMAKEDIR})

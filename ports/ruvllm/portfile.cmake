# vcpkg overlay port of ruvllm, kept in the repository it packages:
#   vcpkg install ruvllm --overlay-ports=<ruvllm checkout>/ports
# It installs the headers and the CMake package exactly as `cmake --install`
# does, including the generated ruvllmConfig.cmake with the xtl workaround
# that xsimd 8.1's exported target needs.
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS FEATURES sodium RUVLLM_WITH_SODIUM)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS -DRUVLLM_BUILD_TESTS=OFF -DRUVLLM_BUILD_BENCH=OFF -DRUVLLM_BUILD_EXAMPLES=OFF ${FEATURE_OPTIONS})
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME ruvllm CONFIG_PATH share/cmake/ruvllm)
vcpkg_fixup_pkgconfig()

# Header-only: there is no separate debug build.
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")

# Cross-compiling ruvllm for 64-bit ARM Linux on a Debian 12 x86-64 machine,
# with the tests run under qemu-user. scripts/check-aarch64.sh installs what
# it needs (g++-aarch64-linux-gnu, qemu-user, libhwy-dev:arm64) and uses it:
#   cmake -S . -B build/aarch64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's multiarch layout: arm64 libraries live in /usr/lib/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# pkg-config must not hand the build machine's libraries (libsodium) to the
# arm64 linker.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# xsimd and Boost are used as headers only, which are the same for every
# architecture; Debian installs xsimd's package configuration under the build
# machine's multiarch directory.
if(NOT DEFINED xsimd_DIR AND EXISTS /usr/lib/x86_64-linux-gnu/cmake/xsimd)
  set(xsimd_DIR /usr/lib/x86_64-linux-gnu/cmake/xsimd)
endif()
if(NOT DEFINED Boost_INCLUDE_DIR)
  set(Boost_INCLUDE_DIR /usr/include)
endif()

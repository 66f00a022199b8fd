// The Catch2 main of cross builds (tests/CMakeLists.txt), whose tests
// cannot link the build machine's prebuilt one.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

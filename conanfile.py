import os

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy


class RuvllmConan(ConanFile):
    name = "ruvllm"
    version = "0.1.0"
    description = "Header-only C++20 templates for LLM serving engines on edge CPUs"
    license = "MIT"
    topics = ("llm", "inference", "simd", "header-only", "vector-search")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_sodium": [True, False]}
    default_options = {"with_sodium": False}
    exports_sources = "CMakeLists.txt", "cmake/*", "include/*", "single_include/*", "LICENSE*"
    no_copy_source = True

    def requirements(self):
        self.requires("highway/1.0.3")
        self.requires("xsimd/8.1.0")
        self.requires("boost/1.74.0", options={"header_only": True})
        if self.options.with_sodium:
            self.requires("libsodium/1.0.18")

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.variables["RUVLLM_BUILD_TESTS"] = False
        tc.variables["RUVLLM_BUILD_BENCH"] = False
        tc.variables["RUVLLM_BUILD_EXAMPLES"] = False
        tc.variables["RUVLLM_WITH_SODIUM"] = bool(self.options.with_sodium)
        tc.generate()

    def package(self):
        # The same headers and CMake package configuration as `cmake --install`,
        # including the xtl workaround for xsimd 8.1's exported target.
        cmake = CMake(self)
        cmake.configure()
        cmake.install()
        copy(self, "LICENSE*", self.source_folder, os.path.join(self.package_folder, "licenses"))

    def package_id(self):
        self.info.clear()

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "ruvllm")
        self.cpp_info.set_property("cmake_target_name", "ruvllm::ruvllm")
        self.cpp_info.set_property("pkg_config_name", "ruvllm")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.defines = ["HWY_WANT_AVX3_DL"]
        self.cpp_info.requires = ["highway::highway", "xsimd::xsimd", "boost::headers"]
        if self.options.with_sodium:
            self.cpp_info.defines.append("RUVLLM_WITH_SODIUM=1")
            self.cpp_info.requires.append("libsodium::libsodium")
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs = ["pthread"]

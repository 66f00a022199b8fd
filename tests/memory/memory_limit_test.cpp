// memory_limit_bytes: the machine's memory lowered by the process's cgroup
// limits. The cgroup reading is checked on hierarchies written to a
// temporary directory in the layouts the kernel mounts (v2, v1, hybrid, a
// container's namespaced view), against limits chosen per case.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "ruvllm/memory/page_memory.hpp"

namespace memory_limit_test {

namespace fs = std::filesystem;
using ruvllm::memory::detail::cgroup_memory_limit;
using ruvllm::memory::detail::parse_cgroup_limit;

/// A fresh directory standing for /sys/fs/cgroup, removed at scope end.
struct fake_cgroup_root {
  fs::path dir = fs::temp_directory_path() / ("ruvllm_cgroup_" + std::to_string(::getpid()));
  fake_cgroup_root() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~fake_cgroup_root() { fs::remove_all(dir); }
  void write(const std::string& relative, const std::string& text) const {
    const fs::path file = dir / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  [[nodiscard]] std::string root() const { return dir.string(); }
};

}  // namespace memory_limit_test

using memory_limit_test::cgroup_memory_limit;
using memory_limit_test::fake_cgroup_root;
using memory_limit_test::parse_cgroup_limit;

TEST_CASE("cgroup limit files: a byte count, or no limit for max and anything malformed", "[memory][limit]") {
  CHECK(parse_cgroup_limit("1073741824\n") == (std::size_t{1} << 30));
  CHECK(parse_cgroup_limit("0") == 0);
  CHECK(parse_cgroup_limit("max\n") == SIZE_MAX);
  CHECK(parse_cgroup_limit("") == SIZE_MAX);
  CHECK(parse_cgroup_limit("\n") == SIZE_MAX);
  CHECK(parse_cgroup_limit("12ab") == SIZE_MAX);
  CHECK(parse_cgroup_limit("-5") == SIZE_MAX);
  CHECK(parse_cgroup_limit("99999999999999999999999") == SIZE_MAX);  // past 2^64
  CHECK(parse_cgroup_limit("18446744073709551615") == SIZE_MAX);
  CHECK(parse_cgroup_limit("18446744073709551614") == SIZE_MAX - 1);
}

TEST_CASE("cgroup v2: the lowest memory.max of the group and its ancestors", "[memory][limit]") {
  const fake_cgroup_root sys;
  sys.write("a/b/memory.max", "max\n");
  sys.write("a/memory.max", "2147483648\n");
  CHECK(cgroup_memory_limit(sys.root(), "0::/a/b\n") == (std::size_t{2} << 30));
  // A child's lower limit binds; so does one two levels up.
  sys.write("a/b/memory.max", "1000\n");
  CHECK(cgroup_memory_limit(sys.root(), "0::/a/b\n") == 1000);
  sys.write("a/memory.max", "999\n");
  CHECK(cgroup_memory_limit(sys.root(), "0::/a/b\n") == 999);
  // A sibling's limit does not count.
  sys.write("c/memory.max", "5\n");
  CHECK(cgroup_memory_limit(sys.root(), "0::/a/b\n") == 999);
  // A group unknown to this view falls back to what is above it.
  CHECK(cgroup_memory_limit(sys.root(), "0::/a/zz/yy\n") == 999);
  CHECK(cgroup_memory_limit(sys.root(), "0::/nowhere\n") == SIZE_MAX);
}

TEST_CASE("cgroup v2 in a container's namespace: the group is the mount's top", "[memory][limit]") {
  const fake_cgroup_root sys;
  sys.write("memory.max", "536870912\n");
  CHECK(cgroup_memory_limit(sys.root(), "0::/\n") == (std::size_t{512} << 20));
  sys.write("memory.max", "max\n");
  CHECK(cgroup_memory_limit(sys.root(), "0::/\n") == SIZE_MAX);
}

TEST_CASE("cgroup v1 and hybrid hierarchies: memory.limit_in_bytes and unified/memory.max", "[memory][limit]") {
  const fake_cgroup_root sys;
  // v1's "no limit" is a number near 2^63; it is a number, so it is taken
  // as is (the machine's memory is lower).
  sys.write("memory/p/q/memory.limit_in_bytes", "9223372036854771712\n");
  sys.write("memory/p/memory.limit_in_bytes", "9223372036854771712\n");
  const std::string v1 = "9:name=systemd:/\n4:memory:/p/q\n3:cpu,cpuacct:/\n0::/\n";
  CHECK(cgroup_memory_limit(sys.root(), v1) == 9223372036854771712u);
  sys.write("memory/p/memory.limit_in_bytes", "3000000\n");
  CHECK(cgroup_memory_limit(sys.root(), v1) == 3000000);
  // memory sharing a hierarchy with other controllers.
  CHECK(cgroup_memory_limit(sys.root(), "5:cpuset,memory,pids:/p/q\n") == 3000000);
  // A controller whose name only contains "memory" is not it.
  CHECK(cgroup_memory_limit(sys.root(), "5:memoryx:/p/q\n") == SIZE_MAX);
  // Hybrid: v2's hierarchy under unified/ limits too.
  sys.write("unified/s/memory.max", "4096\n");
  CHECK(cgroup_memory_limit(sys.root(), v1 + "0::/s\n") == 4096);
}

TEST_CASE("cgroup reading survives malformed /proc/self/cgroup text", "[memory][limit]") {
  const fake_cgroup_root sys;
  sys.write("memory.max", "777\n");
  CHECK(cgroup_memory_limit(sys.root(), "") == SIZE_MAX);
  CHECK(cgroup_memory_limit(sys.root(), "nonsense\n:\n::\n1:\n") == 777);  // "::" is a v2 line of path ""
  CHECK(cgroup_memory_limit(sys.root(), "4:memory") == SIZE_MAX);
  CHECK(cgroup_memory_limit(sys.root(), "0::/\n\n\n") == 777);
}

TEST_CASE("memory_limit_bytes is at most the machine's memory", "[memory][limit]") {
  const std::size_t limit = ruvllm::memory::memory_limit_bytes();
  CHECK(limit > 0);
  CHECK(limit <= ruvllm::memory::physical_memory_bytes());
}

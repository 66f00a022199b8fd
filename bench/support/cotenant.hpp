#ifndef RUVLLM_BENCH_SUPPORT_COTENANT_HPP
#define RUVLLM_BENCH_SUPPORT_COTENANT_HPP

// A busy co-tenant process for the rows that measure decode and GEMV beside
// one: the situation in which llama.cpp's 2-thread decode collapses.

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "support/stream_probe.hpp"

extern char** environ;

namespace ruvllm::bench {

/// A process spinning on the last online CPU (CPU 1 on two cores) for the
/// life of the object: a shell loop, compute-bound, its few bytes of state
/// in L1.
///
/// Spawned, never fork()ed. posix_spawn clones without copying our page
/// tables and then execs, as a real co-tenant would have been started; a
/// fork() write-protects every mapping of the benchmark process, and on the
/// 2-vCPU Zen 5 guest the first read pass over 2 GiB of 2 MiB-page memory
/// after a fork took 65-558 ms against ~60 before it (63-66 ms after a
/// posix_spawn), which made a co-tenant row's first 1B f16 decode step take
/// 0.4-0.6 s instead of ~90 ms -- a cost of the benchmark, not of decoding
/// beside a busy process.
class cotenant {
 public:
  cotenant() {
    char shell[] = "sh";
    char command_flag[] = "-c";
    char loop[] = "while :; do :; done";
    char* argv[] = {shell, command_flag, loop, nullptr};
    const int spawned = ::posix_spawn(&pid_, "/bin/sh", nullptr, nullptr, argv, environ);
    if (spawned != 0) detail::fail(std::string("cannot spawn the co-tenant process: ") + std::strerror(spawned));
    // Pinned by pid once it exists (the mask survives its exec): the few
    // microseconds it runs unpinned are shell start-up, before any row times.
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t last;
    CPU_ZERO(&last);
    CPU_SET(static_cast<int>(online > 1 ? online - 1 : 0), &last);
    if (::sched_setaffinity(pid_, sizeof last, &last) != 0) {
      stop();
      detail::fail("cannot pin the co-tenant process to its CPU");
    }
  }
  cotenant(const cotenant&) = delete;
  cotenant& operator=(const cotenant&) = delete;
  ~cotenant() { stop(); }

 private:
  void stop() {
    if (pid_ <= 0) return;  // kill(-1) would signal every process we may signal
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  pid_t pid_ = -1;
};

}  // namespace ruvllm::bench

#endif  // RUVLLM_BENCH_SUPPORT_COTENANT_HPP

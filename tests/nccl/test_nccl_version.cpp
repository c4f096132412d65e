// llmrt::nccl gives nccl.h, libnccl and LLMRT_HAVE_NCCL; ncclGetVersion needs no GPU.
#include <doctest/doctest.h>
#include <nccl.h>

#ifndef LLMRT_HAVE_NCCL
#error "llmrt::nccl defines LLMRT_HAVE_NCCL"
#endif

TEST_CASE("nccl: the library links and reports a version of 2.x or later") {
  int version = 0;
  REQUIRE(ncclGetVersion(&version) == ncclSuccess);
  MESSAGE("NCCL version code ", version, " (headers ", NCCL_VERSION_CODE, ")");
  CHECK(version >= 20000);
}

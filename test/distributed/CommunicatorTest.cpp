//===- CommunicatorTest.cpp - the MPI communicator, rank by rank ----------===//
//
// Run under mpirun with any number of ranks P. Each rank checks what it
// receives against what the sender must have sent (values encode sender
// and position), with message sizes that differ per rank:
//
//   ring: rank r sends 1000 + 7 r floats to r + 1 and receives 1000 + 7 (r - 1)
//         from r - 1, computing while the exchange is in flight;
//   all-to-all: block d of rank r holds 100 r + d;
//   all-gather: rank r contributes 4 values r + 0.5;
//
// and that the bytes it counted as sent are those of the messages above.
// Prints one line per rank ("rank R of P: ... ok") and exits non-zero on
// any mismatch.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Communicator.h"
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  std::string error;
  std::unique_ptr<attnrt::Communicator> comm =
      attnrt::createMpiCommunicator(&argc, &argv, error);
  if (!comm) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  int r = comm->rank(), p = comm->size();
  int next = (r + 1) % p, previous = (r + p - 1) % p;
  auto ringLength = [](int rank) { return size_t(1000 + 7 * rank); };
  bool ok = true;
  auto expect = [&](bool condition, const char *what) {
    if (!condition) {
      std::printf("rank %d of %d: %s FAILED\n", r, p, what);
      ok = false;
    }
  };

  std::vector<float> ringOut(ringLength(r)), ringIn(ringLength(previous));
  for (size_t i = 0; i < ringOut.size(); ++i)
    ringOut[i] = float(r * 10000 + int(i));
  auto exchange = comm->startExchange(
      ringOut.data(), ringOut.size() * sizeof(float), next, ringIn.data(),
      ringIn.size() * sizeof(float), previous, error);
  double overlapped = 0; // work done while the blocks travel
  for (int i = 0; i < 100000; ++i)
    overlapped += 1.0 / (1 + i);
  expect(exchange && exchange->wait(error) && overlapped > 0, "ring exchange");
  for (size_t i = 0; i < ringIn.size(); ++i)
    if (ringIn[i] != float(previous * 10000 + int(i))) {
      expect(false, "ring contents");
      break;
    }

  const size_t block = 16;
  std::vector<float> toAll(block * p), fromAll(block * p);
  for (int d = 0; d < p; ++d)
    for (size_t i = 0; i < block; ++i)
      toAll[d * block + i] = float(100 * r + d);
  expect(comm->allToAll(toAll.data(), fromAll.data(), block * sizeof(float),
                        error),
         "all-to-all");
  for (int s = 0; s < p; ++s)
    for (size_t i = 0; i < block; ++i)
      if (fromAll[s * block + i] != float(100 * s + r)) {
        expect(false, "all-to-all contents");
        s = p;
        break;
      }

  std::vector<float> mine(4, float(r) + 0.5f), gathered(4 * p);
  expect(comm->allGather(mine.data(), gathered.data(), 4 * sizeof(float),
                         error),
         "all-gather");
  for (int s = 0; s < p; ++s)
    if (gathered[4 * s + 3] != float(s) + 0.5f)
      expect(false, "all-gather contents");

  size_t expectedSent = (ringLength(r) + (block + 4) * size_t(p - 1)) *
                        sizeof(float);
  expect(comm->bytesSent() == expectedSent, "bytes sent");

  // All-reduce: rank s contributes (s + 1) * (i + 1) to element i, so the
  // sum is (i + 1) p (p + 1) / 2 (exact in f32 at these sizes).
  std::vector<float> partial(5);
  for (size_t i = 0; i < partial.size(); ++i)
    partial[i] = float((r + 1) * (i + 1));
  expect(comm->allReduceSum(partial.data(), partial.size(), error),
         "all-reduce");
  for (size_t i = 0; i < partial.size(); ++i)
    if (partial[i] != float((i + 1) * p * (p + 1) / 2))
      expect(false, "all-reduce contents");
  expect(comm->barrier(error), "barrier");
  if (!error.empty())
    std::printf("rank %d of %d: %s\n", r, p, error.c_str());
  if (ok)
    std::printf("rank %d of %d: ring ok, all-to-all ok, all-gather ok, "
                "all-reduce ok, %zu bytes sent\n",
                r, p, expectedSent);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

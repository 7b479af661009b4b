//===- Communicator.h - processes exchanging attention blocks ---*- C++ -*-===//
//
// What context-parallel attention needs from a distributed engine
// (issue "Beyond one machine"; docs/Distributed.md): point-to-point
// exchanges around a ring (ring attention passes K/V blocks to the next
// rank), all-to-all (DeepSpeed-Ulysses reshards sequence <-> heads) and
// all-gather. attn runs on an existing engine rather than its own: the
// backend here is MPI (libattn_mpi, built when CMake finds MPI); an NCCL
// backend for device buffers can implement the same interface.
//
// Buffers are host memory; sizes are in bytes and must agree between the
// ranks that exchange them. Errors come back as false with a message.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_COMMUNICATOR_H
#define ATTN_RUNTIME_COMMUNICATOR_H

#include <cstddef>
#include <memory>
#include <string>

namespace attnrt {

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// A send to `destination` and a receive from `source` started together
  /// (both directions of a ring step), to be completed by wait(): compute
  /// can overlap the transfer in between. A negative rank skips that
  /// direction.
  class Exchange {
  public:
    virtual ~Exchange() = default;
    virtual bool wait(std::string &error) = 0;
  };
  virtual std::unique_ptr<Exchange>
  startExchange(const void *send, size_t sendBytes, int destination,
                void *receive, size_t receiveBytes, int source,
                std::string &error) = 0;

  /// Block r of `send` (bytesPerRank each) goes to rank r; block r of
  /// `receive` comes from rank r.
  virtual bool allToAll(const void *send, void *receive, size_t bytesPerRank,
                        std::string &error) = 0;
  /// Every rank's `bytesPerRank` of `send`, in rank order, into `receive`.
  virtual bool allGather(const void *send, void *receive, size_t bytesPerRank,
                         std::string &error) = 0;
  /// `data[0, count)` summed over the ranks, in place on every rank
  /// (tensor-parallel projections).
  virtual bool allReduceSum(float *data, size_t count, std::string &error) = 0;
  virtual bool barrier(std::string &error) = 0;

  /// Bytes this rank has sent so far (for the benchmarks' volume figures).
  size_t bytesSent() const { return sent; }

protected:
  size_t sent = 0;
};

/// The MPI communicator of all ranks (MPI_COMM_WORLD); initializes MPI if
/// the program has not (and finalizes it when the last one goes away).
/// Null with `error` set when MPI cannot be initialized.
std::unique_ptr<Communicator> createMpiCommunicator(int *argc, char ***argv,
                                                    std::string &error);

} // namespace attnrt

#endif // ATTN_RUNTIME_COMMUNICATOR_H

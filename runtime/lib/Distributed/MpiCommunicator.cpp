//===- MpiCommunicator.cpp - the Communicator on MPI ----------------------===//
//
// MPI_COMM_WORLD through the MPI C API (Open MPI or MPICH). Exchanges are
// a non-blocking send and receive pair (MPI_Isend / MPI_Irecv) completed
// by MPI_Waitall; collectives are MPI_Alltoall / MPI_Allgather on bytes.
// Sizes past INT_MAX bytes are refused (MPI counts are int).
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Communicator.h"

#include <climits>
#include <mpi.h>

using namespace attnrt;

namespace {

std::string mpiError(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(what) + " failed: " + std::string(text, length);
}

bool countFits(size_t bytes, std::string &error) {
  if (bytes <= size_t(INT_MAX))
    return true;
  error = "a message of " + std::to_string(bytes) +
          " bytes is larger than MPI's int counts allow";
  return false;
}

class MpiExchange : public Communicator::Exchange {
public:
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  ~MpiExchange() override {
    // An exchange dropped without wait() still completes its transfers
    // before its buffers may go away.
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  }
  bool wait(std::string &error) override {
    int code = MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    if (code == MPI_SUCCESS)
      return true;
    error = mpiError("MPI_Waitall", code);
    return false;
  }
};

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator(bool ownsMpi) : ownsMpi(ownsMpi) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rankValue);
    MPI_Comm_size(MPI_COMM_WORLD, &sizeValue);
    // Errors are returned, not fatal.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiCommunicator() override {
    if (ownsMpi)
      MPI_Finalize();
  }
  int rank() const override { return rankValue; }
  int size() const override { return sizeValue; }

  std::unique_ptr<Exchange> startExchange(const void *send, size_t sendBytes,
                                          int destination, void *receive,
                                          size_t receiveBytes, int source,
                                          std::string &error) override {
    if (!countFits(sendBytes, error) || !countFits(receiveBytes, error))
      return nullptr;
    auto exchange = std::make_unique<MpiExchange>();
    // A negative rank skips that direction (MPI_PROC_NULL: no transfer).
    if (source < 0)
      source = MPI_PROC_NULL;
    if (destination < 0) {
      destination = MPI_PROC_NULL;
      sendBytes = 0;
    }
    int code = MPI_Irecv(receive, int(receiveBytes), MPI_BYTE, source, 0,
                         MPI_COMM_WORLD, &exchange->requests[0]);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Irecv", code);
      return nullptr;
    }
    code = MPI_Isend(send, int(sendBytes), MPI_BYTE, destination, 0,
                     MPI_COMM_WORLD, &exchange->requests[1]);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Isend", code);
      return nullptr;
    }
    sent += sendBytes;
    return exchange;
  }

  bool allToAll(const void *send, void *receive, size_t bytesPerRank,
                std::string &error) override {
    if (!countFits(bytesPerRank, error))
      return false;
    int code = MPI_Alltoall(send, int(bytesPerRank), MPI_BYTE, receive,
                            int(bytesPerRank), MPI_BYTE, MPI_COMM_WORLD);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Alltoall", code);
      return false;
    }
    sent += bytesPerRank * size_t(sizeValue - 1);
    return true;
  }

  bool allGather(const void *send, void *receive, size_t bytesPerRank,
                 std::string &error) override {
    if (!countFits(bytesPerRank, error))
      return false;
    int code = MPI_Allgather(send, int(bytesPerRank), MPI_BYTE, receive,
                             int(bytesPerRank), MPI_BYTE, MPI_COMM_WORLD);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Allgather", code);
      return false;
    }
    sent += bytesPerRank * size_t(sizeValue - 1);
    return true;
  }

  bool allReduceSum(float *data, size_t count, std::string &error) override {
    if (!countFits(count * sizeof(float), error))
      return false;
    int code = MPI_Allreduce(MPI_IN_PLACE, data, int(count), MPI_FLOAT,
                             MPI_SUM, MPI_COMM_WORLD);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Allreduce", code);
      return false;
    }
    // A ring all-reduce sends 2 (P - 1) / P of the buffer per rank.
    sent += 2 * count * sizeof(float) * size_t(sizeValue - 1) /
            size_t(sizeValue);
    return true;
  }
  bool barrier(std::string &error) override {
    int code = MPI_Barrier(MPI_COMM_WORLD);
    if (code == MPI_SUCCESS)
      return true;
    error = mpiError("MPI_Barrier", code);
    return false;
  }

private:
  bool ownsMpi;
  int rankValue = 0, sizeValue = 1;
};

} // namespace

std::unique_ptr<Communicator>
attnrt::createMpiCommunicator(int *argc, char ***argv, std::string &error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int code = MPI_Init(argc, argv);
    if (code != MPI_SUCCESS) {
      error = mpiError("MPI_Init", code);
      return nullptr;
    }
  }
  return std::make_unique<MpiCommunicator>(/*ownsMpi=*/!initialized);
}

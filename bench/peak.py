"""The machine's FP32 FMA peak for the Python benchmarks: attn-bench's
probe, best of three (it varies between runs on shared VMs)."""
import re
import subprocess


def measured_peak(build, threads):
    """GFLOP/s of `threads` threads, as `build`/bin/attn-bench measures it."""
    def probe():
        out = subprocess.run([f"{build}/bin/attn-bench", "--sizes=64", "--repeat=1",
                              f"--num-threads={threads}"],
                             capture_output=True, text=True).stdout
        return float(re.search(r"peak ([0-9.]+) GFLOP/s", out).group(1))
    return max(probe() for _ in range(3))

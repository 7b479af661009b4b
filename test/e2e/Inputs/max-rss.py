"""Runs a command and prints the peak resident set size of that process (and
its children) in MiB, read from getrusage: no third-party modules."""
import resource
import subprocess
import sys

completed = subprocess.run(sys.argv[1:])
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("exit %d, peak RSS %d MiB" % (completed.returncode, peak_kib // 1024))
sys.exit(completed.returncode)

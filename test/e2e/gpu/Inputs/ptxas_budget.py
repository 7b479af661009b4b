"""Reads `ptxas -v` output on stdin and checks each entry's budget: no
spill stores or loads, no stack frame, at most 255 registers and at most
--smem bytes of shared memory: the static shared memory ptxas reports plus,
with --json, the dynamic shared memory the kernel descriptors ask for
("shared_bytes"). Prints one line per entry and exits 1 when any entry is
over (or when there is none)."""
import argparse
import json
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--smem", type=int, required=True)
parser.add_argument("--json", help="the kernels' descriptors (.json)")
args = parser.parse_args()
dynamic = {}
if args.json:
    with open(args.json) as f:
        dynamic = {k["name"]: k.get("shared_bytes", 0)
                   for k in json.load(f)["kernels"]}

entries = []
for line in sys.stdin:
    if m := re.search(r"Compiling entry function '(\w+)'", line):
        entries.append({"name": m.group(1)})
    elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                        r"(\d+) bytes spill loads", line):
        entries[-1]["spills"] = sum(int(g) for g in m.groups())
    elif m := re.search(r"Used (\d+) registers", line):
        entries[-1]["registers"] = int(m.group(1))
        s = re.search(r"(\d+) bytes smem", line)
        entries[-1]["smem"] = ((int(s.group(1)) if s else 0) +
                               dynamic.get(entries[-1]["name"], 0))

ok = bool(entries)
for e in entries:
    good = (e.get("spills") == 0 and e.get("registers", 999) <= 255
            and e.get("smem", 1 << 30) <= args.smem)
    ok &= good
    print(f"{e['name']}: {e.get('registers')} registers, {e.get('smem')} bytes"
          f" smem, {e.get('spills')} bytes spilled: {'OK' if good else 'OVER'}")
sys.exit(0 if ok else 1)

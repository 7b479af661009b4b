"""Joins attn-bench's CSV with torch_sdpa.py's (same N and causal) into the
markdown table of bench/RESULTS.md: ratios are measured in one run."""
import csv
import sys

ours = {(r["n"], r["causal"]): r for r in csv.DictReader(open(sys.argv[1]))}
torch = {}
if len(sys.argv) > 2:
    torch = {(r["n"], r["causal"]): r for r in csv.DictReader(open(sys.argv[2]))}
print("| N | causal | attn ms | GFLOP/s | % peak | OpenBLAS unfused ms | vs OpenBLAS | PyTorch SDPA ms | vs PyTorch |")
print("|--:|:--:|--:|--:|--:|--:|--:|--:|--:|")
for key, r in ours.items():
    t = torch.get(key)
    torch_cols = "| %.2f | %.2f× " % (float(t["torch_ms"]), float(t["torch_ms"]) / float(r["attn_ms"])) if t else "| – | – "
    print("| %s | %s | %.2f | %.1f | %.1f%% | %.2f | %.2f× %s|" % (
        r["n"], "yes" if r["causal"] == "1" else "no", float(r["attn_ms"]),
        float(r["attn_gflops"]), float(r["peak_percent"]), float(r["blas_ms"]),
        float(r["speedup"]), torch_cols))

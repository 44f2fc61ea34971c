#!/usr/bin/env python3
"""The ratio table of a run_all.sh results file, as Markdown: per model, batch and dtype,
Partita's median for each build (`cuda` alone, and each BYOC variant) against PyTorch eager (and
torch.compile where timed) measured in the same call, with the errors. One table per file.

    python3 benchmarks/gpu/summarize.py results.txt [more_results.txt ...]
"""
import re
import sys

PARTITA = re.compile(r"^(?P<model>\S+?)_b(?P<batch>\d+)(?P<fp16>_fp16)?(?:@(?P<variant>\S+))?\s+partita median\s+"
                     r"(?P<ms>[0-9.]+) ms\s+compile\s+(?P<cs>[0-9.]+) s\s+(?:load\+first run\s+(?P<load>\S+) s\s+)?max rel err vs PyTorch (?P<err>\S+?)"
                     r"(?:, vs fp32 (?P<err32>\S+) \(PyTorch fp16's (?P<torch_err32>\S+)\))?\s+\[")
FAILED = re.compile(r"^(?P<model>\S+?)_b(?P<batch>\d+)(?P<fp16>_fp16)?(?:@(?P<variant>\S+))?: (?P<what>\w+) FAILED: (?P<why>.*)")
TORCH = re.compile(r"^(?P<model>\S+)\s+b(?P<batch>\d+)\s+(?P<dtype>float\d+)\s+(?P<engine>torch-\S+)\s+(?P<ms>[0-9.]+) ms")


def read(path):
    partita, torch = {}, {}
    if True:
        for line in open(path):
            line = line.rstrip("\n")
            if m := PARTITA.match(line):
                key = (m["model"], int(m["batch"]), "float16" if m["fp16"] else "float32", m["variant"] or "cuda")
                partita[key] = m.groupdict()
            elif m := FAILED.match(line):
                key = (m["model"], int(m["batch"]), "float16" if m["fp16"] else "float32", m["variant"] or "cuda")
                partita[key] = {"failed": "%s failed: %s" % (m["what"], m["why"][:90])}
            elif m := TORCH.match(line):
                torch[(m["model"], int(m["batch"]), m["dtype"], m["engine"])] = float(m["ms"])
    return partita, torch


def main(paths):
    for path in paths:
        if len(paths) > 1:
            print("\n%s:\n" % path)
        table(*read(path))
    return 0


def table(partita, torch):
    variants = sorted({k[3] for k in partita}, key=lambda v: (v != "cuda", v))
    print("| model | batch | dtype | " + " | ".join("Partita `%s` (ms)" % v for v in variants) +
          " | eager (ms) | " + " | ".join("`%s` / eager" % v for v in variants) +
          " | torch.compile (ms) | error (fp16: vs the fp32 model; PyTorch fp16's) |")
    print("|---|---:|---|" + "---:|" * (2 * len(variants) + 2) + "---|")
    rows = sorted({k[:3] for k in partita}, key=lambda k: (k[1], k[2], k[0]))
    for model, batch, dtype in rows:
        eager = torch.get((model, batch, dtype, "torch-eager"))
        comp = torch.get((model, batch, dtype, "torch-compile"))
        times, ratios, errs = [], [], []
        for v in variants:
            r = partita.get((model, batch, dtype, v))
            if not r:
                times.append("–"); ratios.append("–")
            elif "failed" in r:
                times.append("fails"); ratios.append("–"); errs.append("%s: %s" % (v, r["failed"]))
            else:
                ms = float(r["ms"])
                times.append("%.3f" % ms)
                ratios.append("**%.2f**" % (ms / eager) if eager else "–")
                errs.append("%s %s" % (v, "%s; %s" % (r["err32"], r["torch_err32"]) if r["err32"] else r["err"]))
        print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            model, batch, dtype, " | ".join(times), "%.3f" % eager if eager else "–", " | ".join(ratios),
            "%.3f" % comp if comp else "–", ", ".join(errs)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Group the rpctap sink's perf samples by stage (docs/performance.md, "Where the sink's CPU goes").

    perf script -i rec.data --comm rpctap -F pid,ip,sym,dso | python3 bench/perfstages.py GIB

GIB is the session's size in GiB (both directions); the table gives each stage's share and CPU
seconds per GiB at perf's -F 997. The sink is the rpctap process with the most zstd samples; the
other rpctap processes' totals (the tap) are printed after the table. Samples are flat (no call
graph): runtime.memmove and the like count as runtime, not as their caller's stage.
"""
import collections
import re
import sys

HZ = 997


def stage(sym, dso):
    if "kernel" in dso:
        return "kernel (pipes, file, scheduling, page faults)"
    if "klauspost" in sym:
        return "compression (klauspost zstd)"
    if re.match(r"(runtime|sync|internal/|syscall|gcWrite|aeshash|memeqbody|indexbyte|cmpbody)", sym):
        return "Go runtime (GC, memmove, channels, pools)"
    if "jsonscan" in sym or re.search(r"cassette\.(scanString|[Vv]erbatim|skip)", sym):
        return "JSON indexing"
    if "Classify" in sym or "classify" in sym:
        return "classification"
    if "protocol" in sym:
        return "validation"
    if "redact" in sym or "portable" in sym:
        return "redaction"
    if "framing" in sym:
        return "framing"
    if "cassette" in sym or "crc32" in sym or "strconv" in sym:
        return "record encoding"
    if "recorder" in sym:
        return "the recorder's own code"
    return "other"


def main():
    gib = float(sys.argv[1])
    per_pid = collections.defaultdict(collections.Counter)
    for line in sys.stdin:
        m = re.match(r"\s*(\d+)\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            pid, sym, dso = m.groups()
            per_pid[pid][stage(sym, dso)] += 1
    sink = max(per_pid, key=lambda p: per_pid[p]["compression (klauspost zstd)"])
    c = per_pid[sink]
    total = sum(c.values())
    print(f"sink (pid {sink}): {total} samples = {total / HZ:.2f} s of CPU for {gib} GiB\n")
    print("| stage | share | s/GiB |\n|---|---|---|")
    for k, n in c.most_common():
        print(f"| {k} | {100 * n / total:.1f} % | {n / HZ / gib:.2f} |")
    print(f"| **sink total** | | **{total / HZ / gib:.2f}** |\n")
    for p, cc in per_pid.items():
        if p != sink and sum(cc.values()) > 10:
            print(f"other rpctap process {p}: {sum(cc.values()) / HZ / gib:.2f} s/GiB")


if __name__ == "__main__":
    main()

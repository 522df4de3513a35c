#!/usr/bin/env python3
"""Where two Nsight Compute profiles of the same kernel binary differ, instruction by instruction.

Input: two exports of `ncu -i REP --page source --print-source sass --csv > FILE` (plain or .gz),
profiles of one kernel from one binary under two settings (e.g. the walk under reflect101 and
under the zero boundary: the boundary is a run-time value, so the SASS is the same and rows line
up by position). Prints each profile's executed instructions and stall samples by reason, then
the runs of SASS rows (blocks of --chunk rows) whose executed instructions or samples differ most,
with both profiles' counts and the first instructions of the block.

  scripts/ncu-sass-diff.py A.csv B.csv [--chunk 50] [--top 12] [--names A,B]
"""
import argparse
import csv
import gzip
import sys

STALLS = ["stall_long_sb", "stall_barrier", "stall_wait", "stall_short_sb", "stall_math", "stall_mio",
          "stall_branch_resolving", "stall_no_inst", "stall_not_selected", "stall_selected", "stall_dispatch",
          "stall_lg", "stall_tex", "stall_membar", "stall_drain", "stall_imc", "stall_misc", "stall_sleep"]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    # row 0: the kernel's name; row 1: the header; then one row a SASS instruction
    header_at = next((i for i, r in enumerate(rows[:5]) if "Address" in r and "Source" in r), None)
    if header_at is None:
        sys.exit(f"ncu-sass-diff: {path}: no 'Address,Source' header in its first rows "
                 "(expected: ncu --page source --print-source sass --csv)")
    header = rows[header_at]
    out = [dict(zip(header, r)) for r in rows[header_at + 1:] if len(r) >= len(header) - 1]
    if "Instructions Executed" not in header:
        sys.exit(f"ncu-sass-diff: {path}: no 'Instructions Executed' column")
    return out


def num(row, key):
    v = row.get(key, "") or "0"
    try:
        return int(v.replace(",", ""))
    except ValueError:
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--chunk", type=int, default=50, help="SASS rows a block (default 50)")
    ap.add_argument("--top", type=int, default=12, help="blocks shown (default 12)")
    ap.add_argument("--names", default="A,B", help="the two profiles' names (default A,B)")
    args = ap.parse_args()
    if args.chunk < 1 or args.top < 1:
        sys.exit("ncu-sass-diff: --chunk and --top must be >= 1")
    names = args.names.split(",")
    if len(names) != 2:
        sys.exit(f"ncu-sass-diff: --names {args.names!r} must be two names separated by a comma")
    a, b = load(args.a), load(args.b)
    if len(a) != len(b):
        print(f"warning: {len(a)} against {len(b)} SASS rows: not the same binary; rows compared by position",
              file=sys.stderr)
    stalls = [s for s in STALLS if s in a[0]] if a else []
    samples = "Warp Stall Sampling (All Samples)"
    for name, rows in zip(names, (a, b)):
        inst = sum(num(r, "Instructions Executed") for r in rows)
        smp = sum(num(r, samples) for r in rows)
        by = {s: sum(num(r, s) for r in rows) for s in stalls}
        top = ", ".join(f"{s[6:]} {v}" for s, v in sorted(by.items(), key=lambda kv: -kv[1])[:6] if v)
        print(f"{name}: {inst} instructions executed, {smp} stall samples ({top})")
    n = min(len(a), len(b))
    blocks = []
    for c in range(0, n, args.chunk):
        ra, rb = a[c:c + args.chunk], b[c:c + args.chunk]
        ia = sum(num(r, "Instructions Executed") for r in ra)
        ib = sum(num(r, "Instructions Executed") for r in rb)
        sa = sum(num(r, samples) for r in ra)
        sb = sum(num(r, samples) for r in rb)
        if ia or ib or sa or sb:
            blocks.append((c, ia, ib, sa, sb, ra, rb))
    blocks.sort(key=lambda t: -(abs(t[1] - t[2]) + 1000 * abs(t[3] - t[4])))  # instructions, a sample ~1000 of them
    print(f"\nblocks of {args.chunk} SASS rows, most different first "
          f"(instructions executed {names[0]} / {names[1]}, stall samples {names[0]} / {names[1]}):")
    for c, ia, ib, sa, sb, ra, rb in blocks[:args.top]:
        la = {s[6:]: sum(num(r, s) for r in ra) for s in stalls}
        lb = {s[6:]: sum(num(r, s) for r in rb) for s in stalls}
        main_stalls = sorted(la, key=lambda s: -(la[s] + lb[s]))[:3]  # (la, lb: the same reasons, in STALLS' order)
        detail = ", ".join(f"{s} {la[s]}/{lb[s]}" for s in main_stalls if la[s] + lb[s])
        first = next((r["Source"].strip() for r in (ra if ia >= ib else rb) if num(r, "Instructions Executed")), "")
        print(f"  rows {c:5d}-{c + len(ra) - 1:5d}: inst {ia:9d} / {ib:9d}   samples {sa:4d} / {sb:4d}   {detail}")
        print(f"      first executed: {first}")


if __name__ == "__main__":
    main()

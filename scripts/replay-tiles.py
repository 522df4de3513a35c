#!/usr/bin/env python3
"""The cost model's choices over a sweep, with the fused path's time taken at the tile it picks.

A sweep CSV holds one fused time a row: that of the tile the model took when it ran. A price
change that moves the fused path to another tile cannot be judged from that file alone
(`gpuconv-bench replay` compares methods, not tiles). This reads the model's choice with its
tile from `gpuconv-bench replay FREE --rows` (run with whatever environment the caller sets)
and looks a fused choice's time up in the sweep of the same rows with that tile forced
(`gpuconv-bench sweep ... --tile T`); every other method's time comes from FREE. Each row's
fastest is the least of every method in FREE (both separable variants where the sweep timed
them; a separable choice counts the sweep's separable column) and the fused path at every tile
given. Prints the
rows within 10% of the fastest, the rows whose fused tile has no file (unpriced), and with
--rows each row.

  scripts/replay-tiles.py --bench BUILD/apps/gpuconv-bench FREE.csv 64=T64.csv 80=T80.csv 128=T128.csv
                          [--boundary B] [--sms N] [--rows]
"""
import argparse
import csv
import re
import subprocess
import sys

METHODS = ["direct_ms", "separable_ms", "fused_ms", "three_pass_ms", "multipass_ms"]


def read_sweep(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"replay-tiles: cannot read {path!r}: {e.strerror}")
    if not rows or any(m not in rows[0] for m in METHODS + ["planes", "height", "width", "k", "kernel"]):
        sys.exit(f"replay-tiles: {path!r} is not a sweep's CSV (no rows, or a column missing)")
    out = {}
    for r in rows:
        key = (f"{r['planes']}x{r['height']}x{r['width']}", int(r["k"]), r["kernel"])
        out[key] = {m: float(r[m]) for m in METHODS}
        for extra in ("separable_fma_ms", "separable_fft_ms"):
            if extra in r:
                out[key][extra] = float(r[extra])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="gpuconv-bench (its replay --rows gives the model's tile)")
    ap.add_argument("free", help="the sweep without --tile")
    ap.add_argument("tiles", nargs="+", help="T=FILE: the same sweep with --tile T")
    ap.add_argument("--boundary", default="reflect101")
    ap.add_argument("--sms", default="132")
    ap.add_argument("--rows", action="store_true")
    args = ap.parse_args()
    free = read_sweep(args.free)
    by_tile = {}
    for t in args.tiles:
        m = re.fullmatch(r"(\d+)=(.+)", t)
        if not m:
            sys.exit(f"replay-tiles: {t!r} is not T=FILE")
        by_tile[int(m.group(1))] = read_sweep(m.group(2))
    out = subprocess.run([args.bench, "replay", args.free, "--boundary", args.boundary, "--sms", args.sms, "--rows"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"replay-tiles: {args.bench} replay failed: {out.stderr.strip()[:300]}")
    line_re = re.compile(r"^(\S+)\s+(\d+)\s+(\S+)\s+\|\s+recorded\s+\S+\s+model\s+([a-z_]+)(?::(\d+)(?:x\d+)?)?\s")
    rows = within = unpriced = 0
    for line in out.stdout.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        key = (m.group(1), int(m.group(2)), m.group(3))
        method, tile = m.group(4), int(m.group(5)) if m.group(5) else None
        if key not in free:
            continue
        times = free[key]
        candidates = [v for k, v in times.items() if v > 0]
        for t, sweep in by_tile.items():
            if key in sweep and sweep[key]["fused_ms"] > 0:
                candidates.append(sweep[key]["fused_ms"])
        best = min(candidates)
        if method == "fused":
            if tile not in by_tile or key not in by_tile[tile] or by_tile[tile][key]["fused_ms"] <= 0:
                unpriced += 1
                if args.rows:
                    print(f"{key[0]:>14} {key[1]:4d} {key[2]:7s} model fused:{tile}   (no sweep with that tile)")
                continue
            took = by_tile[tile][key]["fused_ms"]
        else:
            took = times[method + "_ms"]
        rows += 1
        ratio = took / best
        within += ratio <= 1.10
        if args.rows:
            name = f"{method}:{tile}" if tile else method
            print(f"{key[0]:>14} {key[1]:4d} {key[2]:7s} model {name:16s} {ratio:5.2f}{'!' if ratio > 1.10 else ''}")
    print(f"{args.free}: within 10% of the fastest (every method, the fused path at every tile given) "
          f"in {within} of {rows} rows; {unpriced} rows with a fused tile no file holds")


if __name__ == "__main__":
    main()

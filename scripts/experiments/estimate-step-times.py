#!/usr/bin/env python3
"""Every shipped scenario's `lowband estimate --json` times, one line each, and a
comparison of two such dumps (issue 23: the replay must keep every step time).

  estimate-step-times.py dump LOWBAND > before.json   # from the repository root
  estimate-step-times.py compare before.json after.json [--rel 1e-9] [--ignore KEY,...]

compare holds the *_seconds keys both dumps have; keys only one has are listed
(a layout's section that comes or goes), not counted; --ignore leaves out keys
whose definition changed on purpose.

A scenario that `estimate` refuses (exit 2, e.g. one with a sweep section) is
recorded with its error line, so both dumps list the same scenarios."""
import glob
import json
import subprocess
import sys


def times_of(result):
    # Every simulated-seconds figure, not the replay's own wall time.
    return {k: v for k, v in sorted(result.items())
            if k.endswith("_seconds") and k != "replay_wall_seconds" and isinstance(v, (int, float))}


def dump(lowband):
    files = sorted(glob.glob("scenarios/*.json") + glob.glob("scenarios/*/*.json"))
    out = {}
    for f in files:
        p = subprocess.run([lowband, "estimate", f, "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            out[f] = {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
        else:
            out[f] = times_of(json.loads(p.stdout))
        print(f, out[f], file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)


def compare(before_path, after_path, rel, ignore=()):
    before, after = json.load(open(before_path)), json.load(open(after_path))
    worst, bad = 0.0, 0
    print("| scenario | step_seconds before | after | max rel. diff (common *_seconds) | keys only before / after |")
    print("|---|---|---|---|---|")
    for f in sorted(set(before) | set(after)):
        b, a = before.get(f, {}), after.get(f, {})
        if "error" in b or "error" in a or f not in before or f not in after:
            same = b == a
            print("| %s | %s | %s | %s | |" % (f, b.get("error", "-"), a.get("error", "-"), "same" if same else "DIFFERENT"))
            bad += 0 if same else 1
            continue
        keys = (set(b) & set(a)) - set(ignore)
        d = max([abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) if b[k] != a[k] else 0.0 for k in keys] + [0.0])
        worst = max(worst, d)
        bad += d > rel
        only = "%s / %s" % (", ".join(sorted(set(b) - set(a))) or "-", ", ".join(sorted(set(a) - set(b))) or "-")
        print("| %s | %.12g | %.12g | %.2e | %s |" % (f, b.get("step_seconds", float("nan")),
                                                      a.get("step_seconds", float("nan")), d, only))
    print("\nworst relative difference %.3e; %d scenario(s) beyond %g" % (worst, bad, rel))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        rel = float(sys.argv[sys.argv.index("--rel") + 1]) if "--rel" in sys.argv else 1e-9
        ignore = sys.argv[sys.argv.index("--ignore") + 1].split(",") if "--ignore" in sys.argv else ()
        sys.exit(compare(sys.argv[2], sys.argv[3], rel, ignore))
    else:
        sys.exit(__doc__)

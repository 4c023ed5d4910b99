"""What the analysis scripts that print `lowband estimate` figures as markdown share
(mos-paper-estimate.sh, seed-claims.sh): the MoS paper's scenarios and overrides,
one cached `lowband estimate --json` per call, and the pages' number formats.
Run from the repository root (the scripts cd there)."""
import json
import subprocess

CEN = "scenarios/mos-paper-centralized-100gbps.json"
DEC = "scenarios/mos-paper-decentralized-300mbps.json"
MOS = "scenarios/mos-paper-mos-300mbps.json"
MESH = ("network.topology=full_mesh", "parallel.exchange=all_gather")
SPARSE10 = ("compression.weight_sync=sparse", "compression.sync_fraction=0.05", "compression.sync_every=10")

_cache = {}


def est(lowband, scenario, *sets):
    """One `lowband estimate --json` (cached): a dict, or a grid's list of points."""
    key = (lowband, scenario) + sets
    if key not in _cache:
        cmd = [lowband, "estimate", scenario, "--json"]
        for s in sets:
            cmd += ["--set", s]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        _cache[key] = r["points"] if "points" in r else r
    return _cache[key]


def tokens(x):  # tokens/s as the pages write it: 277, 6.2K, 27.1K
    return "%.1fK" % (x / 1000) if x >= 999.5 else "%.0f" % x


def sec(x):  # three significant figures: 473, 85.2, 8.23, 0.297
    return "%.0f" % x if x >= 99.95 else "%.1f" % x if x >= 9.995 else "%.2f" % x if x >= 0.9995 else "%.3f" % x

#!/usr/bin/env python3
"""Writes the measured networks under scenarios/networks/ from their sources.

    scripts/make-networks.py           # (re)write the files
    scripts/make-networks.py --check   # exit 1 if a file differs from what its source gives

aws-8-regions.json and aws-10-regions.json come from dtfm-aws-regions.csv (DS3Lab's
published AWS inter-region delays and bandwidths): one node per region, an explicit
link per pair of regions carrying the pair's measured bandwidth in each direction,
with a one-way latency of half the published delay (a round trip; README.md says why).
us-home-broadband.json is a star of homes at Ookla's US fixed-broadband medians.
"""
import csv
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
NETWORKS = ROOT / "scenarios" / "networks"
DTFM_SOURCE = ("DS3Lab's AWS inter-region measurements, published with 'Decentralized Training of Foundation "
               "Models in Heterogeneous Environments' (Yuan et al., NeurIPS 2022; github.com/DS3Lab/DT-FM, "
               "scheduler/generate_sim_com_matrices.py at commit 69f05e50f475): measured between one instance "
               "in each region (the date of the measurement is not given). Each link's bandwidth is the pair's measured rate, each way; its latency "
               "is half the published delay, which is a round trip (Virginia-Ohio 11 ms, Sydney-Frankfurt 265 ms). "
               "Nodes, in order: ")
# DT-FM's world-wide case (simulate_5_worldwide_geo_distributed): three continents.
EIGHT = ["Oregon", "Virginia", "Ohio", "Tokyo", "Seoul", "London", "Frankfurt", "Ireland"]
TEN = ["Oregon", "Virginia", "Ohio", "Tokyo", "Seoul", "Singapore", "Sydney", "London", "Frankfurt", "Ireland"]


def number(x):
    return f"{x:g}"


def pairs():
    with open(NETWORKS / "dtfm-aws-regions.csv") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {frozenset((r["region_a"], r["region_b"])): (float(r["delay_ms"]), float(r["bandwidth_gbps"]))
                for r in rows}


def regions_network(regions):
    measured = pairs()
    links = []
    for a in range(len(regions)):
        for b in range(a + 1, len(regions)):
            delay_ms, gbps = measured[frozenset((regions[a], regions[b]))]
            links.append({"between": [a, b], "bandwidth": number(gbps) + "Gbps",
                          "latency": number(delay_ms / 2) + "ms"})
    return {"source": DTFM_SOURCE + ", ".join(f"{i} {r}" for i, r in enumerate(regions)) + ".",
            "model": "ideal", "topology": "explicit", "nodes": len(regions), "links": links}


def home_network():
    return {"source": "Ookla Speedtest Global Index, United States fixed broadband, June 2022 (reported by "
                      "Fierce Electronics and Telecompetitor, August 2022): median download 153.80 Mbps, upload "
                      "21.60 Mbps, latency 14 ms. Eight homes at the median, each on its own access link; the 14 ms "
                      "is the round trip to a nearby test server, so each access link's one-way latency is 7 ms and "
                      "a path between two homes 14 ms one way: homes in one region, not across the continent.",
            "model": "ideal", "topology": "star", "nodes": 8, "bandwidth": "153.8Mbps",
            "upload_bandwidth": "21.6Mbps", "latency": "7ms"}


def dumps(network):
    """Indented JSON with one link per line."""
    lines = []
    for key, value in network.items():
        if key == "links":
            items = ",\n".join("    " + json.dumps(link, ensure_ascii=False) for link in value)
            lines.append(f'  "links": [\n{items}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    files = {"aws-8-regions.json": regions_network(EIGHT), "aws-10-regions.json": regions_network(TEN),
             "us-home-broadband.json": home_network()}
    check = "--check" in sys.argv[1:]
    stale = []
    for name, network in files.items():
        text = dumps(network)
        path = NETWORKS / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print("stale (run scripts/make-networks.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The testbed's network: racks of hosts in Linux network namespaces, joined
by tbf-shaped links between the rack switches (docs/testbed.md).

Every namespace is named PREFIX + a short name (PREFIX starts with "phtb-").
Each rack switch is a namespace holding a Linux bridge (br0) with one port per
host and routes to the other racks over point-to-point veth pairs, each shaped
on egress in both directions by tbf; hosts are namespaces with one interface,
eth0. Rack r's hosts live in 10.77.r.0/24 (the switch is 10.77.r.254); the
link between switches i < j is 10.78.(10i+j).0/24. A host pair may be routed
through a third switch (`via`), which is how three jobs come to share three
links pairwise (a loop in the affinity graph).

    netns.py up pair|ring|loop [--prefix phtb-tb-]   build (after removing what the prefix holds)
    netns.py down [--prefix phtb-]              remove every namespace with the prefix
    netns.py show pair|ring|loop                print the plan as JSON

Needs root (ip netns, tc). Idempotent: `up` first removes what `down` would.
"""

import argparse
import json
import os
import signal
import subprocess
import sys

# The inter-rack links' shaping (docs/testbed.md has why these values):
# burst above a 64 KB offload segment, a 1 MB queue limit (256 KB caused
# retransmissions and 200 ms timeouts).
RATE = "400mbit"
RATE_GBPS = 0.4
BURST = "256kb"
LIMIT = "1mb"

# Ephemeral ports inside the hosts (gloo's pair sockets and its store): this
# testbed binds only ports 27200-27299, and only inside its namespaces.
STORE_PORT = 27200
LOCAL_PORT_RANGE = "27210 27299"


def plan(name):
    """The named topology: racks, hosts (name -> rack), links (pairs of racks)
    and routes that go through a third rack (host -> host via rack)."""
    if name == "pair":
        # Two racks, one shaped link; job A's and job B's rank 0 in rack 1,
        # their rank 1 in rack 2 (or B's rank 1 in rack 1: `b2`, the candidate
        # that keeps B off the shared link).
        return {"racks": [1, 2], "links": [[1, 2]],
                "hosts": {"a0": 1, "b0": 1, "b2": 1, "a1": 2, "b1": 2},
                "via": []}
    if name == "ring":
        # Two racks, one shaped link. Job A (two ranks) runs across it; job R
        # has four servers, r0 and r1 in rack 1, r2 and r3 in rack 2. In the
        # host's order (r0, r2, r1, r3: ranks by pod index over servers spread
        # across racks) every hop of R's ring crosses the link, two per
        # direction; in an order that keeps each rack's servers together one.
        return {"racks": [1, 2], "links": [[1, 2]],
                "hosts": {"a0": 1, "r0": 1, "r1": 1, "a1": 2, "r2": 2, "r3": 2},
                "via": []}
    if name == "loop":
        # Three racks in a triangle. Job x: rack 1 <-> rack 3 through rack 2;
        # y: rack 2 <-> rack 1 through rack 3; z: rack 3 <-> rack 2 through
        # rack 1. Each link carries two of the jobs (per direction), each job
        # crosses two links: x-y share 2-3, y-z share 3-1, z-x share 1-2.
        return {"racks": [1, 2, 3], "links": [[1, 2], [2, 3], [1, 3]],
                "hosts": {"x0": 1, "x1": 3, "y0": 2, "y1": 1, "z0": 3, "z1": 2},
                "via": [["x0", "x1", 2], ["y0", "y1", 3], ["z0", "z1", 1]]}
    raise ValueError("topology: %r is not 'pair', 'ring' or 'loop'" % name)


def host_ip(p, host):
    rack = p["hosts"][host]
    index = sorted(h for h, r in p["hosts"].items() if r == rack).index(host) + 1
    return "10.77.%d.%d" % (rack, index)


def link_ip(i, j, end):
    lo, hi = min(i, j), max(i, j)
    return "10.78.%d.%d" % (10 * lo + hi, end)


def switch(prefix, rack):
    return "%ss%d" % (prefix, rack)


def host_ns(prefix, host):
    return prefix + host


def port(host):
    """The switch-side interface of a host: the probe reads its counters."""
    return "p" + host


def uplink(j):
    """In switch i, the interface towards switch j."""
    return "x%d" % j


def link_id(i, j):
    """The link id phasord and the simulator know, one per direction."""
    return "s%d>s%d" % (i, j)


def run(*cmd, check=True, quiet=False):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip() or "exit %d" % r.returncode))
    return r.stdout


def namespaces(prefix):
    out = run("ip", "netns", "list", check=False)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if n.startswith(prefix)]


def down(prefix):
    """Removes every namespace named with `prefix`, after stopping what still
    runs in it (only this testbed starts processes there)."""
    if not prefix.startswith("phtb-"):
        raise ValueError("prefix: %r does not start with 'phtb-'" % prefix)
    removed = []
    for ns in namespaces(prefix):
        for pid in run("ip", "netns", "pids", ns, check=False).split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        run("ip", "netns", "delete", ns, check=False)
        removed.append(ns)
    return removed


def sysctl(ns, key, value):
    run("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "%s=%s" % (key, value))


def up(name, prefix):
    """Builds topology `name` (after removing every namespace with `prefix`).
    Returns the plan with the namespaces, addresses and interfaces filled in."""
    p = plan(name)
    down(prefix)
    try:
        for rack in p["racks"]:
            ns = switch(prefix, rack)
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "link", "add", "br0", "type", "bridge")
            run("ip", "-n", ns, "addr", "add", "10.77.%d.254/24" % rack, "dev", "br0")
            run("ip", "-n", ns, "link", "set", "br0", "up")
            sysctl(ns, "net.ipv4.ip_forward", 1)
            sysctl(ns, "net.ipv4.conf.all.rp_filter", 0)
            sysctl(ns, "net.ipv4.conf.default.rp_filter", 0)
        for host, rack in sorted(p["hosts"].items()):
            ns, sw = host_ns(prefix, host), switch(prefix, rack)
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", sw, "link", "add", port(host), "type", "veth", "peer", "name", "eth0", "netns", ns)
            run("ip", "-n", sw, "link", "set", port(host), "master", "br0", "up")
            run("ip", "-n", ns, "addr", "add", host_ip(p, host) + "/24", "dev", "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "up")
            run("ip", "-n", ns, "route", "add", "default", "via", "10.77.%d.254" % rack)
            sysctl(ns, "net.ipv4.ip_local_port_range", LOCAL_PORT_RANGE)
        for i, j in p["links"]:
            si, sj = switch(prefix, i), switch(prefix, j)
            run("ip", "-n", si, "link", "add", uplink(j), "type", "veth", "peer", "name", uplink(i), "netns", sj)
            for ns, me, other, end in ((si, i, j, i), (sj, j, i, j)):
                dev = uplink(other)
                run("ip", "-n", ns, "addr", "add", link_ip(i, j, end) + "/24", "dev", dev)
                run("ip", "-n", ns, "link", "set", dev, "up")
                run("ip", "-n", ns, "route", "add", "10.77.%d.0/24" % other, "via", link_ip(i, j, other))
                run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                    "rate", RATE, "burst", BURST, "limit", LIMIT)
        for src, dst, via in p["via"]:
            # Both directions of the src <-> dst pair go through switch `via`.
            for a, b in ((src, dst), (dst, src)):
                ra, rb = p["hosts"][a], p["hosts"][b]
                run("ip", "-n", switch(prefix, ra), "route", "add", host_ip(p, b) + "/32",
                    "via", link_ip(ra, via, via))
                run("ip", "-n", switch(prefix, via), "route", "add", host_ip(p, b) + "/32",
                    "via", link_ip(via, rb, rb))
    except Exception:
        down(prefix)
        raise
    return describe(p, name, prefix)


def describe(p, name, prefix):
    out = {"name": name, "prefix": prefix, "rate_gbps": RATE_GBPS, "hosts": {}, "links": []}
    for host, rack in sorted(p["hosts"].items()):
        out["hosts"][host] = {"ns": host_ns(prefix, host), "rack": rack, "ip": host_ip(p, host),
                              "switch": switch(prefix, rack), "port": port(host)}
    for i, j in p["links"]:
        for a, b in ((i, j), (j, i)):
            out["links"].append({"id": link_id(a, b), "switch": switch(prefix, a), "dev": uplink(b)})
    return out


def fabric_yaml(name, host_gbps=10):
    """Topology `name` as a phasor topology YAML (docs/topology.md), for
    phasord's `topology_path`: each host a one-GPU server on its rack's switch
    (an unshaped link, `host_gbps`), the switches s1, s2, ... joined by the
    shaped links. phasor's link ids are then `s1->s2`, `s2->s1`, ..."""
    p = plan(name)
    lines = ["servers:"]
    for host in sorted(p["hosts"]):
        lines.append("  - {id: %s, gpus: 1, nics: [{name: eth0, gbps: %g}]}" % (host, host_gbps))
    lines.append("switches: [%s]" % ", ".join("s%d" % r for r in p["racks"]))
    lines.append("links:")
    for host, rack in sorted(p["hosts"].items()):
        lines.append("  - {a: %s, b: s%d, nic: eth0}" % (host, rack))
    for i, j in p["links"]:
        lines.append("  - {a: s%d, b: s%d, capacity_gbps: %g}" % (i, j, RATE_GBPS))
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["up", "down", "show"])
    ap.add_argument("topology", nargs="?", default="pair")
    ap.add_argument("--prefix", default=None, help="namespace prefix (up/show: phtb-tb-, down: phtb-)")
    a = ap.parse_args(argv)
    if a.action != "show" and os.geteuid() != 0:
        print("netns.py: needs root (ip netns, tc)", file=sys.stderr)
        return 77
    try:
        if a.action == "down":
            removed = down(a.prefix or "phtb-")
            print("removed %d namespace(s)%s" % (len(removed), (": " + " ".join(removed)) if removed else ""))
        elif a.action == "up":
            print(json.dumps(up(a.topology, a.prefix or "phtb-tb-"), indent=1))
        else:
            print(json.dumps(describe(plan(a.topology), a.topology, a.prefix or "phtb-tb-"), indent=1))
    except (RuntimeError, ValueError) as e:
        print("netns.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

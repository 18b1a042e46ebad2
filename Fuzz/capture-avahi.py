#!/usr/bin/env python3
"""Captures avahi-daemon's real multicast DNS traffic as FuzzDNS seeds (make-seeds.sh runs it).

  capture-avahi.py OUTDIR

Needs root, iproute2 and avahi-daemon. Creates two network namespaces joined by a veth pair (nothing
is sent on the machine's own interfaces), runs avahi-daemon in the first (no D-Bus, a static
_sf-channel._tcp service with a subtype and TXT, HINFO and workstation records, IPv4 and IPv6, a
tmpfs over /run and a private services directory inside the namespace's own mount namespace), and
in the second listens on the mDNS group while it provokes every kind of packet avahi sends:
  - the probes and announcements of its start,
  - answers to multicast (QM) and unicast-response (QU) queries for PTR, SRV, TXT, A, AAAA, ANY,
    the service enumeration and the subtype, and to a query carrying a known answer,
  - the answer to a legacy unicast query (RFC 6762 §6.7, from an ephemeral port, ID kept),
  - the re-probe after a conflicting probe for its host name (RFC 6762 §8.2),
  - the goodbyes (TTL 0) when it stops.
Each distinct packet received is written to OUTDIR/avahi-NN in arrival order. Every wait has a
deadline; the namespaces are deleted on every exit path.
"""
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

GROUP4, PORT = "224.0.0.251", 5353
HOST = "sf-avahi-seed"
A, PTR, HINFO, TXT, AAAA, SRV, ANY = 1, 12, 13, 16, 28, 33, 255
ADDRESS_A, ADDRESS_B = "10.231.77.1", "10.231.77.2"
INSTANCE = "SF Seed Service._sf-channel._tcp.local"


def encode_name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        out += bytes([len(label.encode())]) + label.encode()
    return out + b"\0"


def query(questions, ident=0, answers=(), authority=()):
    """A DNS query: questions are (name, type, unicast-response bit); answers and authority are
    ready-encoded records."""
    body = b"".join(encode_name(n) + struct.pack("!HH", t, 1 | (0x8000 if qu else 0)) for n, t, qu in questions)
    body += b"".join(answers) + b"".join(authority)
    return struct.pack("!HHHHHH", ident, 0, len(questions), len(answers), len(authority), 0) + body


def record(name, rtype, ttl, rdata, cache_flush=False):
    return encode_name(name) + struct.pack("!HHIH", rtype, 1 | (0x8000 if cache_flush else 0), ttl, len(rdata)) + rdata


def skip_name(data, offset):
    while True:
        length = data[offset]
        if length & 0xC0 == 0xC0:
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length


def records_of(packet):
    """(type, ttl) of every answer, authority and additional record; [] for what does not parse."""
    try:
        _, _, qd, an, ns, ar = struct.unpack_from("!HHHHHH", packet)
        offset = 12
        for _ in range(qd):
            offset = skip_name(packet, offset) + 4
        out = []
        for _ in range(an + ns + ar):
            offset = skip_name(packet, offset)
            rtype, _, ttl, length = struct.unpack_from("!HHIH", packet, offset)
            out.append((rtype, ttl))
            offset += 10 + length
        return out
    except (IndexError, struct.error):
        return []


def is_response(packet):
    return len(packet) >= 4 and packet[2] & 0x80


class Capture:
    """In the listening namespace: a socket on the mDNS group and one on an ephemeral port (for the
    legacy unicast answer), every packet kept in arrival order."""

    def __init__(self):
        self.group = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.group.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.group.bind(("", PORT))
        self.group.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                              socket.inet_aton(GROUP4) + socket.inet_aton(ADDRESS_B))
        self.group.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ADDRESS_B))
        self.group.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
        self.group.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
        self.legacy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.legacy.bind((ADDRESS_B, 0))
        self.packets = []

    def send(self, packet, legacy=False):
        (self.legacy if legacy else self.group).sendto(packet, (GROUP4, PORT))

    def wait_for(self, predicate, seconds):
        """Reads packets until one from avahi satisfies predicate or the deadline passes."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.group, self.legacy], [], [], left)
            for sock in ready:
                packet, source = sock.recvfrom(9000)
                if source[0] != ADDRESS_A:
                    continue
                self.packets.append(packet)
                if predicate(packet, sock is self.legacy):
                    return True
        return False


def listen(outdir):
    """The listening side (runs inside the second namespace). Tells the parent on stdout when the
    daemon may be stopped; writes the packets when the goodbyes came."""
    capture = Capture()

    def answered(rtype, legacy=False):
        return lambda p, from_legacy: is_response(p) and from_legacy == legacy and any(t == rtype for t, _ in records_of(p))

    steps = [
        # The start: probes (queries with authority records), then the announcement of the host's A.
        (None, answered(A), 30, "announcement"),
        (query([("_services._dns-sd._udp.local", PTR, False)]), answered(PTR), 5, "service enumeration"),
        (query([("_sf-channel._tcp.local", PTR, False)]), answered(PTR), 5, "PTR"),
        (query([("_noise._sub._sf-channel._tcp.local", PTR, True)]), answered(PTR), 5, "subtype, QU"),
        (query([(INSTANCE, SRV, True), (INSTANCE, TXT, True)]), answered(SRV), 5, "SRV and TXT, QU"),
        (query([(HOST + ".local", AAAA, False)]), answered(AAAA), 5, "AAAA"),
        (query([(HOST + ".local", ANY, False)]), answered(HINFO), 5, "ANY"),
        (query([(HOST + ".local", A, False)], ident=0x4242), answered(A, legacy=True), 5, "legacy unicast"),
    ]
    for packet, predicate, seconds, what in steps:
        if packet is not None:
            capture.send(packet, legacy=what == "legacy unicast")
        if not capture.wait_for(predicate, seconds):
            sys.exit(f"capture-avahi: no answer from avahi-daemon to the {what} step within {seconds} s")
        time.sleep(1.1)  # RFC 6762 §6: a record is multicast at most once per second; the next question must not be suppressed
    # A query carrying a known answer (the PTR with a fresh TTL): avahi must suppress that answer and
    # still answer the question asked with it.
    known = record("_sf-channel._tcp.local", PTR, 4500, encode_name(INSTANCE))
    capture.send(query([("_sf-channel._tcp.local", PTR, False), (INSTANCE, SRV, False)], answers=[known]))
    if not capture.wait_for(answered(SRV), 5):
        sys.exit("capture-avahi: no answer to the known-answer query within 5 s")
    # A conflicting probe, then a conflicting answer, for the host name: avahi returns its record to
    # probing; answering that probe with the claim makes it withdraw and probe a new name (§9).
    conflict = record(HOST + ".local", A, 120, socket.inet_aton("192.0.2.77"))
    capture.send(query([(HOST + ".local", ANY, False)], authority=[conflict]))
    claim = struct.pack("!HHHHHH", 0, 0x8400, 0, 1, 0, 0) + record(
        HOST + ".local", A, 120, socket.inet_aton("192.0.2.77"), cache_flush=True)
    capture.send(claim)
    if not capture.wait_for(lambda p, _: not is_response(p) and p[8:10] != b"\0\0" and HOST.encode() in p, 15):
        sys.exit("capture-avahi: avahi-daemon did not probe its host name again within 15 s of the conflict")
    capture.send(claim)
    if not capture.wait_for(lambda p, _: not is_response(p) and b"sf-avahi-seed-2" in p.lower(), 15):
        sys.exit("capture-avahi: avahi-daemon did not probe a new host name within 15 s of the conflict")
    capture.wait_for(answered(A), 10)
    print("stop", flush=True)
    if not capture.wait_for(lambda p, _: is_response(p) and any(ttl == 0 for _, ttl in records_of(p)), 15):
        sys.exit("capture-avahi: no goodbye (TTL 0) from avahi-daemon within 15 s of stopping it")
    capture.wait_for(lambda p, _: False, 1)  # goodbyes come in more than one packet
    seen, count = set(), 0
    for packet in capture.packets:
        if packet in seen:
            continue
        seen.add(packet)
        with open(os.path.join(outdir, f"avahi-{count:02d}"), "wb") as f:
            f.write(packet)
        count += 1
    print(f"wrote {count}", flush=True)


AVAHI_CONFIG = f"""[server]
host-name={HOST}
use-ipv4=yes
use-ipv6=yes
allow-interfaces=veth-sfa
enable-dbus=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=yes
publish-workstation=yes
publish-aaaa-on-ipv4=yes
[reflector]
[rlimits]
"""

SERVICE = """<?xml version="1.0" standalone='no'?>
<!DOCTYPE service-group SYSTEM "avahi-service.dtd">
<service-group>
  <name>SF Seed Service</name>
  <service>
    <type>_sf-channel._tcp</type>
    <subtype>_noise._sub._sf-channel._tcp</subtype>
    <port>4242</port>
    <txt-record>v=1</txt-record>
    <txt-record>fp=2a1f0c5e9d7b3a4c</txt-record>
    <txt-record>flag</txt-record>
  </service>
</service-group>
"""


def run(args, **kwargs):
    subprocess.run(args, check=True, **kwargs)


def main(outdir):
    suffix = str(os.getpid())
    ns_a, ns_b = f"sf-seed-avahi-{suffix}", f"sf-seed-listen-{suffix}"
    scratch = tempfile.mkdtemp(prefix="sf-avahi-seed.")
    daemon = listener = None
    try:
        run(["ip", "netns", "add", ns_a])
        run(["ip", "netns", "add", ns_b])
        run(["ip", "link", "add", "veth-sfa", "netns", ns_a, "type", "veth", "peer", "name", "veth-sfb", "netns", ns_b])
        for ns, dev, v4, v6 in ((ns_a, "veth-sfa", ADDRESS_A, "fd5f:77::1"), (ns_b, "veth-sfb", ADDRESS_B, "fd5f:77::2")):
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev])
            run(["ip", "-n", ns, "addr", "add", f"{v6}/64", "dev", dev, "nodad"])
            run(["ip", "-n", ns, "link", "set", dev, "up", "multicast", "on"])
        services = os.path.join(scratch, "services")
        os.mkdir(services)
        with open(os.path.join(services, "sf-seed.service"), "w") as f:
            f.write(SERVICE)
        config = os.path.join(scratch, "avahi.conf")
        with open(config, "w") as f:
            f.write(AVAHI_CONFIG)
        listener = subprocess.Popen(["ip", "netns", "exec", ns_b, sys.executable, __file__, "--listen", outdir],
                                    stdout=subprocess.PIPE, text=True)
        # Mounts made here stay in the mount namespace `ip netns exec` creates.
        setup = (f"mount -t tmpfs sf-avahi-run /run && mkdir -p /run/avahi-daemon && "
                 f"mount --bind {services} /etc/avahi/services && "
                 f"exec avahi-daemon -f {config} --no-drop-root --no-chroot --no-rlimits --no-proc-title --debug")
        daemon = subprocess.Popen(["ip", "netns", "exec", ns_a, "sh", "-c", setup],
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(scratch, "avahi.log"), "w"))
        line = listener.stdout.readline()
        if line.strip() == "stop":
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
            line = listener.stdout.readline()
        status = listener.wait(timeout=60)
        if status != 0 or not line.startswith("wrote"):
            with open(os.path.join(scratch, "avahi.log")) as f:
                sys.stderr.write(f.read())
            sys.exit(f"capture-avahi: failed (listener exit {status})")
        print(f"capture-avahi: {line.strip()} avahi packets to {outdir}")
    finally:
        for process in (daemon, listener):
            if process and process.poll() is None:
                process.kill()
                process.wait()
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--listen":
        listen(sys.argv[2])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""A raw-socket mDNS peer for the ServiceDiscovery network tests (standard library only; packets
written from RFC 1035 / RFC 6762, not by the code under test).

  mdns_raw.py timing --interface-ip IP --name INSTANCE [--type T] [--samples N] [--family 4|6] [--interface IF]
      waits 2.5 s (the responder's announcements end), then N times, 1.2 s apart (a record is
      multicast at most once per second): sends a multicast (QM) PTR query for T from port 5353
      and measures, with time.monotonic(), the time until the multicast response carrying the
      PTR to INSTANCE arrives; then the same for an SRV query of INSTANCE (a unique record).
      Prints {"ptr": [seconds...], "srv": [seconds...]}; a sample without an answer is null.
  mdns_raw.py claim --interface-ip IP --name INSTANCE --port P --host H [--type T] [--duration S]
      acts as a second responder claiming INSTANCE (SRV to H.local.:P, TXT, A IP): multicasts the
      claim, prints {"event":"claimed"}, then for S seconds answers every query naming INSTANCE
      (probes included) with the claim; prints {"event":"done","answered":N}.

  mdns_raw.py unicast-claim --interface-ip SOURCE --target IP|group --name INSTANCE --port P --host H [--type T] [--samples N]
                            [--interval I] [--source-port SP] [--rcode R]
      sends the same claim as `claim` (its A record SOURCE) N times, I seconds apart, from
      SOURCE:SP (default 5353), by unicast to IP:5353, as a host elsewhere could (RFC 6762 §11:
      discarded unless SOURCE is on the link), or with --target group to 224.0.0.251 (on the link,
      whatever SOURCE's subnet); with response code R (default 0; RFC 6762 §18.11: a non-zero
      one must be ignored, as must a response from a port other than 5353, §6). Prints
      {"event":"sending"} after the first, then {"sent": N}.

  mdns_raw.py claim ... --names K
      claims INSTANCE and the names the responder renames it to, "INSTANCE (2)" to "INSTANCE (K)".

  mdns_raw.py flood --interface-ip IP --name INSTANCE [--kind qm|qu|legacy] [--rate R] [--duration S]
      multicasts a query for INSTANCE's SRV record R times a second for S seconds: a QM query from
      port 5353 (kind qm, the default: a record the responder multicasts at most once a second), a
      QU one (the unicast-response bit, RFC 6762 §5.4) from port 5353, or a legacy one from an
      ephemeral port (§6.7); the last two are answered by unicast. Prints {"event":"flooding"}
      after the first, then {"event":"done","sent":N}.

  mdns_raw.py unicast-probe --interface-ip SOURCE --target IP --name INSTANCE --host H [--interval I] [--duration S]
      every I seconds for S seconds, sends from SOURCE:5353 to IP:5353 a probe (RFC 6762 §8.1)
      for INSTANCE, "INSTANCE (2)" to "INSTANCE (10)", H.local. and "H-2.local." to "H-10.local.",
      each with an authority record of type 65535 (which wins every tie-break, §8.2); prints
      {"event":"probing"} after the first, then {"event":"done","sent":N}.

  mdns_raw.py goodbye-watch --interface-ip IP --name INSTANCE --host H --renamed NAME [--duration S]
      listens on the group: prints {"event":"probe-seen"} once a probe (query) for NAME goes by,
      then {"event":"goodbye","instance":bool} once a response withdraws (TTL 0) H.local.'s A
      record, "instance" telling whether it also withdrew a record of INSTANCE (its SRV, TXT, or
      the PTR to it); ends after S seconds.

  mdns_raw.py legacy --interface-ip SOURCE --target IP --name INSTANCE [--type T] [--extra-questions N] [--timeout S]
      sends a legacy unicast query (RFC 6762 §6.7: from an ephemeral port of SOURCE, ID 0x4242)
      for INSTANCE's SRV record (after N questions for names nobody has, to make it large) to
      IP:5353 (IPv4 or IPv6) twice, waiting S seconds (default 1) for each answer, and prints
      {"answered": bool, "bytes": size}.

Run inside the test's network namespace (ip netns exec); every packet goes to the mDNS group
(224.0.0.251, or ff02::fb with --family 6) out of the given interface.
"""
import argparse
import json
import select
import socket
import struct
import sys
import time

GROUP4, GROUP6, PORT = "224.0.0.251", "ff02::fb", 5353
PTR, TXT, SRV, A = 12, 16, 33, 1


def encode_name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        data = label.encode()
        out += bytes([len(data)]) + data
    return out + b"\0"


def read_name(data, offset):
    """Returns (lower-case dotted name, offset after the name in place)."""
    labels, end, jumps = [], None, 0
    while True:
        length = data[offset]
        if length & 0xC0 == 0xC0:
            if end is None:
                end = offset + 2
            offset = ((length & 0x3F) << 8) | data[offset + 1]
            jumps += 1
            if jumps > 64:
                raise ValueError("pointer loop")
            continue
        offset += 1
        if length == 0:
            break
        labels.append(data[offset:offset + length].decode("utf-8", "replace").lower())
        offset += length
    return ".".join(labels) + ".", (end if end is not None else offset)


def parse(data):
    """Returns (flags, questions [(name, type)], records [(name, type, rdata_offset, rdata)])."""
    _, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", data[:12])
    offset, questions, records = 12, [], []
    for _ in range(qd):
        name, offset = read_name(data, offset)
        qtype, _ = struct.unpack("!HH", data[offset:offset + 4])
        offset += 4
        questions.append((name, qtype))
    for _ in range(an + ns + ar):
        name, offset = read_name(data, offset)
        rtype, _, _, length = struct.unpack("!HHIH", data[offset:offset + 10])
        offset += 10
        records.append((name, rtype, offset, data[offset:offset + length]))
        offset += length
    return flags, questions, records, an


def open_socket(family, interface_ip, interface):
    if family == 6:
        index = socket.if_nametoindex(interface)
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(("::", PORT))
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, socket.inet_pton(socket.AF_INET6, GROUP6) + struct.pack("@I", index))
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        return sock, (GROUP6, PORT, 0, index)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("0.0.0.0", PORT))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP4) + socket.inet_aton(interface_ip))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface_ip))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    return sock, (GROUP4, PORT)


def query(name, qtype, unicast=False):
    """A one-question query; `unicast` sets the question's unicast-response (QU) bit."""
    return struct.pack("!HHHHHH", 0, 0, 1, 0, 0, 0) + encode_name(name) + struct.pack("!HH", qtype, 0x8001 if unicast else 1)


def timing(args):
    sock, group = open_socket(args.family, args.interface_ip, args.interface)
    instance = (args.name + "." + args.type).lower()
    service_type = args.type.lower()
    time.sleep(2.5)

    def measure(packet, wanted):
        # Drop what arrived before the query (a late announcement must not count as its answer).
        while select.select([sock], [], [], 0)[0]:
            sock.recvfrom(9000)
        sock.sendto(packet, group)
        start = time.monotonic()
        while True:
            left = start + 10.0 - time.monotonic()  # a backstop: the delay measured is tens of ms
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                return None
            data, _ = sock.recvfrom(9000)
            arrived = time.monotonic()
            try:
                flags, _, records, answers = parse(data)
            except (ValueError, IndexError, struct.error):
                continue
            # An announcement (every record in the answer section) is not an answer to the query.
            if flags & 0x8000 and any(wanted(data, record) for record in records[:answers]) and not announcement(records[:answers]):
                return arrived - start

    def announcement(answers):
        return {PTR, SRV, TXT} <= {record[1] for record in answers}

    def is_ptr(data, record):
        return record[0] == service_type and record[1] == PTR and read_name(data, record[2])[0] == instance

    def is_srv(data, record):
        return record[0] == instance and record[1] == SRV

    result = {"ptr": [], "srv": []}
    for _ in range(args.samples):
        result["ptr"].append(measure(query(service_type, PTR), is_ptr))
        time.sleep(0.2)
        result["srv"].append(measure(query(instance, SRV), is_srv))
        time.sleep(1.2)
    print(json.dumps(result), flush=True)


def claim_response(args):
    """A response claiming INSTANCE: its SRV (to H.local.:P) and TXT, and H's A record."""
    instance = args.name + "." + args.type
    host = args.host + ".local."
    unique = 0x8001
    answers = [
        encode_name(instance) + struct.pack("!HHIH", SRV, unique, 120, 6 + len(encode_name(host)))
        + struct.pack("!HHH", 0, 0, args.port) + encode_name(host),
        encode_name(instance) + struct.pack("!HHIH", TXT, unique, 4500, 8) + b"\x07claim=1",
        encode_name(host) + struct.pack("!HHIH", A, unique, 120, 4) + socket.inet_aton(args.interface_ip),
    ]
    return struct.pack("!HHHHHH", 0, 0x8400 | args.rcode, 0, len(answers), 0, 0) + b"".join(answers)


def received(sock, duration):
    """Yields (data, flags, questions, records) of each parseable datagram for `duration` seconds."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        if not select.select([sock], [], [], 0.1)[0]:
            continue
        data, _ = sock.recvfrom(9000)
        try:
            flags, questions, records, _ = parse(data)
        except (ValueError, IndexError, struct.error):
            continue
        yield data, flags, questions, records


def claim(args):
    sock, group = open_socket(4, args.interface_ip, None)
    names = [args.name] + ["%s (%d)" % (args.name, n) for n in range(2, args.names + 1)]
    responses = {}
    for name in names:
        args.name = name
        responses[(name + "." + args.type).lower()] = claim_response(args)
    for response in responses.values():
        sock.sendto(response, group)
    print(json.dumps({"event": "claimed"}), flush=True)
    answered = 0
    for _, flags, questions, _ in received(sock, args.duration):
        for name in {name for name, _ in questions if not flags & 0x8000 and name in responses}:
            sock.sendto(responses[name], group)
            answered += 1
    print(json.dumps({"event": "done", "answered": answered}), flush=True)


def unicast_claim(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((args.interface_ip, args.source_port))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(args.interface_ip))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    destination = (GROUP4, PORT) if args.target == "group" else (args.target, PORT)
    response = claim_response(args)
    for sample in range(args.samples):
        sock.sendto(response, destination)
        if sample == 0:
            print(json.dumps({"event": "sending"}), flush=True)
        if sample + 1 < args.samples:
            time.sleep(args.interval)
    print(json.dumps({"sent": args.samples}), flush=True)


def flood(args):
    if args.kind == "legacy":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((args.interface_ip, 0))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(args.interface_ip))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
        group = (GROUP4, PORT)
    else:
        sock, group = open_socket(4, args.interface_ip, None)
    packet = query(args.name + "." + args.type, SRV, unicast=args.kind == "qu")
    sent, start = 0, time.monotonic()
    while time.monotonic() < start + args.duration:
        sock.sendto(packet, group)
        sent += 1
        if sent == 1:
            print(json.dumps({"event": "flooding"}), flush=True)
        time.sleep(max(0.0, start + sent / args.rate - time.monotonic()))
    print(json.dumps({"event": "done", "sent": sent}), flush=True)


def unicast_probe(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((args.interface_ip, PORT))
    names = [args.name + "." + args.type] + ["%s (%d).%s" % (args.name, n, args.type) for n in range(2, 11)]
    names += [args.host + ".local."] + ["%s-%d.local." % (args.host, n) for n in range(2, 11)]
    questions = b"".join(encode_name(name) + struct.pack("!HH", 255, 1) for name in names)
    authorities = b"".join(encode_name(name) + struct.pack("!HHIH", 65535, 1, 120, 0) for name in names)
    packet = struct.pack("!HHHHHH", 0, 0, len(names), 0, len(names), 0) + questions + authorities
    sent, start = 0, time.monotonic()
    while time.monotonic() < start + args.duration:
        sock.sendto(packet, (args.target, PORT))
        sent += 1
        if sent == 1:
            print(json.dumps({"event": "probing"}), flush=True)
        time.sleep(args.interval)
    print(json.dumps({"event": "done", "sent": sent}), flush=True)


def goodbye_watch(args):
    sock, _ = open_socket(4, args.interface_ip, None)
    instance = (args.name + "." + args.type).lower()
    renamed = (args.renamed + "." + args.type).lower()
    host = (args.host + ".local.").lower()
    seen_probe = False
    for data, flags, questions, records in received(sock, args.duration):
        if not flags & 0x8000:
            if not seen_probe and any(name == renamed for name, _ in questions):
                seen_probe = True
                print(json.dumps({"event": "probe-seen"}), flush=True)
            continue
        withdrawn = [(name, rtype, offset) for name, rtype, offset, _ in records if struct.unpack("!I", data[offset - 6:offset - 2])[0] == 0]
        if any(name == host and rtype == A for name, rtype, _ in withdrawn):
            of_instance = any(name == instance or (rtype == PTR and read_name(data, offset)[0] == instance) for name, rtype, offset in withdrawn)
            print(json.dumps({"event": "goodbye", "instance": of_instance}), flush=True)
            return


def legacy(args):
    family = socket.AF_INET6 if ":" in args.target else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.bind((args.interface_ip, 0))
    sock.settimeout(args.timeout)
    extra = b"".join(encode_name("nobody-%04d.local." % i) + struct.pack("!HH", A, 1) for i in range(args.extra_questions))
    packet = (struct.pack("!HHHHHH", 0x4242, 0, 1 + args.extra_questions, 0, 0, 0) + extra
              + encode_name(args.name + "." + args.type) + struct.pack("!HH", SRV, 1))
    answered = False
    for _ in range(2):
        sock.sendto(packet, (args.target, PORT))
        try:
            data, _ = sock.recvfrom(9000)
            answered = answered or (data[:2] == b"\x42\x42" and bool(data[2] & 0x80))
        except socket.timeout:
            pass
        if answered:
            break
    print(json.dumps({"answered": answered, "bytes": len(packet)}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["timing", "claim", "unicast-claim", "legacy", "flood", "unicast-probe", "goodbye-watch"])
    parser.add_argument("--interface-ip", required=True)
    parser.add_argument("--interface")
    parser.add_argument("--target")
    parser.add_argument("--family", type=int, default=4)
    parser.add_argument("--name", required=True)
    parser.add_argument("--type", default="_sf-channel._tcp.local.")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--port", type=int, default=9)
    parser.add_argument("--host", default="claimer")
    parser.add_argument("--duration", type=float, default=15)
    parser.add_argument("--extra-questions", type=int, default=0)
    parser.add_argument("--names", type=int, default=1)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--renamed")
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--kind", choices=["qm", "qu", "legacy"], default="qm")
    parser.add_argument("--source-port", type=int, default=PORT)
    parser.add_argument("--rcode", type=int, default=0)
    args = parser.parse_args()
    {"timing": timing, "claim": claim, "unicast-claim": unicast_claim, "legacy": legacy, "flood": flood,
     "unicast-probe": unicast_probe, "goodbye-watch": goodbye_watch}[args.command](args)


if __name__ == "__main__":
    main()

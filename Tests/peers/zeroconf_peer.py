#!/usr/bin/env python3
"""Independent DNS-SD / mDNS peer for the ServiceDiscovery tests, built on python-zeroconf.

  zeroconf_peer.py encode
      prints the hex of an mDNS response zeroconf builds (PTR, SRV, TXT, A, AAAA, NSEC) for
      "Py Peer._sf-channel._tcp.local." — no network.
  zeroconf_peer.py decode HEX
      parses HEX with zeroconf's DNSIncoming and prints its records as JSON — no network.
  zeroconf_peer.py browse --interface-ip IP --type T --name NAME --timeout S [--wait-removed S]
      browses (PTR) until NAME appears, resolves it (SRV/TXT/A) and prints it as JSON; with
      --wait-removed, first prints {"event":"resolved"} and then waits for NAME's goodbye.
  zeroconf_peer.py register --interface-ip IP --name NAME --port P --host H [--txt k=v]... [--duration S]
      registers the instance, prints {"event":"registered"}, keeps it until stdin closes or the
      duration ends, then unregisters (goodbye).

The network commands must run inside the test's network namespace (ip netns exec); zeroconf is
pinned to the given interface address there, IPv4 only for an IPv4 address and IPv6 only
(IPVersion.V6Only, group ff02::fb) for an IPv6 one.
"""
import argparse
import json
import socket
import sys
import threading
import time

import zeroconf
from zeroconf import (DNSAddress, DNSIncoming, DNSNsec, DNSOutgoing, DNSPointer, DNSService, DNSText,
                      IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf, const)

TYPE = "_sf-channel._tcp.local."


def encode():
    name = "Py Peer." + TYPE
    host = "py-host.local."
    out = DNSOutgoing(const._FLAGS_QR_RESPONSE | const._FLAGS_AA)
    now = 0
    unique = const._CLASS_IN | const._CLASS_UNIQUE
    out.add_answer_at_time(DNSPointer(TYPE, const._TYPE_PTR, const._CLASS_IN, 4500, name), now)
    out.add_answer_at_time(DNSService(name, const._TYPE_SRV, unique, 120, 0, 0, 4433, host), now)
    txt = ServiceInfo(TYPE, name, port=1, properties={"fp": "00ff", "v": "1", "flag": None}).text
    out.add_answer_at_time(DNSText(name, const._TYPE_TXT, unique, 4500, txt), now)
    out.add_answer_at_time(DNSAddress(host, const._TYPE_A, unique, 120, socket.inet_aton("192.0.2.7")), now)
    out.add_answer_at_time(DNSAddress(host, const._TYPE_AAAA, unique, 120, socket.inet_pton(socket.AF_INET6, "fe80::7")), now)
    out.add_answer_at_time(DNSNsec(host, const._TYPE_NSEC, unique, 120, host, [const._TYPE_A, const._TYPE_AAAA]), now)
    packets = out.packets()
    assert len(packets) == 1
    print(packets[0].hex())


def decode(hex_text):
    incoming = DNSIncoming(bytes.fromhex(hex_text))
    records = []
    for record in incoming.answers():
        entry = {"name": record.name, "type": record.type, "class": record.class_, "unique": record.unique, "ttl": record.ttl}
        if isinstance(record, DNSPointer):
            entry["alias"] = record.alias
        elif isinstance(record, DNSService):
            entry.update(server=record.server, port=record.port, priority=record.priority, weight=record.weight)
        elif isinstance(record, DNSText):
            entry["text"] = record.text.hex()
        elif isinstance(record, DNSAddress):
            family = socket.AF_INET if len(record.address) == 4 else socket.AF_INET6
            entry["address"] = socket.inet_ntop(family, record.address)
        records.append(entry)
    print(json.dumps({"valid": incoming.valid, "is_response": incoming.is_response(),
                      "questions": [[q.name, q.type, q.unicast] for q in incoming.questions], "records": records}))


def instance_json(info):
    properties = {}
    for key, value in (info.properties or {}).items():
        properties[key.decode()] = None if value is None else value.decode("utf-8", "replace")
    return {"name": info.name, "server": info.server, "port": info.port, "addresses": info.parsed_addresses(),
            "txt": properties}


def ip_version(address):
    return IPVersion.V6Only if ":" in address else IPVersion.V4Only


def browse(args):
    zc = Zeroconf(interfaces=[args.interface_ip], ip_version=ip_version(args.interface_ip))
    full = args.name + "." + args.type
    seen = threading.Event()
    removed = threading.Event()
    names = []

    def on_change(zeroconf, service_type, name, state_change):
        if state_change is ServiceStateChange.Added:
            names.append(name)
            if name.lower() == full.lower():
                seen.set()
        elif state_change is ServiceStateChange.Removed and name.lower() == full.lower():
            removed.set()

    browser = ServiceBrowser(zc, args.type, handlers=[on_change])
    deadline = time.monotonic() + args.timeout
    result = {"event": "browsed", "names": names, "instance": None}
    try:
        if seen.wait(args.timeout):
            info = zc.get_service_info(args.type, full, timeout=int(max(1, deadline - time.monotonic()) * 1000))
            if info is not None:
                result["instance"] = instance_json(info)
            if args.wait_removed:
                print(json.dumps({"event": "resolved", "instance": result["instance"]}), flush=True)
                result["removed"] = removed.wait(args.wait_removed)
    finally:
        browser.cancel()
        zc.close()
    result["names"] = list(names)
    print(json.dumps(result), flush=True)


def register(args):
    zc = Zeroconf(interfaces=[args.interface_ip], ip_version=ip_version(args.interface_ip))
    properties = {}
    for item in args.txt:
        key, _, value = item.partition("=")
        properties[key] = value
    info = ServiceInfo(args.type, args.name + "." + args.type, port=args.port, properties=properties,
                       server=args.host + ".local.", addresses=[socket.inet_pton(socket.AF_INET6 if ":" in args.interface_ip else socket.AF_INET, args.interface_ip)])
    zc.register_service(info)
    print(json.dumps({"event": "registered", "name": info.name}), flush=True)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait(args.duration)
    zc.unregister_service(info)
    zc.close()
    print(json.dumps({"event": "unregistered"}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("encode")
    p = sub.add_parser("decode")
    p.add_argument("hex")
    p = sub.add_parser("browse")
    p.add_argument("--interface-ip", required=True)
    p.add_argument("--type", default=TYPE)
    p.add_argument("--name", required=True)
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("--wait-removed", type=float, default=0,
                   help="after resolving, print a 'resolved' line and wait this long for the goodbye")
    p = sub.add_parser("register")
    p.add_argument("--interface-ip", required=True)
    p.add_argument("--type", default=TYPE)
    p.add_argument("--name", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", required=True)
    p.add_argument("--txt", action="append", default=[])
    p.add_argument("--duration", type=float, default=60)
    args = parser.parse_args()
    if args.command == "encode":
        encode()
    elif args.command == "decode":
        decode(args.hex)
    elif args.command == "browse":
        browse(args)
    else:
        register(args)


if __name__ == "__main__":
    main()

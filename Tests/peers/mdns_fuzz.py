#!/usr/bin/env python3
"""Sends malformed mDNS packets to a responder, then checks it still answers.

  mdns_fuzz.py --interface-ip IP --target IP --name INSTANCE [--type T] [--random N]

Run inside the test's network namespace (ip netns exec). Every packet goes to the mDNS group
224.0.0.251:5353 out of IP's interface and to TARGET:5353 directly. Afterwards a legacy unicast
query (RFC 6762 §6.7, from an ephemeral port) asks for INSTANCE's SRV record. Prints JSON:
{"sent": N, "answered": true|false, "port": P}.
"""
import argparse
import json
import random
import socket
import struct


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        data = label.encode()
        out += bytes([len(data)]) + data
    return out + b"\0"


def header(qd=0, an=0, ns=0, ar=0, flags=0, ident=0):
    return struct.pack("!HHHHHH", ident, flags, qd, an, ns, ar)


def malformed(instance, rng, count):
    full = name(instance)
    query = header(qd=1) + full + struct.pack("!HH", 33, 1)
    packets = [
        b"",
        b"\0",
        header()[:11],
        header(qd=65535),
        header(an=65535, flags=0x8400) + b"\0" * 40,
        header(qd=1) + b"\xc0\x0c\0\x01\0\x01",                      # pointer to itself
        header(qd=1) + b"\x01a\xc0\x0c\0\x01\0\x01",                  # loop through a label
        header(qd=1) + b"\xc0\x12\0\x01\0\x01\x01a\0",                # forward pointer
        header(qd=1) + b"\x40" + b"a" * 64 + b"\0\0\x01\0\x01",       # reserved label type
        header(qd=1) + b"\x3f" + b"a" * 63 + b"\xc0\x0c\0\x01\0\x01",  # 63-byte label then loop
        header(an=1, flags=0x8400) + b"\x01x\0\0\x10\0\x01\0\0\0\x09\0\x03\x09ab",  # TXT overrun
        header(an=1, flags=0x8400) + b"\x01x\0\0\x01\0\x01\0\0\0\x09\0\x05\1\2\3\4\5",  # A of 5 bytes
        header(an=1, flags=0x8400) + b"\x01x\0\0\x21\0\x01\0\0\0\x09\0\x07\0\0\0\0\0\x50\x05ab",  # SRV overrun
        query[:-1],
        query + b"\0",
        b"\xff" * 9001,
    ]
    for index in range(len(query)):
        for bit in range(8):
            mutated = bytearray(query)
            mutated[index] ^= 1 << bit
            packets.append(bytes(mutated))
    for _ in range(count):
        packets.append(bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 300))))
    return packets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--interface-ip", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--type", default="_sf-channel._tcp.local.")
    parser.add_argument("--random", type=int, default=200)
    parser.add_argument("--off-link-ip", help="also send a legacy query from this (other-subnet) source; it must get no answer")
    args = parser.parse_args()
    instance = args.name + "." + args.type

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(args.interface_ip))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    sock.bind((args.interface_ip, 0))
    sent = 0
    for packet in malformed(instance, random.Random(0x5FD15C), args.random):
        for destination in ("224.0.0.251", args.target):
            try:
                sock.sendto(packet, (destination, 5353))
                sent += 1
            except OSError:
                pass  # a 9001-byte datagram may be refused locally (EMSGSIZE)

    # The responder must still answer a well-formed legacy unicast query.
    answered = False
    sock.settimeout(5.0)  # a backstop: the answer comes after the backlog of malformed datagrams
    query = header(qd=1, ident=0x4242) + name(instance) + struct.pack("!HH", 33, 1)
    for _ in range(5):
        sock.sendto(query, (args.target, 5353))
        try:
            while True:
                data, _ = sock.recvfrom(9000)
                if data[:2] == b"\x42\x42" and data[2] & 0x80 and name(instance)[1:8] in data:
                    answered = True
                    break
        except socket.timeout:
            pass
        if answered:
            break
    result = {"sent": sent, "answered": answered, "port": sock.getsockname()[1]}
    if args.off_link_ip:
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        other.bind((args.off_link_ip, 0))
        other.settimeout(1.0)
        off_answered = False
        for _ in range(2):
            other.sendto(query, (args.target, 5353))
            try:
                data, _ = other.recvfrom(9000)
                off_answered = off_answered or data[:2] == b"\x42\x42"
            except socket.timeout:
                pass
        result["offLinkAnswered"] = off_answered
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Regenerates the seed corpora under Fuzz/Corpus/<target>/ (small files, committed).
#  - gen-N: made by each target itself (FUZZ_WRITE_SEEDS), sealed to its fixed keys so they open;
#  - age testkit vectors (C2SP/CCTV, from $SF_TEST_VECTORS or /work/shared/vectors or ../Tests/Vectors);
#  - openssl / ssh-keygen / Python for formats the library only reads (SEC1, iMAS blobs and plists);
#  - real traffic: python-zeroconf's and avahi-daemon's mDNS packets, noiseprotocol's transcripts.
# Needs the fuzz build (./run.sh 0 builds it). Usage: Fuzz/make-seeds.sh
set -euo pipefail
cd "$(dirname "$0")"
BIN=$(swift build -c debug --show-bin-path 2>/dev/null)
CORPUS=Corpus
export ASAN_OPTIONS=detect_leaks=0
for dir in "${SF_TEST_VECTORS:-}" ../Tests/Vectors /work/shared/vectors; do
    if [ -n "$dir" ] && [ -d "$dir/age" ]; then VECTORS=$dir; break; fi
done
rm -rf "$CORPUS"; mkdir -p "$CORPUS"
for target in FuzzAgeDecrypt FuzzAgeArmor FuzzAgeKeys FuzzEnvelope FuzzStreamEnvelope FuzzVault FuzzHybrid \
    FuzzHeimdall FuzzKeyImport FuzzSignatures FuzzRSAPadding FuzzDNS FuzzNoise FuzzChannelFrames FuzzRecords \
    FuzzFullTextQuery; do
    FUZZ_WRITE_SEEDS="$CORPUS/$target" "$BIN/$target" >/dev/null
done
mkdir -p "$CORPUS/FuzzLegacyIMAS" "$CORPUS/FuzzLegacyKeychain"
python3 - "$CORPUS" "${VECTORS:-}" <<'PY'
import os, sys, zlib, plistlib
corpus, vectors = sys.argv[1], sys.argv[2]
# age testkit: strip the key: value header; inflate compressed bodies; keep files under 4 KiB.
if vectors:
    for name in sorted(os.listdir(os.path.join(vectors, "age"))):
        raw = open(os.path.join(vectors, "age", name), "rb").read()
        if b"\n\n" not in raw: continue
        head, body = raw.split(b"\n\n", 1)
        if b"compressed: zlib" in head: body = zlib.decompress(body)
        if len(body) > 4096: continue
        target = "FuzzAgeArmor" if b"armored: yes" in head else "FuzzAgeDecrypt"
        open(os.path.join(corpus, target, "testkit-" + name), "wb").write(body)
# iMAS legacy blobs: IV || AES-256-CBC-PKCS7(plaintext || (-sum(plaintext)) & 0xff), key 0x42 * 32.
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives import padding
for i, text in enumerate([b"", b"hello imas", b"x" * 40]):
    iv = bytes(range(16))
    padder = padding.PKCS7(128).padder()
    padded = padder.update(text + bytes([(-sum(text)) & 0xff])) + padder.finalize()
    enc = Cipher(algorithms.AES(b"\x42" * 32), modes.CBC(iv)).encryptor()
    open(os.path.join(corpus, "FuzzLegacyIMAS", f"blob-{i}"), "wb").write(iv + enc.update(padded) + enc.finalize())
# iMAS keychain files: service -> account -> password (data or string), XML and binary.
root = {"com.example.app": {"alice": b"secret", "bob": "password"}, "other": {"": b""}}
for i, fmt in enumerate([plistlib.FMT_XML, plistlib.FMT_BINARY]):
    open(os.path.join(corpus, "FuzzLegacyKeychain", f"plist-{i}"), "wb").write(plistlib.dumps(root, fmt=fmt))
PY
# Multicast DNS packets written by python-zeroconf (a query with a known answer, a full response).
python3 -c 'import zeroconf' 2>/dev/null || python3 -m pip install -q zeroconf
python3 - "$CORPUS/FuzzDNS" <<'PY'
import os, socket, sys
from zeroconf import DNSOutgoing, DNSQuestion, DNSPointer, DNSService, DNSText, DNSAddress, const
t = "_sf-channel._tcp.local."
name = "Py Printer." + t
q = DNSOutgoing(const._FLAGS_QR_QUERY)
q.add_question(DNSQuestion(t, const._TYPE_PTR, const._CLASS_IN))
q.add_question(DNSQuestion(name, const._TYPE_SRV, const._CLASS_IN | const._CLASS_UNIQUE))
q.add_answer_at_time(DNSPointer(t, const._TYPE_PTR, const._CLASS_IN, 4500, name), 0)
r = DNSOutgoing(const._FLAGS_QR_RESPONSE | const._FLAGS_AA)
r.add_answer_at_time(DNSPointer(t, const._TYPE_PTR, const._CLASS_IN, 4500, name), 0)
r.add_answer_at_time(DNSService(name, const._TYPE_SRV, const._CLASS_IN | const._CLASS_UNIQUE, 120, 0, 0, 4242, "py-host.local."), 0)
r.add_answer_at_time(DNSText(name, const._TYPE_TXT, const._CLASS_IN | const._CLASS_UNIQUE, 4500, b"\x07fp=00ff\x03v=1"), 0)
r.add_answer_at_time(DNSAddress("py-host.local.", const._TYPE_A, const._CLASS_IN | const._CLASS_UNIQUE, 120, socket.inet_aton("192.0.2.9")), 0)
r.add_answer_at_time(DNSAddress("py-host.local.", const._TYPE_AAAA, const._CLASS_IN | const._CLASS_UNIQUE, 120,
                                socket.inet_pton(socket.AF_INET6, "fe80::9")), 0)
for i, message in enumerate([q, r]):
    for j, packet in enumerate(message.packets()):
        open(os.path.join(sys.argv[1], f"zeroconf-{i}-{j}"), "wb").write(packet)
PY
# avahi-daemon's own traffic, captured between two network namespaces (needs root and avahi-daemon):
# probes, announcements, QM/QU/ANY/known-answer/legacy-unicast answers, a rename after a conflict, goodbyes.
python3 capture-avahi.py "$CORPUS/FuzzDNS"
# SEC1 EC keys and an openssl-encrypted PKCS#8 (passphrase "fuzz", 1000 PBKDF2 rounds).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
openssl ecparam -name prime256v1 -genkey -noout -out "$CORPUS/FuzzKeyImport/openssl-sec1.pem"
openssl ec -in "$CORPUS/FuzzKeyImport/openssl-sec1.pem" -outform DER -out "$CORPUS/FuzzKeyImport/openssl-sec1.der" 2>/dev/null
openssl pkcs8 -topk8 -in "$CORPUS/FuzzKeyImport/openssl-sec1.pem" -passout pass:fuzz -iter 1000 -v2 aes-256-cbc \
    -out "$CORPUS/FuzzKeyImport/openssl-encrypted-pkcs8.pem"
# An unencrypted OpenSSH ed25519 private key and its public line, for age identity files.
ssh-keygen -q -t ed25519 -N "" -C fuzz -f "$tmp/id" && cp "$tmp/id" "$CORPUS/FuzzAgeKeys/ssh-ed25519-private" \
    && cp "$tmp/id.pub" "$CORPUS/FuzzAgeKeys/ssh-ed25519-public"
# FuzzNoise's seeds are noiseprotocol transcripts: python noiseprotocol, with the same fixed static,
# ephemeral and pre-shared keys, prologue and payloads, must write byte for byte the seeds the
# target wrote (checked here; deferred patterns are left out, noiseprotocol speaks the fundamental
# ones only).
python3 -c 'import noise.connection' 2>/dev/null || python3 -m pip install -q noiseprotocol
mkdir -p "$tmp/noise"
python3 -W ignore - "$tmp/noise" <<'PY'
import os, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from noise.connection import Keypair, NoiseConnection
out = sys.argv[1]
# Noise.HandshakePattern.fundamentalPatternNames, in its (sorted) order: a seed's first byte indexes it.
catalog = sorted("""I1K I1K1 I1N I1X I1X1 IK IK1 IN IX IX1 K K1K K1K1 K1N K1X K1X1 KK KK1 KN KX KX1 N NK NK1 NN NX NX1
    X X1K X1K1 X1N X1X X1X1 XK XK1 XN XX XX1""".split())
patterns = catalog + ["NNpsk0", "XXpsk3", "IKpsk2", "NKpsk0"]
key = lambda b: bytes([b] * 31 + [0x40])
public = lambda b: X25519PrivateKey.from_private_bytes(key(b)).public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
def party(name, initiator):
    c = NoiseConnection.from_name(f"Noise_{name}_25519_ChaChaPoly_SHA256".encode())
    c.set_as_initiator() if initiator else c.set_as_responder()
    c.set_prologue(b"fuzz")
    c.set_keypair_from_private_bytes(Keypair.STATIC, key(1 if initiator else 2))
    c.set_keypair_from_private_bytes(Keypair.EPHEMERAL, key(3 if initiator else 4))
    c.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, public(2 if initiator else 1))
    if "psk" in name:
        c.set_psks(psk=bytes([5] * 32))
    c.start_handshake()
    return c
written = 0
for index, name in enumerate(patterns):
    if any(ch.isdigit() for ch in name.split("psk")[0]):
        continue
    for reader_is_initiator in (True, False):
        for position in range(3):
            i, r = party(name, True), party(name, False)
            messages, received, sender, receiver = [], 0, i, r
            while not (i.handshake_finished and r.handshake_finished):
                message = sender.write_message(b"payload")
                receiver.read_message(message)
                if (receiver is i) == reader_is_initiator:
                    if received == position:
                        messages.append(message)
                    received += 1
                sender, receiver = receiver, sender
            transport_sender = r if reader_is_initiator else i
            try:
                messages.append(transport_sender.encrypt(b"transport"))
            except Exception:
                pass  # one-way pattern: the responder sends nothing
            if not messages:
                continue
            flags = (0 if reader_is_initiator else 1) | position << 1
            seed = bytes([index, flags]) + b"".join(len(m).to_bytes(2, "big") + m for m in messages)
            open(os.path.join(out, f"noiseprotocol-{name}-{flags}"), "wb").write(seed)
            written += 1
print(f"{written} noiseprotocol seeds", file=sys.stderr)
PY
for seed in "$tmp"/noise/*; do
    same=""
    for gen in "$CORPUS"/FuzzNoise/gen-*; do cmp -s "$seed" "$gen" && same=1 && break; done
    [ -n "$same" ] || { echo "noiseprotocol transcript $(basename "$seed") differs from every FuzzNoise seed" >&2; exit 1; }
done
du -sh "$CORPUS"/*

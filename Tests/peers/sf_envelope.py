#!/usr/bin/env python3
"""Independent implementation of SecureFoundation's SFE1 envelope, SFS1 stream and the legacy iMAS
layout, written from docs/FORMATS.md with Python `cryptography`. Used by the test suite as a peer.

usage:
  sf_envelope.py open   (--key-file F | --passphrase-file F) [--context C]   < envelope > plaintext
  sf_envelope.py seal   (--key-file F | --passphrase-file F) [--context C] [--alg aes|chacha]
                        [--kdf scrypt|pbkdf2] [--log-n N] [--rounds R]       < plaintext > envelope
  sf_envelope.py stream-open / stream-seal  (same options)
  sf_envelope.py imas-encrypt --passphrase-file F --salt-hex S               < plaintext > blob
"""
import argparse, os, struct, sys
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

AEADS = {1: AESGCM, 2: ChaCha20Poly1305}
CHUNK = 1 << 16


def read_secret(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n", 1)[0].rstrip(b"\r")


def read_key(path):
    raw = open(path, "rb").read()
    return raw if len(raw) == 32 else bytes.fromhex(raw.decode().strip())


def derive(kdf, params, secret):
    if kdf == 0:
        return secret
    if kdf == 1:
        log_n, r, p, salt = params
        return Scrypt(salt=salt, length=32, n=1 << log_n, r=r, p=p).derive(secret)
    rounds, salt = params
    return PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=rounds).derive(secret)


def parse_header(data, magic):
    if data[:4] != magic:
        raise SystemExit("bad magic")
    alg, kdf = data[4], data[5]
    if kdf == 0:
        return alg, kdf, None, 6
    if kdf == 1:
        log_n, r, p = data[6], data[7], data[8]
        return alg, kdf, (log_n, r, p, data[9:25]), 25
    rounds = struct.unpack(">I", data[6:10])[0]
    return alg, kdf, (rounds, data[10:26]), 26


def build_header(magic, args):
    alg = 1 if args.alg == "aes" else 2
    if args.key_file:
        return bytes(magic) + bytes([alg, 0]), 0, None
    salt = os.urandom(16)
    if args.kdf == "scrypt":
        return bytes(magic) + bytes([alg, 1, args.log_n, 8, 1]) + salt, 1, (args.log_n, 8, 1, salt)
    return bytes(magic) + bytes([alg, 2]) + struct.pack(">I", args.rounds) + salt, 2, (args.rounds, salt)


def secret_of(args):
    return read_key(args.key_file) if args.key_file else read_secret(args.passphrase_file)


def envelope_open(args, data):
    alg, kdf, params, n = parse_header(data, b"SFE1")
    key = derive(kdf, params, secret_of(args))
    header, nonce, body = data[:n], data[n:n + 12], data[n + 12:]
    return AEADS[alg](key).decrypt(nonce, body, header + args.context.encode())


def envelope_seal(args, plaintext):
    header, kdf, params = build_header(b"SFE1", args)
    key = derive(kdf, params, secret_of(args))
    nonce = os.urandom(12)
    return header + nonce + AEADS[header[4]](key).encrypt(nonce, plaintext, header + args.context.encode())


def payload_aead(header, alg, master):
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=header[-16:], info=b"SecureFoundation SFS1 payload").derive(master)
    return AEADS[alg](key)


def nonce(i, last):
    return i.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def stream_open(args, data):
    alg, kdf, params, n = parse_header(data, b"SFS1")
    if data[n] != 16:
        raise SystemExit("bad chunk size")
    header = data[:n + 17]
    aead = payload_aead(header, alg, derive(kdf, params, secret_of(args)))
    ad = header + args.context.encode()
    body, out, i = data[n + 17:], [], 0
    while True:
        piece, body = body[:CHUNK + 16], body[CHUNK + 16:]
        last = len(body) == 0
        out.append(aead.decrypt(nonce(i, last), piece, ad))
        i += 1
        if last:
            return b"".join(out)


def stream_seal(args, plaintext):
    header, kdf, params = build_header(b"SFS1", args)
    header += bytes([16]) + os.urandom(16)
    aead = payload_aead(header, header[4], derive(kdf, params, secret_of(args)))
    ad = header + args.context.encode()
    chunks = [plaintext[i:i + CHUNK] for i in range(0, len(plaintext), CHUNK)] or [b""]
    return header + b"".join(aead.encrypt(nonce(i, i == len(chunks) - 1), c, ad) for i, c in enumerate(chunks))


def imas_encrypt(args, plaintext):
    key = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=bytes.fromhex(args.salt_hex), iterations=1000).derive(
        read_secret(args.passphrase_file))
    chk = (-sum(plaintext)) & 0xFF
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext + bytes([chk])) + padder.finalize()
    iv = os.urandom(16)
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return iv + enc.update(padded) + enc.finalize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["open", "seal", "stream-open", "stream-seal", "imas-encrypt"])
    ap.add_argument("--key-file")
    ap.add_argument("--passphrase-file")
    ap.add_argument("--context", default="")
    ap.add_argument("--alg", default="aes", choices=["aes", "chacha"])
    ap.add_argument("--kdf", default="scrypt", choices=["scrypt", "pbkdf2"])
    ap.add_argument("--log-n", type=int, default=17)
    ap.add_argument("--rounds", type=int, default=600000)
    ap.add_argument("--salt-hex")
    args = ap.parse_args()
    data = sys.stdin.buffer.read()
    handler = {"open": envelope_open, "seal": envelope_seal, "stream-open": stream_open,
               "stream-seal": stream_seal, "imas-encrypt": imas_encrypt}[args.command]
    sys.stdout.buffer.write(handler(args, data))


if __name__ == "__main__":
    main()

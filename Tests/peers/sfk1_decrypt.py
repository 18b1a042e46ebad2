#!/usr/bin/env python3
"""Independent reader of SecureKeys hybrid messages ("SFK1", schemes 0x01 HPKE base and 0x03
RSA-OAEP), written from docs/FORMATS.md only, using Python `cryptography`.

usage: sfk1_decrypt.py PRIVATE_KEY.pem MESSAGE_FILE   (plaintext on stdout)
"""
import hashlib
import sys

from cryptography.hazmat.primitives import hashes, hpke, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SUITES = {  # kem_id, kdf_id, aead_id -> suite, Nenc
    (0x0020, 0x0001, 0x0003): (hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.CHACHA20_POLY1305), 32),
    (0x0010, 0x0001, 0x0002): (hpke.Suite(hpke.KEM.P256, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM), 65),
    (0x0011, 0x0002, 0x0002): (hpke.Suite(hpke.KEM.P384, hpke.KDF.HKDF_SHA384, hpke.AEAD.AES_256_GCM), 97),
    (0x0012, 0x0003, 0x0002): (hpke.Suite(hpke.KEM.P521, hpke.KDF.HKDF_SHA512, hpke.AEAD.AES_256_GCM), 133),
}


def main():
    key = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), password=None)
    message = open(sys.argv[2], "rb").read()
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if message[:4] != b"SFK1":
        sys.exit("not an SFK1 message")
    scheme = message[4]
    if message[5:37] != hashlib.sha256(spki).digest():
        sys.exit("wrong recipient")
    if scheme == 0x01:
        ids = (int.from_bytes(message[37:39], "big"), int.from_bytes(message[39:41], "big"), int.from_bytes(message[41:43], "big"))
        suite, _ = SUITES[ids]
        info = message[:43]
        plaintext = suite.decrypt(message[43:], key, info=info)
    elif scheme == 0x03:
        k = key.key_size // 8
        wrapped = message[37:37 + k]
        nonce = message[37 + k:37 + k + 12]
        aad = message[:37 + k + 12]
        file_key = key.decrypt(wrapped, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
        plaintext = AESGCM(file_key).decrypt(nonce, message[37 + k + 12:], aad)
    else:
        sys.exit("unsupported scheme %d" % scheme)
    sys.stdout.buffer.write(plaintext)


main()

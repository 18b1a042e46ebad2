#!/usr/bin/env python3
"""An independent Heimdall implementation (hybrid payload and signatures) written from the layout in
docs/FORMATS.md, using Python `cryptography`. Text is Heimdall base64 (URL-safe variant with --url).

usage: heimdall.py encrypt PUBLIC.pem [--url] < message  > base64
       heimdall.py decrypt PRIVATE.pem       < base64   > message
       heimdall.py sign    PRIVATE.pem [--url] < message  > base64
       heimdall.py verify  PUBLIC.pem SIGNATURE_BASE64_FILE < message   (exit 0 when valid)
"""
import base64
import os
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, padding as sympad, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)


def to_text(data, url):
    text = base64.b64encode(data).decode()
    return text.replace("/", "_").replace("+", "-") if url else text


def from_text(text):
    return base64.b64decode(text.strip().replace("_", "/").replace("-", "+"), validate=True)


def aes_key_length(k):
    room = k - 16 - 42
    return 32 if room >= 32 else 24 if room >= 24 else 16


def main():
    command, key_path = sys.argv[1], sys.argv[2]
    url = "--url" in sys.argv
    data = sys.stdin.buffer.read()
    pem = open(key_path, "rb").read()
    if command == "encrypt":
        key = serialization.load_pem_public_key(pem)
        n = aes_key_length(key.key_size // 8)
        aes_key, iv = os.urandom(n), os.urandom(16)
        padder = sympad.PKCS7(128).padder()
        padded = padder.update(data) + padder.finalize()
        encryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
        body = encryptor.update(padded) + encryptor.finalize()
        sys.stdout.write(to_text(key.encrypt(aes_key + iv, OAEP) + body, url))
    elif command == "decrypt":
        key = serialization.load_pem_private_key(pem, password=None)
        payload = from_text(data.decode())
        k = key.key_size // 8
        key_and_iv = key.decrypt(payload[:k], OAEP)
        n = aes_key_length(k)
        assert len(key_and_iv) == n + 16
        decryptor = Cipher(algorithms.AES(key_and_iv[:n]), modes.CBC(key_and_iv[n:])).decryptor()
        padded = decryptor.update(payload[k:]) + decryptor.finalize()
        unpadder = sympad.PKCS7(128).unpadder()
        sys.stdout.buffer.write(unpadder.update(padded) + unpadder.finalize())
    elif command == "sign":
        key = serialization.load_pem_private_key(pem, password=None)
        sys.stdout.write(to_text(key.sign(data, padding.PKCS1v15(), hashes.SHA256()), url))
    elif command == "verify":
        key = serialization.load_pem_public_key(pem)
        signature = from_text(open(sys.argv[3]).read())
        try:
            key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            sys.exit(1)


main()

#!/usr/bin/env python3
"""Independent Noise peer for SecureChannel's live tests, on Python `noiseprotocol` (PyPI).

Speaks SecureChannel's wire format (docs/FORMATS.md, "SecureChannel"): every Noise message in a
frame of a 2-byte big-endian length; handshake payloads empty; each application message split into
transport messages whose plaintext is a flag byte (0x00 more follows, 0x01 last) and up to
65,518 bytes; each side's last transport message is the flag 0x02 alone, its end of stream, and a
connection that closes without it is cut short.

    noise_peer.py responder PROTOCOL PROLOGUE_HEX
        listens on 127.0.0.1 (ephemeral port, printed as "PORT n"), accepts one connection, runs
        the handshake and echoes every application message until the peer's end of stream, then
        sends its own; prints "OK". A connection closed without the end of stream exits 1 with
        "closed before the end of the stream".
    noise_peer.py hostile PROTOCOL PROLOGUE_HEX PORT CASE
        connects, runs an honest handshake, sends one good message and then CASE: flip, replay,
        short, empty, badflag, emptyplain, oversize, halfframe, reset, noend (closes without the end
        of stream), afterend (a message after the end of stream) or endwithdata (an end of stream
        carrying data) (see hostile()); prints "SENT" and exits.
    noise_peer.py initiator PROTOCOL PROLOGUE_HEX PORT SIZES
        connects to 127.0.0.1:PORT, runs the handshake, sends one application message per size in
        SIZES (comma-separated; byte i of a message of n bytes is (i * 7 + n) mod 256), checks
        each echo, sends its end of stream, waits for the peer's, prints "OK" and exits 0.

Keys come from the environment (hex): NOISE_STATIC (own X25519 private key) and, for patterns
that need it in advance, NOISE_REMOTE_STATIC (the peer's public key).
"""
import os
import socket
import sys

from noise.connection import Keypair, NoiseConnection

CHUNK = 65535 - 16 - 1
MORE, LAST, END = 0x00, 0x01, 0x02


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            return None
        data += part
    return data


def recv_frame(sock):
    header = recv_exact(sock, 2)
    if header is None:
        return None
    return recv_exact(sock, int.from_bytes(header, "big"))


def send_frame(sock, message):
    sock.sendall(len(message).to_bytes(2, "big") + message)


def handshake(sock, protocol, prologue, initiator):
    noise = NoiseConnection.from_name(protocol.encode())
    if initiator:
        noise.set_as_initiator()
    else:
        noise.set_as_responder()
    if os.environ.get("NOISE_STATIC"):
        noise.set_keypair_from_private_bytes(Keypair.STATIC, bytes.fromhex(os.environ["NOISE_STATIC"]))
    if os.environ.get("NOISE_REMOTE_STATIC"):
        noise.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, bytes.fromhex(os.environ["NOISE_REMOTE_STATIC"]))
    noise.set_prologue(prologue)
    noise.start_handshake()
    my_turn = initiator
    while not noise.handshake_finished:
        if my_turn:
            send_frame(sock, noise.write_message(b""))
        else:
            frame = recv_frame(sock)
            if frame is None:
                raise SystemExit("connection closed during the handshake")
            noise.read_message(frame)
        my_turn = not my_turn
    return noise


def send_message(sock, noise, message):
    offset = 0
    while True:
        chunk = message[offset:offset + CHUNK]
        offset += len(chunk)
        last = offset >= len(message)
        send_frame(sock, noise.encrypt(bytes([1 if last else 0]) + chunk))
        if last:
            return


def send_end(sock, noise):
    send_frame(sock, noise.encrypt(bytes([END])))


def receive_message(sock, noise):
    """The next application message, or None at the peer's end of stream."""
    message = b""
    while True:
        frame = recv_frame(sock)
        if frame is None:
            raise SystemExit("connection closed before the end of the stream")
        plaintext = noise.decrypt(frame)
        if plaintext == bytes([END]) and not message:
            return None
        if not plaintext or plaintext[0] not in (MORE, LAST):
            raise SystemExit("malformed application frame")
        message += plaintext[1:]
        if plaintext[0] == LAST:
            return message


def main():
    role, protocol, prologue = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
    if role == "responder":
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        print("PORT", server.getsockname()[1], flush=True)
        sock, _ = server.accept()
        noise = handshake(sock, protocol, prologue, initiator=False)
        while True:
            message = receive_message(sock, noise)
            if message is None:
                break
            send_message(sock, noise, message)
        send_end(sock, noise)
        sock.close()
        print("OK", flush=True)
    elif role == "hostile":
        hostile(protocol, prologue, int(sys.argv[4]), sys.argv[5])
    else:
        port, sizes = int(sys.argv[4]), [int(s) for s in sys.argv[5].split(",")]
        sock = socket.create_connection(("127.0.0.1", port))
        noise = handshake(sock, protocol, prologue, initiator=True)
        for size in sizes:
            message = bytes((i * 7 + size) % 256 for i in range(size))
            send_message(sock, noise, message)
            if receive_message(sock, noise) != message:
                raise SystemExit("echo mismatch for a message of %d bytes" % size)
        send_end(sock, noise)
        if receive_message(sock, noise) is not None:
            raise SystemExit("a message after the echoes, instead of the end of stream")
        sock.close()
        print("OK", flush=True)


def hostile(protocol, prologue, port, case):
    """Completes an honest handshake, then sends one bad thing after a good message, and leaves."""
    sock = socket.create_connection(("127.0.0.1", port))
    noise = handshake(sock, protocol, prologue, initiator=True)
    send_message(sock, noise, b"good\n")
    try:
        send_bad(sock, noise, case)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed the connection first: what it should do
    sock.close()
    print("SENT", flush=True)


def send_bad(sock, noise, case):
    if case == "flip":          # a transport message with one ciphertext bit flipped
        frame = bytearray(noise.encrypt(b"\x01bad\n"))
        frame[3] ^= 0x40
        send_frame(sock, bytes(frame))
    elif case == "replay":      # the previous transport message again (its nonce is spent)
        first = noise.encrypt(b"\x01once\n")
        send_frame(sock, first)
        send_frame(sock, first)
    elif case == "short":       # shorter than the 16-byte tag
        send_frame(sock, b"\x00" * 5)
    elif case == "empty":       # an empty frame
        send_frame(sock, b"")
    elif case == "badflag":     # authentic, but the application flag byte is neither 0 nor 1
        send_frame(sock, noise.encrypt(b"\x07bad\n"))
    elif case == "emptyplain":  # authentic, but no flag byte at all
        send_frame(sock, noise.encrypt(b""))
    elif case == "oversize":    # a message over the 16 MiB limit, in non-final chunks
        for _ in range((16 << 20) // CHUNK + 2):
            send_frame(sock, noise.encrypt(b"\x00" + b"x" * CHUNK))
    elif case == "halfframe":   # a length prefix promising more than is sent, then close
        sock.sendall((100).to_bytes(2, "big") + b"x" * 10)
    elif case == "reset":       # close with a TCP reset
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    elif case == "noend":       # close (FIN) without the end of stream: a cut transfer
        pass
    elif case == "afterend":    # the end of stream, then one more message
        send_end(sock, noise)
        send_message(sock, noise, b"late\n")
    elif case == "endwithdata": # an end of stream carrying data
        send_frame(sock, noise.encrypt(bytes([END]) + b"data"))
    else:
        raise SystemExit("unknown case " + case)


if __name__ == "__main__":
    main()

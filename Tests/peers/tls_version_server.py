#!/usr/bin/env python3
"""A PostgreSQL-shaped TLS endpoint for one protocol version range (standard library only).

  tls_version_server.py --cert CERT --key KEY --max-version 1.1|1.2|1.3

Listens on 127.0.0.1 (an ephemeral port), prints {"event":"listening","port":N}; for each
connection reads the 8-byte SSLRequest, answers "S" (TLS follows, as PostgreSQL does), and runs
the TLS handshake offering TLS 1.0 up to --max-version; prints {"event":"handshake","ok":bool,
"version":V,"reason":R} and closes the connection. Runs until killed.
"""
import argparse
import json
import socket
import ssl
import warnings

VERSIONS = {"1.1": ssl.TLSVersion.TLSv1_1, "1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--max-version", choices=sorted(VERSIONS), required=True)
    args = parser.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers("DEFAULT:@SECLEVEL=0")  # OpenSSL 3 refuses TLS 1.0/1.1 above level 0
    context.minimum_version = ssl.TLSVersion.TLSv1
    context.maximum_version = VERSIONS[args.max_version]
    context.load_cert_chain(args.cert, args.key)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print(json.dumps({"event": "listening", "port": listener.getsockname()[1]}), flush=True)
    while True:
        connection, _ = listener.accept()
        connection.settimeout(30)
        try:
            request = b""
            while len(request) < 8:
                chunk = connection.recv(8 - len(request))
                if not chunk:
                    break
                request += chunk
            connection.sendall(b"S")
            secured = context.wrap_socket(connection, server_side=True)
            print(json.dumps({"event": "handshake", "ok": True, "version": secured.version()}), flush=True)
            secured.close()
        except (OSError, ssl.SSLError) as error:
            print(json.dumps({"event": "handshake", "ok": False, "reason": str(error)}), flush=True)
            connection.close()


if __name__ == "__main__":
    main()

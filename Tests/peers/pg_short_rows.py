#!/usr/bin/env python3
"""A lying PostgreSQL server (standard library only; the frontend/backend protocol 3.0 as
PostgreSQL's documentation, chapter "Frontend/Backend Protocol", describes it).

  pg_short_rows.py

Listens on 127.0.0.1 (an ephemeral port) and prints {"event":"listening","port":N}. Each client:
refuses TLS ("N"), accepts the startup without a password, then answers every statement, of the
extended or simple protocol, with one row of no column at all (a row description of no field and
a data row of no value; postgres-nio checks a data row against its description, not the
description against the statement). Prints {"event":"rows","count":N} each time it sends such a
row. Runs until killed.
"""
import json
import socket
import struct
import threading


def message(kind, body=b""):
    return kind + struct.pack("!I", len(body) + 4) + body


ROW_DESCRIPTION = message(b"T", struct.pack("!H", 0))
EMPTY_ROW = message(b"D", struct.pack("!H", 0))
READY = message(b"Z", b"I")
rows = 0
lock = threading.Lock()


def read_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def sent_row():
    global rows
    with lock:
        rows += 1
        print(json.dumps({"event": "rows", "count": rows}), flush=True)


def serve(connection):
    try:
        while True:  # the startup packet, after any number of SSLRequest / GSSENCRequest
            length = struct.unpack("!I", read_exactly(connection, 4))[0]
            body = read_exactly(connection, length - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code in (80877103, 80877104):
                connection.sendall(b"N")
                continue
            break
        startup = message(b"R", struct.pack("!I", 0))
        for name, value in [("server_version", "15.0"), ("server_encoding", "UTF8"), ("client_encoding", "UTF8"),
                            ("DateStyle", "ISO, MDY"), ("integer_datetimes", "on"), ("standard_conforming_strings", "on"),
                            ("TimeZone", "UTC")]:
            startup += message(b"S", name.encode() + b"\0" + value.encode() + b"\0")
        startup += message(b"K", struct.pack("!II", 4242, 4242)) + READY
        connection.sendall(startup)
        parameters = 0
        while True:
            kind = read_exactly(connection, 1)
            length = struct.unpack("!I", read_exactly(connection, 4))[0]
            body = read_exactly(connection, length - 4)
            if kind == b"P":  # Parse: name, query, parameter types
                rest = body.split(b"\0", 2)[2]
                parameters = struct.unpack("!H", rest[:2])[0]
                connection.sendall(message(b"1"))
            elif kind == b"D":  # Describe: of a statement, its parameters too
                if body[:1] == b"S":
                    connection.sendall(message(b"t", struct.pack("!H", parameters) + struct.pack("!I", 25) * parameters))
                connection.sendall(ROW_DESCRIPTION)
            elif kind == b"B":
                connection.sendall(message(b"2"))
            elif kind == b"E":
                connection.sendall(EMPTY_ROW + message(b"C", b"SELECT 1\0"))
                sent_row()
            elif kind == b"S":
                connection.sendall(READY)
            elif kind == b"Q":
                connection.sendall(ROW_DESCRIPTION + EMPTY_ROW + message(b"C", b"SELECT 1\0") + READY)
                sent_row()
            elif kind == b"X":
                return
    except (EOFError, OSError):
        pass
    finally:
        connection.close()


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print(json.dumps({"event": "listening", "port": listener.getsockname()[1]}), flush=True)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Independent implementation of SecureRecords' sealed values, key wraps and blind indexes, written
from docs/FORMATS.md ("SecureRecords", "Native envelope SFE1") with Python `cryptography` only.

usage:
  records_open.py (EXPORT.jsonl | STORE.db) RECORD_ID FIELD (--password-file F | --key-file F) [--index-value TEXT] [--check-mac]

Reads an export (JSON lines) or a SQLite store file (schema version 2, 3 or 4, which differ in the
full-text and authentication columns; "SQLite file"; read only, with Python's sqlite3 module), opens
one sealed field of one record and prints the value (text as is, bytes as "base64:..."). With
--key-file (the application's 32-byte key of KeyItemSealer) it first unwraps the record's store key.
With --index-value it also prints "index: match" or "index: no match" after comparing the stored
blind-index token with one it computes for TEXT. With --check-mac (store-keyed records) it computes
the record MAC ("Record authentication") and prints "mac: valid", or fails. A password record whose
stored authentication is a 16-byte write id is opened with the SFR3 context, which binds its clear
fields, the names of its sealed fields and the write id; one whose stored authentication is empty,
with the SFR2 context, which binds its clear fields. Exit 1 if anything fails.
"""
import argparse, base64, hashlib, hmac, json, struct, sys, uuid
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt


def lp(b):
    return struct.pack(">I", len(b)) + b


def first_line(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n", 1)[0].rstrip(b"\r")


def sfe1_open(envelope, context, key=None, passphrase=None):
    if envelope[:4] != b"SFE1":
        raise ValueError("not SFE1")
    alg, kdf = envelope[4], envelope[5]
    if kdf == 0:
        header_len = 6
        if key is None:
            raise ValueError("raw-key envelope needs a key")
    elif kdf == 1:
        log_n, r, p = envelope[6], envelope[7], envelope[8]
        if log_n > 22 or r > 32 or p > 16 or 128 * r * (1 << log_n) > 4 << 30:
            raise ValueError("cost above ceiling")
        salt = envelope[9:25]
        header_len = 25
        if passphrase is None:
            raise ValueError("scrypt envelope needs a passphrase")
        key = Scrypt(salt=salt, length=32, n=1 << log_n, r=r, p=p).derive(passphrase)
    else:
        raise ValueError("unsupported kdf")
    header = envelope[:header_len]
    nonce = envelope[header_len:header_len + 12]
    body = envelope[header_len + 12:]
    if len(nonce) != 12 or len(body) < 16:
        raise ValueError("truncated")
    aead = {1: AESGCM, 2: ChaCha20Poly1305}[alg](key)
    return aead.decrypt(nonce, body, header + context)


def field_map(blob):
    """Decodes a v2 field map: lp(name) || lp(value) entries, names strictly ascending (UTF-8 bytes)."""
    entries, offset, previous = {}, 0, None
    while offset < len(blob):
        parts = []
        for _ in range(2):
            if len(blob) - offset < 4:
                raise ValueError("truncated field map")
            (n,) = struct.unpack(">I", blob[offset:offset + 4])
            offset += 4
            if len(blob) - offset < n:
                raise ValueError("truncated field map")
            parts.append(bytes(blob[offset:offset + n]))
            offset += n
        name, value = parts
        if not name or (previous is not None and not previous < name):
            raise ValueError("field map names empty, unsorted or repeated")
        previous = name
        entries[name.decode("utf-8")] = value
    return entries


def encode_map(entries):
    """A field map: lp(name) || lp(value), names in ascending order of their UTF-8 bytes."""
    return b"".join(lp(name) + lp(value) for name, value in sorted((k.encode("utf-8"), v) for k, v in entries.items()))


def clear_map(rec):
    """The clear values of a record line as a field map of kind || payload."""
    values = {}
    for name, value in rec.get("clear", {}).items():
        values[name] = b"\x01" + value["string"].encode("utf-8") if "string" in value else b"\x02" + base64.b64decode(value["bytes"])
    return encode_map(values)


def read_sqlite(path, record_id):
    """The store line and one record line, as an export would hold them, from a v2 SQLite file."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    if db.execute("PRAGMA application_id").fetchone()[0] != 0x53465253:
        raise SystemExit("not a SecureRecords store")
    version = db.execute("SELECT version FROM schema_version").fetchone()[0]
    if version not in (2, 3, 4):
        raise SystemExit("not schema version 2, 3 or 4")
    meta = dict(db.execute("SELECT name, value FROM meta"))
    store = {"storeId": base64.b64encode(meta["storeId"]).decode(),
             "keys": [{"id": i, "wrapped": base64.b64encode(w).decode()} for i, w in db.execute("SELECT id, wrapped FROM store_keys")]}
    mac = "mac" if version >= 4 else "NULL"
    row = db.execute("SELECT collection, keying, key_id, clear, sealed, tokens, %s FROM records WHERE id = ?" % mac,
                     (uuid.UUID(record_id).bytes,)).fetchone()
    if row is None:
        raise SystemExit("no such record")
    collection, keying, key_id, clear, sealed, tokens, mac = row
    b64 = lambda m: {k: base64.b64encode(v).decode() for k, v in m.items()}
    clear_values = {}
    for name, value in field_map(clear).items():
        clear_values[name] = {"string": value[1:].decode("utf-8")} if value[:1] == b"\x01" else {"bytes": base64.b64encode(value[1:]).decode()}
    rec = {"id": record_id, "collection": collection, "keying": ["storeKey", "password"][keying], "keyId": key_id,
           "clear": clear_values, "sealed": b64(field_map(sealed)), "blindIndexes": b64(field_map(tokens))}
    if mac is not None:
        rec["mac"] = base64.b64encode(mac).decode()
    return store, {record_id.lower(): rec}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export")
    ap.add_argument("record")
    ap.add_argument("field")
    ap.add_argument("--password-file")
    ap.add_argument("--key-file")
    ap.add_argument("--index-value")
    ap.add_argument("--check-mac", action="store_true")
    a = ap.parse_args()

    store, records = None, {}
    with open(a.export, "rb") as f:
        is_sqlite = f.read(16) == b"SQLite format 3\0"
    if is_sqlite:
        store, records = read_sqlite(a.export, a.record)
    else:
        for line in open(a.export, encoding="utf-8"):
            if not line.strip():
                continue
            obj = json.loads(line)
            if obj["type"] == "store":
                store = obj
            elif obj["type"] == "record":
                records[obj["id"].lower()] = obj
    store_id = base64.b64decode(store["storeId"])
    rec = records[a.record.lower()]
    rid = uuid.UUID(rec["id"]).bytes
    mac = base64.b64decode(rec["mac"]) if rec.get("mac") is not None else None
    context = b"SFR1" + lp(store_id) + lp(rec["collection"].encode()) + lp(rid) + lp(a.field.encode())
    if rec["keying"] == "password" and mac == b"":
        context = b"SFR2" + context[4:] + lp(clear_map(rec))
    elif rec["keying"] == "password" and mac is not None and len(mac) == 16:
        names = b"".join(lp(name.encode()) for name in sorted(rec["sealed"], key=lambda name: name.encode()))
        context = b"SFR3" + context[4:] + lp(clear_map(rec)) + lp(names) + lp(mac)
    sealed = base64.b64decode(rec["sealed"][a.field])

    try:
        if rec["keying"] == "password":
            plain = sfe1_open(sealed, context, passphrase=first_line(a.password_file))
            store_key = None
        else:
            raw = open(a.key_file, "rb").read()
            app_key = raw if len(raw) == 32 else bytes.fromhex(raw.decode().strip())
            key_id = rec["keyId"]
            wrapped = next(base64.b64decode(k["wrapped"]) for k in store["keys"] if k["id"] == key_id)
            wrap_context = b"SFRK" + lp(store_id) + struct.pack(">I", key_id)
            unwrapped = sfe1_open(wrapped, wrap_context, key=app_key)
            if len(unwrapped) == 33 and unwrapped[32] == 1:
                unwrapped = unwrapped[:32]  # a key whose records carry MACs
            elif len(unwrapped) != 32:
                raise ValueError("unknown store key form")
            store_key = unwrapped
            plain = sfe1_open(sealed, context, key=store_key)
    except (InvalidTag, ValueError, StopIteration) as e:
        print("failed to open: %s" % (type(e).__name__), file=sys.stderr)
        return 1

    kind, payload = plain[0], plain[1:]
    print(payload.decode("utf-8") if kind == 1 else "base64:" + base64.b64encode(payload).decode())

    if a.index_value is not None:
        info = b"SFR1 blind index" + lp(store_id) + lp(rec["collection"].encode()) + lp(a.field.encode())
        field_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(store_key)
        token = hmac.new(field_key, b"\x01" + a.index_value.encode(), hashlib.sha256).digest()[:8]
        stored = base64.b64decode(rec["blindIndexes"][a.field])
        print("index: match" if hmac.compare_digest(token, stored) else "index: no match")

    if a.check_mac:
        if mac is None or store_key is None:
            print("no MAC to check", file=sys.stderr)
            return 1
        mac_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"SFR2 record MAC" + lp(store_id)).derive(store_key)
        b64map = lambda m: encode_map({k: base64.b64decode(v) for k, v in m.items()})
        covered = (b"SFR2" + lp(store_id) + lp(rec["collection"].encode()) + lp(rid) + struct.pack(">I", rec["keyId"])
                   + lp(clear_map(rec)) + lp(b64map(rec["sealed"])) + lp(b64map(rec["blindIndexes"])))
        if not hmac.compare_digest(hmac.new(mac_key, covered, hashlib.sha256).digest(), mac):
            print("record MAC does not match", file=sys.stderr)
            return 1
        print("mac: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`sf channel` where users meet it, next to openssl: N bytes from `head -c` through the client's
standard input, over 127.0.0.1, out of the server's standard output into `wc -c`. For each side,
wall-clock time and the CPU-seconds (user + system, from wait4) of the sf or openssl process
itself; `head` and `wc` are the same on both rows and not counted.

openssl runs TLS 1.3 with TLS_CHACHA20_POLY1305_SHA256 and X25519 (sf channel's default is
Noise_XX_25519_ChaChaPoly_SHA256). sf's row is also given without its fixed cost (opening the
stored key with its passphrase, the handshake), measured by the same run with 0 bytes.

Usage: pipes.py SF_BINARY SCRATCH_DIR [BYTES] [RUNS]   (medians of RUNS runs are printed)
"""
import os
import subprocess
import sys
import time

sf, scratch = sys.argv[1], sys.argv[2]
size = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
DEADLINE = 300  # seconds for one transfer: a generous multiple of the ~5 s it takes


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, process):
    """Until a socket listens on port (seen with ss, without connecting: both servers take
    exactly one connection), for at most 10 s."""
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if process.poll() is not None:
            sys.exit(f"the server exited ({process.returncode}) before listening on {port}")
        if subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout.strip():
            return
        time.sleep(0.05)
    sys.exit(f"nothing listens on port {port} after 10 s")


def reap(process):
    """Waits (bounded) for process; returns its CPU-seconds (user + system)."""
    end = time.monotonic() + DEADLINE
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > end:
            process.kill()
            sys.exit(f"{process.args[0]} did not finish within {DEADLINE} s")
        time.sleep(0.002)


def transfer(server_argv, client_argv, count, server_stdin):
    """One transfer of count bytes; returns (wall seconds, server CPU s, client CPU s)."""
    server = subprocess.Popen(server_argv, stdin=server_stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    counter = subprocess.Popen(["wc", "-c"], stdin=server.stdout, stdout=subprocess.PIPE)
    server.stdout.close()
    wait_listening(server_argv.port, server)
    start = time.perf_counter()
    source = subprocess.Popen(["head", "-c", str(count), "/dev/zero"], stdout=subprocess.PIPE)
    client = subprocess.Popen(client_argv, stdin=source.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    source.stdout.close()
    client_cpu = reap(client)
    server_cpu = reap(server)
    received = int(counter.communicate(timeout=DEADLINE)[0])
    wall = time.perf_counter() - start
    source.wait(timeout=DEADLINE)
    if received != count:
        sys.exit(f"{server_argv[0]}: received {received} of {count} bytes (server exit {server.returncode}, client exit {client.returncode})")
    return wall, server_cpu, client_cpu


class Argv(list):
    port = 0


def sf_pair(port):
    common = ["--key-passphrase-file", f"{scratch}/passphrase"]
    server = Argv([sf, "channel", "serve", "--tag", "alice", "--peer-tag", "bob", "--keychain", f"{scratch}/alice.db",
                   "--listen", f"127.0.0.1:{port}", *common])
    client = [sf, "channel", "connect", "--tag", "bob", "--peer-tag", "alice", "--keychain", f"{scratch}/bob.db",
              *common, f"127.0.0.1:{port}"]
    return server, client


def openssl_pair(port):
    suite = ["-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256", "-groups", "X25519"]
    server = Argv(["openssl", "s_server", "-cert", f"{scratch}/cert.pem", "-key", f"{scratch}/key.pem", *suite,
                   "-quiet", "-naccept", "1", "-accept", f"127.0.0.1:{port}"])
    client = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *suite, "-quiet", "-no_ign_eof"]
    return server, client


def once(make_pair, count):
    port = free_port()
    server, client = make_pair(port)
    server.port = port
    # openssl s_server ends its connection when its standard input ends: it gets a pipe kept open
    # until the transfer is done. sf channel serve sends its end of stream at the end of standard
    # input and goes on reading, so it gets /dev/null.
    if server[0] != "openssl":
        return transfer(server, client, count, subprocess.DEVNULL)
    read_end, write_end = os.pipe()
    try:
        return transfer(server, client, count, read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def medians(results):
    """The median of each column (wall, server CPU, client CPU) on its own."""
    return tuple(sorted(column)[len(column) // 2] for column in zip(*results))


def line(name, wall, server_cpu, client_cpu, count):
    rate = f"= {count / wall / 1e9:5.2f} GB/s" if count else " " * 12
    print(f"{name:<58} {wall:6.2f} s wall {rate}   CPU s: sender {client_cpu:5.2f}, receiver {server_cpu:5.2f}, "
          f"both {client_cpu + server_cpu:5.2f}")


gib = size / (1 << 30)
print(f"{gib:g} GiB through each; median of {runs} runs, each column on its own, the three kinds of run taken in turn "
      "(so a machine that slows down slows all of them); CPU s = user + system of the sf or openssl process")
runs_of = {"openssl": [], "sf": [], "sf0": []}
for _ in range(runs):
    runs_of["openssl"].append(once(openssl_pair, size))
    runs_of["sf"].append(once(sf_pair, size))
    runs_of["sf0"].append(once(sf_pair, 0))
wall, s_cpu, c_cpu = medians(runs_of["openssl"])
line("openssl s_client -> s_server, TLS 1.3 ChaCha20-Poly1305", wall, s_cpu, c_cpu, size)
wall, s_cpu, c_cpu = medians(runs_of["sf"])
line("sf channel connect -> serve, Noise XX ChaChaPoly", wall, s_cpu, c_cpu, size)
w0, s0, c0 = medians(runs_of["sf0"])
line("sf channel, 0 bytes (key opening + handshake only)", w0, s0, c0, 0)
line("sf channel, less the 0-byte run", wall - w0, s_cpu - s0, c_cpu - c0, size)

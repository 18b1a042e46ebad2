#!/usr/bin/env python3
"""Runs one daemon for a test and ends it when the test lets go (test helper, no network of its own).

  daemon_supervisor.py [--setup SHELL-COMMAND] -- DAEMON [ARGUMENT]...

Runs SETUP with sh (for example a mount inside the test's network namespace), starts DAEMON with
its standard output and error passed through, then waits until its own standard input closes
(the test closes it first when it ends its child processes, and it closes when the test process
dies), kills DAEMON and reaps it.

Why a supervisor: avahi-daemon closes every inherited descriptor at startup, including the one
Foundation's Process watches to see its child exit, which would leave Process blocked reaping a
daemon that still runs; and a shell cannot reap reliably here, because a child of a libdispatch
worker thread inherits a signal mask that blocks SIGCHLD. This script clears the mask, ignores
SIGTERM itself (so terminating it cannot orphan the daemon) and restores it for the daemon.
"""
import signal
import subprocess
import sys


def main():
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    args = sys.argv[1:]
    setup = None
    if args[:1] == ["--setup"]:
        setup, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit("usage: daemon_supervisor.py [--setup CMD] -- DAEMON [ARG]...")
    if setup is not None:
        subprocess.run(["sh", "-c", setup], check=True)
    daemon = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                              preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    try:
        sys.stdin.buffer.read()
    finally:
        daemon.kill()
        daemon.wait()


if __name__ == "__main__":
    main()

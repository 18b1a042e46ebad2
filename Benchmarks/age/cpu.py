#!/usr/bin/env python3
"""CPU seconds (user + system, from wait4) and wall time of commands, each run RUNS times with
standard output to /dev/null, the commands taken in turn (so a machine that slows down slows all
of them); prints each column's median. With --one-core every command runs under `taskset -c 1`.

Usage: cpu.py [--one-core] RUNS NAME COMMAND [NAME COMMAND ...]   (COMMAND is one shell-free
string, split on spaces)
"""
import os
import subprocess
import sys
import time

args = sys.argv[1:]
one_core = args[:1] == ["--one-core"]
if one_core:
    args = args[1:]
runs, pairs = int(args[0]), args[1:]
commands = [(pairs[i], pairs[i + 1].split()) for i in range(0, len(pairs), 2)]
results = {name: [] for name, _ in commands}
for _ in range(runs):
    for name, argv in commands:
        argv = (["taskset", "-c", "1"] if one_core else []) + argv
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{name}: exit {os.waitstatus_to_exitcode(status)}")
        results[name].append((wall, usage.ru_utime, usage.ru_stime))
print(f"| {'one core (taskset -c 1)' if one_core else 'all cores'}: median of {runs} | wall s | user s | system s | CPU s |")
print("|---|---|---|---|---|")
for name, _ in commands:
    wall, user, system = (sorted(column)[len(column) // 2] for column in zip(*results[name]))
    cpu = sorted(u + s for _, u, s in results[name])[len(results[name]) // 2]
    print(f"| {name} | {wall:.3f} | {user:.3f} | {system:.3f} | {cpu:.3f} |")

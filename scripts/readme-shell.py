#!/usr/bin/env python3
"""Runs the shell examples of README.md, so that they stay true (issue 9).

Usage: scripts/readme-shell.py --sf PATH/TO/sf [--readme README.md] [--keep]

Every ```sh block runs in a fresh directory of its own, with HOME and SF_HOME inside it and the
files its commands name prepared beforehand (passphrase files, keys, a legacy iMAS keychain, an
OpenSSH key from ssh-keygen, ...). In every block but the vault's own, a vault is already set up with
the passcode in pass.txt. Each command line runs with bash in that directory, in order, and must exit
0, except a line whose comment starts with "fails:", which must fail. Conventions:

  * `[--option]` marks an optional part: it is run with the option.
  * `age1…` stands for the recipient of key.txt; `ID` for the first record id a command printed.
  * A line commented "prompts" reads its secret from standard input (no terminal here).
  * `postgres://…@db.example…` stands for a PostgreSQL server: with SF_TEST_POSTGRES_URL set (as
    .ci/run sets it) the line runs against that server, in a schema of its own; otherwise it is not
    run. `db.pw` holds that server's password.
  * `export NAME=…` sets NAME for the block's later lines; a line ending in `\` continues.

Not run, and listed in the summary: lines starting with `swift` or `Benchmarks/` and developer
scripts (`scripts/…`, run from the repository root; CI runs those itself), lines with a
`...`/`HEX` placeholder, a line needing a terminal ("typed twice"), and blocks
written as a two-machine transcript (`alice$`, `bob$`), whose flow the channel tests run instead.
Prints one line per command and a summary; exits 1 if any command misbehaved.
"""
import argparse
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")

PREAMBLE = r"""
set -e
printf 'correct horse battery\n' > pw
printf 'key passphrase\n' > pass
printf '1234-5678\n' > pass.txt; printf 'new passcode\n' > new.txt; printf 'reset passcode\n' > reset.txt
printf 'First pet?\nStreet you grew up on?\n' > questions.txt; printf 'Rex\nElm\n' > answers.txt
printf 'Favourite colour?\nFirst city?\n' > q.txt; printf 'blue\nParis\n' > a.txt
printf 'new password for Alice\n' > new.pw; printf 'key file passphrase\n' > kp
echo 'for Alice' > alice.pw; echo 'for Bob' > bob.pw
if [ -n "${SF_TEST_POSTGRES_PASSWORD_FILE:-}" ]; then cp "$SF_TEST_POSTGRES_PASSWORD_FILE" db.pw; fi
head -c 200000 /dev/urandom > report.pdf
echo 'plain input' > in; echo one > file1; echo two > file2; echo data > data; sf random > key
sf hash file1 file2 > SHA256SUMS
echo 'Dear Bob' > message.txt; cp message.txt m; echo 'my notes' > notes.txt; head -c 1000 /dev/urandom > carol.jpg
echo 'a file' > file; echo 'a secret' > secret; echo 'another secret' > s
sf key generate --type x25519 --out alice.pem --public-out alice.pub > /dev/null
sf key generate --type p256 --out old.pem --passphrase-file pw > /dev/null
sf key generate --type rsa2048 --out service.pem --public-out service.pub > /dev/null
sf key generate --type rsa2048 --out app.pem --public-out app.pub > /dev/null
sf key encrypt --heimdall --to service.pub message.txt > payload.b64
sf key sign --heimdall --key app.pem message.txt > sig.b64
sf keygen -o other.txt 2> /dev/null; sf keygen -y other.txt > recipients.txt
mkdir -p "$HOME/.ssh"; ssh-keygen -q -t ed25519 -N '' -C readme -f "$HOME/.ssh/id_ed25519"
"""

VAULT = "sf vault init --passcode-file pass.txt --questions-file questions.txt --answers-file answers.txt > /dev/null\n"


def blocks(readme):
    """(line number, [(line number, text)]) of every ```sh block; `\` continuation lines joined."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    found, current = [], None
    for number, line in enumerate(lines, 1):
        if current is None and line.strip() == "```sh":
            current = (number, [])
        elif current is not None and line.strip() == "```":
            found.append(current)
            current = None
        elif current is not None:
            if current[1] and current[1][-1][1].rstrip().endswith("\\"):
                previous_number, previous = current[1][-1]
                current[1][-1] = (previous_number, previous.rstrip()[:-1] + " " + line.strip())
            else:
                current[1].append((number, line))
    return found


POSTGRES_EXAMPLE = re.compile(r"postgres://gifts@db\.example(?::5432)?/gifts(?:\?schema=(\w+))?")


def postgres_url(match, run_id):
    """The test server's URL, in a schema of this run's own (named after the example's schema)."""
    base = os.environ["SF_TEST_POSTGRES_URL"]
    return f"{base}{'&' if '?' in base else '?'}schema={match.group(1) or 'readme'}_{run_id}"


def split_comment(line):
    """The command and its comment (bash's rule: `#` after whitespace, outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", required=True)
    parser.add_argument("--readme", default=os.path.join(os.path.dirname(__file__), "..", "README.md"))
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    sf_dir = os.path.dirname(os.path.abspath(args.sf))
    root = tempfile.mkdtemp(prefix="sf-readme-shell-")
    run_id = os.path.basename(root).rsplit("-", 1)[-1].lower().replace("_", "")
    ran, skipped, failures = 0, [], []
    try:
        for index, (start, lines) in enumerate(blocks(args.readme)):
            if any(re.match(r"^(alice|bob)\$", text.strip()) for _, text in lines):
                skipped.append((start, "a two-machine transcript (the channel tests run this flow)"))
                continue
            work = os.path.join(root, f"block{index}")
            home = os.path.join(work, "home")
            os.makedirs(home)
            env = dict(os.environ, HOME=home, SF_HOME=os.path.join(home, "sf"), PASSWORD="ann's password",
                       PATH=sf_dir + os.pathsep + os.environ.get("PATH", ""))
            env.pop("CI", None)
            preamble = PREAMBLE + ("" if any("sf vault init" in text for _, text in lines) else VAULT)
            legacy = {"mail.example.com": {"carol": b"carol's password"}}
            with open(os.path.join(work, "old-imas-keychain.plist"), "wb") as plist:
                plistlib.dump(legacy, plist)
            setup = subprocess.run(["bash", "-c", preamble], cwd=work, env=env, capture_output=True, text=True)
            if setup.returncode != 0:
                failures.append((start, "(fixtures)", setup.stderr.strip()))
                continue
            for number, text in lines:
                command, comment = split_comment(text)
                command = command.strip()
                if not command:
                    continue
                if command.startswith(("swift ", "Benchmarks/")) or "scripts/" in command:
                    skipped.append((number, "run by CI itself"))
                    continue
                if POSTGRES_EXAMPLE.search(command):
                    if not os.environ.get("SF_TEST_POSTGRES_URL"):
                        skipped.append((number, "needs a PostgreSQL server (set SF_TEST_POSTGRES_URL)"))
                        continue
                    command = POSTGRES_EXAMPLE.sub(lambda m: shlex.quote(postgres_url(m, run_id)), command.replace("'", ""))
                if "..." in command or "HEX" in command or "…" in command.replace("age1…", ""):
                    skipped.append((number, "placeholder"))
                    continue
                if "typed twice" in comment:
                    skipped.append((number, "needs a terminal"))
                    continue
                command = re.sub(r"\[([^\]]*)\]", r"\1", command)
                if "age1…" in command:
                    recipient = subprocess.run(["sf", "keygen", "-y", "key.txt"], cwd=work, env=env, capture_output=True, text=True)
                    command = command.replace("age1…", recipient.stdout.strip())
                command = re.sub(r"\bID\b", '"$ID"', command)
                stdin = "typed secret\n" if comment.startswith("prompts") else ""
                exports = command.startswith("export ")
                script = "set -o pipefail; " + command + (" && env -0" if exports else "")
                result = subprocess.run(["bash", "-c", script], cwd=work, env=env,
                                        input=stdin.encode(), capture_output=True, timeout=600)  # a backstop: loaded CI runs scrypt in debug
                ran += 1
                if exports and result.returncode == 0:
                    for entry in result.stdout.split(b"\0"):
                        name, _, value = entry.decode("utf-8", "replace").partition("=")
                        if name and env.get(name) != value:
                            env[name] = value
                    result.stdout = b""
                out = result.stdout.decode("utf-8", "replace").strip()
                if "ID" not in env and UUID.match(out):
                    env["ID"] = out
                should_fail = comment.startswith("fails:")
                ok = (result.returncode != 0) if should_fail else (result.returncode == 0)
                print(f"{'ok ' if ok else 'BAD'} README:{number}: {command}")
                if not ok:
                    failures.append((number, command, f"exit {result.returncode}: " + result.stderr.decode("utf-8", "replace").strip()))
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    for number, reason in skipped:
        print(f"skipped README:{number}: {reason}")
    for number, command, detail in failures:
        print(f"FAILED README:{number}: {command}\n    {detail}")
    print(f"README shell examples: {ran} commands ran, {len(failures)} failed, {len(skipped)} not run")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

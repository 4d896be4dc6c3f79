#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The README's commands, run.

Every indented line of README.md that starts a command is looked up in
RUNS below, which says how it is run; a command the README shows and RUNS
lacks (or one RUNS has and the README no longer shows) fails the host
check, so that the README cannot name a command nobody runs.

  readme.py --host            on the build host (make check-readme): each
                              make target exists, each script is there and
                              parses, each folder of the layout exists, the
                              library's snippet compiles and links against
                              build/libhbmguard.a
  readme.py --guest README    prints the shell commands that run the rest,
                              one per line, for tests/system/guest.sh (phase
                              3, on the installed system, after everything
                              else: they reload the module)

A line of the README may show alternatives, "a | b" (systemd's synopsis
style), and optional parts in brackets: RUNS is keyed by each alternative
with its brackets as written, and gives every form the test runs.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]

# How each command of the README is run in the tier-3 guest.  Each entry:
# the shell commands to run, in order; each must exit 0.  They need nothing
# from the boots before (run.sh KVER nvml runs them on a fresh system too).
# The order is the README's: the module is loaded with the README's
# option, then the daemon enabled, then hbmctl is used.
RUNS = {
    # The unit is how the README's hbmguardd runs: the same binary, and the
    # configuration the README names is its default.
    "hbmguardd [-c /etc/hbmguard/hbmguardd.conf] [--help] [--version]": [
        "systemctl show -P ExecStart hbmguardd | grep -q 'path=/usr/sbin/hbmguardd '",
        "hbmguardd --help | grep -q /etc/hbmguard/hbmguardd.conf",
        "hbmguardd -c /etc/hbmguard/hbmguardd.conf --version | grep -q '^hbmguardd '",
    ],
    "modprobe hbmguard sim_devices=2": [
        "rmmod hbmguard && modprobe hbmguard sim_devices=2",
        "[ \"$(cat /sys/module/hbmguard/parameters/sim_devices)\" = 2 ]",
    ],
    # Enabled, and its state on disk again after the reload (status's 0).
    "systemctl enable --now hbmguardd": [
        "systemctl enable --now hbmguardd",
        "timeout 30 sh -c 'until hbmctl status >/dev/null; do sleep 0.5; done'",
    ],
    # The socket, as the README turns it on: the hbmctl commands below then
    # go through systemd's socket.
    "systemctl stop hbmguardd": [
        "systemctl stop hbmguardd",
        "! systemctl is-active hbmguardd",
    ],
    "systemctl enable --now hbmguardd.socket": [
        "systemctl enable --now hbmguardd.socket",
        "systemctl is-active hbmguardd.socket",
    ],
    "systemctl start hbmguardd": [
        "systemctl start hbmguardd",
        "timeout 30 sh -c 'until hbmctl status >/dev/null; do sleep 0.5; done'",
        "journalctl _SYSTEMD_INVOCATION_ID=$(systemctl show -P InvocationID hbmguardd) -o cat"
        " | grep -q 'control socket from systemd'",
    ],
    "hbmctl status": ["hbmctl status"],
    "hbmctl devices": ["hbmctl devices | grep -q sim1"],
    "hbmctl pages DEV": [
        "hbmctl retire sim0 0x60000 && hbmctl pages sim0 | grep -q 0x60000",
    ],
    "hbmctl translate DEV OFFSET": [
        "hbmctl translate sim0 0x60000 | grep -q retired",
    ],
    # watch runs until interrupted (3 s of it) or COUNT events came.
    "hbmctl watch [COUNT]": [
        "{ timeout 3 hbmctl watch >/tmp/watch.out; [ $? = 124 ]; } & "
        "sleep 1; hbmctl inject sim1 ce 0x70000; wait $! && "
        "grep -q 0x70000 /tmp/watch.out",
        "{ timeout 10 hbmctl watch 1 >/tmp/watch.out & } && sleep 1 && "
        "hbmctl inject sim1 ce 0x71000 && wait $! && [ $(wc -l </tmp/watch.out) = 1 ]",
    ],
    "hbmctl export": ["hbmctl export | python3 -m json.tool >/dev/null"],
    "hbmctl retire DEV OFFSET [LENGTH] [--pending]": [
        "hbmctl retire sim1 0x40000",
        "hbmctl retire sim1 0x41000 0x1000 --pending",
        "hbmctl pages sim1 | grep -q 0x41000",
    ],
    "hbmctl clear DEV OFFSET LENGTH": [
        "hbmctl clear sim1 0x40000 0x1000",
        "! hbmctl pages sim1 | grep -q 0x40000",
    ],
    "hbmctl inject DEV ce|ue|poison OFFSET [COUNT]": [
        "hbmctl inject sim1 ce 0x50000",
        "hbmctl inject sim1 ce 0x51000 3",
        "hbmctl inject sim1 ue 0x52000",
        "hbmctl inject sim1 poison 0x53000",
    ],
    "hbmctl policy DEV [key=value...]": [
        "hbmctl policy sim1 ce_threshold=7",
        "hbmctl policy sim1 | grep -q 'ce_threshold.*7'",
    ],
    "hbmctl sim-create NAME SIZE [page_size=N] [spares=N] [identity=ID]": [
        "hbmctl sim-create readme0 64M",
        "hbmctl sim-create readme1 64M page_size=4096 spares=16 identity=readme:1",
        "hbmctl devices | grep -q readme1",
    ],
    "hbmctl sim-destroy DEV": [
        "hbmctl sim-destroy readme0 && hbmctl sim-destroy readme1",
        "! hbmctl devices | grep -q readme",
    ],
    "hbmctl ranks": ["hbmctl ranks"],
    "hbmctl incidents": ["hbmctl incidents"],
    "hbmctl gpus": ["hbmctl gpus"],
    # No [Scheduler] here (tier 3's slurm checks drain a node for real):
    # nothing drained, nothing to undrain.
    "hbmctl drain": ["hbmctl drain"],
    "hbmctl undrain": [
        "! hbmctl undrain 2>/tmp/undrain.err && grep -q 'nothing to undrain' /tmp/undrain.err",
    ],
    "hbmctl advise --checkpoint-cost=10min --restart-cost=5min [--nodes=N] [--window=30d]": [
        "hbmctl advise --checkpoint-cost=10min --restart-cost=5min",
        "hbmctl advise --checkpoint-cost=10min --restart-cost=5min --nodes=64 --window=30d",
    ],
    # No NVIDIA GPU in the guest: hbmnvml says so with its exit status 3
    # (hbmnvml(8)); tier 3's nvml checks run it against NVML's test double.
    "hbmnvml [--json] [--library PATH]": [
        "hbmnvml 2>/tmp/nvml.err; [ $? = 3 ] && [ -s /tmp/nvml.err ]",
        "hbmnvml --json --library /nonexistent/libnvidia-ml.so.1 2>/dev/null; [ $? = 3 ]",
    ],
    # The kernel's ynl tool (run.sh puts 6.12's in KSRC), from a copy of
    # hbmguard's tree (the spec's path is relative).
    "$KSRC/tools/net/ynl/cli.py --spec uapi/netlink/hbmguard.yaml --no-schema --dump device-get": [
        "cd /usr/local/lib/hbmguard-test/src && "
        "$KSRC/tools/net/ynl/cli.py --spec uapi/netlink/hbmguard.yaml --no-schema "
        "--dump device-get | grep -q sim1",
    ],
}

# Run on the build host: make targets, scripts of the tree.
HOST = {"make", "scripts/gpu-check.sh"}


def readme_lines(path):
    """(line number, text) of each indented line that starts something."""
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.startswith("    ") and not line.startswith("     "):
            yield n, line[4:]


def strip_comment(text):
    return re.sub(r"\s+(#|/\*).*$", "", text).strip()


def commands(path):
    """The README's shell commands, each alternative on its own."""
    out = []
    for n, text in readme_lines(path):
        text = strip_comment(text)
        first = text.split()[0] if text else ""
        if not text or first.endswith("/") or re.search(r"[;{}()]|^struct ", text):
            continue  # the layout's folders, the library's C snippet
        head = first
        for i, alt in enumerate(text.split(" | ")):
            out.append((n, alt if i == 0 else head + " " + alt))
    return out


def layout(path):
    """The folders the README's layout lists."""
    return [(n, t.split()[0]) for n, t in readme_lines(path)
            if t.split() and t.split()[0].endswith("/")]


def snippet(path):
    """The library's C snippet, as the README shows it."""
    return [strip_comment(t) for _, t in readme_lines(path)
            if strip_comment(t).endswith(";")]


def make_targets():
    text = (TOP / "Makefile").read_text()
    targets = {"all"}
    for m in re.finditer(r"^([^\s:=#][^:=]*?):(?!=)", text, re.M):
        targets.update(m.group(1).split())
    return targets


def host_check():
    failures = []
    readme = TOP / "README.md"
    shown = commands(readme)
    keys = set()
    targets = make_targets()
    for n, cmd in shown:
        words = cmd.split()
        if words[0] == "make":
            target = words[1] if len(words) > 1 else "all"
            ok = target in targets
            print("%s README:%d %s: a target of the Makefile" % ("ok" if ok else "not ok", n, cmd))
            if not ok:
                failures.append(cmd)
        elif words[0] in HOST:
            script = TOP / words[0]
            ok = script.is_file() and script.stat().st_mode & 0o111 and \
                subprocess.run(["bash", "-n", str(script)]).returncode == 0
            print("%s README:%d %s: there, executable, parses" % ("ok" if ok else "not ok", n, cmd))
            if not ok:
                failures.append(cmd)
        else:
            keys.add(cmd)
            ok = cmd in RUNS
            print("%s README:%d %s: run in tier 3" % ("ok" if ok else "not ok", n, cmd))
            if not ok:
                failures.append(cmd + " (not in tests/readme/readme.py's RUNS)")
    for cmd in sorted(set(RUNS) - keys):
        print("not ok RUNS has %s, which the README no longer shows" % cmd)
        failures.append(cmd)
    for n, folder in layout(readme):
        ok = (TOP / folder).is_dir()
        print("%s README:%d %s is a folder of the tree" % ("ok" if ok else "not ok", n, folder))
        if not ok:
            failures.append(folder)
    failures += snippet_check(snippet(readme))
    for f in failures:
        print("README: " + f, file=sys.stderr)
    return 1 if failures else 0


def snippet_check(lines):
    """The snippet compiles and links as the body of a function."""
    src = ("#include <poll.h>\n#include <stdint.h>\n#include <hbmguard.h>\n"
           "int main(void)\n{\n\tuint32_t dev = 0, state;\n"
           "\tuint64_t offset = 0, served, length = 4096;\n\n\t"
           + "\n\t".join(lines) + "\n\treturn 0;\n}\n")
    with tempfile.TemporaryDirectory() as d:
        c = Path(d) / "snippet.c"
        c.write_text(src)
        r = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                            "-Wno-unused-result", "-I", str(TOP / "daemon/libhbmguard"), "-I", str(TOP / "uapi"),
                            str(c), str(TOP / "build/libhbmguard.a"), "-o", str(Path(d) / "a")],
                           capture_output=True, text=True)
    ok = r.returncode == 0
    print("%s README: the library's snippet (%d lines) compiles and links"
          % ("ok" if ok else "not ok", len(lines)))
    if not ok:
        print(src + r.stderr, file=sys.stderr)
        return ["the library's snippet"]
    return []


def guest_commands(path):
    for _, cmd in commands(path):
        if cmd.split()[0] not in HOST:
            for run in RUNS[cmd]:
                print(run)


def main():
    if sys.argv[1:2] == ["--host"]:
        return host_check()
    if sys.argv[1:2] == ["--guest"] and len(sys.argv) == 3:
        guest_commands(sys.argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Multi-thread timings compared in the same CPU placement.

A virtual machine's host sometimes places its two CPUs on different dies for a while: the round
trip of a cache line between them (`tessera hw --round-trip`) goes from 50-100 ns to several
times that, and every runtime's 2-thread latency rises with it (on a 2-core AMD EPYC guest,
MobileNetV2: tessera 3.5 -> 5.5-6.5 ms, ONNX Runtime 3.8-4.4 -> 6.5, OpenVINO 3.7 -> 6.0). Such
a spell comes and goes within a second, so peers timed one after the other can land on both
sides of it and their ratio measures the host, not the runtimes. The guard measures the round
trip before and after a timed run of 2+ threads; it waits (up to --max-wait seconds, probing
twice a second) for a spell to end before a run, and runs it again (up to --retries times)
when either round trip exceeds --factor x the lowest seen: every kept run then ran in the
usual placement, or is marked as not. A spell that outlasts one whole wait is taken as the
placement of the moment: later runs do not wait for it again until a probe shows it ended.
same_state_medians() then compares the runtimes in one placement: the usual one where each
has runs in it, else the spell where each has, else all runs (marked mixed).

As a module: SpellGuard(tessera).timed(run, threads) -> (run's result, what the guard saw).
As a command: spell_guard.py --tessera PATH --threads N [--lowest NS] [--factor F] [--retries R]
                              [--max-wait S] -- COMMAND [ARGS...]
runs COMMAND (its own timed process), and prints COMMAND's last JSON line with
"round_trip_ns": [before, after], "in_spell" and "spell_retries" added. --lowest: the lowest
round trip seen so far (`spell_guard.py --tessera PATH --baseline` prints one from 8 probes over
about two seconds). --state FILE: what one command leaves for the next (the lowest round trip,
whether a spell outlasted a wait), read first and written last; --baseline starts it afresh.
Exit 1 on bad input, 2 when COMMAND or tessera fails.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


class GuardError(Exception):
    """A probe or the timed command failed."""


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise GuardError("no JSON line in the output")


class SpellGuard:
    def __init__(self, tessera, factor=2.5, retries=3, lowest=None, max_wait=20.0,
                 sleep=time.sleep):
        if not factor > 1 or retries < 0 or max_wait < 0:
            raise ValueError("the factor must exceed 1, the retries and the wait be >= 0")
        self.tessera, self.factor, self.retries, self.lowest = tessera, factor, retries, lowest
        self.max_wait, self.sleep = max_wait, sleep
        self.waited_out = False  # a spell outlasted a whole wait, and no probe has ended it

    def round_trip(self):
        """One probe, in ns (None where the process may use one CPU only)."""
        p = subprocess.run([self.tessera, "hw", "--round-trip", "--json"], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise GuardError(f"{self.tessera} hw --round-trip exited {p.returncode}: "
                             f"{p.stderr.strip()[-300:]}")
        ns = json.loads(p.stdout)["core_round_trip_ns"]
        if ns is not None:
            self.lowest = ns if self.lowest is None else min(self.lowest, ns)
        return ns

    def baseline(self, probes=8, gap_secs=0.25):
        """The lowest of `probes` probes `gap_secs` apart (a spell rarely lasts through all)."""
        for i in range(probes):
            if i:
                self.sleep(gap_secs)
            self.round_trip()
        return self.lowest

    def wait_for_usual_placement(self):
        """Probes until a round trip is not a spell's, for up to max_wait seconds (not at all
        while a spell that outlasted a whole wait goes on): the last probe."""
        ns, waited = self.round_trip(), 0.0
        while self.in_spell(ns) and not self.waited_out and waited < self.max_wait:
            self.sleep(0.5)
            waited += 0.5
            ns = self.round_trip()
        if self.in_spell(ns):
            self.waited_out = self.waited_out or waited >= self.max_wait
        else:
            self.waited_out = False
        return ns

    def in_spell(self, *trips):
        return any(t is not None and self.lowest is not None and t > self.factor * self.lowest
                   for t in trips)

    def timed(self, run, threads):
        """run() once, or again while a spell lasts (threads >= 2 only): (its result, a dict of
        round_trip_ns [before, after], in_spell and spell_retries; empty for one thread)."""
        if threads < 2:
            return run(), {}
        if self.lowest is None:
            self.baseline()
        for attempt in range(self.retries + 1):
            before = self.wait_for_usual_placement()
            result = run()
            after = self.round_trip()
            spell = self.in_spell(before, after)
            if not spell or attempt == self.retries:
                return result, {"round_trip_ns": [before, after], "in_spell": spell,
                                "spell_retries": attempt}


NOTE = ("rt ns: the largest cache-line round trip between the two CPUs around the runs of 2+ "
        "threads that the row\ncompares. Before each such run the guard waits up to 20 s for a "
        "spell (the host's CPUs on different\ndies: a round trip above 2.5x the lowest seen) to "
        "end, and runs one that met a spell again, up to 3\ntimes (scripts/spell_guard.py); the "
        "row compares the runs made in the usual placement where every\nruntime has some, else "
        "those in a spell ('s'), else all of them ('!').")


def compare_in_one_placement(runs):
    """runs: {runtime: [(ms, in_spell or None, largest round trip in ns or None), ...]}. The
    medians of one placement (same_state_medians) and the rt ns column of the runs compared:
    their largest round trip, suffixed 's' when they all ran in a spell and '!' when mixed."""
    ms, state = same_state_medians({k: [(m, sp) for m, sp, _ in v] for k, v in runs.items()})
    kept = [ns for v in runs.values() for _, sp, ns in v
            if ns is not None and (state == "mixed" or bool(sp) == (state == "spell"))]
    column = f"{max(kept):.0f}" + {"usual": "", "spell": "s", "mixed": "!"}[state] if kept else "-"
    return ms, column


def same_state_medians(runs):
    """runs: {runtime: [(ms, in_spell or None), ...]} (None: not guarded, one thread). The
    median per runtime over the runs of one placement: the usual one where every runtime has
    runs in it, else the spell where every one has, else all of them. Returns (medians,
    'usual' | 'spell' | 'mixed')."""
    for state, keep in (("usual", lambda s: not s), ("spell", lambda s: bool(s))):
        chosen = {k: [ms for ms, s in v if keep(s)] for k, v in runs.items()}
        if chosen and all(chosen.values()):
            return {k: statistics.median(v) for k, v in chosen.items()}, state
    return {k: statistics.median(ms for ms, _ in v) for k, v in runs.items() if v}, "mixed"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", required=True, help="the tessera executable (its hw --round-trip)")
    ap.add_argument("--threads", type=int, default=2, help="the timed run's threads (1: no guard)")
    ap.add_argument("--lowest", type=float, default=None, help="lowest round trip seen (ns)")
    ap.add_argument("--factor", type=float, default=2.5, help="a spell: round trip > F x lowest")
    ap.add_argument("--retries", type=int, default=3, help="runs repeated at most, per spell")
    ap.add_argument("--max-wait", type=float, default=20.0,
                    help="seconds to wait for a spell to end before a run")
    ap.add_argument("--baseline", action="store_true", help="print a lowest round trip and exit")
    ap.add_argument("--state", default="", help="file carrying the guard's state between commands")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not a.baseline and not cmd:
        sys.exit("error: no command to time (spell_guard.py ... -- COMMAND [ARGS...])")
    if a.threads < 1 or not a.factor > 1 or a.retries < 0 or a.max_wait < 0:
        sys.exit("error: --threads must be >= 1, --factor > 1, --retries and --max-wait >= 0")
    guard = SpellGuard(a.tessera, a.factor, a.retries, a.lowest, a.max_wait)
    if a.state and not a.baseline:
        try:
            with open(a.state) as f:
                saved = json.load(f)
            if guard.lowest is None or (saved.get("lowest") or guard.lowest) < guard.lowest:
                guard.lowest = saved.get("lowest")
            guard.waited_out = bool(saved.get("waited_out"))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as e:
            sys.exit(f"error: cannot read the guard's state {a.state}: {e}")

    def save_state():
        if a.state:
            with open(a.state, "w") as f:
                json.dump({"lowest": guard.lowest, "waited_out": guard.waited_out}, f)

    def run():
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise GuardError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-300:]}")
        return last_json(p.stdout)

    try:
        if a.baseline:
            ns = guard.baseline()
            save_state()
            print("null" if ns is None else f"{ns:.1f}")
            return
        result, seen = guard.timed(run, a.threads)
    except GuardError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    save_state()
    result.update(seen)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

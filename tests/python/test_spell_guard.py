"""scripts/spell_guard.py: a multi-thread run timed while the two CPUs sat far apart (a round trip
above factor x the lowest seen) is run again, at most `retries` times; one-thread runs are not
guarded; the command form adds what it saw to the timed command's JSON line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import spell_guard  # noqa: E402


class FakeRoundTrips(spell_guard.SpellGuard):
    """Round trips from a list instead of `tessera hw --round-trip`."""

    def __init__(self, trips, **kw):
        super().__init__("unused", **kw)
        self.trips = list(trips)

    def round_trip(self):
        ns = self.trips.pop(0)
        self.lowest = ns if self.lowest is None else min(self.lowest, ns)
        return ns


def counted_run():
    calls = []
    return calls, lambda: calls.append(len(calls)) or f"run {len(calls)}"


def test_a_run_outside_a_spell_is_kept():
    guard = FakeRoundTrips([61.0, 83.0], lowest=57.0)
    calls, run = counted_run()
    result, seen = guard.timed(run, threads=2)
    assert (result, len(calls)) == ("run 1", 1)
    assert seen == {"round_trip_ns": [61.0, 83.0], "in_spell": False, "spell_retries": 0}


def test_a_run_in_a_spell_is_run_again_until_the_spell_ends():
    # 2.5 x 57 = 142.5 ns: 341 before the first run, 153 after the second are spells.
    guard = FakeRoundTrips([341.0, 88.0, 90.0, 153.0, 59.0, 64.0], lowest=57.0)
    calls, run = counted_run()
    result, seen = guard.timed(run, threads=2)
    assert (result, len(calls)) == ("run 3", 3)
    assert seen == {"round_trip_ns": [59.0, 64.0], "in_spell": False, "spell_retries": 2}


def test_a_spell_that_outlasts_the_retries_is_kept_and_marked():
    guard = FakeRoundTrips([350.0, 340.0] * 3, lowest=60.0, retries=2)
    calls, run = counted_run()
    result, seen = guard.timed(run, threads=2)
    assert len(calls) == 3
    assert seen["in_spell"] is True and seen["spell_retries"] == 2


def test_one_thread_is_not_guarded():
    guard = FakeRoundTrips([])
    calls, run = counted_run()
    assert guard.timed(run, threads=1) == ("run 1", {})


def test_the_lowest_round_trip_comes_from_probes_when_not_given():
    guard = FakeRoundTrips([330.0, 52.0, 340.0] + [60.0, 70.0])
    assert guard.baseline(probes=3, gap_secs=0) == 52.0
    calls, run = counted_run()
    assert guard.timed(run, threads=2)[1]["in_spell"] is False


@pytest.mark.parametrize("factor, retries", [(1.0, 3), (2.5, -1)])
def test_bad_settings_are_refused(factor, retries):
    with pytest.raises(ValueError):
        spell_guard.SpellGuard("unused", factor=factor, retries=retries)


@pytest.mark.skipif(not os.environ.get("TESSERA_BINARY"), reason="needs the tessera binary")
def test_the_command_adds_the_round_trips_to_the_timed_line():
    tessera = os.environ["TESSERA_BINARY"]
    timed = [sys.executable, "-c", 'print("warming up"); print(\'{"median_ms": 1.5}\')']
    p = subprocess.run([sys.executable, str(SCRIPTS / "spell_guard.py"), "--tessera", tessera,
                        "--threads", "2", "--lowest", "1e9", "--"] + timed,
                       capture_output=True, text=True, check=True)
    line = json.loads(p.stdout)
    assert line["median_ms"] == 1.5
    # Below a lowest of 1e9 ns, no round trip is a spell.
    assert len(line["round_trip_ns"]) == 2 and line["spell_retries"] == 0
    assert line["in_spell"] is False
    # A failing command is exit 2 with one error line.
    p = subprocess.run([sys.executable, str(SCRIPTS / "spell_guard.py"), "--tessera", tessera,
                        "--threads", "1", "--", sys.executable, "-c", "raise SystemExit(3)"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "exited 3" in p.stderr

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
    """Round trips from a list instead of `tessera hw --round-trip`; waits only counted."""

    def __init__(self, trips, **kw):
        self.sleeps = []
        super().__init__("unused", sleep=self.sleeps.append, **kw)
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
    assert (result, len(calls), guard.sleeps) == ("run 1", 1, [])
    assert seen == {"round_trip_ns": [61.0, 83.0], "in_spell": False, "spell_retries": 0}


def test_a_run_waits_for_a_spell_to_end():
    # 2.5 x 57 = 142.5 ns: 341 and 345 are a spell, 59 is not.
    guard = FakeRoundTrips([341.0, 345.0, 59.0, 64.0], lowest=57.0)
    calls, run = counted_run()
    result, seen = guard.timed(run, threads=2)
    assert (result, guard.sleeps) == ("run 1", [0.5, 0.5])
    assert seen == {"round_trip_ns": [59.0, 64.0], "in_spell": False, "spell_retries": 0}


def test_a_run_that_met_a_spell_is_run_again():
    guard = FakeRoundTrips([60.0, 153.0, 62.0, 64.0], lowest=57.0)
    calls, run = counted_run()
    result, seen = guard.timed(run, threads=2)
    assert (result, len(calls)) == ("run 2", 2)
    assert seen == {"round_trip_ns": [62.0, 64.0], "in_spell": False, "spell_retries": 1}


def test_a_spell_that_outlasts_a_wait_is_the_placement_until_a_probe_ends_it():
    guard = FakeRoundTrips([350.0, 340.0, 330.0, 345.0] + [352.0, 348.0] + [70.0, 72.0],
                           lowest=60.0, retries=0, max_wait=1.0)
    calls, run = counted_run()
    seen = guard.timed(run, threads=2)[1]
    assert guard.sleeps == [0.5, 0.5] and seen["in_spell"] is True and guard.waited_out
    seen = guard.timed(run, threads=2)[1]
    assert guard.sleeps == [0.5, 0.5], "no second wait for the same spell"
    assert seen["round_trip_ns"] == [352.0, 348.0] and seen["in_spell"] is True
    seen = guard.timed(run, threads=2)[1]
    assert seen["in_spell"] is False and not guard.waited_out


def test_a_spell_that_outlasts_the_retries_is_kept_and_marked():
    guard = FakeRoundTrips([350.0, 340.0] * 3, lowest=60.0, retries=2, max_wait=0)
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


def test_runtimes_are_compared_in_one_placement():
    usual, spell = False, True
    ms, state = spell_guard.same_state_medians(
        {"a": [(1.0, usual), (5.0, spell)], "b": [(2.0, usual), (6.0, spell), (2.2, usual)]})
    assert (ms, state) == ({"a": 1.0, "b": 2.1}, "usual")
    # One runtime never ran in the usual placement: the spell's runs are compared.
    ms, state = spell_guard.same_state_medians({"a": [(5.0, spell)], "b": [(2.0, usual), (6.0, spell)]})
    assert (ms, state) == ({"a": 5.0, "b": 6.0}, "spell")
    ms, state = spell_guard.same_state_medians({"a": [(5.0, spell)], "b": [(2.0, usual)]})
    assert (ms, state) == ({"a": 5.0, "b": 2.0}, "mixed")
    # Unguarded (one-thread) runs are the usual placement.
    assert spell_guard.same_state_medians({"a": [(1.0, None)]}) == ({"a": 1.0}, "usual")


@pytest.mark.parametrize("factor, retries, wait", [(1.0, 3, 1), (2.5, -1, 1), (2.5, 3, -1)])
def test_bad_settings_are_refused(factor, retries, wait):
    with pytest.raises(ValueError):
        spell_guard.SpellGuard("unused", factor=factor, retries=retries, max_wait=wait)


@pytest.mark.skipif(not os.environ.get("TESSERA_BINARY"), reason="needs the tessera binary")
def test_the_command_adds_the_round_trips_to_the_timed_line(tmp_path):
    tessera = os.environ["TESSERA_BINARY"]
    timed = [sys.executable, "-c", 'print("warming up"); print(\'{"median_ms": 1.5}\')']
    p = subprocess.run([sys.executable, str(SCRIPTS / "spell_guard.py"), "--tessera", tessera,
                        "--threads", "2", "--factor", "1e6", "--"] + timed,
                       capture_output=True, text=True, check=True)
    line = json.loads(p.stdout)
    assert line["median_ms"] == 1.5
    # At a factor of 1e6 no round trip is a spell. (A --lowest of 1e9 did not make it so: the
    # first probe lowers it, and on a loaded host a later probe ran 2.5x that one.)
    assert len(line["round_trip_ns"]) == 2 and line["spell_retries"] == 0
    assert line["in_spell"] is False
    # --state carries the lowest round trip from --baseline to the next command.
    state = tmp_path / "guard.json"
    subprocess.run([sys.executable, str(SCRIPTS / "spell_guard.py"), "--tessera", tessera,
                    "--state", str(state), "--baseline"], capture_output=True, text=True,
                   check=True)
    saved = json.loads(state.read_text())
    assert saved["waited_out"] is False
    p = subprocess.run([sys.executable, str(SCRIPTS / "spell_guard.py"), "--tessera", tessera,
                        "--state", str(state), "--"] + timed,
                       capture_output=True, text=True, check=True)
    assert json.loads(p.stdout)["median_ms"] == 1.5
    if saved["lowest"] is not None:  # two CPUs: the lowest of all probes so far
        assert json.loads(state.read_text())["lowest"] <= saved["lowest"]
    # A failing command is exit 2 with one error line.
    p = subprocess.run([sys.executable, str(SCRIPTS / "spell_guard.py"), "--tessera", tessera,
                        "--threads", "1", "--", sys.executable, "-c", "raise SystemExit(3)"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "exited 3" in p.stderr


def test_the_column_names_the_round_trips_of_the_runs_compared():
    usual, spell = False, True
    ms, column = spell_guard.compare_in_one_placement(
        {"a": [(1.0, usual, 80.0), (5.0, spell, 350.0)], "b": [(2.0, usual, 90.0)]})
    assert (ms, column) == ({"a": 1.0, "b": 2.0}, "90")
    ms, column = spell_guard.compare_in_one_placement(
        {"a": [(5.0, spell, 350.0)], "b": [(6.0, spell, 340.0)]})
    assert column == "350s"
    assert spell_guard.compare_in_one_placement({"a": [(5.0, spell, 350.0)],
                                                 "b": [(2.0, usual, 80.0)]})[1] == "350!"
    assert spell_guard.compare_in_one_placement({"a": [(1.0, None, None)]}) == ({"a": 1.0}, "-")

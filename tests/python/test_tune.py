"""tessera.tune: a model's tasks tuned into a database with progress reports, the records served
by tessera.build (its coverage says so) in a library that still matches the reference; a
progress callback that raises stops tuning with its exception; Ctrl-C commits the round in
progress first; bad options are tessera.UserError with the command's one-line messages."""

import os
import subprocess

import pytest

import tessera
from conftest import assert_outputs_match, data_sets, feeds_of, model_dir

# A small budget: small_cnn's 8 tasks each get their warm-up round.
TRIALS = 16


@pytest.fixture(scope="module")
def small_cnn():
    onnx = model_dir("small_cnn") / "model.onnx"
    if not onnx.exists():
        pytest.skip("shared model small_cnn not found")
    return onnx


@pytest.fixture(scope="module")
def tuned(small_cnn, tmp_path_factory):
    """(database, summary, progress reports) of one tuning run of small_cnn."""
    db = tmp_path_factory.mktemp("tuned") / "logs" / "small_cnn.db"  # the folder is created
    reports = []
    summary = tessera.tune(small_cnn, trials=TRIALS, seed=0, db=db, progress=reports.append)
    return db, summary, reports


def test_tune_reports_progress_and_commits_records(small_cnn, tuned, built):
    db, s, reports = tuned
    n_tasks = len(built("small_cnn").coverage)  # the model's tasks, as a build lists them
    assert db.is_file()
    assert isinstance(s, tessera.TuneSummary)
    assert s.model == str(small_cnn) and s.db == str(db) and s.seed == 0
    assert s.target.startswith("llvm -mcpu=") and s.fingerprint
    assert s.trials == TRIALS and s.db_records == TRIALS and s.errors == 0
    assert s.estimated_ms_before is None, "a fresh database has no estimate"
    assert s.estimated_ms_after > 0
    assert s.elapsed_secs > 0
    assert len(s.tasks) == n_tasks
    assert [t.index for t in s.tasks] == list(range(n_tasks))
    assert sum(t.trials for t in s.tasks) == TRIALS
    for t in s.tasks:
        assert isinstance(t, tessera.TaskTuning)
        assert t.trials >= 1 and t.best_ms > 0 and len(t.workload_key) == 64, t
    assert s.estimated_ms_after == pytest.approx(sum(t.count * t.best_ms for t in s.tasks))
    assert s.rounds == sum(t.rounds for t in s.tasks)

    # The scheduler's reports: the start, then every round's start and commit, in order.
    assert all(isinstance(p, tessera.TuneProgress) for p in reports)
    start, last = reports[0], reports[-1]
    assert start.task is None and start.task_name is None and start.trials_done == 0
    assert start.tasks == n_tasks and start.trials_total == TRIALS and start.estimated_ms is None
    # The last report counts every trial (a retimed best is reported but ends no round).
    assert last.round == s.rounds and last.trials_done == TRIALS
    assert last.estimated_ms == pytest.approx(s.estimated_ms_after)
    done = [p for p in reports if p.round_done]
    assert [p.round for p in done] == list(range(1, s.rounds + 1))
    assert [p.trials_done for p in reports] == sorted(p.trials_done for p in reports)
    patterns = {t.index: t.pattern for t in s.tasks}
    assert all(p.task_name == patterns[p.task] for p in reports[1:])


def test_build_serves_the_tuned_records(small_cnn, tuned, tmp_path, built):
    db, s, _ = tuned
    lib = tessera.build(small_cnn, tmp_path / "small_cnn.so", db=db)
    assert isinstance(lib, str) and lib == str(tmp_path / "small_cnn.so")
    assert [row.workload_key for row in lib.coverage] == [t.workload_key for t in s.tasks]
    assert all(row.source == "exact" and row.record_id > 0 for row in lib.coverage), lib.coverage
    model = tessera.load(lib)
    for folder in data_sets("small_cnn"):
        assert_outputs_match(model, model.run(feeds_of(model, folder)), folder)
    # Without a database every task gets its default schedule, and says why.
    untuned = built("small_cnn")
    assert all(row.source == "default" and row.note for row in untuned.coverage)


class Stop(Exception):
    pass


def test_an_exception_in_the_callback_stops_tuning(small_cnn, tmp_path):
    reports = []

    def progress(p):
        reports.append(p)
        if p.round_done:
            raise Stop(p.round)

    with pytest.raises(Stop) as e:
        tessera.tune(small_cnn, trials=TRIALS, db=tmp_path / "t.db", progress=progress)
    assert e.value.args == (1,)
    assert reports[-1].round_done and reports[-1].round == 1, "no report after the exception"
    # The database stays usable: a rerun resumes from the committed round.
    s = tessera.tune(small_cnn, trials=2, db=tmp_path / "t.db")
    assert s.db_records == reports[-1].trials_done + 2


def test_ctrl_c_commits_the_round_in_progress(small_cnn, tmp_path):
    reports = []

    def progress(p):
        reports.append(p)
        if p.task is not None and not p.round_done and len(reports) == 2:
            raise KeyboardInterrupt  # as Ctrl-C raises it while the callback runs

    with pytest.raises(KeyboardInterrupt):
        tessera.tune(small_cnn, trials=TRIALS, db=tmp_path / "t.db", progress=progress)
    # The interrupted round was committed and no other started.
    assert reports[-1].round_done and reports[-1].round == 1
    assert reports[-1].task == reports[1].task
    s = tessera.tune(small_cnn, trials=1, db=tmp_path / "t.db")
    assert s.db_records == reports[-1].trials_done + 1


def user_error(*args, **kwargs) -> str:
    with pytest.raises(tessera.UserError) as e:
        tessera.tune(*args, **kwargs)
    message = str(e.value)
    assert "\n" not in message and message
    return message


def test_bad_options_are_user_errors(small_cnn, tmp_path):
    db = tmp_path / "t.db"
    assert user_error(small_cnn, trials=0, db=db) == "--trials must be at least 1, got 0"
    assert user_error(small_cnn, time_budget=0, db=db) == (
        "--time-budget must be a number of seconds above 0, got 0"
    )
    assert user_error(small_cnn, db="") == "--db must name a file, got ''"
    assert user_error(small_cnn, opt_level=7, db=db) == "-O must be 0..3, got 7"
    assert "'tpu'" in user_error(small_cnn, target="tpu", db=db)
    assert "'fp8'" in user_error(small_cnn, precision="fp8", db=db)
    assert "-1" in user_error(small_cnn, seed=-1, db=db)
    assert "-2" in user_error(small_cnn, input_shapes={"input": [-2, 1]}, db=db)
    missing = tmp_path / "no_such_model.onnx"
    message = user_error(missing, trials=1, db=db)
    assert str(missing) in message
    assert not db.exists(), "a bad option creates no database"
    # The command's own line, less its "error: ".
    tessera_bin = os.environ.get("TESSERA_BINARY")
    if tessera_bin:
        for args, python_message in (
            (["--trials", "0"], user_error(small_cnn, trials=0, db=db)),
            ([], message),
        ):
            model = str(missing) if not args else str(small_cnn)
            r = subprocess.run(
                [tessera_bin, "tune", model, "--db", str(db), *args],
                capture_output=True,
                text=True,
            )
            assert r.returncode == 1
            assert r.stderr.strip() == "error: " + python_message

"""The Slurm job queries `gather` runs (issue #13 rewrote them for speed): the newest record of
each job id and start decides, a requeued job is another job, a job's hosts come back sorted,
and a job without hosts has none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor import sql
from auditor.models import Job, JobTable
from auditor.store import Store

T0 = datetime(2026, 11, 29, tzinfo=UTC)
UNTIL = T0 + timedelta(days=1)
H = timedelta(hours=1)


def _table(*jobs: Job) -> JobTable:
    table = JobTable()
    for job in jobs:
        table.append(job)
    return table


def _store(path: Path) -> Store:
    store = Store(path)
    store.add_jobs(1, _table(
        Job("10", "FAILED", T0 + H, T0 + 3 * H, ("gpu-b", "gpu-a")),
        # Requeued: the same id with another start is another job.
        Job("10", "COMPLETED", T0 + 4 * H, T0 + 9 * H, ("gpu-c", "gpu-a")),
        Job("11", "RUNNING", T0 + 2 * H, None, ("gpu-d",)),
        Job("12", "FAILED", None, T0 + 5 * H, ("gpu-e",)),
        Job("13", "COMPLETED", T0 + H, T0 + 2 * H, ("gpu-f",))))
    # An older record of job 14 (source 3) says COMPLETED, the newer one (source 5) FAILED;
    # add_jobs replaces older records, databases written before it kept both.
    store.add_jobs(5, _table(Job("14", "FAILED", T0 + H, T0 + 8 * H, ("gpu-g", "gpu-h"))))
    store._con.execute(
        "insert into jobs (source_id, job_id, state, start_at, end_at) values "
        "(3, '14', 'COMPLETED', $s, $e)", {"s": (T0 + H).replace(tzinfo=None),
                                           "e": (T0 + 8 * H).replace(tzinfo=None)})
    # A job the scheduler listed with no hosts.
    store._con.execute(
        "insert into jobs (source_id, job_id, state, start_at, end_at) values "
        "(1, '15', 'COMPLETED', $s, $e)", {"s": (T0 + H).replace(tzinfo=None),
                                           "e": (T0 + 7 * H).replace(tzinfo=None)})
    return store


def _ids(jobs: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(j["job_id"], j["state"], j["hosts"]) for j in jobs]


def test_jobs_ended_newest_record_and_sorted_hosts(tmp_path: Path) -> None:
    with _store(tmp_path / "j.duckdb") as store:
        ended = store.jobs_ended(T0, UNTIL, {"FAILED"})
    assert _ids(ended) == [("10", "FAILED", ["gpu-a", "gpu-b"]),
                           ("12", "FAILED", ["gpu-e"]),
                           ("14", "FAILED", ["gpu-g", "gpu-h"])]
    assert ended[1]["start_at"] is None


def test_the_host_names_jobs_were_given_once_each(tmp_path: Path) -> None:
    with _store(tmp_path / "j.duckdb") as store:
        assert store.job_host_names() == [f"gpu-{c}" for c in "abcdefgh"]


def test_jobs_on_hosts_during_a_requeued_job_is_another_job(tmp_path: Path) -> None:
    """Job 10 ran on gpu-a and gpu-b, then again (requeued, another start) on gpu-a and gpu-c:
    an ask on one run's host over the other's span finds nothing, and an ask over both finds
    each run once with its own hosts."""
    with _store(tmp_path / "j.duckdb") as store:
        jobs = store.jobs_on_hosts_during(T0, UNTIL, [
            (1, T0 + 5 * H, T0 + 6 * H, "gpu-b"), (2, T0 + 5 * H, T0 + 6 * H, "gpu-a"),
            (3, T0, UNTIL, "gpu-a")])
    assert [(j["job_id"], j["state"], j["hosts"], j["asks"]) for j in jobs] == [
        ("10", "FAILED", ["gpu-a", "gpu-b"], [3]), ("10", "COMPLETED", ["gpu-a", "gpu-c"], [2, 3])]


def test_jobs_on_hosts_during_every_host_over_a_span(tmp_path: Path) -> None:
    """Asked on every host over one span: the jobs running then, by end time, each once (14's
    newest record, not its older one), with all their hosts; not 12, which never started, nor
    15, which ran on no host, nor 10's requeued run, which had not started. A later span finds
    only 11, still running; a name no job ran on finds nothing."""
    early = (T0 + 90 * timedelta(minutes=1), T0 + 2 * H)
    late = (T0 + 10 * H, T0 + 11 * H)
    with _store(tmp_path / "j.duckdb") as store:
        names = [*store.job_host_names(), "gpu-x"]
        during = store.jobs_on_hosts_during(T0, UNTIL, [(i, *early, n)
                                                         for i, n in enumerate(names)])
        after = store.jobs_on_hosts_during(T0, UNTIL, [(i, *late, n)
                                                        for i, n in enumerate(names)])
    asked = {n: i for i, n in enumerate(names)}
    assert [(*t, j["asks"]) for j, t in zip(during, _ids(during), strict=True)] == [
        ("13", "COMPLETED", ["gpu-f"], [asked["gpu-f"]]),
        ("10", "FAILED", ["gpu-a", "gpu-b"], [asked["gpu-a"], asked["gpu-b"]]),
        ("14", "FAILED", ["gpu-g", "gpu-h"], [asked["gpu-g"], asked["gpu-h"]]),
        ("11", "RUNNING", ["gpu-d"], [asked["gpu-d"]])]
    assert _ids(after) == [("11", "RUNNING", ["gpu-d"])]


def test_jobs_on_hosts_during_keeps_to_the_window_and_the_spans(tmp_path: Path) -> None:
    """The window decides which jobs there are (ended by its start or not started by its end:
    none, whatever the asks' spans), the asks which of them come back; both bounds count."""
    whole = [(i, T0, UNTIL + 9 * H, n) for i, n in enumerate(["gpu-a", "gpu-c", "gpu-d",
                                                               "gpu-f", "gpu-g"])]
    with _store(tmp_path / "j.duckdb") as store:
        # 13 ends at the window's start, 10's requeued run starts at its end
        edges = store.jobs_on_hosts_during(T0 + 2 * H, T0 + 4 * H, whole)
        inside = store.jobs_on_hosts_during(T0 + 2 * H + timedelta(minutes=1),
                                            T0 + 4 * H - timedelta(minutes=1), whole)
        # a later window: only 11, still running, is a job of it
        later = store.jobs_on_hosts_during(UNTIL + H, UNTIL + 9 * H, whole)
        # 13 ran [T0 + H, T0 + 2 * H] on gpu-f: a span touching it at either end finds it
        spans = store.jobs_on_hosts_during(T0, UNTIL, [
            (1, T0 + 2 * H, T0 + 3 * H, "gpu-f"), (2, T0, T0 + H, "gpu-f"),
            (3, T0 + 2 * H + timedelta(seconds=1), T0 + 3 * H, "gpu-f"),
            (4, T0, T0 + H - timedelta(seconds=1), "gpu-f")])
    assert _ids(edges) == [("13", "COMPLETED", ["gpu-f"]), ("10", "FAILED", ["gpu-a", "gpu-b"]),
                           ("14", "FAILED", ["gpu-g", "gpu-h"]),
                           ("10", "COMPLETED", ["gpu-a", "gpu-c"]), ("11", "RUNNING", ["gpu-d"])]
    assert _ids(inside) == [("10", "FAILED", ["gpu-a", "gpu-b"]),
                            ("14", "FAILED", ["gpu-g", "gpu-h"]), ("11", "RUNNING", ["gpu-d"])]
    assert _ids(later) == [("11", "RUNNING", ["gpu-d"])]
    assert [(j["job_id"], j["asks"]) for j in spans] == [("13", [1, 2])]


def test_a_new_database_records_every_schema_version(tmp_path: Path) -> None:
    """A new database takes all migrations in one transaction (issue #13): every version is
    recorded once, as when each took its own, and opening it again changes nothing."""
    every = [1, *(v for v, _ in sql.migrations())]  # schema.sql is 1
    with Store(tmp_path / "new.duckdb") as store:
        versions = [v for (v,) in store._con.execute(
            "select version from schema_version order by version").fetchall()]
        assert versions == every and every[-1] == Store.latest_version()
    with Store(tmp_path / "new.duckdb") as store:
        assert store.schema_version() == Store.latest_version()
        assert store._con.execute("select count(*) from schema_version").fetchone() == (
            len(every),)


def test_jobs_on_hosts_during_answers_each_ask_on_its_host_and_span(tmp_path: Path) -> None:
    """Each ask (id, span, host) gets the jobs that ran on its host during its span, each job
    once with all its hosts and the asks it answers (issue #25: a log asks for its own moments
    on one of its hosts, not for every job running at any log's moment)."""
    early = (T0 + 90 * timedelta(minutes=1), T0 + 2 * H)
    with _store(tmp_path / "j.duckdb") as store:
        near = store.jobs_on_hosts_during(T0, UNTIL, [
            (1, *early, "gpu-a"), (2, *early, "gpu-b"),
            # gpu-c ran only job 10's requeued run, which had not started by then
            (3, *early, "gpu-c"),
            # the same ask on two host names, and one the requeued run answers
            (4, T0 + 5 * H, T0 + 6 * H, "gpu-c"), (4, T0 + 5 * H, T0 + 6 * H, "gpu-a"),
            # job 14's newest record, on a host of its own; job 12 had no start: never asked
            (5, T0, UNTIL, "gpu-h"), (6, T0, UNTIL, "gpu-e"),
            # a span outside the window's jobs
            (7, UNTIL + H, UNTIL + 2 * H, "gpu-d")])
        none = store.jobs_on_hosts_during(T0, UNTIL, [])
    assert [(j["job_id"], j["state"], j["hosts"], j["asks"]) for j in near] == [
        ("10", "FAILED", ["gpu-a", "gpu-b"], [1, 2]),
        ("14", "FAILED", ["gpu-g", "gpu-h"], [5]),
        ("10", "COMPLETED", ["gpu-a", "gpu-c"], [4]),
        # still running: asked after the window's end, it ran then too
        ("11", "RUNNING", ["gpu-d"], [7])]
    assert near[0]["start_at"] == (T0 + H).replace(tzinfo=None) and none == []


def test_job_logs_give_hosts_and_times_only_of_logs_without_a_job(tmp_path: Path) -> None:
    """Only a log without a job is matched to one by its hosts and time span: a labelled log's
    come back as None (issue #13)."""
    from auditor.store import JobLogMeta

    at = (T0 + 2 * H).replace(tzinfo=None)
    with _store(tmp_path / "j.duckdb") as store:
        store.add_job_logs([
            JobLogMeta(7, "11", frozenset({"gpu-d"}), at, at, at, ("2.21.5",), 20, 7,
                       frozenset({("gpu-d", "mlx5_0")}), "mlx5_0"),
            JobLogMeta(8, None, frozenset({"gpu-f", "gpu-e"}), at, at + H, at + 2 * H,
                       ("2.27.7",), None, None)])
        labelled, unlabelled = store.job_logs(T0, UNTIL)
    assert labelled == {"source_id": 7, "job_id": "11", "hosts": None, "first_at": None,
                        "last_at": None, "written_at": None, "nccl_versions": ["2.21.5"],
                        "ib_timeout": 20, "ib_retry_cnt": 7,
                        "using_pairs": 1,
                        "ib_hca": "mlx5_0"}
    assert unlabelled == {"source_id": 8, "job_id": None, "hosts": ["gpu-e", "gpu-f"],
                          "first_at": at, "last_at": at + H, "written_at": at + 2 * H,
                          "nccl_versions": ["2.27.7"], "ib_timeout": None,
                          "ib_retry_cnt": None, "using_pairs": 0,
                          "ib_hca": None}


def test_no_jobs_at_all(tmp_path: Path) -> None:
    with Store(tmp_path / "j.duckdb") as store:
        assert store.job_host_names() == []
        assert store.jobs_on_hosts_during(T0, UNTIL, [(1, T0 + 5 * H, T0 + 6 * H, "gpu-a")]) == []


def test_more_job_logs_than_one_statement_takes_are_all_stored(tmp_path: Path) -> None:
    """add_job_logs stores its logs in statements of a few hundred (the Using lists of 6,600
    logs in one statement took 4.4 GB, issue #25): every log and its Using list arrives, across
    the statements' boundaries."""
    from auditor.store import JobLogMeta
    from auditor.store.jobs import _LOGS_A_STATEMENT

    at = (T0 + 2 * H).replace(tzinfo=None)
    count = 2 * _LOGS_A_STATEMENT + 3
    logs = [JobLogMeta(100 + i, None, frozenset({f"gpu-{i}"}), at, at, at,
                       ("2.21.5",), 20, 7,
                       frozenset({(f"gpu-{i}", f"mlx5_{r}") for r in range(i % 3 + 1)}), None)
            for i in range(count)]
    with _store(tmp_path / "j.duckdb") as store:
        store.add_job_logs(logs)
        stored = store.job_logs(T0, UNTIL)
        # read back only for the logs asked about: every third and one never stored
        asked = [m.source_id for m in logs[::3]] + [99_999]
        using = store.job_log_using(asked)
    assert [r["source_id"] for r in sorted(stored, key=lambda r: r["source_id"])] == [
        m.source_id for m in logs]
    assert [r["using_pairs"] for r in stored] == [len(m.using) for m in logs]
    assert [r["source_id"] for r in using] == asked[:-1]
    for m, row in zip(logs[::3], using, strict=True):
        assert list(zip(row["hosts"], row["devices"], strict=True)) == sorted(m.using)


def test_jobs_of_logs_only_the_runs_on_every_host_a_log_names(tmp_path: Path) -> None:
    """A log without a job asks for the runs on one of its hosts over its span: only those that
    also ran on every other fabric host it names come back, names brought to hosts by the maps
    (issue #25: no host lists are read for it)."""
    from auditor.store import JobLogMeta

    def log(source: int, *hosts: str) -> JobLogMeta:
        return JobLogMeta(source, None, frozenset(hosts), None, None, T0, (), None, None)

    log_hosts = {"GPU-A.ib": "A", "gpu-b": "B", "gpu-c": "C", "gpu-g": "G", "gpu-e": "E"}
    job_hosts = {"gpu-a": "A", "gpu-b": "B", "gpu-c": "C", "gpu-g": "G", "gpu-h": "H",
                 "gpu-e": "E"}
    with _store(tmp_path / "j.duckdb") as store:
        store.add_job_logs([log(1, "GPU-A.ib", "gpu-b"), log(2, "GPU-A.ib", "gpu-c"),
                            log(3, "gpu-g", "no-such-host"), log(4, "gpu-e")])
        found = store.jobs_of_logs(T0, UNTIL, [
            (1, T0 + 90 * timedelta(minutes=1), T0 + 2 * H, "gpu-a"),
            # both runs of job 10 ran on gpu-a then; only the requeued one on gpu-c too
            (2, T0 + H, T0 + 5 * H, "gpu-a"),
            # a name in no map is no host; asked on one host of the run, found by the other
            (3, T0, UNTIL, "gpu-h"),
            # job 12 never started
            (4, T0, UNTIL, "gpu-e")], log_hosts, job_hosts)
        # without the maps no name is a host: a log names none, no run covers it
        unmapped = store.jobs_of_logs(T0, UNTIL, [(1, T0, UNTIL, "gpu-a")], {}, {})
        none = store.jobs_of_logs(T0, UNTIL, [], log_hosts, job_hosts)
    at = [(T0 + k * H).replace(tzinfo=None) for k in range(10)]
    assert found == [
        {"source_id": 1, "job_id": "10", "start_at": at[1], "end_at": at[3]},
        {"source_id": 2, "job_id": "10", "start_at": at[4], "end_at": at[9]},
        {"source_id": 3, "job_id": "14", "start_at": at[1], "end_at": at[8]}]
    assert unmapped == none == []

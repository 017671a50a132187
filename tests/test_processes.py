"""Children end with their parent: pool workers, the fork server and the view's server.

Fault tests: the command is killed outright (SIGKILL, no cleanup possible)
or terminated (SIGTERM), and every process it started must be gone within
a few seconds, so nothing keeps running or holds the caller's pipe open.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from market.processes import STUCK_SECONDS, alive

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow,  # end-to-end: run by CI, skippable locally (-m 'not slow')
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (children, grandchildren...), from /proc."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parent.items() if p in frontier} - out
        out |= frontier
    return out


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def gone(pids: set[int]) -> bool:
    return not any(alive(p) for p in pids)


def test_a_child_that_watches_its_grandparent_ends_when_it_dies():
    """die_with watches a named ancestor, not only the direct parent."""
    code = ("import subprocess, sys, time; "
            "c = subprocess.Popen([sys.executable, '-c', "
            "'import os, sys, time; from market.processes import die_with; "
            "die_with(int(sys.argv[1])); time.sleep(60)', sys.argv[1]]); "
            "print(c.pid, flush=True); time.sleep(60)")
    grand = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    middle = subprocess.Popen([sys.executable, "-c", code, str(grand.pid)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = int(middle.stdout.readline())
    try:
        assert alive(child)
        grand.kill()
        grand.wait()
        assert wait_for(lambda: gone({child}), 5), "the watcher outlived the process it watched"
    finally:
        middle.kill()
        middle.wait()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_batch_leaves_no_worker_behind(tmp_path, sig):
    out = tmp_path / "r.parquet"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "batch", "--param", "n_buyers=300,400",
         "--iterations", "10", "--steps", "300", "--processes", "2", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # wait until the pool's workers run (fork server + 2 workers + resource tracker)
        assert wait_for(lambda: len(descendants(proc.pid)) >= 3, 90), "the pool never started"
        children = descendants(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)  # returns only once every pipe holder is gone
        assert wait_for(lambda: gone(children), 5), "workers outlived the batch"
        if sig == signal.SIGTERM:
            assert proc.returncode == 143 and "Traceback" not in err
            assert "run the same command again" in err
        else:
            assert proc.returncode == -signal.SIGKILL
            assert "Traceback" not in err and "leaked" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_killed_batch_on_a_local_dask_cluster_leaves_no_worker_and_no_noise(tmp_path):
    pytest.importorskip("distributed")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "batch", "--param", "n_buyers=50,60",
         "--iterations", "200", "--steps", "300", "--processes", "2", "--scheduler", "local",
         "--out", str(tmp_path / "r.parquet")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the cluster's nannies and workers, and the resource tracker
        assert wait_for(lambda: len(descendants(proc.pid)) >= 3, 90), "no cluster started"
        assert wait_for(lambda: (tmp_path / "r.parts").is_dir(), 90), "no run finished"
        children = descendants(proc.pid)
        proc.kill()
        _, err = proc.communicate(timeout=30)
        assert wait_for(lambda: gone(children), 5), "the cluster outlived the batch"
        noise = [x for x in err.splitlines() if not x.startswith("[progress] ")]
        assert noise == []  # not even the resource tracker's note on the semaphores it cleaned
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_killed_worker_is_one_line_and_the_batch_resumes(tmp_path):
    out = tmp_path / "r.parquet"
    # runs of a second or two each (the compiled engine steps a 200-trader market in ~0.2
    # ms): the first part is written with five runs to go, so the kill lands while runs are
    # in flight, not while the pool shuts down
    args = [sys.executable, str(ROOT / "run.py"), "batch", "--param", "n_buyers=100,200",
            "--iterations", "3", "--steps", "8000", "--processes", "2", "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        parts = tmp_path / "r.parts"
        assert wait_for(lambda: parts.is_dir() and any(parts.iterdir()), 120)
        server = [p for p in descendants(proc.pid) if "forkserver" in _cmdline(p)]
        workers = [p for s in server for p in descendants(s)]
        assert workers, "no pool worker found"
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1
        lines = [x for x in err.strip().splitlines() if not x.startswith("[progress] ")]
        assert len(lines) == 1 and "a worker process died" in lines[0], err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = subprocess.run(args + ["--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"reused": 0' not in done.stdout  # the finished runs were kept and reused


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGHUP", "SIGINT", "SIGTERM early"])
def test_the_view_leaves_no_server_no_temporary_folder_and_at_most_two_lines(how, tmp_path):
    """The Solara server ends with it, and its asset folder is removed, on every way of
    stopping; after SIGKILL, which allows no cleanup, the folder goes at the next start (a
    stale folder of a dead process, with the view's marker)."""
    import socket

    from market.cli.viz_cmd import TMP_PREFIX, remove_stale_folders

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "viz", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    sig = getattr(signal, how.split()[0])
    try:
        if how.endswith("early"):  # while the server is still starting
            assert wait_for(lambda: any(tmp_path.glob(f"{TMP_PREFIX}*")), 60)
        else:
            assert "Market view" in proc.stdout.readline(), "the server did not come up"
        children = descendants(proc.pid)
        assert children or how.endswith("early"), "no server process found"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert wait_for(lambda: gone(children), 10), "the Solara server outlived run.py viz"
        assert proc.returncode == {"SIGTERM": 143, "SIGINT": 130, "SIGHUP": 129}.get(
            how, proc.returncode), err
        left = list(tmp_path.glob(f"{TMP_PREFIX}*"))
        if sig == signal.SIGKILL:
            assert left and remove_stale_folders(tmp_path) == left
        else:
            assert left == [] and len(err.strip().splitlines()) <= 2, err
        assert not list(tmp_path.glob(f"{TMP_PREFIX}*"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("scheduler", [[], ["--scheduler", "local"]])
def test_ctrl_c_at_the_terminal_stops_a_batch_in_one_line(tmp_path, scheduler):
    """The terminal sends SIGINT to the whole process group: pool and Dask workers alike
    must leave the message to the command (a local cluster's workers printed 64 lines)."""
    pytest.importorskip("distributed") if scheduler else None
    out = tmp_path / "r.parquet"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "batch", "--param", "n_buyers=50,100",
         "--iterations", "50", "--steps", "5000", "--processes", "2", *scheduler,
         "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        assert wait_for(lambda: (tmp_path / "r.parts").is_dir(), 120), "no run finished"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        lines = [x for x in err.strip().splitlines() if not x.startswith("[progress] ")]
        assert len(lines) == 1 and "run the same command again" in lines[0], err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


#: commands whose work is mostly compiled code (market steps, a batch in one process,
#: training, the tournament's negotiations) or long numpy work (the exact evaluator, the
#: report's sections), each long enough to be interrupted mid-work
LONG = {
    "market": ["market", "--sellers", "3000", "--buyers", "3000", "--steps", "100000"],
    "batch": ["batch", "--param", "n_buyers=2000,3000", "--iterations", "20", "--steps",
              "20000", "--processes", "1", "--out", "{tmp}/b.parquet"],
    "train": ["train", "--seeds", "64", "--cycles", "3000", "--episodes", "2000"],
    "evaluate": ["evaluate", "--spe", "--prices", "1000", "--rounds", "12"],
    "tournament": ["tournament", "--repetitions", "2000"],
    "report": ["report", "--out", "{tmp}/report"],
}

#: moments to interrupt at: at start-up, while compiling or loading, mid-work
DELAYS = {"market": [0.3, 2.5], "batch": [0.3, 2.5], "train": [0.3, 2.5],
          "evaluate": [0.3, 2.5], "tournament": [1.0, 2.5], "report": [0.6, 2.5]}


#: signal -> the exit code and the word of its one line
ENDS = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated"),
        signal.SIGHUP: (129, "terminated")}


@pytest.mark.parametrize(("command", "delay", "sig"),
                         [(c, d, signal.SIGINT) for c, delays in DELAYS.items() for d in delays]
                         + [("market", 2.5, signal.SIGTERM), ("report", 2.5, signal.SIGTERM),
                            ("train", 2.5, signal.SIGHUP), ("batch", 2.5, signal.SIGHUP)])
def test_ctrl_c_anywhere_ends_a_command_in_one_line_with_130(command, delay, sig, tmp_path):
    """At start-up, while compiling or inside a compiled step: numba hands the interrupt
    back as a SystemError caused by it, which a run's own error handling took for a failed
    run (a batch went on) or a compile failure; now it is the command's end, one line (and
    so is SIGTERM's, exit 143, and a closed terminal's, 129)."""
    _interrupted([a.format(tmp=tmp_path) for a in LONG[command]], delay, sig, took_at_most=5,
                 cwd=tmp_path)


def _interrupted(args: list[str], delay: float, sig: int, took_at_most: float,
                 env: dict[str, str] | None = None, *, cwd: Path) -> None:
    """Run ``run.py ARGS`` in ``cwd`` (a temporary folder: a command without ``--out`` writes
    under ``out/`` there, never in the repository), send ``sig`` after ``delay`` seconds: it
    ends in its one line and exit code within ``took_at_most`` seconds (or had done its work
    already)."""
    code, word = ENDS[sig]
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        time.sleep(delay)
        if proc.poll() is not None:
            pytest.skip(f"{args[0]} ended before the interrupt")
        os.killpg(proc.pid, sig)
        started = time.monotonic()
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - started
        lines = [x for x in err.strip().splitlines() if not x.startswith(("[progress] ",
                                                                          "compil"))]
        if proc.returncode == 0:  # the work was done: the signal came while Python shut down
            assert "Traceback" not in err and not any(word in x for x in lines), err
            return
        assert proc.returncode == code, err
        assert "Traceback" not in err and "SystemError" not in err, err
        assert len(lines) <= 2 and word in lines[-1], err
        assert took < took_at_most, f"{args[0]} took {took:.1f} s to stop"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


COLD_MARKET = ["market", "--sellers", "20", "--buyers", "20", "--steps", "20"]


def test_ctrl_c_during_a_cold_compile_ends_the_command_in_one_line_within_seconds(tmp_path):
    """numba's compiler is Python: Ctrl-C there is Python's own, raised at once; what it lands
    in (LLVM's callbacks drop it) cannot keep the command going past the deadline."""
    _interrupted(COLD_MARKET, 4, signal.SIGINT, took_at_most=3,  # the rules compiling
                 env={**os.environ, "NEGOTIATION_MARKET_CACHE": str(tmp_path / "empty")},
                 cwd=tmp_path)


DROPPED = """
import os, signal, time
from market.processes import sigterm_exits


class Swallows:
    def __del__(self):  # Python prints and drops an exception raised here: a signal's too
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        except KeyboardInterrupt:
            pass


with sigterm_exits(lambda signum: "run.py market: interrupted"):
    started = time.monotonic()
    target = Swallows()
    del target
    time.sleep(30)
print("ran on")
"""


def test_a_signal_whose_exception_is_dropped_still_ends_the_command_within_the_deadline():
    """Raised in a finaliser, a weak reference's callback or a callback from C (LLVM's),
    the signal's exception is dropped: the command still ends with its line and code."""
    from market import processes

    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", DROPPED], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    took = time.monotonic() - started
    assert out.returncode == 130 and "ran on" not in out.stdout, (out.stdout, out.stderr)
    assert out.stderr.strip().splitlines()[-1] == "run.py market: interrupted", out.stderr
    assert took < processes.GRACE_SECONDS + 4, took


FOREVER = '''
from strategies.rule_based import RuleBased


class Forever(RuleBased):
    """A user's rule that never returns (its loop never ends) in games of more than 50
    levels: the turns it is tried on before it plays are smaller, the market's is not."""

    name = "forever"

    @staticmethod
    def target(turn, rng):
        k = turn.lo
        while k >= 0 and turn.prices > 50:
            k = (k * 7 + 3) % 1000
        return k
'''


@pytest.mark.parametrize("presses", [1, 2])
def test_a_rule_that_never_returns_is_stopped_by_ctrl_c_in_one_line(presses, tmp_path):
    """Compiled code does not look for signals, and the step is held until it returns; a
    thread of the command's ends it when the main thread has not taken Ctrl-C within
    seconds (market.processes.STUCK_SECONDS), and at once on a second Ctrl-C."""
    import threading

    (tmp_path / "loop.py").write_text(FOREVER)
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "market", "--seller-mix",
                             f"{tmp_path / 'loop.py'}:Forever=0.5,averaging=0.5",
                             "--prices", "60", "--steps", "10"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        assert wait_for(lambda: any("market: 0 of 10 steps" in x for x in lines)
                        or proc.poll() is not None, 180), lines
        assert proc.poll() is None, lines
        os.killpg(proc.pid, signal.SIGINT)
        started = time.monotonic()
        if presses == 2:
            time.sleep(0.3)
            os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
        took = time.monotonic() - started
        reader.join(5)
        said = [x for x in lines if not x.startswith(("[progress] ", "compil"))]
        assert proc.returncode == 130, lines
        assert said == ["run.py market: interrupted\n"], lines
        limit = 6 if presses == 1 else 0.3 + STUCK_SECONDS / 2
        assert took < limit, f"stopped after {took:.1f} s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


LATE_SIGNAL = """
import os, signal, sys, time


class Late:
    def __del__(self):  # while Python tears the modules down, after every exit handler
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)


late = Late()
from market.processes import exit_on_signal, guard_process

guard_process()
exit_on_signal(3)
sys.exit(3)
"""


def test_a_signal_while_python_shuts_down_keeps_the_commands_exit_code():
    """Once the work is done and said, a signal at any moment of the shutdown ends the
    process with the command's own code: it was killed by the signal, with no line."""
    out = subprocess.run([sys.executable, "-c", LATE_SIGNAL], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 3, (out.returncode, out.stderr)


SWALLOWED = """
import os, signal, time
from market.processes import guard_process, sigterm_exits
guard_process()
try:  # a library's start-up that catches everything, the Ctrl-C with it
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)
except KeyboardInterrupt:
    pass
try:
    with sigterm_exits():
        print("the command ran on")
except KeyboardInterrupt:
    print("interrupted at the command's start")
"""


def test_a_ctrl_c_swallowed_while_a_command_starts_still_ends_it():
    out = subprocess.run([sys.executable, "-c", SWALLOWED], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "interrupted at the command's start", (out.stdout, out.stderr)

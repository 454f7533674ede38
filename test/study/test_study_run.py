"""`cecm study run` end to end on a file domain (the workshop), with a scripted participant
in Chromium who plays by keys through the real pages: the installed node graph per set
as processes over DDS, recorded; stopped in mid-set (SIGTERM, as a closed terminal or a
crash of the runner would), and resumed by the same command at the episode it was in;
then `cecm study export --study` and `cecm estimate --from-dataset` on what was kept.

Nothing recorded is lost: the set stopped has two recordings, the episode done before
the stop is kept from the first, the others from the second, and no task is counted
twice. The web panel's and the estimator's processes are killed in the resumed set; the
set still ends with every episode.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from browser_fixtures import browser_or_skip
from graph_fixtures import RosDomain, installed_or_skip, scaled
from paths import REPO, VENV

from cecm_ros.core.dataset import load_dataset
from cecm_ros.domains import load_domain

pytest.importorskip('rclpy', reason='needs rclpy (make build)')

WORKSHOP = REPO / 'config' / 'domains' / 'workshop' / 'domain.yaml'
CECM = str(VENV / 'bin' / 'cecm')
PROTOCOL = f"""
study: workshop-run
domain: {WORKSHOP}
participants: [p01, p02]
types: [apprentice, seated]
tasks_per_set: 2
task_seed: 5
order: latin_square
assistant: {{method: optimistic}}
consent: You take part of your own free will.
instructions: Press the key of your action at each step.
questionnaire:
  - {{id: trust, text: I trusted the robot, points: 5}}
"""


class Run:
    """A `cecm study run` process whose output is read on a thread of its own."""

    def __init__(self, work: Path, env: dict, lines: list[str]):
        self.lines = lines
        self.process = subprocess.Popen(
            [CECM, 'study', 'run', str(work / 'protocol.yaml'), '--participant', 'p02',
             '--scripted', 'noisy:0.3', '--scripted-seed', '4', '--out',
             str(work / 'studies'), '--token=-a-token-may-begin-with-a-dash'],
            env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            stdin=subprocess.DEVNULL, start_new_session=True)
        self.start = len(lines)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_for(self, marker: str, timeout_s: float) -> bool:
        """Whether a line of this run holds ``marker`` within ``timeout_s``."""
        return self.wait_until(
            lambda: any(marker in line for line in self.lines[self.start:]), timeout_s)

    def wait_until(self, condition, timeout_s: float) -> bool:
        """Whether ``condition()`` holds within ``timeout_s`` (False once the run ended
        without it)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if condition():
                return True
            if self.process.poll() is not None:
                # Ended (a browser it left may hold the pipe open: do not wait for EOF).
                self.reader.join(2)
                return bool(condition())
            time.sleep(0.2)
        return False

    def end(self, timeout_s: float) -> int | None:
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
            return None
        finally:
            self.reader.join(10)
        return self.process.returncode


def _journaled_done(set_dir: Path, index: int) -> bool:
    """Whether the set's session journal has task ``index`` done."""
    for path in (set_dir / 'journal').glob('*.jsonl'):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue   # a line being written
            if record.get('event') == 'done' and record.get('index') == index:
                return True
    return False


def _node_pids(name: str, params: Path) -> list[int]:
    """The processes of node ``name`` (any node: '') started with a parameters file at
    or under ``params``."""
    found = []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / 'cmdline').read_bytes().split(b'\0')
        except OSError:
            continue
        words = [c.decode(errors='replace') for c in command]
        # A node is `python3 .../lib/cecm_ros/<name> --ros-args --params-file PARAMS`.
        if any(f'/cecm_ros/{name}' in word for word in words[:2]) and \
                any(word.startswith(str(params)) for word in words):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope='module')
def study(tmp_path_factory):
    installed_or_skip('session_recorder')
    browser_or_skip()
    work = tmp_path_factory.mktemp('study_run')
    (work / 'protocol.yaml').write_text(PROTOCOL)
    ros = RosDomain()
    lines: list[str] = []
    runs: list[Run] = []
    try:
        # p02 plays seated first (latin square), then apprentice. Stopped once the first
        # episode of its first set is done.
        set_dir = work / 'studies' / 'workshop-run' / 'p02' / 'set-1-seated'
        runs.append(Run(work, ros.env, lines))
        first = runs[-1]
        # Stopped once the journal has the set's first episode done (its report line
        # comes a moment before: a stop between the two would run it again).
        assert first.wait_until(lambda: _journaled_done(set_dir, 0), scaled(300)), \
            ''.join(lines)
        first.process.send_signal(signal.SIGTERM)
        stopped_code = first.end(scaled(60))
        # Again: the set goes on at its second episode; its panel and estimator are
        # killed while it runs (respawned), and the study still ends.
        runs.append(Run(work, ros.env, lines))
        second = runs[-1]
        killed = []
        assert second.wait_for('Play the partner', scaled(180)), ''.join(lines)
        for node in ('web_panel', 'capability_estimator'):
            for pid in _node_pids(node, set_dir / 'params.yaml'):
                os.kill(pid, signal.SIGKILL)
                killed.append(node)
        assert second.wait_for('every set done', scaled(600)), ''.join(lines)[-4000:]
        code = second.end(scaled(60))
        return {'work': work, 'log': ''.join(lines), 'stopped_code': stopped_code,
                'code': code, 'killed': killed}
    finally:
        for run in runs:   # a run left by a failed assertion, and its node processes
            if run.process.poll() is None:
                os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait(10)
        for node in _node_pids('', work / 'studies'):
            os.kill(node, signal.SIGKILL)
        ros.release()


def test_a_stopped_study_resumes_and_loses_nothing(study):
    log = study['log']
    assert study['stopped_code'] == 130, log[-4000:]
    assert study['code'] == 0, log[-4000:]
    assert sorted(study['killed']) == ['capability_estimator', 'web_panel'], log[-4000:]
    folder = study['work'] / 'studies' / 'workshop-run' / 'p02'
    progress = json.loads((folder / 'progress.json').read_text())
    sets = {entry['label']: entry for entry in progress['sets']}
    assert list(sets) == ['set-1-seated', 'set-2-apprentice']
    assert sets['set-1-seated']['recordings'] == ['recording-1.mcap', 'recording-2.mcap']
    assert sets['set-2-apprentice']['recordings'] == ['recording-1.mcap']
    assert all(entry['finished'] and 1 <= entry['answers']['trust'] <= 5
               for entry in sets.values())
    assert progress['consented'] is not None
    assert 'scripted participant: done' in log


def test_the_study_exports_and_re_estimates(study, capsys):
    from cecm_ros.cli.main import main as cecm

    work = study['work']
    dataset_dir = work / 'dataset'
    code = cecm(['study', 'export', '--study', str(work / 'studies' / 'workshop-run'),
                 '--protocol', str(work / 'protocol.yaml'), '--domain', str(WORKSHOP),
                 '--out', str(dataset_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    domain = load_domain(str(WORKSHOP))
    dataset = load_dataset(dataset_dir, domain)
    assert [(e.participant, e.set_index, e.episode_index, e.type_name)
            for e in dataset.episodes] == [('p02', 1, 1, 'seated'), ('p02', 1, 2, 'seated'),
                                           ('p02', 2, 1, 'apprentice'),
                                           ('p02', 2, 2, 'apprentice')]
    # The first episode of set 1 is the first start's; the second, the resumed one's.
    sources = [e.source for e in dataset.episodes[:2]]
    assert 'recording-1.mcap' in sources[0] and 'recording-2.mcap' in sources[1], sources
    assert len({e.task_id for e in dataset.episodes}) == 4
    assert all(e.protocol and e.goal_reached and e.steps for e in dataset.episodes)
    # The assistant of this protocol is the optimistic baseline: the person corrects it.
    assert any(step.correction is not None for e in dataset.episodes for step in e.steps)

    code = cecm(['estimate', '--from-dataset', str(dataset_dir), '--domain', str(WORKSHOP),
                 '--method', 'paper,posterior', '--samples', '100', '--out',
                 str(work / 'estimate')])
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads((work / 'estimate' / 'reestimate.json').read_text())
    assert report and (work / 'estimate' / 'report.md').is_file()
    assert 'seated' in out and 'apprentice' in out

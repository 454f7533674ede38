"""``cecm study run PROTOCOL --participant ID``: one participant's whole study.

The study pages (consent, instructions, each set, its questionnaire, the end) are served
for the whole run; each set is a node graph of its own in play mode (the web panel, a
world that waits for the person, the protocol's assistant), started when the participant
presses Start and recorded to a file of its own. Where the participant is goes to disk
after every change (``progress.py``); the set's session has a fixed id and a journal in
the set's folder, so a run stopped by anything (a crash, Ctrl-C, a closed machine)
started again with the same command resumes at the episode it was in: the episodes done
stay done, and every start of a set records to a new file, so nothing recorded is
overwritten.

Layout: ``OUT/<study>/<participant>/progress.json`` and one folder per set
(``set-1-<type>/``: tasks.yaml, params.yaml, journal/, recording-1.mcap, ..., logs/).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cecm_ros.core.domain import Domain
from cecm_ros.core.errors import ConfigError
from cecm_ros.study.pages import Screen, StudyPages
from cecm_ros.study.progress import Progress
from cecm_ros.study.protocol import ASSISTANT_KEYS, Protocol, StudySet, load_protocol
from cecm_ros.tools.demo_graph import DemoError

# The assistant keys a protocol may give, as `cecm demo` options (--samples, ...).
ASSISTANT_OPTIONS = {key: f'--{key}' for key in ASSISTANT_KEYS}
WAIT_FOR_PERSON_S = None   # a participant may take as long as they like on a page


@dataclass
class StudyRun:
    """What one `cecm study run` works with."""

    protocol: Protocol
    participant: str
    domain: Domain
    folder: Path
    progress: Progress
    pages: StudyPages
    panel_port: int
    say: Callable[[str], None]


def participant_folder(out: str | Path, protocol: Protocol, participant: str) -> Path:
    return Path(out).expanduser().resolve() / protocol.name / participant


def free_port(host: str = '127.0.0.1') -> int:
    """A port nothing listens on now: the panel keeps it for every set, so that the
    participant's tab finds the next set's panel at the same address."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def participant_lock(folder: Path) -> Iterator[None]:
    """One run per participant at a time: two would write one progress file."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = (folder / '.lock').open('w')
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ConfigError(f'{folder}: another `cecm study run` has this participant '
                              'open; finish or stop that one first') from None
        yield
    finally:
        handle.close()


def write_set_tasks(domain: Domain, study_set: StudySet, path: Path) -> None:
    """The set's tasks as the task manager's tasks_file reads them."""
    tasks = [domain.task_to_dict(task) for task in study_set.tasks]
    path.write_text(yaml.safe_dump({'tasks': tasks}, sort_keys=False))


def leftover_processes(params: Path) -> list[int]:
    """Processes still running with the set's parameters file: the graph of a run that
    was killed outright (SIGKILL, a crash of this process), which nothing stopped."""
    found: list[int] = []
    proc = Path('/proc')
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            words = entry.joinpath('cmdline').read_bytes().split(b'\0')
        except OSError:
            continue
        if str(params).encode() in words:
            found.append(int(entry.name))
    return found


def stop_leftovers(params: Path, say: Callable[[str], None]) -> None:
    """End a killed run's node processes before the set starts again (they would answer
    in its place and write its recording)."""
    pids = leftover_processes(params)
    if not pids:
        return
    say(f'stopping {len(pids)} node processes a killed run left running')
    for sig, grace in ((signal.SIGINT, 10.0), (signal.SIGKILL, 5.0)):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and leftover_processes(params):
            time.sleep(0.2)
        pids = leftover_processes(params)
        if not pids:
            return


def next_recording(set_dir: Path) -> Path:
    """A file name no start of the set has used: a recording is never replaced."""
    number = 1
    while (set_dir / f'recording-{number}.mcap').exists():
        number += 1
    return set_dir / f'recording-{number}.mcap'


def session_id(protocol: Protocol, participant: str, study_set: StudySet) -> str:
    return f'{protocol.name}-{participant}-{study_set.label}'


def demo_arguments(run: StudyRun, study_set: StudySet, set_dir: Path, recording: Path,
                   token: str) -> Any:
    """The set's graph as `cecm demo --play` would run it."""
    from cecm_ros.tools.options import demo_parser

    assistant = run.protocol.assistant
    # OPTION=VALUE throughout: a value may begin with '-' (a random token can).
    argv = [f'--domain={run.protocol.domain}', f'--partner={study_set.partner_type}',
            '--play', f'--web-port={run.panel_port}', f'--web-token={token}',
            f'--tasks={len(study_set.tasks)}', f'--method={assistant["method"]}',
            '--task-choice=given', f'--out={set_dir}', f'--record={recording}']
    for key, option in ASSISTANT_OPTIONS.items():
        if key in assistant:
            argv.append(f'{option}={assistant[key]}')
    window = run.protocol.web.get('correction_window_s')
    if window is not None:
        argv.append(f'--correction-window={window}')
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return demo_parser().parse_args(argv)
    except SystemExit:
        message = errors.getvalue().strip().splitlines()
        raise ConfigError(f'{run.protocol.path}: the assistant\'s settings are not valid: '
                          f'{message[-1] if message else argv}') from None


def run_set(run: StudyRun, study_set: StudySet, token: str) -> int:
    """One set's node graph until its tasks are done; the task manager's exit code."""
    from cecm_ros.tools import demo_graph

    set_dir = run.folder / study_set.label
    set_dir.mkdir(parents=True, exist_ok=True)
    recording = next_recording(set_dir)
    sid = session_id(run.protocol, run.participant, study_set)
    tasks_file = set_dir / 'tasks.yaml'
    write_set_tasks(run.domain, study_set, tasks_file)
    args = demo_arguments(run, study_set, set_dir, recording, token)
    executables, base = demo_graph.package_paths()
    stop_leftovers(set_dir / 'params.yaml', run.say)
    run.progress.begin(study_set.label, sid, recording.name)
    params = demo_graph.write_params(base, args, set_dir, extra={
        'task_manager': {'tasks_file': str(tasks_file), 'session_id': sid,
                         'partner_id': run.participant, 'heldout_tasks': 0},
        'capability_estimator': {'partner_id': run.participant}})
    env = demo_graph.demo_environment()
    return demo_graph._run_processes(args, env, params, executables, set_dir, recording)


def _show_link_when_up(pages: StudyPages, port: int, stop: threading.Event,
                       screen: Screen) -> None:
    """Show the game's link once the panel answers on its port (not before: a link
    that is refused would look broken)."""
    while not stop.is_set():
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=1.0):
                pages.show(screen)
                return
        except OSError:
            stop.wait(0.5)


def _wait(pages: StudyPages, screen: Screen) -> Any:
    pages.show(screen)
    return pages.wait_for(screen.name, WAIT_FOR_PERSON_S)


def run_participant(run: StudyRun) -> int:
    """Every set of the participant not finished yet, in their order."""
    protocol, progress, pages = run.protocol, run.progress, run.pages
    if progress.consented is None:
        if protocol.consent:
            _wait(pages, Screen('consent', 'Consent', protocol.consent))
        progress.give_consent()
        run.say('consent given')
    sets = protocol.plan_for(run.participant, run.domain)
    left = [s for s in sets if not progress.done(s.label)]
    if left and protocol.instructions:
        _wait(pages, Screen('instructions', 'Instructions', protocol.instructions))
    for study_set in left:
        number = f'{study_set.index + 1} of {len(sets)}'
        described = run.domain.catalog.describe_missing(
            run.domain.catalog.resolve(study_set.partner_type))
        data = {'set': str(study_set.index + 1), 'type': study_set.partner_type,
                'tasks': str(len(study_set.tasks))}
        entry = progress.entry(study_set.label)
        if entry is not None and entry.played is not None:
            run.say(f'{study_set.label}: its tasks were done already; its questionnaire')
            code = 0
        else:
            code = play_set(run, study_set, number, data, described, again=entry is not None)
        if code != 0:
            pages.show(Screen('instructions', 'Interrupted',
                              'The set stopped early. Please tell the experimenter; what '
                              'you did so far is kept.'))
            run.say(f'{study_set.label}: the session ended with exit code {code}; run the '
                    'same command again to go on at the task it was in')
            return 1
        answers = None
        if protocol.questionnaire:
            items = [vars(item) for item in protocol.questionnaire]
            answers = _wait(pages, Screen('questionnaire', f'After set {number}',
                                          'Please answer.', items=items, data=data))
        progress.finish(study_set.label, answers)
        run.say(f'{study_set.label}: finished' + (f'; answers {answers}' if answers else ''))
    pages.show(Screen('done', 'Thank you', 'The study is complete.'))
    run.say(f'participant {run.participant}: every set done; progress in {progress.path}')
    return 0


def play_set(run: StudyRun, study_set: StudySet, number: str, data: dict[str, str],
             described: str, again: bool) -> int:
    """The set's start page, then its graph until its tasks are done (exit code 0, and
    marked played) or it stops."""
    pages = run.pages
    _wait(pages, Screen(
        'set', f'Set {number}',
        ('This set was interrupted; it goes on at the task it was in.\n\n' if again
         else '') +
        f'You play a partner who cannot: {described}. The set has '
        f'{len(study_set.tasks)} tasks. Press Start, then open the game.', data=data))
    link = f'http://127.0.0.1:{run.panel_port}/?token={pages.token}'
    pages.show(Screen('playing', f'Set {number}: starting',
                      'The game is starting; its link shows here in a moment.',
                      data=data))
    run.say(f'{study_set.label}: started ({len(study_set.tasks)} tasks, partner type '
            f'{study_set.partner_type}); the game: {link}')
    ready = threading.Event()
    shown = threading.Thread(target=_show_link_when_up, daemon=True, args=(
        pages, run.panel_port, ready, Screen(
            'playing', f'Set {number}: playing', 'Play in the game\'s tab; this page '
            'moves on when the set is done.', link=link, data=data)))
    shown.start()
    try:
        code = run_set(run, study_set, pages.token)
    except DemoError as error:
        run.say(f'{study_set.label}: {error}')
        code = 1
    finally:
        ready.set()
        shown.join(5)
    if code == 0:
        run.progress.played(study_set.label)
    return code


def cmd_run(args) -> int:
    from cecm_ros.domains import load_domain
    from cecm_ros.tools.demo_graph import package_paths

    protocol = load_protocol(args.protocol)
    domain = load_domain(protocol.domain)
    protocol.plan_for(args.participant, domain)   # every type and task checked first
    from cecm_ros.domains import planner_for

    with planner_for(domain, workers=1, plan_cache=True) as planner:
        protocol.check_served(domain, planner)   # no type meets a task it cannot finish
    try:
        package_paths()   # the node graph is installed (before anything is shown)
    except DemoError as error:
        raise ConfigError(str(error)) from None
    if args.scripted:
        from cecm_ros.study.scripted import check_browser

        check_browser()
    folder = participant_folder(args.out, protocol, args.participant)

    def say(line: str) -> None:
        print(f'[cecm study] {line}', flush=True)

    from cecm_ros.tools.demo_graph import stop_on_sigterm

    stop_on_sigterm()
    with participant_lock(folder):
        progress = Progress.open(folder, protocol.name, args.participant, protocol.digest)
        pages = StudyPages(port=args.port if args.port is not None
                           else int(protocol.web.get('study_port', 0)), token=args.token)
        pages.start()
        panel_port = int(protocol.web.get('port', 0)) or free_port()
        run = StudyRun(protocol, args.participant, domain, folder, progress, pages,
                       panel_port, say)
        say(f'study {protocol.name!r} (protocol {protocol.digest}), participant '
            f'{args.participant}: the participant opens {pages.url()}')
        scripted: ScriptedThread | None = None
        code = 1
        if args.scripted:
            scripted = ScriptedThread(args, domain, pages.url(), protocol, say)
            scripted.start()
        try:
            code = run_participant(run)
        except KeyboardInterrupt:
            say('stopped; run the same command again to go on where the participant was')
            code = 130
        finally:
            if scripted is not None:
                scripted.finish(wait_s=30.0 if code == 0 else 0.0)
            pages.stop()
    if scripted is not None and scripted.error:
        say(f'the scripted participant failed: {scripted.error}')
        return code or 1
    return code


class ScriptedThread(threading.Thread):
    """A scripted participant in Chromium beside the run (``--scripted BEHAVIOUR``)."""

    def __init__(self, args, domain: Domain, url: str, protocol: Protocol,
                 say: Callable[[str], None]):
        super().__init__(name='scripted-participant', daemon=True)
        from cecm_ros.study.scripted import ScriptedParticipant

        index = protocol.participant_index(args.participant)
        self.participant = ScriptedParticipant(
            domain, url, args.scripted, seed=args.scripted_seed * 1000 + index,
            answer_seed=index, say=say, headless=not args.show_browser)
        self.error: str | None = None
        self.ending = threading.Event()   # the run is ending: no signal to it any more

    def run(self) -> None:
        try:
            self.participant.play()
        except Exception as error:  # noqa: BLE001 - reported by the run
            self.error = f'{type(error).__name__}: {error}'
            print(f'[cecm study] scripted participant: {self.error}', file=sys.stderr,
                  flush=True)
            if not self.participant.stopped and not self.ending.is_set():
                # Nobody else will play: stop the run as Ctrl-C would (progress is kept).
                os.kill(os.getpid(), signal.SIGINT)

    def finish(self, wait_s: float) -> None:
        """Let it read the last page (``wait_s``), then stop it."""
        self.ending.set()
        self.join(wait_s)
        self.participant.stop()
        self.join(30)

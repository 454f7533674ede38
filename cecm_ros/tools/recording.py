"""Session recordings: MCAP files of ROS 2 messages, written and read without rclpy.

Writing (``session_recorder``): each topic becomes an MCAP channel of CDR messages in
the ``ros2`` profile. Its schema is the ``ros2msg`` text of the topic's type followed by
the definitions of every type it uses, each after a line of 80 ``=`` and ``MSG: pkg/Type``
(what ``ros2 bag record -s mcap`` writes), so that Foxglove, ``ros2 bag`` and rosbags can
decode it with nothing else installed. Definitions come from the installed
``share/<package>/{msg,srv,action}`` files; the types that rosidl derives from a service
or an action (``X_Feedback``, ``X_FeedbackMessage``, ...) are cut or composed from them.

Reading (``cecm estimate --from-recording``): the file is read with the ``mcap`` library
and the session's messages are decoded from the recorded schemas (``mcap-ros2-support``),
so a recording from another machine needs no message packages here. A file whose writer
died has no summary; it is then read record by record up to its last complete chunk.
:func:`reconstruct_runs` turns the task requests and team states into the runs of each
task that the estimator saw: the run that reached the goal, in the order they finished.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cecm_ros.core.errors import CecmError

MCAP_MAGIC = b'\x89MCAP0\r\n'
SEPARATOR = '=' * 80
PRIMITIVES = frozenset({'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8',
                        'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'string',
                        'wstring'})
TASK_REQUEST = 'cecm_ros/msg/TaskRequest'
TEAM_STATE = 'cecm_ros/msg/TeamState'
CAPABILITY_BELIEF = 'cecm_ros/msg/CapabilityBelief'
SESSION_TYPES = (TASK_REQUEST, TEAM_STATE, CAPABILITY_BELIEF)


class RecordingError(CecmError):
    """A recording cannot be written or read; the message names the file and the cause."""


class DefinitionNotFoundError(RecordingError):
    """No installed interface file defines a type (its schema cannot be written)."""


# --------------------------------------------------------------------- definitions
def _installed_share(package: str) -> Path:
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return Path(get_package_share_directory(package))
    except PackageNotFoundError:
        raise DefinitionNotFoundError(f'package {package!r} is not installed (no share '
                                      'directory in AMENT_PREFIX_PATH)') from None


def _type_token(line: str) -> tuple[str, str]:
    """(the type of a field or constant line without its array or bound suffix, the line's
    first token); ('', '') for a blank or comment line."""
    code = line.split('#', 1)[0].strip()
    if not code:
        return '', ''
    token = code.split()[0]
    kind = re.sub(r'\[[^\]]*\]$', '', token).split('<=', 1)[0]   # T[], T[N], T[<=N]
    return kind, token


def field_types(text: str, package: str) -> list[str]:
    """The non-primitive types a ``.msg`` text uses, in order of first use: ``pkg/Type`` (or
    ``pkg/action/Type`` where the text names it so). A type without a package is one of
    ``package``'s own (the ros2msg rule)."""
    found: list[str] = []
    for line in text.splitlines():
        kind, _ = _type_token(line)
        if not kind or kind in PRIMITIVES:
            continue
        name = f'{package}/{kind}' if '/' not in kind else kind
        if name not in found:
            found.append(name)
    return found


def _qualified(text: str, package: str) -> str:
    """The text with each package-less field type written as ``package/Type``.

    Parts cut from a .srv or .action file are messages of another namespace
    (``pkg/action/X_Goal``); readers resolve a bare name against that namespace, where
    the package's messages are not.
    """
    lines = []
    for line in text.splitlines(keepends=True):
        kind, token = _type_token(line)
        if kind and kind not in PRIMITIVES and '/' not in kind:
            start = line.index(token)
            line = f'{line[:start]}{package}/{token}{line[start + len(token):]}'
        lines.append(line)
    return ''.join(lines)


def _sections(text: str) -> list[str]:
    """The parts of a .srv (2) or .action (3) file, split at its ``---`` lines."""
    parts, current = [], []
    for line in text.splitlines(keepends=True):
        if line.strip() == '---':
            parts.append(''.join(current))
            current = []
        else:
            current.append(line)
    parts.append(''.join(current))
    return parts


# Types that rosidl derives from a service X or an action X: where their fields come from.
_SERVICE_PARTS = {'Request': 0, 'Response': 1}
_ACTION_PARTS = {'Goal': 0, 'Result': 1, 'Feedback': 2}


class DefinitionSource:
    """Message definitions as ros2msg text, from the installed interface files.

    ``share`` maps a package name to its share directory (default: the ament index), so
    that tests can point it at a folder of their own.
    """

    def __init__(self, share: Callable[[str], Path] | None = None):
        self._share = share or _installed_share
        self._texts: dict[str, str] = {}
        self._lock = threading.Lock()

    def _file(self, package: str, folder: str, name: str) -> str | None:
        path = Path(self._share(package)) / folder / name
        try:
            return path.read_text()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise DefinitionNotFoundError(f'cannot read {path}: {error}') from None

    def text(self, type_name: str) -> str:
        """The definition of one type alone: ``pkg/Type`` or ``pkg/{msg,srv,action}/Type``."""
        with self._lock:
            if type_name not in self._texts:
                self._texts[type_name] = self._find(type_name)
            return self._texts[type_name]

    def _find(self, type_name: str) -> str:
        parts = type_name.split('/')
        if len(parts) not in (2, 3) or not all(parts):
            raise DefinitionNotFoundError(f'{type_name!r} is not a ROS 2 type name '
                                          '(pkg/Type or pkg/msg/Type)')
        package, name = parts[0], parts[-1]
        folders = [parts[1]] if len(parts) == 3 else ['msg', 'action', 'srv']
        for folder in folders:
            found = (self._file(package, 'msg', f'{name}.msg') if folder == 'msg'
                     else self._derived(package, folder, name))
            if found is not None:
                return found
        raise DefinitionNotFoundError(f'no definition of {type_name} among the installed '
                                      f'interfaces of {package!r}')

    def _derived(self, package: str, folder: str, name: str) -> str | None:
        """A type rosidl generates from a .srv or .action file (None if it is not one)."""
        base, _, part = name.rpartition('_')
        if not base:
            return None
        if folder == 'srv':
            text = self._file(package, 'srv', f'{base}.srv')
            if text is not None and part in _SERVICE_PARTS:
                return _qualified(_sections(text)[_SERVICE_PARTS[part]], package)
            if text is not None and part == 'Event':
                return _service_event(f'{package}/{base}')
            return None
        base2, _, part2 = base.rpartition('_')
        if part2 in ('SendGoal', 'GetResult') and part in _SERVICE_PARTS:
            if self._file(package, 'action', f'{base2}.action') is None:
                return None
            return _action_service_part(f'{package}/{base2}', part2, part)
        if part2 in ('SendGoal', 'GetResult') and part == 'Event':
            if self._file(package, 'action', f'{base2}.action') is None:
                return None
            return _service_event(f'{package}/{base2}_{part2}')
        text = self._file(package, 'action', f'{base}.action')
        if text is None:
            return None
        if part in _ACTION_PARTS:
            return _qualified(_sections(text)[_ACTION_PARTS[part]], package)
        if part == 'FeedbackMessage':
            return (f'unique_identifier_msgs/UUID goal_id\n'
                    f'{package}/{base}_Feedback feedback\n')
        return None

    def schema(self, type_name: str) -> str:
        """The full ros2msg schema: the type's text, then each type it uses (directly or
        not) once, depth first, after a separator line and ``MSG: pkg/Type``."""
        package = type_name.split('/')[0]
        seen: set[str] = set()

        def expand(name: str, text: str, context: str, depth: int) -> str:
            if depth > 50:
                raise DefinitionNotFoundError(f'{type_name}: its definitions nest deeper than '
                                              f'50 levels (at {name})')
            out = text
            for dependency in field_types(text, context):
                if dependency in seen:
                    continue
                seen.add(dependency)
                body = self.text(dependency)
                if not out.endswith('\n'):
                    out += '\n'
                out += f'{SEPARATOR}\nMSG: {dependency}\n'
                out += expand(dependency, body, dependency.split('/')[0], depth + 1)
            return out

        return expand(type_name, self.text(type_name), package, 0)


def _service_event(service: str) -> str:
    return (f'service_msgs/ServiceEventInfo info\n{service}_Request[<=1] request\n'
            f'{service}_Response[<=1] response\n')


def _action_service_part(action: str, service: str, part: str) -> str:
    """The request or response of an action's SendGoal or GetResult service."""
    if service == 'SendGoal':
        return (f'unique_identifier_msgs/UUID goal_id\n{action}_Goal goal\n' if part == 'Request'
                else 'bool accepted\nbuiltin_interfaces/Time stamp\n')
    return ('unique_identifier_msgs/UUID goal_id\n' if part == 'Request'
            else f'int8 status\n{action}_Result result\n')


# ----------------------------------------------------------------------------- QoS
_HISTORY = {0: 'system_default', 1: 'keep_last', 2: 'keep_all', 3: 'unknown'}
_RELIABILITY = {0: 'system_default', 1: 'reliable', 2: 'best_effort', 3: 'unknown',
                4: 'best_available'}
_DURABILITY = {0: 'system_default', 1: 'transient_local', 2: 'volatile', 3: 'unknown',
               4: 'best_available'}
_LIVELINESS = {0: 'system_default', 1: 'automatic', 3: 'manual_by_topic', 4: 'unknown',
               5: 'best_available'}


def _duration(nanoseconds: int) -> str:
    seconds, rest = divmod(int(nanoseconds), 1_000_000_000)
    return f'\n    sec: {seconds}\n    nsec: {rest}'


def offered_qos_yaml(profiles: Sequence[dict]) -> str:
    """The channel metadata ``offered_qos_profiles``: the publishers' QoS as rosbag2 writes
    it (YAML, policies by name), so that ``ros2 bag play`` offers them again (a latched
    topic stays latched). Each profile: history, depth, reliability, durability,
    liveliness (rmw enum values), deadline, lifespan, liveliness_lease_duration (ns)."""
    lines = []
    for p in profiles:
        lines.append(
            f'- history: {_HISTORY.get(p["history"], "unknown")}\n'
            f'  depth: {int(p["depth"])}\n'
            f'  reliability: {_RELIABILITY.get(p["reliability"], "unknown")}\n'
            f'  durability: {_DURABILITY.get(p["durability"], "unknown")}\n'
            f'  deadline:{_duration(p["deadline"])}\n'
            f'  lifespan:{_duration(p["lifespan"])}\n'
            f'  liveliness: {_LIVELINESS.get(p["liveliness"], "unknown")}\n'
            f'  liveliness_lease_duration:{_duration(p["liveliness_lease_duration"])}\n'
            f'  avoid_ros_namespace_conventions: false')
    return '\n'.join(lines) + '\n' if lines else ''


# -------------------------------------------------------------------------- writing
def _mcap_writer():
    try:
        from mcap.writer import CompressionType, Writer
    except ImportError as error:
        raise RecordingError(f'writing MCAP needs the `mcap` package ({error}); '
                             'pip install mcap') from None
    return Writer, CompressionType


class McapSink:
    """One MCAP file of serialized ROS 2 messages, written as they come (thread-safe).

    Messages are grouped into compressed chunks; :meth:`flush` closes the open chunk
    and syncs the file, so that a recorder that dies loses at most what came since.
    :meth:`close` writes the summary that makes the file seekable.
    """

    def __init__(self, path: str | Path, definitions: DefinitionSource | None = None,
                 overwrite: bool = False, chunk_size: int = 256 * 1024,
                 library: str = 'cecm_ros session_recorder'):
        writer_class, compression = _mcap_writer()
        self.path = Path(path)
        self.definitions = definitions or DefinitionSource()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, 'wb' if overwrite else 'xb')  # noqa: SIM115
        except FileExistsError:
            raise RecordingError(f'{self.path} exists already; give another file or a '
                                 'folder (or overwrite)') from None
        except OSError as error:
            raise RecordingError(f'cannot create {self.path}: {error}') from None
        self._writer = writer_class(self._file, chunk_size=chunk_size,
                                    compression=compression.ZSTD)
        self._writer.start(profile='ros2', library=library)
        self._lock = threading.Lock()
        self._schemas: dict[str, int] = {}
        self.channels: dict[str, int] = {}
        self.types: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.problems: dict[str, str] = {}   # type -> why it has no schema
        self._pending = 0
        self.closed = False

    def add_metadata(self, name: str, values: dict[str, str]) -> None:
        with self._lock:
            self._writer.add_metadata(name, {k: str(v) for k, v in values.items()})

    def add_topic(self, topic: str, type_name: str, offered_qos: Sequence[dict] = ()) -> int:
        """Register a channel (and its type's schema, once); returns the channel id.

        A type whose definition is not installed gets a schema without a definition (the
        data is kept; readers that need the definition skip it) and is named in
        :attr:`problems`.
        """
        with self._lock:
            if topic in self.channels:
                return self.channels[topic]
            schema = self._schemas.get(type_name)
            if schema is None:
                try:
                    text = self.definitions.schema(type_name)
                    schema = self._writer.register_schema(type_name, 'ros2msg',
                                                          text.encode())
                except DefinitionNotFoundError as error:
                    self.problems[type_name] = str(error)
                    schema = self._writer.register_schema(type_name, '', b'')
                self._schemas[type_name] = schema
            channel = self._writer.register_channel(
                topic, 'cdr', schema, {'offered_qos_profiles': offered_qos_yaml(offered_qos)})
            self.channels[topic] = channel
            self.types[topic] = type_name
            self.counts[topic] = 0
            return channel

    def write(self, topic: str, data: bytes, log_time_ns: int, publish_time_ns: int) -> None:
        with self._lock:
            if self.closed:
                return
            self.counts[topic] += 1
            self._writer.add_message(self.channels[topic], log_time_ns, bytes(data),
                                     publish_time_ns, self.counts[topic] % 2**32)
            self._pending += 1

    def flush(self) -> int:
        """Close the open chunk and sync the file; returns the messages it held."""
        with self._lock:
            if self.closed or not self._pending:
                return 0
            self._writer.flush()
            os.fsync(self._file.fileno())
            pending, self._pending = self._pending, 0
            return pending

    def close(self) -> None:
        """Write the summary (indexes, statistics) and close the file; idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                self._writer.finish()
                self._file.flush()
                os.fsync(self._file.fileno())
            finally:
                self._file.close()

    @property
    def message_count(self) -> int:
        return sum(self.counts.values())


def output_file(output: str, now: float | None = None) -> Path:
    """Where to record: ``output`` itself, or a timestamped file in it when it is a folder
    (an existing one, or a path ending in ``/``); ``~`` is expanded."""
    path = Path(os.path.expanduser(output.strip() or '.'))
    if output.strip().endswith('/') or path.is_dir():
        stamp = time.strftime('%Y%m%d-%H%M%S', time.localtime(now))
        return path / f'session-{stamp}.mcap'
    return path if path.suffix else path.with_suffix('.mcap')


# -------------------------------------------------------------------------- reading
@dataclass
class RecordedTopic:
    name: str
    type_name: str
    schema_encoding: str
    count: int = 0
    offered_qos: str = ''


@dataclass
class RecordedMessage:
    topic: str
    type_name: str
    log_time: int
    publish_time: int
    message: object   # decoded: fields as attributes

    @property
    def time(self) -> int:
        """When it was sent (its publisher's clock), else when it was recorded."""
        return self.publish_time or self.log_time


@dataclass
class Recording:
    """What a recording holds: every topic, and the decoded messages of chosen types."""

    files: list[Path]
    topics: dict[str, RecordedTopic]
    messages: list[RecordedMessage]
    complete: bool = True       # every file has its summary (it was closed)
    problems: list[str] = field(default_factory=list)

    def of_type(self, type_name: str) -> list[RecordedMessage]:
        return [m for m in self.messages if m.type_name == type_name]


def recording_files(path: str | Path) -> list[Path]:
    """The MCAP files of a recording: one file, or the ``.mcap`` files of a rosbag2
    folder (``ros2 bag record -s mcap``) in order."""
    path = Path(path).expanduser()
    if path.is_dir():
        files = sorted(path.glob('*.mcap'))
        if not files:
            other = sorted(p.name for p in path.glob('*.db3'))
            hint = (f' (it holds {", ".join(other)}: rosbag2 SQLite files; record with '
                    '`ros2 bag record -s mcap`)') if other else ''
            raise RecordingError(f'{path} is a folder without .mcap files{hint}')
        return files
    if not path.exists():
        raise RecordingError(f'{path}: no such file')
    return [path]


def read_recording(path: str | Path, types: Iterable[str] = SESSION_TYPES) -> Recording:
    """Read a recording; messages of ``types`` are decoded from their recorded schemas."""
    try:
        from mcap.reader import make_reader
        from mcap_ros2.decoder import DecoderFactory
    except ImportError as error:
        raise RecordingError(f'reading MCAP needs the `mcap` and `mcap-ros2-support` '
                             f'packages ({error}); pip install mcap mcap-ros2-support') from None
    wanted = set(types)
    recording = Recording(recording_files(path), {}, [])
    for file in recording.files:
        with open(file, 'rb') as stream:
            if stream.read(len(MCAP_MAGIC)) != MCAP_MAGIC:
                raise RecordingError(f'{file} is not an MCAP file (it does not start with the '
                                     'MCAP magic bytes); record one with session_recorder, '
                                     '`cecm demo --record` or `ros2 bag record -s mcap`')
            stream.seek(0)
            decoders = DecoderFactory()
            try:
                reader = make_reader(stream)
                summary = reader.get_summary()
                if summary is None:
                    raise ValueError('no summary')
                records = _indexed(reader, summary)
            except Exception:  # noqa: BLE001 - no usable summary: the writer did not finish
                stream.seek(0)
                recording.complete = False
                records, problem = _scanned(stream)
                recording.problems.append(f'{file} was not closed (its recorder was stopped '
                                          f'hard?); read up to its last complete record: '
                                          f'{problem}')
            for schema, channel, message in records:
                _collect(recording, file, decoders, wanted, schema, channel, message)
    recording.messages.sort(key=lambda m: m.log_time)
    return recording


def _indexed(reader, summary) -> list:
    records = list(reader.iter_messages(log_time_order=True))
    # Channels without messages are part of the recording too.
    for channel in summary.channels.values():
        records.append((summary.schemas.get(channel.schema_id), channel, None))
    return records


def _scanned(stream) -> tuple[list, str]:
    """Every record up to the first incomplete one, for a file without a summary."""
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader

    schemas, channels, records = {}, {}, []
    problem = 'the whole file was read'
    try:
        for record in StreamReader(stream).records:
            if isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
                records.append((schemas.get(record.schema_id), record, None))
            elif isinstance(record, Message) and record.channel_id in channels:
                channel = channels[record.channel_id]
                records.append((schemas.get(channel.schema_id), channel, record))
    except Exception as error:  # noqa: BLE001 - a truncated record ends the file
        problem = f'{type(error).__name__} {error}'.strip()
    return records, problem


def _collect(recording: Recording, file: Path, decoders, wanted: set[str], schema, channel,
             message) -> None:
    type_name = schema.name if schema is not None else ''
    topic = recording.topics.get(channel.topic)
    if topic is None:
        topic = RecordedTopic(channel.topic, type_name, schema.encoding if schema else '',
                              offered_qos=channel.metadata.get('offered_qos_profiles', ''))
        recording.topics[channel.topic] = topic
    if message is None:
        return
    topic.count += 1
    if type_name not in wanted:
        return
    try:
        decoder = decoders.decoder_for(channel.message_encoding, schema)
        if decoder is None:
            raise ValueError(f'encoding {channel.message_encoding!r} with schema encoding '
                             f'{schema.encoding!r} is not CDR with a ros2msg schema')
        decoded = decoder(message.data)
    except Exception as error:  # noqa: BLE001 - name the topic and the file
        raise RecordingError(f'{file}: cannot decode a {type_name} message on '
                             f'{channel.topic}: {error}') from None
    recording.messages.append(RecordedMessage(channel.topic, type_name, message.log_time,
                                              message.publish_time, decoded))


# ------------------------------------------------------------------- reconstruction
@dataclass(frozen=True)
class RequestRecord:
    """A TaskRequest as recorded (``time``: when it was sent, ns)."""

    time: int
    task_id: str
    partner_id: str
    attempt: int
    initial: tuple[str, ...]
    goal: tuple[str, ...]


@dataclass(frozen=True)
class StateRecord:
    """A TeamState as recorded: the propositions true after ``step`` joint steps."""

    time: int
    task_id: str
    step: int
    propositions: tuple[str, ...]


@dataclass(frozen=True)
class TaskRun:
    """One run of a task that reached its goal: the states of steps 0..H (H: the first
    step at which the goal held, where the executor stops)."""

    task_id: str
    partner_id: str
    attempt: int
    initial: tuple[str, ...]
    goal: tuple[str, ...]
    states: tuple[tuple[str, ...], ...]   # propositions of steps 0..H
    started: int
    finished: int


@dataclass
class _Segment:
    states: list[StateRecord]
    hole: bool = False   # a step is missing: nothing after it can be used


@dataclass
class SessionRuns:
    """The runs the estimator saw (in the order they finished) and those left out."""

    partner_id: str
    runs: list[TaskRun]
    left_out: list[tuple[str, str]]   # (task id and attempt, why it was left out)


def reconstruct_runs(requests: Sequence[RequestRecord], states: Sequence[StateRecord],
                     partner_id: str | None = None,
                     canonical: Callable[[Iterable[str]], tuple[str, ...]] | None = None
                     ) -> SessionRuns:
    """Cut the recorded team states into runs of the requested tasks.

    A run starts at a state of step 0 (every reset publishes one) and takes the following
    steps 1, 2, ... of the same task. Its request is the task's last one sent before the
    next run of that task started. A run ends at the first state in which its goal holds,
    as the executor does; one that never reaches it (interrupted, failed, or cut off by
    the end of the recording) is left out, and so is a run followed by a later complete
    run of the same task (the session went on with that one). ``canonical`` normalises a
    proposition list (and raises on unknown ones).
    """
    canonical = canonical or (lambda atoms: tuple(sorted(atoms)))
    partners = sorted({r.partner_id for r in requests})
    if not requests:
        raise RecordingError('the recording holds no task: no TaskRequest message on any '
                             'topic')
    if partner_id is None:
        if len(partners) > 1:
            raise RecordingError(f'the recording holds tasks of several partners '
                                 f'({", ".join(map(repr, partners))}); choose one with '
                                 '--partner-id')
        partner_id = partners[0]
    elif partner_id not in partners:
        raise RecordingError(f'the recording holds no task of partner {partner_id!r} '
                             f'(its partners: {", ".join(map(repr, partners))})')
    by_task: dict[str, list[RequestRecord]] = {}
    for request in sorted(requests, key=lambda r: r.time):
        if request.partner_id == partner_id:
            by_task.setdefault(request.task_id, []).append(request)

    segments: dict[str, list[_Segment]] = {}
    headless: set[str] = set()
    for state in sorted(states, key=lambda s: s.time):
        if state.task_id not in by_task:
            continue
        runs = segments.setdefault(state.task_id, [])
        if state.step == 0:
            runs.append(_Segment([state]))
        elif not runs:
            headless.add(state.task_id)
        elif not runs[-1].hole:
            run = runs[-1].states
            if state.step == len(run):
                run.append(state)
            elif not (state.step < len(run) and run[state.step].propositions ==
                      state.propositions):   # (the same state delivered twice is fine)
                runs[-1].hole = True
    left_out = [(task_id, 'states without the start of their run (step 0) in the recording')
                for task_id in sorted(headless)]

    complete: dict[str, TaskRun] = {}
    for task_id, runs in segments.items():
        requests_of_task = by_task[task_id]
        for index, segment in enumerate(runs):
            following = runs[index + 1].states[0].time if index + 1 < len(runs) else None
            sent = [r for r in requests_of_task if following is None or r.time < following]
            request = sent[-1] if sent else requests_of_task[0]
            label = f'{task_id} (attempt {request.attempt})'
            goal = set(canonical(request.goal))
            observed: list[tuple[str, ...]] = []
            for state in segment.states:
                observed.append(canonical(state.propositions))
                if goal <= set(observed[-1]):
                    break
            if not goal <= set(observed[-1]):
                why = (f'states are missing from the recording after step {len(observed) - 1}'
                       if segment.hole else
                       f'it stopped after {len(observed) - 1} steps without reaching its goal '
                       '(interrupted, failed, or cut off by the end of the recording)')
                left_out.append((label, why))
                continue
            run = TaskRun(task_id, partner_id, request.attempt, canonical(request.initial),
                          tuple(sorted(goal)), tuple(observed), segment.states[0].time,
                          segment.states[len(observed) - 1].time)
            earlier = complete.get(task_id)
            if earlier is not None:
                left_out.append((f'{task_id} (attempt {earlier.attempt})',
                                 f'run again later (attempt {run.attempt}), which the session '
                                 'went on with'))
            complete[task_id] = run
    for task_id in by_task:
        if task_id not in segments:
            left_out.append((task_id, 'requested, but none of its team states was recorded'))
    ordered = sorted(complete.values(), key=lambda run: run.finished)
    return SessionRuns(partner_id, ordered, left_out)


def session_records(recording: Recording) -> tuple[list[RequestRecord], list[StateRecord]]:
    """The task requests and team states of a recording as plain records."""
    requests = [RequestRecord(m.time, str(m.message.task_id), str(m.message.partner_id),
                              int(m.message.attempt), tuple(m.message.initial_propositions),
                              tuple(m.message.goal_propositions))
                for m in recording.of_type(TASK_REQUEST)]
    states = [StateRecord(m.time, str(m.message.task_id), int(m.message.step),
                          tuple(m.message.true_propositions))
              for m in recording.of_type(TEAM_STATE)]
    return requests, states

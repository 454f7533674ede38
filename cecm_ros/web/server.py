"""The web panel's HTTP and WebSocket server: aiohttp in a thread with its own loop.

Everything a browser (or any local process) can reach is here: the access token and
the Host and Origin checks, per-client rate and size limits and send queues, and the
rosbridge v2 ops a client may send. It is apart from the node so that what faces the
network can be read, and reasoned about, in one place without rclpy; the node hands it
the settings it read (:class:`ServerSettings`), the relayed messages
(:class:`Relay`) and the few things only ROS can do (:class:`RosSide`: publish a
correction or a partner choice, call a service, log).

Threads: rclpy callbacks (executor threads) give each relayed message, already in
JSON, to :meth:`Relay.received`, which records it in a cache under one lock and hands
it to the loop with ``call_soon_threadsafe``; the loop frames it as a ``publish`` for
each spelling its subscribers used and sends it. A client that subscribes gets the
cached messages first, so a new tab or a reconnect resumes where the others are.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import ipaddress
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from aiohttp import WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError

from cecm_ros.web.codec import (
    RENDER_TYPE,
    SESSION_TYPE,
    BridgeError,
    client_json,
    dumps,
    json_kind,
    message_from_json,
    message_to_json,
    publish_frame,
    same_type,
    type_name,
)
from cecm_ros.web.session_state import ChoiceRefusedError, RefusedMessageError, SessionState

VERDICT_TIMEOUT_S = 5.0                  # wait for the executor's CorrectionStatus
# Corrections of all clients awaiting the executor's verdict: well below the depth (100)
# of the queues of robot/correction and robot/correction_status, so that none is lost
# in a flood, also with other senders at work; one more is refused with the reason, for
# the client to send again.
MAX_PENDING = 8
# Warnings about clients' mistakes: this many at once, then one every few seconds (the
# others are counted in the next), so that no client can fill the log.
WARNINGS_BURST = 10
WARNINGS_PER_S = 0.2
REASON_CHARS = 300                       # of a malformed request's reason, in a warning
CLIENT_QUEUE = 2000                      # messages queued for a slow client, then it is dropped
WS_HARD_LIMIT = 1 << 20                  # frames above this close the connection (aiohttp)
# Relayed topics (by the node's key) cleared when a new task starts, so that a replay
# holds the current task only.
PER_TASK = ('step_result', 'correction', 'correction_status', 'choice')


# ----------------------------------------------------------------------- security
def request_token(request: web.Request) -> str | None:
    """The token a request carries: ``?token=`` or ``Authorization: Bearer``."""
    query = request.query.get('token')
    if query is not None:
        return query
    header = request.headers.get('Authorization', '')
    scheme, _, value = header.partition(' ')
    return value.strip() if scheme.lower() == 'bearer' else None


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison; no token configured means everyone may in."""
    if not expected:
        return True
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def local_host_header(host: str) -> bool:
    """Whether a Host header names this machine or an IP address (not a domain name).

    Without a token a page from a rebound domain name (DNS rebinding) could otherwise
    read and correct through a browser on this machine.
    """
    name = urlsplit(f'//{host}').hostname or ''
    if name == 'localhost' or name.endswith('.localhost'):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class ClientWarnings:
    """Warnings about clients' mistakes (a refused message, a malformed request), each
    naming the client and the reason: at most WARNINGS_BURST at once, then one every
    1 / WARNINGS_PER_S seconds, the ones left out counted in the next. A client's
    mistake is answered to it and is no error of the panel's. Used on the loop only."""

    def __init__(self, log: Callable[[], Any]):
        self.log = log
        self.tokens = float(WARNINGS_BURST)
        self.last = time.monotonic()
        self.left_out = 0

    def warn(self, who: str, reason: str) -> None:
        now = time.monotonic()
        self.tokens = min(WARNINGS_BURST, self.tokens + (now - self.last) * WARNINGS_PER_S)
        self.last = now
        if self.tokens < 1:
            self.left_out += 1
            return
        self.tokens -= 1
        more = f' ({self.left_out} more since, not logged)' if self.left_out else ''
        self.left_out = 0
        self.log().warning(f'{who}: {reason}{more}')

    def flush(self) -> None:
        """Say how many were left out since the last one (a client leaves)."""
        if self.left_out:
            self.log().warning(f'{self.left_out} more mistakes of clients since the last '
                               'warning, not logged (rate limit)')
            self.left_out = 0


class RequestLog(logging.Logger):
    """aiohttp's log of the panel's connections (its ``logger``). A request it cannot
    parse (a line or header too long, a duplicate Host, Content-Length with
    Transfer-Encoding: HttpProcessingError) is the client's mistake, answered with a
    400: a warning naming the client, never a traceback. Anything else goes to the
    node's log as an error in one line."""

    def __init__(self, warnings: ClientWarnings, log: Callable[[], Any]):
        super().__init__('cecm_ros.web_panel.http')
        self.warnings = warnings
        self.node_log = log

    def exception(self, msg: object, *args: object, exc_info: Any = True,
                  **kwargs: Any) -> None:
        error = exc_info if isinstance(exc_info, BaseException) else None
        if isinstance(error, HttpProcessingError):
            # aiohttp: ("Error handling request from %s", request.remote)
            who = f'HTTP client {args[0] if args else "unknown"}'
            reason = ' '.join(str(error.message).split())
            if len(reason) > REASON_CHARS:
                reason = reason[:REASON_CHARS] + '...'
            self.warnings.warn(who, f'refused a malformed request ({error.code}): {reason}')
            return
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = ' '.join(str(part) for part in (msg, *args))
        self.node_log().error(f'web server: {text}' + (f': {error!r}' if error else ''))

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        """aiohttp's notes (a client gone early): nothing to log."""


# ------------------------------------------------------------ what the node gives
@dataclass(frozen=True)
class ServerSettings:
    """What the node read at configuration, fixed while it serves."""

    token: str                   # every request must carry it; '' = none asked
    page: str                    # index.html; __TOKEN_QUERY__ becomes ?token=... there
    assets: dict[str, Path]      # /static/{name} -> file
    layout: dict                 # GET /api/layout
    origins: frozenset[str]      # other origins whose pages may open the WebSocket
    max_clients: int
    max_bytes: int               # largest client message answered
    rate: float                  # client messages a second
    service_timeout: float       # seconds call_service waits
    verdict_timeout: float = VERDICT_TIMEOUT_S   # seconds a correction awaits its verdict


class RosSide(Protocol):
    """What the server asks of the node: the calls that need ROS."""

    def get_logger(self) -> Any: ...

    def check_correction(self, msg: Any) -> None:
        """Check a client's correction as the executor does what does not depend on the
        open step (the one validation of an answer); BridgeError says what is wrong."""

    def publish_correction(self, msg: Any) -> None:
        """Publish a client's correction (the node sets its stamp and sender)."""

    def publish_choice(self, msg: Any) -> None:
        """Publish a person's choice of the partner's action (play mode; the node sets
        its stamp and sender)."""

    def choice_listeners(self) -> int:
        """How many others (the partner node) subscribe to the choices."""

    def service_type(self, name: str) -> Any:
        """The type of a callable service; BridgeError if not callable now."""

    def call_service(self, name: str, request: Any) -> Any:
        """Call it: a future with add_done_callback, exception and result."""

    def forget_call(self, name: str, future: Any) -> None:
        """Stop waiting for that call's answer (its deadline passed)."""


class MessageCache:
    """The last messages of every relayed topic (their JSON), each with a sequence number.

    A client that subscribes gets the cached ones and remembers the sequence number at
    that moment; a message with a number at or below it, delivered later by the loop,
    was in the replay already and is not sent twice.
    """

    def __init__(self, limits: dict[str, int]):
        self.seq = 0
        self.entries: dict[str, deque[tuple[int, str]]] = {
            topic: deque(maxlen=limit) for topic, limit in limits.items()}

    def add(self, topic: str, text: str) -> int:
        self.seq += 1
        self.entries[topic].append((self.seq, text))
        return self.seq

    def bump(self) -> int:
        self.seq += 1
        return self.seq

    def clear(self, topic: str) -> None:
        self.entries[topic].clear()

    def snapshot(self, topic: str) -> tuple[list[tuple[int, str]], int]:
        return list(self.entries.get(topic, ())), self.seq


class Relay:
    """The relayed topics, their cache and the derived session, under one lock.

    The node's callbacks write (:meth:`received`, :meth:`set_window`); the server's
    loop reads (:meth:`snapshot`, :meth:`session_body`). Besides the relayed topics
    (``topic_names``: the node's key -> the resolved name) there are the panel's own two,
    ``session_topic`` and ``render_topic``, which exist on the WebSocket only. Clients
    publish corrections, and in play mode (``session.play``) partner choices.
    """

    def __init__(self, session: SessionState, topic_names: dict[str, str],
                 topic_types: dict[str, Any], limits: dict[str, int],
                 session_topic: str, render_topic: str):
        self.lock = threading.Lock()
        self.session = session
        self.topic_names = dict(topic_names)
        self.correction_topic = topic_names['correction']   # the one clients publish on
        # In play mode clients also publish the partner's action they chose.
        self.choice_topic = topic_names.get('choice') if session.play else None
        self.session_topic = session_topic
        self.render_topic = render_topic
        self.topic_types: dict[str, Any] = {**topic_types, session_topic: SESSION_TYPE,
                                            render_topic: RENDER_TYPE}
        self.cache = MessageCache({**limits, session_topic: 1, render_topic: 1})
        self.server: PanelServer | None = None   # while serving

    @property
    def correction_type(self) -> Any:
        return self.topic_types[self.correction_topic]

    @property
    def publishable(self) -> list[str]:
        """The topics clients may publish on."""
        return [t for t in (self.correction_topic, self.choice_topic) if t is not None]

    def take_choice(self, msg: Any) -> str:
        """A client's partner choice, checked against the open step and recorded (its
        action made canonical, its run filled in); BridgeError says why it is refused."""
        server = self.server
        with self.lock:
            try:
                msg.action, msg.attempt = self.session.take_choice(
                    msg.task_id, msg.attempt, msg.step, msg.action, self.session.sender)
            except ChoiceRefusedError as refused:
                raise BridgeError(str(refused)) from None
            if server is not None:
                server.deliver(self.session_topic, self.cache.bump(), None)
        return msg.action

    def received(self, key: str, msg: Any, body: str, render: str | None) -> str:
        """A message of the relayed topic ``key`` (its JSON ``body``; for a team state
        its drawing data ``render``): checked, cached, observed, sent to the
        subscribers. A message that does not fit is none of these: the reason is
        returned, for the node to warn ('' when it was taken)."""
        topic = self.topic_names[key]
        server = self.server
        with self.lock:   # handed to the loop in sequence order
            try:
                if not self.session.admit(key, msg):
                    return ''   # a team state held already: nothing new
            except RefusedMessageError as refused:
                return str(refused)
            task = self.session.task
            if key == 'task' and msg.task_id != self.session.task_id:
                for per_task in PER_TASK:
                    self.cache.clear(self.topic_names[per_task])
            if key == 'team_state' and msg.step == 0:
                self.cache.clear(topic)
            seq = self.cache.add(topic, body)
            drawn = None if render is None else self.cache.add(self.render_topic, render)
            changed = self.session.update(key, msg)
            if key == 'task' and task is not None and msg.task_id == task.task_id and \
                    msg.attempt != task.attempt:
                self._replay_from_start(msg.task_id)
            if server is not None:
                server.deliver(topic, seq, body)
                if drawn is not None:
                    server.deliver(self.render_topic, drawn, render)
                if changed:
                    server.deliver(self.session_topic, self.cache.bump(), None)
                if key == 'correction_status' and msg.sender == self.session.sender:
                    server.verdict(msg)
        return ''

    def _replay_from_start(self, task_id: str) -> None:
        """A task run again: a new client gets its team states from its start (held),
        not the run before."""
        topic = self.topic_names['team_state']
        self.cache.clear(topic)
        start = self.session.states_of(task_id).get(0)
        if start is not None:
            self.cache.add(topic, dumps(message_to_json(start)))

    def set_window(self, window_s: float) -> None:
        """The executor's correction window, once read: the countdown starts showing."""
        server = self.server
        with self.lock:
            self.session.window_s = window_s
            if server is not None:
                server.deliver(self.session_topic, self.cache.bump(), None)

    def session_body(self) -> str:
        """The derived session as JSON (the ``msg`` of its ``publish``)."""
        with self.lock:
            return self._session_body()

    def _session_body(self) -> str:
        return dumps(self.session.to_json())

    def snapshot(self, topic: str) -> tuple[list[tuple[int, str]], int]:
        """The cached messages' JSON of a topic (the session: built now) and the
        sequence."""
        with self.lock:
            if topic == self.session_topic:
                return [(self.cache.seq, self._session_body())], self.cache.seq
            return self.cache.snapshot(topic)

    def type_matches(self, topic: str, given: str) -> bool:
        kind = self.topic_types[topic]
        return given == kind if isinstance(kind, str) else same_type(given, kind)

    def type_label(self, topic: str) -> str:
        kind = self.topic_types[topic]
        return kind if isinstance(kind, str) else type_name(kind)


# -------------------------------------------------------------------------- clients
class Client:
    """One WebSocket connection: its subscriptions, send queue and message budget."""

    count = 0

    def __init__(self, ws: web.WebSocketResponse, peer: str, rate: float):
        Client.count += 1
        self.name = f'client {Client.count} ({peer})'
        self.ws = ws
        self.queue: asyncio.Queue[str] = asyncio.Queue(maxsize=CLIENT_QUEUE)
        # topic -> {the topic as this client spelled it in subscribe -> subscription ids}
        self.topics: dict[str, dict[str, set]] = {}
        self.marks: dict[str, int] = {}       # spelling -> last sequence number replayed
        self.rate = rate
        self.tokens = rate * 2
        self.last = time.monotonic()
        self.writer: asyncio.Future | None = None
        self.dropped = False

    def allow(self) -> bool:
        """A token bucket: ``rate`` messages a second, bursts of twice that."""
        now = time.monotonic()
        self.tokens = min(self.rate * 2, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def send(self, text: str) -> bool:
        if self.dropped:
            return False
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            self.dropped = True
            return False
        return True

    async def write(self) -> None:
        try:
            while True:
                text = await self.queue.get()
                await self.ws.send_str(text)
        except ConnectionError:
            return   # the client went away; its connection's handler ends it


@dataclass
class Pending:
    """A correction a client published, until the executor's verdict comes back."""

    client: Client
    op_id: str | int | None
    timer: asyncio.TimerHandle


# --------------------------------------------------------------------------- server
class PanelServer:
    """The aiohttp application in its own thread and asyncio loop."""

    def __init__(self, relay: Relay, settings: ServerSettings, ros: RosSide, host: str,
                 port: int):
        self.relay = relay
        self.settings = settings
        self.ros = ros
        self.host = host
        self.port = port
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.runner: web.AppRunner | None = None
        self.clients: set[Client] = set()
        self.pending: dict[tuple, Pending] = {}
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.warnings = ClientWarnings(ros.get_logger)

    # ------------------------------------------------------------- start and stop
    def start(self, timeout_s: float = 10.0) -> int:
        """Serve; returns the bound port. Raises RuntimeError when it cannot listen."""
        self.thread = threading.Thread(target=self._run, name='web_panel-http', daemon=True)
        self.thread.start()
        if not self._started.wait(timeout_s):
            raise RuntimeError(f'the web server did not start within {timeout_s:g} s')
        if self._error is not None:
            self.thread.join(2.0)
            raise RuntimeError(f'cannot serve on {self.host}:{self.port}: {self._error}')
        return self.port

    def _run(self) -> None:
        loop = self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._listen())
        except BaseException as error:  # noqa: BLE001 - reported by start()
            self._error = error
            self._started.set()
            loop.close()
            return
        self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._close())
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.close()

    async def _listen(self) -> None:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        app.router.add_get('/', self._index)
        app.router.add_get('/api/layout', self._layout)
        app.router.add_get('/ws', self._websocket)
        app.router.add_get('/static/{name}', self._static)
        runner = self.runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=1.0,
            logger=RequestLog(self.warnings, self.ros.get_logger))
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        await site.start()
        self.port = runner.addresses[0][1]

    async def _close(self) -> None:
        for pending in self.pending.values():
            pending.timer.cancel()
        self.pending.clear()
        for client in list(self.clients):
            await client.ws.close(code=1001, message=b'the web panel is stopping')
        if self.runner is not None:
            await self.runner.cleanup()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close every connection and free the port (blocks until done)."""
        if self.loop is not None and self.thread is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout_s)
        self.thread = None

    # ------------------------------------------------- from the ROS side (any thread)
    def deliver(self, topic: str, seq: int, body: str | None) -> None:
        """Send a relayed message's JSON (or the session, body None) to its subscribers."""
        loop = self.loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._deliver, topic, seq, body)

    def verdict(self, status: Any) -> None:
        """The executor's CorrectionStatus on a correction of this panel."""
        loop = self.loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._verdict, status)

    def _deliver(self, topic: str, seq: int, body: str | None) -> None:
        if body is None:
            body = self.relay.session_body()
        frames: dict[str, str] = {}   # one publish per spelling, as each client named it
        for client in list(self.clients):
            for spelled in list(client.topics.get(topic, ())):
                if seq > client.marks.get(spelled, 0):
                    frame = frames.get(spelled)
                    if frame is None:
                        frame = frames[spelled] = publish_frame(spelled, body)
                    self._send(client, frame)

    def _verdict(self, status: Any) -> None:
        key = (status.task_id, status.step, status.header.stamp.sec,
               status.header.stamp.nanosec)
        pending = self.pending.pop(key, None)
        if pending is None:
            return
        pending.timer.cancel()
        if status.accepted:
            what = 'agreed' if status.corrected_action == status.intended_action else \
                f'corrected to {status.corrected_action}'
            self._status(pending.client, 'info', f'accepted for step {status.step}: {what}',
                         pending.op_id)
        else:
            self._status(pending.client, 'error',
                         f'refused by the executor: {status.reason}', pending.op_id)

    # ------------------------------------------------------------------- sending
    def _send(self, client: Client, text: str) -> None:
        if not client.send(text) and client.dropped and client in self.clients:
            self.ros.get_logger().warning(f'{client.name} reads too slowly; disconnecting')
            self.clients.discard(client)
            asyncio.ensure_future(client.ws.close(code=1008, message=b'too slow'))

    def _send_json(self, client: Client, data: dict) -> None:
        self._send(client, dumps(data))

    def _status(self, client: Client, level: str, text: str,
                op_id: str | int | None = None) -> None:
        data: dict[str, Any] = {'op': 'status', 'level': level, 'msg': text}
        if op_id is not None:
            data['id'] = op_id
        self._send_json(client, data)

    # ---------------------------------------------------------------------- HTTP
    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Every request: a Host this machine answers to and the token, else nothing."""
        token = self.settings.token
        if not token and not local_host_header(request.host):
            return web.Response(status=403, text='403: this panel answers only to '
                                'localhost or an IP address (set access_token to allow '
                                'host names)\n')
        given = request_token(request)
        if not token_matches(given, token):
            if given is None:
                return web.Response(
                    status=401, text='401: an access token is required: open the URL that '
                    'the web_panel node logged (?token=...) or send Authorization: Bearer\n',
                    headers={'WWW-Authenticate': 'Bearer realm="cecm_ros web_panel"'})
            return web.Response(status=403, text='403: wrong access token\n')
        response = await handler(request)
        if response.prepared:   # a WebSocket, over by now
            return response
        response.headers.setdefault('Cache-Control', 'no-store')
        response.headers.setdefault('X-Content-Type-Options', 'nosniff')
        response.headers.setdefault('Referrer-Policy', 'no-referrer')
        response.headers.setdefault(
            'Content-Security-Policy',
            "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
        return response

    async def _index(self, request: web.Request) -> web.Response:
        token = self.settings.token
        query = f'?token={quote(token, safe="")}' if token else ''
        text = self.settings.page.replace('__TOKEN_QUERY__', html.escape(query, quote=True))
        return web.Response(text=text, content_type='text/html', charset='utf-8')

    async def _static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info['name']
        path = self.settings.assets.get(name)
        if path is None:
            raise web.HTTPNotFound(text=f'404: no asset {name!r}\n')
        return web.FileResponse(path)

    async def _layout(self, request: web.Request) -> web.Response:
        return web.json_response(self.settings.layout)

    def _origin_allowed(self, origin: str, host: str) -> bool:
        """Pages of the panel itself, or of an origin listed in allowed_origins."""
        parts = urlsplit(origin)
        return parts.netloc == host or origin in self.settings.origins

    # ------------------------------------------------------------------ WebSocket
    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        settings = self.settings
        origin = request.headers.get('Origin')
        if origin is not None and not self._origin_allowed(origin, request.host):
            return web.Response(status=403, text=f'403: WebSocket from origin {origin} '
                                'refused (allowed_origins)\n')
        if len(self.clients) >= settings.max_clients:
            return web.Response(status=503, text=f'503: already {settings.max_clients} '
                                'clients (max_clients)\n')
        ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=WS_HARD_LIMIT, timeout=2.0)
        await ws.prepare(request)
        client = Client(ws, request.remote or 'unknown', settings.rate)
        self.clients.add(client)
        writer = client.writer = asyncio.ensure_future(client.write())
        self.ros.get_logger().info(f'{client.name} connected ({len(self.clients)} in all)')
        try:
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    self._receive(client, frame.data)
                elif frame.type == WSMsgType.BINARY:
                    self._status(client, 'error', 'binary frames are not supported: send '
                                 'rosbridge JSON as text')
                elif frame.type == WSMsgType.ERROR:
                    break
        finally:
            self.clients.discard(client)
            writer.cancel()
            for key in [k for k, p in self.pending.items() if p.client is client]:
                self.pending.pop(key).timer.cancel()
            self.warnings.flush()
            self.ros.get_logger().info(
                f'{client.name} disconnected ({len(self.clients)} left)')
        return ws

    def _receive(self, client: Client, text: str) -> None:
        """One client message: checked, answered; nothing a client sends ends the node,
        and a client's mistake is answered to it and warned about (ClientWarnings)."""
        op_id = None
        allowed = client.allow()
        try:
            size = len(text.encode())
            if size > self.settings.max_bytes:
                raise BridgeError(f'message of {size} bytes exceeds the limit of '
                                  f'{self.settings.max_bytes} bytes (max_message_bytes)')
            data = client_json(text)
            if not isinstance(data, dict):
                raise BridgeError(f'a message must be a JSON object, got {json_kind(data)}')
            op_id = data.get('id')
            if op_id is not None and not isinstance(op_id, str | int):
                op_id = None
                raise BridgeError('"id" must be a string or a number')
            if not allowed:   # (answered with its id, so that a client knows which)
                raise BridgeError(f'too many messages (at most {self.settings.rate:g} a '
                                  'second); this one was dropped')
            op = data.get('op')
            if not isinstance(op, str):
                raise BridgeError(f'"op" must be a string, got {json_kind(op)}')
            handlers: dict[str, Callable[[Client, dict], None]] = {
                'subscribe': self._subscribe, 'unsubscribe': self._unsubscribe,
                'advertise': self._advertise, 'unadvertise': self._unadvertise,
                'publish': self._publish, 'call_service': self._call_service,
                'set_level': lambda client, data: None}
            handler = handlers.get(op)
            if handler is None:
                raise BridgeError(f'unknown op {op!r}; this panel serves subscribe, '
                                  'unsubscribe, advertise, unadvertise, publish and '
                                  'call_service')
            handler(client, data)
        except BridgeError as error:
            self.warnings.warn(client.name, f'refused its message: {error}')
            self._status(client, 'error', str(error), op_id)
        except Exception as error:  # noqa: BLE001 - one bad message must not end anything
            self.ros.get_logger().error(f'{client.name}: {error!r}')
            self._status(client, 'error', f'internal error: {error}', op_id)

    def _topic(self, data: dict) -> tuple[str, str]:
        """(the topic as the client spelled it, the topic it names)."""
        spelled = data.get('topic')
        if not isinstance(spelled, str) or not spelled:
            raise BridgeError('"topic" must be a non-empty string')
        return spelled, spelled if spelled.startswith('/') else '/' + spelled

    def _subscribe(self, client: Client, data: dict) -> None:
        """A subscription per spelling, as in rosbridge: its messages are published to the
        client under that spelling (once per message, however many ids share it), and
        the first of a spelling gets the cached messages."""
        spelled, topic = self._topic(data)
        spec_type = self.relay.topic_types.get(topic)
        if spec_type is None:
            raise BridgeError(f'topic {topic} is not relayed by this panel; topics: '
                              f'{", ".join(sorted(self.relay.topic_types))}')
        given = data.get('type')
        if given is not None and not self.relay.type_matches(topic, given):
            raise BridgeError(f'topic {topic} has type {self.relay.type_label(topic)}, '
                              f'not {given}')
        spellings = client.topics.setdefault(topic, {})
        first = spelled not in spellings
        spellings.setdefault(spelled, set()).add(data.get('id'))
        if first:
            entries, seq = self.relay.snapshot(topic)
            client.marks[spelled] = seq
            for _, body in entries:
                self._send(client, publish_frame(spelled, body))

    def _unsubscribe(self, client: Client, data: dict) -> None:
        """Ends the id's subscription of that spelling (without an id: all of the spelling)."""
        spelled, topic = self._topic(data)
        spellings = client.topics.get(topic, {})
        ids = spellings.get(spelled)
        if ids is None:
            return
        ids.discard(data.get('id'))
        if not ids or data.get('id') is None:
            del spellings[spelled]
            client.marks.pop(spelled, None)
            if not spellings:
                del client.topics[topic]

    def _advertise(self, client: Client, data: dict) -> None:
        """roslibjs advertises before it publishes: allowed for the publishable topics."""
        _, topic = self._topic(data)
        self._check_publishable(topic)
        given = data.get('type')
        kind = self.relay.topic_types[topic]
        if given is not None and not same_type(given, kind):
            raise BridgeError(f'topic {topic} has type {type_name(kind)}, not {given}')

    def _unadvertise(self, client: Client, data: dict) -> None:
        self._topic(data)

    def _check_publishable(self, topic: str) -> None:
        allowed = self.relay.publishable
        if topic not in allowed:
            raise BridgeError(f'topic {topic} is not publishable through this panel; only '
                              f'{" and ".join(allowed)} {"is" if len(allowed) == 1 else "are"}')

    def _publish(self, client: Client, data: dict) -> None:
        _, topic = self._topic(data)
        self._check_publishable(topic)
        if 'msg' not in data:
            raise BridgeError('"msg" is missing')
        if topic == self.relay.choice_topic:
            self._publish_choice(client, data)
            return
        msg = message_from_json(self.relay.correction_type, data['msg'], 'msg')
        if not msg.task_id:
            raise BridgeError('msg.task_id must name the task')
        self.ros.check_correction(msg)
        if len(self.pending) >= MAX_PENDING:
            raise BridgeError(f'{len(self.pending)} corrections await the executor\'s verdict '
                              f'(at most {MAX_PENDING} at a time); this one was not sent: '
                              'send it again once they are answered')
        self.ros.publish_correction(msg)
        key = (msg.task_id, msg.step, msg.header.stamp.sec, msg.header.stamp.nanosec)
        timer = asyncio.get_running_loop().call_later(self.settings.verdict_timeout,
                                                      self._no_verdict, key)
        self.pending[key] = Pending(client, data.get('id'), timer)

    def _publish_choice(self, client: Client, data: dict) -> None:
        """A person's own action for the open step (play mode): checked here (the
        partner node has no verdict to send), published, answered at once."""
        topic = self.relay.choice_topic
        if topic is None:
            raise BridgeError('play mode is off: partner choices are not taken')
        msg = message_from_json(self.relay.topic_types[topic], data['msg'], 'msg')
        if not msg.task_id:
            raise BridgeError('msg.task_id must name the task')
        if self.ros.choice_listeners() < 1:
            # Sent to nobody, the step would be chosen and never taken.
            raise BridgeError(f'nobody takes partner choices: no node subscribes to {topic} '
                              '(simulated_human with partner_behaviour person); not sent')
        action = self.relay.take_choice(msg)
        self.ros.publish_choice(msg)
        self._status(client, 'info', f'your action for step {msg.step}: {action}',
                     data.get('id'))

    def _no_verdict(self, key: tuple) -> None:
        pending = self.pending.pop(key, None)
        if pending is not None:
            self._status(pending.client, 'warning', 'the executor gave no verdict on this '
                         f'correction within {self.settings.verdict_timeout:g} s (is it '
                         'running? it answers on robot/correction_status)', pending.op_id)

    def _call_service(self, client: Client, data: dict) -> None:
        spelled = data.get('service')
        if not isinstance(spelled, str) or not spelled:
            raise BridgeError('"service" must be a non-empty string')
        name = spelled if spelled.startswith('/') else '/' + spelled
        op_id = data.get('id')
        try:
            srv_type = self.ros.service_type(name)
            request = message_from_json(srv_type.Request, data.get('args') or {}, 'args')
        except BridgeError as error:
            # roslibjs waits for a service_response; the status says the same in words.
            # The answer names the service as the client did (so does rosbridge).
            answer = {'op': 'service_response', 'service': spelled, 'result': False,
                      'values': str(error)}
            self._send_json(client, answer if op_id is None else {**answer, 'id': op_id})
            raise
        future = self.ros.call_service(name, request)
        answered: list[bool] = []   # the answer or the deadline, whichever comes first

        def finish(result_future: Any) -> None:
            if not answered:
                answered.append(True)
                deadline.cancel()
                if result_future is None:
                    self.ros.forget_call(name, future)
                self._service_done(client, spelled, name, op_id, result_future)

        deadline = asyncio.get_running_loop().call_later(self.settings.service_timeout,
                                                         finish, None)

        def done(result_future: Any) -> None:
            loop = self.loop
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(finish, result_future)
        future.add_done_callback(done)

    def _service_done(self, client: Client, spelled: str, name: str, op_id: Any,
                      future: Any) -> None:
        answer: dict[str, Any] = {'op': 'service_response', 'service': spelled,
                                  'result': False}
        if op_id is not None:
            answer['id'] = op_id
        if future is None:
            answer['values'] = (f'no answer from {name} within '
                                f'{self.settings.service_timeout:g} s')
        elif future.exception() is not None:
            answer['values'] = f'{name} failed: {future.exception()}'
        elif future.result() is None:
            answer['values'] = f'{name} returned no response'
        else:
            answer.update(result=True, values=message_to_json(future.result()))
        if client in self.clients:
            self._send_json(client, answer)

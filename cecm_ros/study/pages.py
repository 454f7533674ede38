"""The participant's pages around the play sessions: consent, instructions, the set about
to start (with the panel's link), the questionnaire after it, and the end.

A small aiohttp server on this machine, separate from the web panel: the panel runs only
while a set's graph runs, these pages for the whole study. The study runner sets what
is shown (``show``) and waits for what the participant does (``wait_for``); the page
asks ``/api/screen`` every second and posts the participant's answers. Keyboard alone is
enough: every control is a button or a radio group, focused in order.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from cecm_ros.core.errors import ConfigError

SCREENS = ('consent', 'instructions', 'set', 'playing', 'questionnaire', 'done')


@dataclass
class Screen:
    name: str
    title: str = ''
    text: str = ''
    link: str = ''                     # the panel of the set
    items: list[dict[str, Any]] = field(default_factory=list)   # Likert items
    data: dict[str, str] = field(default_factory=dict)   # the page's data-* (set, type)
    sequence: int = 0


class StudyPages:
    """The pages' server and the state they show; thread-safe."""

    def __init__(self, host: str = '127.0.0.1', port: int = 0, token: str | None = None):
        self.host, self.port = host, port
        self.token = token if token is not None else secrets.token_urlsafe(12)
        self._lock = threading.Condition()
        self._screen = Screen('instructions', 'Please wait', 'The study is starting.')
        self._replies: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: Any = None
        self._thread: threading.Thread | None = None
        self.bound_port = 0

    # ------------------------------------------------------------ the runner's side
    def show(self, screen: Screen) -> None:
        if screen.name not in SCREENS:
            raise ConfigError(f'no study screen {screen.name!r}')
        with self._lock:
            screen.sequence = self._screen.sequence + 1
            self._screen = screen
            self._replies.pop(screen.name, None)
            self._lock.notify_all()

    def wait_for(self, name: str, timeout_s: float | None = None) -> Any:
        """The participant's reply to screen ``name`` (None on timeout)."""
        with self._lock:
            self._lock.wait_for(lambda: name in self._replies, timeout_s)
            return self._replies.get(name)

    def url(self) -> str:
        return f'http://{self.host}:{self.bound_port}/?token={self.token}'

    # ------------------------------------------------------------------- server
    def start(self) -> None:
        ready = threading.Event()
        problem: list[BaseException] = []

        def serve() -> None:
            from aiohttp import web

            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_get('/', self._page)
            app.router.add_get('/api/screen', self._get_screen)
            app.router.add_post('/api/reply', self._post_reply)
            runner = web.AppRunner(app, access_log=None)
            try:
                loop.run_until_complete(runner.setup())
                site = web.TCPSite(runner, self.host, self.port)
                loop.run_until_complete(site.start())
                self.bound_port = runner.addresses[0][1]
                self._runner = runner
            except BaseException as error:  # noqa: BLE001 - reported to start()
                problem.append(error)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name='study-pages', daemon=True)
        self._thread.start()
        ready.wait(30)
        if problem:
            raise ConfigError(f'the study pages cannot listen on {self.host}:{self.port}: '
                              f'{problem[0]}')

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def _allowed(self, request) -> bool:
        return secrets.compare_digest(request.query.get('token', ''), self.token)

    async def _page(self, request):
        from aiohttp import web

        if not self._allowed(request):
            return web.Response(status=403, text='This page needs the link the study '
                                                 'runner printed (with its token).')
        return web.Response(text=PAGE, content_type='text/html')

    async def _get_screen(self, request):
        from aiohttp import web

        if not self._allowed(request):
            return web.json_response({'error': 'token'}, status=403)
        with self._lock:
            screen = self._screen
            answered = screen.name in self._replies
        return web.json_response({**vars(screen), 'answered': answered})

    async def _post_reply(self, request):
        from aiohttp import web

        if not self._allowed(request):
            return web.json_response({'error': 'token'}, status=403)
        try:
            body = await request.json()
        except (ValueError, json.JSONDecodeError):
            return web.json_response({'error': 'not JSON'}, status=400)
        with self._lock:
            screen = self._screen
            if not isinstance(body, dict) or body.get('screen') != screen.name or \
                    body.get('sequence') != screen.sequence:
                return web.json_response({'error': 'that screen is no longer shown'},
                                         status=409)
            problem = _check_reply(screen, body.get('reply'))
            if problem:
                return web.json_response({'error': problem}, status=400)
            self._replies[screen.name] = body.get('reply')
            self._lock.notify_all()
        return web.json_response({'ok': True})


def _check_reply(screen: Screen, reply: Any) -> str:
    if screen.name != 'questionnaire':
        return '' if reply is True else 'expected true'
    if not isinstance(reply, dict):
        return 'answers must be a mapping of item ids to points'
    for item in screen.items:
        value = reply.get(item['item_id'])
        if not isinstance(value, int) or isinstance(value, bool) or \
                not 1 <= value <= item['points']:
            return f'item {item["item_id"]!r}: a point from 1 to {item["points"]}'
    unknown = sorted(set(reply) - {item['item_id'] for item in screen.items})
    return f'unknown item {unknown[0]!r}' if unknown else ''


PAGE = '''<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Study</title>
<style>
body{font-family:sans-serif;max-width:46rem;margin:2rem auto;line-height:1.5;padding:0 1rem}
button{font-size:1.1rem;padding:.4rem 1.2rem;margin-top:1rem}
fieldset{margin:1rem 0;border:1px solid #bbb}
.scale label{margin-right:.8rem;white-space:nowrap}
#note{color:#a40}
</style></head>
<body><main><h1 id="title">Study</h1><div id="text"></div><div id="body"></div>
<p id="note" role="status"></p></main>
<script>
const token = new URLSearchParams(location.search).get('token') || '';
let shown = -1;
function el(tag, attrs = {}, text = '') {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text) node.textContent = text;
  return node;
}
async function reply(screen, value) {
  const answer = await fetch('/api/reply?token=' + encodeURIComponent(token), {
    method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({screen: screen.name, sequence: screen.sequence, reply: value})});
  const data = await answer.json();
  document.getElementById('note').textContent = data.ok ? 'Thank you.' : data.error;
}
function render(screen) {
  // What the screen is, for a scripted participant and for a stylesheet.
  for (const key of Object.keys(document.body.dataset)) delete document.body.dataset[key];
  for (const [key, value] of Object.entries(screen.data || {})) document.body.dataset[key] = value;
  document.body.dataset.screen = screen.name;
  document.body.dataset.sequence = String(screen.sequence);
  document.getElementById('title').textContent = screen.title;
  const text = document.getElementById('text');
  text.textContent = '';
  for (const part of screen.text.split('\\n\\n')) text.appendChild(el('p', {}, part));
  const body = document.getElementById('body');
  body.textContent = '';
  document.getElementById('note').textContent = '';
  if (screen.link) {
    const link = el('a', {href: screen.link, target: '_blank', id: 'panel'}, 'Open the game');
    body.appendChild(el('p')).appendChild(link);
  }
  if (['consent', 'instructions', 'set'].includes(screen.name)) {
    const words = {consent: 'I agree', instructions: 'Continue', set: 'Start this set'};
    const button = el('button', {id: 'continue'}, words[screen.name]);
    button.onclick = () => reply(screen, true);
    body.appendChild(button);
    button.focus();
  }
  if (screen.name === 'questionnaire') {
    const form = el('form', {id: 'answers'});
    for (const item of screen.items) {
      const set = el('fieldset', {class: 'scale'});
      set.appendChild(el('legend', {}, item.text + ' (1 = ' + item.low + ', ' +
                                        item.points + ' = ' + item.high + ')'));
      for (let point = 1; point <= item.points; point++) {
        const label = el('label');
        label.appendChild(el('input', {type: 'radio', name: item.item_id, value: point,
                                       id: item.item_id + '-' + point}));
        label.appendChild(document.createTextNode(' ' + point));
        set.appendChild(label);
      }
      form.appendChild(set);
    }
    const send = el('button', {id: 'send', type: 'submit'}, 'Send');
    form.appendChild(send);
    form.onsubmit = (event) => {
      event.preventDefault();
      const answers = {};
      for (const item of screen.items) {
        const picked = form.querySelector('input[name="' + item.item_id + '"]:checked');
        if (picked) answers[item.item_id] = Number(picked.value);
      }
      reply(screen, answers);
    };
    body.appendChild(form);
    const first = form.querySelector('input');
    if (first) first.focus();
  }
}
async function poll() {
  try {
    const answer = await fetch('/api/screen?token=' + encodeURIComponent(token));
    const screen = await answer.json();
    if (screen.sequence !== shown) { shown = screen.sequence; render(screen); }
  } catch (error) {
    document.getElementById('note').textContent = 'The study runner is not answering.';
  }
  setTimeout(poll, 1000);
}
poll();
</script></body></html>
'''

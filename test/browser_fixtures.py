"""Headless Chromium for the browser tests (Debian's, driven by Playwright for Python)."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest
from graph_fixtures import scaled

CHROMIUM = os.environ.get('CECM_CHROMIUM', '/usr/bin/chromium')
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
                 '--no-first-run', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync']


def browser_or_skip():
    """Playwright's sync API, or skip (fail with CI=true) saying what is missing."""
    problem = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        problem = f'Playwright for Python is not installed ({error}); `make build` installs it'
        sync_playwright = None
    if problem is None and not os.access(CHROMIUM, os.X_OK):
        problem = (f'no Chromium at {CHROMIUM}: apt-get install chromium (or point '
                   'CECM_CHROMIUM at one)')
    if problem:
        if os.environ.get('CI', '').lower() in ('true', '1', 'yes'):
            pytest.fail(f'CI=true: the browser tests must run, but {problem}')
        pytest.skip(problem)
    return sync_playwright


@contextmanager
def panel_in_chromium(url: str, timeout_ms: int | None = None):
    """(tab, page errors) of the panel at ``url`` in a headless Chromium, once connected:
    what the domain panel tests share."""
    sync_playwright = browser_or_skip()
    timeout_ms = timeout_ms if timeout_ms is not None else round(scaled(45_000))
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={'width': 1280, 'height': 800})
        errors: list[str] = []
        tab.on('pageerror', lambda error: errors.append(str(error)))
        tab.goto(url)
        tab.wait_for_function("() => document.getElementById('conn').textContent === "
                              "'connected'", timeout=timeout_ms)
        yield tab, errors
        browser.close()
    finally:
        playwright.stop()

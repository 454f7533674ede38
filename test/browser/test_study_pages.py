"""The study's own pages in Chromium, keyboard only: consent, then a questionnaire whose
answers reach the study runner; a wrong answer or a stale screen is refused."""

from __future__ import annotations

import json
import urllib.request

import pytest
from browser_fixtures import CHROMIUM, CHROMIUM_ARGS, browser_or_skip

from cecm_ros.study.pages import Screen, StudyPages


@pytest.fixture
def pages():
    server = StudyPages()
    server.start()
    yield server
    server.stop()


def _post(pages, body):
    request = urllib.request.Request(
        f'http://127.0.0.1:{pages.bound_port}/api/reply?token={pages.token}',
        data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_consent_and_a_questionnaire_by_keyboard(pages):
    sync_playwright = browser_or_skip()
    items = [{'item_id': 'trust', 'text': 'I trusted the robot', 'points': 5,
              'low': 'no', 'high': 'yes'},
             {'item_id': 'ease', 'text': 'It was easy', 'points': 3,
              'low': 'no', 'high': 'yes'}]
    pages.show(Screen('consent', 'Consent', 'You take part of your own free will.'))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page()
        tab.goto(pages.url())
        tab.wait_for_selector('#continue:focus', timeout=15_000)
        tab.keyboard.press('Enter')
        assert pages.wait_for('consent', 10) is True
        pages.show(Screen('questionnaire', 'After set 1', 'Please answer.', items=items))
        tab.wait_for_selector('#trust-1:focus', timeout=15_000)
        for key in ('ArrowRight', 'ArrowRight', 'ArrowRight', 'Tab', 'ArrowRight', 'Tab',
                    'Enter'):
            tab.keyboard.press(key)
        answers = pages.wait_for('questionnaire', 10)
        browser.close()
    assert answers == {'trust': 4, 'ease': 2}


def test_a_wrong_answer_and_a_stale_screen_are_refused(pages):
    items = [{'item_id': 'trust', 'text': 'x', 'points': 5, 'low': 'a', 'high': 'b'}]
    pages.show(Screen('questionnaire', 'Q', items=items))
    sequence = json.loads(urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
        f'http://127.0.0.1:{pages.bound_port}/api/screen?token={pages.token}').read())[
        'sequence']
    status, body = _post(pages, {'screen': 'questionnaire', 'sequence': sequence,
                                 'reply': {'trust': 9}})
    assert status == 400 and 'a point from 1 to 5' in body['error']
    status, body = _post(pages, {'screen': 'questionnaire', 'sequence': sequence - 1,
                                 'reply': {'trust': 2}})
    assert status == 409
    status, _ = _post(pages, {'screen': 'questionnaire', 'sequence': sequence,
                              'reply': {'trust': 2}})
    assert status == 200 and pages.wait_for('questionnaire', 1) == {'trust': 2}

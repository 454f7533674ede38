"""The message codec with more than one domain: messages name their domain, a node of
another domain refuses them, and states travel as the domain's facts."""

from __future__ import annotations

import pytest

pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from paths import REPO  # noqa: E402

from cecm_ros.domains import load_domain  # noqa: E402
from cecm_ros.nodes import conversions as conv  # noqa: E402

WORKSHOP = REPO / 'config' / 'domains' / 'workshop' / \
    'domain.yaml'


@pytest.fixture(scope='module')
def domains():
    return load_domain('tidyup'), load_domain(str(WORKSHOP))


def test_a_task_names_its_domain_and_another_domain_refuses_it(domains):
    tidyup, workshop = domains
    task = workshop.task_generator(1).next_task()
    msg = conv.task_msg(task, 'partner', domain=workshop.name)
    assert msg.domain == 'workshop'
    assert conv.task_from_msg(workshop, msg) == task
    with pytest.raises(conv.MessageError, match="is of domain 'workshop'; this node runs "
                                                "'tidyup'"):
        conv.task_from_msg(tidyup, msg)
    msg.domain = ''   # unnamed: read as the receiver's own
    assert conv.task_from_msg(workshop, msg) == task


def test_a_state_travels_as_facts_and_comes_back(domains):
    _, workshop = domains
    task = workshop.task_generator(2).next_task()
    start = workshop.initial_state(task)
    msg = conv.team_state_msg(workshop, task.task_id, 0, start)
    assert msg.domain == 'workshop' and not list(msg.state_features)
    assert conv.state_from_team_state(workshop, msg) == start
    msg.true_propositions = [*msg.true_propositions, msg.true_propositions[0]]
    with pytest.raises(conv.MessageError, match='listed twice'):
        conv.state_from_team_state(workshop, msg)
    msg.true_propositions = ['(agent-at robot garage)']
    with pytest.raises(conv.MessageError, match='garage'):
        conv.state_from_team_state(workshop, msg)
    msg = conv.team_state_msg(workshop, task.task_id, 0, start)
    msg.state_features = [0.5]
    with pytest.raises(conv.MessageError, match='features'):
        conv.state_from_team_state(workshop, msg)


def test_skill_kinds_come_from_the_domain(domains):
    tidyup, workshop = domains
    assert conv.skill_kind(workshop, '(assemble robot bolt bench)') == 'assemble'
    assert conv.skill_kind(workshop, 'noop') == conv.WAIT
    assert conv.skill_kind(tidyup, '(wash robot plate kitchen)') == 'wash'
    with pytest.raises(conv.MessageError, match='wash'):
        conv.canonical_action(workshop, '(wash robot bolt bench)')

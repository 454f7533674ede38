"""What the task manager says when a task went otherwise than the partner's plan."""

from cecm_ros.core.domain import NOOP, JointPlan, JointStep
from cecm_ros.session.records import partner_plan_note, who_follows_no_plan

PLAN = JointPlan('t', (JointStep('(a)', '(b)'), JointStep('(c)', NOOP)), 2.0, 2.0, 1.0,
                 (0, 1, 2), frozenset())


def test_who_plays_a_partner_that_follows_no_plan_of_the_robot_s_model():
    assert who_follows_no_plan('person') == 'the person'
    assert who_follows_no_plan(' greedy ') == 'the greedy partner'
    assert who_follows_no_plan('optimal') == ''            # plans like the robot
    assert who_follows_no_plan('boltzmann:2') == ''
    assert who_follows_no_plan('') == ''
    assert who_follows_no_plan('no such behaviour') == ''  # unreadable: nothing said


def test_a_kept_plan_says_nothing_and_a_broken_one_is_a_warning_unless_not_meant():
    assert partner_plan_note('task 1/5', PLAN, [('(a)', '(b)'), ('(c)', NOOP)], '') == \
        (False, '')
    warn, line = partner_plan_note('task 1/5', PLAN, [('(a)', NOOP), ('(c)', NOOP),
                                                       (NOOP, '(b)')], '')
    assert warn and line.startswith("task 1/5: 2 of 3 steps were not the partner's plan")
    warn, line = partner_plan_note('task 1/5', PLAN, [('(a)', NOOP)], 'the greedy partner')
    assert not warn
    assert line == ('task 1/5: the greedy partner played 2 of 2 steps otherwise than the '
                    "simulated partner's reference plan (it need not follow it)")

"""The metrics over TidyUP's partner types and its household's gates (the metrics
themselves are tested on the stub domain in test/core/test_metrics.py)."""

import pytest

from cecm_ros.core.domain import NOOP, JointPlan, JointStep
from cecm_ros.core.metrics import hamming, infeasible_assigned


def joint_plan(*steps):
    """A JointPlan from (robot, human) pairs; costs and trajectory are not used here."""
    return JointPlan('hand-made', tuple(JointStep(r, h) for r, h in steps), cost=0.0,
                     robot_cost=0.0, human_cost=0.0, trajectory=(0,),
                     human_capabilities_used=frozenset())


def test_hamming_of_partner_types_over_live_capabilities(model):
    catalog = model.catalog
    optimistic, low = catalog.all_capable(), catalog.partner_vector('low_capability')
    assert hamming(optimistic, low) == pytest.approx(9 / 20)
    # Three of low_capability's nine gaps (wash outside the kitchen) are inert.
    assert hamming(optimistic, low, ~model.inert_mask) == pytest.approx(6 / 16)


# --------------------------------------------------------- infeasible assignments
def test_infeasible_assigned_counts_forbidden_human_actions(model):
    plan = joint_plan(
        ('(pick robot blanket kitchen)', '(move human kitchen bedroom)'),
        (NOOP, '(pick human toothbrush bedroom)'),       # pick_bedroom: low lacks it
        ('(move robot kitchen living_room)', '(move human bedroom living_room)'),
        ('(place robot blanket living_room)', '(place human toothbrush living_room)'),
        (NOOP, '(move human living_room kitchen)'),
        (NOOP, '(wash human toothbrush kitchen)'))       # wash_kitchen: low has it
    low = model.catalog.partner_vector('low_capability')
    high = model.catalog.partner_vector('high_capability')
    assert infeasible_assigned(model, plan, low) == 2
    assert infeasible_assigned(model, plan, high) == 1  # place_living_room
    assert infeasible_assigned(model, plan, model.catalog.all_capable()) == 0
    # Robot actions never count, whatever the human lacks.
    nothing = model.catalog.parse_vector('0' * 20)
    robot_only = joint_plan(('(pick robot plate bedroom)', NOOP),
                            ('(move robot bedroom study)', NOOP))
    assert infeasible_assigned(model, robot_only, nothing) == 0
    assert infeasible_assigned(model, plan, nothing) == 6

"""What the two simulated partner nodes (``simulated_human``, ``paced_partner``) declare
alike: who the partner is, its seed and where its searches come from, its skill servers
and planner; and the partner made from them. One place, so that both read a setting the
same way."""

from __future__ import annotations

from rcl_interfaces.msg import ParameterType

from cecm_ros.core.domain import Planner
from cecm_ros.core.errors import CecmError
from cecm_ros.core.partners import PARTNER_SEARCHES, PartnerBehaviour, SimulatedPartner
from cecm_ros.nodes.common import ros_name
from cecm_ros.nodes.skill_kinds import ALL as ALL_SKILLS


def declare_partner_parameters(node, skills_help: str) -> None:
    """``partner``, ``seed``, ``partner_search``, ``human_skill_namespace``, ``skills``,
    the plan store and the planner's limits (docs/nodes.md)."""
    node.declare('partner', 'low_capability',
                 'TRUE capabilities of this partner: a partner type name or a vector '
                 'spec name=0,name=1,...', check=node.partner_check())
    node.declare('human_skill_namespace', 'human/skills',
                 'Namespace of the human skill action servers (<namespace>/<kind>)',
                 check=ros_name(suffix='/move'))
    node.declare('skills', [ALL_SKILLS], skills_help, ParameterType.PARAMETER_STRING_ARRAY,
                 check=node.skills_check())
    node.declare('seed', 0, "Seed of the partner's random choices (with the task id)",
                 low=0, high=2**31 - 1)
    node.declare('partner_search', 'own',
                 "Where the partner's searches come from: own (seeds of its own per "
                 "task, never the estimator's) or shared (the robot's own search: an "
                 'oracle, for comparison only)', choices=PARTNER_SEARCHES)
    node.declare_plan_store()
    node.declare('planner_timeout_s', 30.0, 'Planner time limit per plan, in seconds',
                 low=0.001, high=3600.0)
    node.declare('planner_workers', 1, 'Planner worker processes', low=1, high=64)


def simulated_partner(node, planner: Planner, truth, behaviour: PartnerBehaviour
                      ) -> SimulatedPartner:
    """One partner across the session's tasks (its own searches per task, its traits),
    with a warning when its searches are the robot's (the oracle)."""
    partner = SimulatedPartner(planner, truth, behaviour, seed=node.param('seed'),
                               search=node.param('partner_search'))
    if partner.oracle:
        node.get_logger().warning('partner_search shared: the partner searches with the '
                                  "robot's own seed (an oracle, not a partner)")
    return partner


def behaviour_check(text: str, also: tuple[str, ...] = ()) -> str:
    """What is wrong with a ``partner_behaviour`` text ('' = none given; ``also``: other
    words the node takes)."""
    if not text.strip() or text.strip() in also:
        return ''
    try:
        PartnerBehaviour.parse(text)
    except CecmError as error:
        return str(error)
    return ''

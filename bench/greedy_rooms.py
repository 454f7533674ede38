#!/usr/bin/env python3
"""What takes the greedy partner into the rooms where it can do nothing (TidyUP).

docs/experiments.md reads the greedy LC partner's low held-out agreement as its moves into
the living room, bedroom and study, which prove capabilities a partner who follows a plan
never shows. This replays runs of the sweep cell's settings (informative choice of 5, N =
500, the partner's own stream; no held-out pool) and counts the greedy partner's moves
into the given rooms by why it took them: its random "unstuck" step after
``UNSTUCK_AFTER`` steps with no gain in reach, or a step of its way to a gain.

    .venv/bin/python bench/greedy_rooms.py --partner low_capability \\
        --rooms living_room,bedroom,study --runs 1
"""

from __future__ import annotations

import argparse
import collections

from cecm_ros.core import partner_policies
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.experiment import ExperimentSettings, run_once

MOVES: collections.Counter = collections.Counter()


def counting(rooms: set[str]) -> None:
    """Wrap the greedy policy's choice and its unstuck step to count moves into rooms."""
    policy = partner_policies.GreedyPolicy
    plain_act, plain_unstuck = policy.act, policy._unstuck
    unstuck_now: list[bool] = []

    def unstuck(self, view):
        unstuck_now.append(True)
        return plain_unstuck(self, view)

    def act(self, view):
        unstuck_now.clear()
        action = plain_act(self, view)
        ground = view.domain.action(action) if action != partner_policies.NOOP else None
        if ground is not None and ground.schema == 'move':
            into = ground.args[-1] in rooms
            why = 'unstuck' if unstuck_now else 'way to a gain'
            MOVES[(why, 'into the rooms' if into else 'elsewhere')] += 1
        return action

    policy.act, policy._unstuck = act, unstuck


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--rooms', default='living_room,bedroom,study')
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    counting(set(args.rooms.split(',')))
    model = TidyUpModel()
    settings = ExperimentSettings(partner=args.partner, runs=args.runs, tasks=5,
                                  seed=args.seed, jobs=1,
                                  estimator=EstimatorSettings(samples=500, prior=0.8),
                                  partner_behaviour='greedy', task_choice='informative',
                                  candidates=5, heldout=0)
    planner = FastDownwardPlanner(model)
    for run in range(args.runs):
        run_once(model, planner, settings, run)
        print(f'after run {run}: ' + ', '.join(f'{why}, {where}: {count}'
                                               for (why, where), count in sorted(MOVES.items())),
              flush=True)


if __name__ == '__main__':
    main()

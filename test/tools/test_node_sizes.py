"""A node stays a thin translation of messages to calls below it: no module in
cecm_ros/nodes/ grows past 600 lines (a loop or bookkeeping that would take it there
belongs in session/, core/ or a helper beside the nodes)."""

from paths import REPO

LIMIT = 600


def test_no_node_module_is_over_600_lines():
    sizes = {path.name: len(path.read_text().splitlines())
             for path in sorted((REPO / 'cecm_ros' / 'nodes').glob('*.py'))}
    assert sizes, 'no node modules found'
    over = {name: n for name, n in sizes.items() if n > LIMIT}
    assert not over, f'node modules over {LIMIT} lines: {over}'

"""The layers are the folders: each imports only the layers below it (docs/design.md,
"Layers"). Checked statically over every import statement of every module, inside
functions too; test/core/test_core_boundaries.py also checks the core at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cecm_ros

PACKAGE = Path(cecm_ros.__file__).parent
ROS = ('rclpy', 'cecm_ros.msg', 'cecm_ros.srv', 'cecm_ros.action')
# The two faces at the top: `cecm` and the nodes; no layer below imports either.
TOP = ('cecm_ros.cli', 'cecm_ros.nodes')
ABOVE = {
    'core': ('cecm_ros.cluster', 'cecm_ros.domains', 'cecm_ros.experiments',
             'cecm_ros.session', 'cecm_ros.web', 'cecm_ros.tools', *TOP, 'rosidl', *ROS),
    # The registry hands the cluster what a worker builds; it imports no domain itself.
    'cluster': ('cecm_ros.domains', 'cecm_ros.experiments', 'cecm_ros.session',
                'cecm_ros.study', 'cecm_ros.web', 'cecm_ros.tools', *TOP, 'rosidl', *ROS),
    'domains': ('cecm_ros.experiments', 'cecm_ros.session', 'cecm_ros.web',
                'cecm_ros.tools', *TOP, 'rosidl', *ROS),
    'experiments': ('cecm_ros.session', 'cecm_ros.web', 'cecm_ros.tools', *TOP, *ROS),
    'session': ('cecm_ros.web', 'cecm_ros.tools', *TOP, *ROS),
    # The demo graph writes the node parameters a session's settings travel as.
    'tools': ('cecm_ros.study', 'cecm_ros.web', *TOP, 'rosidl', *ROS),
    # A study reads recordings through the tools, but never the graph or the panel.
    'study': ('cecm_ros.web', *TOP, *ROS),
    # The panel's codec loads message modules by name, at run time, never by import.
    'web': ('cecm_ros.tools', 'cecm_ros.session', *TOP, *ROS),
    # `cecm`, the face over the layers below; no node needs it.
    'cli': ('cecm_ros.nodes', 'cecm_ros.web', 'rosidl', *ROS),
    # The top layer: nothing is above it.
    'nodes': (),
}
# Imports from above that are known and wait for their fix, each (module, imported);
# none now (the tools/ split took the `cecm` face out of the tools). Any one fails.
KNOWN: set[tuple[str, str]] = set()


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit('.', node.level - 1)[0] if node.level > 1 else package
                module = f'{base}.{node.module}' if node.module else base
            else:
                module = node.module or ''
            found.append((node.lineno, module))
    return found


def _modules():
    for layer in ABOVE:
        for path in sorted((PACKAGE / layer).rglob('*.py')):
            package = '.'.join(('cecm_ros', *path.relative_to(PACKAGE).parent.parts))
            yield pytest.param(layer, path, package,
                               id=str(path.relative_to(PACKAGE)))


def _from_above(layer: str, path: Path, package: str) -> list[tuple[int, str]]:
    return [(line, module) for line, module in imported_modules(path, package)
            if any(module == name or module.startswith(name + '.') for name in ABOVE[layer])]


@pytest.mark.parametrize('layer, path, package', list(_modules()))
def test_a_module_imports_no_layer_above_its_own(layer, path, package):
    where = path.relative_to(PACKAGE).as_posix()
    bad = [f'line {line}: {module}' for line, module in _from_above(layer, path, package)
           if (where, module) not in KNOWN]
    assert not bad, f'{where} ({layer}) imports ' + '; '.join(bad)


def test_every_package_folder_is_a_layer_and_every_known_exception_is_still_there():
    generated = {'msg', 'srv', 'action'}   # the interfaces the build generates
    folders = {p.name for p in PACKAGE.iterdir() if (p / '__init__.py').is_file()} - generated
    assert folders == set(ABOVE), f'folders that are no layer: {sorted(folders - set(ABOVE))}'
    for where, module in KNOWN:
        layer = where.split('/')[0]
        path = PACKAGE / where
        package = '.'.join(('cecm_ros', *path.relative_to(PACKAGE).parent.parts))
        found = {m for _, m in _from_above(layer, path, package)}
        assert module in found, f'{where} no longer imports {module}: remove it from KNOWN'


def test_the_check_sees_an_import_from_above(tmp_path):
    module = tmp_path / 'sample.py'
    module.write_text('from ...nodes import common\ndef late():\n    import rclpy\n')
    names = [name for _, name in imported_modules(module, 'cecm_ros.domains.tidyup')]
    assert names == ['cecm_ros.nodes', 'rclpy']

"""The core's layering: it imports neither ROS nor any domain.

The core (cecm_ros/core) works through the domain interface of cecm_ros.core.domain;
domains (cecm_ros/domains) plug in behind it and the nodes (cecm_ros/nodes) wrap it.
Both directions are checked: statically (every import statement of every core module,
relative ones resolved, inside functions too) and at run time (importing the whole core
in a fresh interpreter loads no rclpy and no domain module).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import cecm_ros

PACKAGE = Path(cecm_ros.__file__).parent
CORE = PACKAGE / 'core'
FORBIDDEN = ('rclpy', 'rosidl', 'cecm_ros.nodes', 'cecm_ros.domains', 'cecm_ros.msg',
             'cecm_ros.srv', 'cecm_ros.action')


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names, relative ones made absolute."""
    package = 'cecm_ros.core'
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
            found += [(node.lineno, f'{module}.{alias.name}') for alias in node.names]
    return found


def forbidden(module: str) -> bool:
    return any(module == name or module.startswith(name + '.') for name in FORBIDDEN)


CORE_MODULES = sorted(CORE.glob('*.py'))


@pytest.mark.parametrize('path', CORE_MODULES, ids=lambda p: p.name)
def test_a_core_module_imports_no_ros_and_no_domain(path):
    bad = [f'line {line}: {module}' for line, module in imported_modules(path)
           if forbidden(module)]
    assert not bad, f'cecm_ros/core/{path.name} imports ' + '; '.join(bad)


def test_the_checker_sees_a_domain_import(tmp_path):
    # The check must be able to fail: a relative and an absolute domain import.
    module = tmp_path / 'sample.py'
    module.write_text('from ..domains.tidyup import model\n'
                      'def late():\n    import rclpy.node\n')
    names = [name for _, name in imported_modules(module)]
    assert 'cecm_ros.domains.tidyup' in names and 'rclpy.node' in names
    assert all(forbidden(n) for n in ('cecm_ros.domains.tidyup', 'rclpy.node'))


def test_importing_the_whole_core_loads_no_ros_and_no_domain():
    names = ', '.join(repr(f'cecm_ros.core.{p.stem}') for p in CORE_MODULES
                      if p.stem != '__init__')
    script = (
        'import importlib, sys\n'
        f'for name in [{names}]:\n'
        '    importlib.import_module(name)\n'
        f'bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") '
        f'for f in {FORBIDDEN!r}))\n'
        'print(",".join(bad))\n')
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == '', f'importing the core loaded: {done.stdout.strip()}'

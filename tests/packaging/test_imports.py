"""What a plain install can import: every module-level import of the
package comes from the standard library or a base dependency, and every
import of an optional package (a database driver too) fails, for a user
without its extra, with a message naming the extra to install.

Fast: it reads the source and runs a few interpreters of the test venv
with the optional package hidden.
"""

import ast
import functools
import importlib.metadata
import os
import subprocess
import sys
import textwrap

from packaging import requirements
from packaging import utils as packaging_utils
import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The source trees of what the wheel installs (migrations/ becomes
# scheduler_split.migrations).
SOURCE_TREES = ('scheduler_split', 'migrations')
PACKAGE = 'scheduler_split'

# Optional packages the code imports where only some users go:
# top-level module -> (the distribution, the extra that brings it).
OPTIONAL = {
    'eventlet': ('eventlet', 'eventlet'),
    'keystonemiddleware': ('keystonemiddleware', 'keystone'),
    'matplotlib': ('matplotlib', 'bench'),
    'libvirt': ('libvirt-python', 'libvirt'),
}
# Imported when present, with a fallback when not: no extra needed.
WITH_FALLBACK = {'oslo_db'}


def _pyproject():
    if tomllib is None:
        pytest.skip('reading pyproject.toml needs Python 3.11 (tomllib)')
    with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
        return tomllib.load(f)['project']


def _names(reqs):
    return {packaging_utils.canonicalize_name(
        requirements.Requirement(r).name) for r in reqs}


def _handles_import_error(node):
    for handler in node.handlers:
        caught = handler.type
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(isinstance(n, ast.Name) and n.id in (
                'ImportError', 'ModuleNotFoundError', 'Exception')
               for n in names):
            return True
    return False


def _imports(tree):
    """``(top-level module, line, where)`` of every absolute import;
    ``where`` is ``module`` (runs on import), ``guarded`` (in a try that
    handles ImportError) or ``function``."""
    found = []

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.Lambda)):
                inner = 'function'
            elif (isinstance(node, ast.Try) and where == 'module' and
                  child in node.body and _handles_import_error(node)):
                inner = 'guarded'
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name.split('.')[0], child.lineno,
                                  inner))
            elif (isinstance(child, ast.ImportFrom) and child.level == 0
                  and child.module):
                found.append((child.module.split('.')[0], child.lineno,
                              inner))
            visit(child, inner)

    visit(tree, 'module')
    return found


def _package_imports():
    """``(path, line, top-level module, where)`` of every import of a
    module neither of the standard library nor of the package."""
    stdlib = set(sys.stdlib_module_names)
    result = []
    for tree_root in SOURCE_TREES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, tree_root)):
            for name in sorted(files):
                if not name.endswith('.py'):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8') as f:
                    tree = ast.parse(f.read(), path)
                for top, line, where in _imports(tree):
                    if top in stdlib or top == PACKAGE:
                        continue
                    result.append((os.path.relpath(path, ROOT), line, top,
                                   where))
    return result


@functools.lru_cache(maxsize=None)
def _installed_distributions():
    # Seconds to compute: it reads every installed distribution's files.
    return importlib.metadata.packages_distributions()


def _distributions_of(top):
    owners = _installed_distributions().get(top, [])
    return {packaging_utils.canonicalize_name(d) for d in owners}


def test_module_level_imports_come_from_base_dependencies():
    base = _names(_pyproject()['dependencies'])
    wrong = []
    for path, line, top, where in _package_imports():
        if where != 'module':
            continue
        owners = _distributions_of(top)
        if not owners & base:
            wrong.append('%s:%d imports %s (from %s), not a base '
                         'dependency' % (path, line, top,
                                         ', '.join(sorted(owners)) or
                                         'no installed distribution'))
    assert not wrong, '\n'.join(wrong)


def test_optional_imports_are_known_and_their_extras_bring_them():
    project = _pyproject()
    base = _names(project['dependencies'])
    extras = {extra: _names(reqs) for extra, reqs in
              project['optional-dependencies'].items()}
    unknown = []
    for path, line, top, where in _package_imports():
        if where == 'module' or top in WITH_FALLBACK:
            continue
        if _distributions_of(top) & base:
            continue
        if top not in OPTIONAL:
            unknown.append('%s:%d imports %s: not a base dependency; add '
                           'it to an extra and to OPTIONAL here, with how '
                           'a user reaches it' % (path, line, top))
    assert not unknown, '\n'.join(unknown)
    for top, (distribution, extra) in OPTIONAL.items():
        assert distribution in extras.get(extra, ()), (
            "the extra %r does not bring %s, which %s needs"
            % (extra, distribution, top))


def _run_without(module, code, env=None):
    """Run ``code`` in the test venv's interpreter with ``module`` (and
    what it would bring) impossible to import."""
    prelude = 'import sys\nsys.modules[%r] = None\n' % module
    return subprocess.run(
        [sys.executable, '-c', prelude + textwrap.dedent(code)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env=dict(os.environ, **(env or {})))


# How a user without the extra reaches each optional import.
REACHED_BY = {
    # SCHEDULER_SPLIT_EVENTLET=1 scheduler-split-all-in-one (or any
    # service): the switch is read when the package is imported.
    'eventlet': ("""\
        import scheduler_split
        """, {'SCHEDULER_SPLIT_EVENTLET': '1'}),
    # [api] auth_strategy = keystone, in the all-in-one or under gunicorn.
    'keystonemiddleware': ("""\
        from scheduler_split.api import auth
        from scheduler_split import conf
        auth.pipeline(None, 'keystone', conf.CONF)
        """, {}),
    # [DEFAULT] compute_driver = libvirt.LibvirtDriver, as a compute
    # host starts.
    'libvirt': ("""\
        from scheduler_split.compute.virt import driver
        driver.load('cell1-compute1', 'libvirt.LibvirtDriver').init_host()
        """, {}),
    # scheduler-split-bench --plot FILE.png, checked before any work.
    'matplotlib': ("""\
        from scheduler_split.cmd import bench
        bench.main(['--plot', 'boots.png', '--servers', '1'])
        """, {}),
}


@pytest.mark.parametrize('module', sorted(OPTIONAL))
def test_an_optional_package_missing_names_its_extra(module):
    code, env = REACHED_BY[module]
    result = _run_without(module, code, env)
    assert result.returncode != 0, result.stdout + result.stderr
    extra = OPTIONAL[module][1]
    assert "pip install 'scheduler-split[%s]'" % extra in result.stderr, (
        result.stderr)


# Database drivers, which SQLAlchemy imports for the scheme of a URL (the
# package never imports them): module -> (a URL naming it, the
# distribution, the extra that brings it).
DRIVERS = {
    'psycopg2': ('postgresql+psycopg2://ss:pw@127.0.0.1:9/ss',
                 'psycopg2-binary', 'deploy'),
    'pymysql': ('mysql+pymysql://ss:pw@127.0.0.1:9/ss', 'pymysql',
                'deploy'),
}


@pytest.mark.parametrize('module', sorted(DRIVERS))
def test_a_database_driver_missing_names_its_extra(module, tmp_path):
    url, distribution, extra = DRIVERS[module]
    extras = _pyproject()['optional-dependencies']
    assert distribution in _names(extras[extra]), (extra, distribution)
    config = tmp_path / 'scheduler-split.conf'
    config.write_text('[api_database]\nconnection = %s\n'
                      '[scheduler_database]\nconnection = %s\n'
                      % (url, url))
    # scheduler-split-manage db sync, an operator's first command.
    result = _run_without(module, """\
        from scheduler_split.cmd import manage
        sys.exit(manage.main(['--config-file', %r, 'db', 'sync']))
        """ % str(config))
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "pip install 'scheduler-split[%s]'" % extra in output, output

"""The layering contract of the package: each module belongs to one
layer, and imports (at module level or within a function) only from its
own layer or those below it; no module reaches for another module's
private names; and no module is over 600 lines. Beside it,
``test_seam.py`` keeps the scheduler behind its client library.

From the top: the entry points (console scripts, the WSGI application,
the launchers and the benchmark), the APIs, the conductors, the
computes, the scheduler service, the clients of the RPC services (and
the image client with the built-in catalog), the service plumbing (RPC,
notifications, cells), the objects, the databases, and the base every
layer uses (configuration, exceptions, the request context, metrics,
policy).
"""

import ast
import pathlib

import scheduler_split

PACKAGE = pathlib.Path(scheduler_split.__file__).parent

# (layer, [module prefixes relative to the package]), top first; a
# module is in the layer of its longest matching prefix.
LAYERS = [
    ('entry points', ['cmd', 'deployment', 'benchmark', 'api.wsgi_app']),
    ('api', ['api', 'identity', 'image.api']),
    ('conductor', ['conductor']),
    ('compute', ['compute']),
    ('scheduler', ['scheduler']),
    ('clients', ['scheduler.client', 'scheduler.coalesce',
                 'scheduler.rpcapi', 'conductor.rpcapi', 'compute.rpcapi',
                 'image']),
    ('services', ['service', 'stand_aside', 'cells', 'notifications',
                  'rpc', 'brokers', 'memory_bus']),
    ('objects', ['objects', 'servicegroup', 'quota']),
    ('db', ['db']),
    ('base', ['', 'conf', 'exception', 'context', 'metrics', 'policy',
              'policies', 'provider_model', 'monkey_patch']),
]


def layer_of(module, package='scheduler_split'):
    """The index in LAYERS of ``module`` (dotted), or None."""
    relative = module[len(package) + 1:] if module != package else ''
    best = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (relative == prefix or relative.startswith(prefix + '.') or
                    (prefix == '' and relative == '')):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return best[0] if best else None


def _module(path, root):
    parts = list(path.relative_to(root.parent).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def _target(root, module, name):
    """``module.name`` if that is a module or package under ``root``,
    else ``module`` (``name`` is an attribute of it)."""
    candidate = root.parent.joinpath(*(module + '.' + name).split('.'))
    if candidate.with_suffix('.py').exists() or candidate.is_dir():
        return module + '.' + name
    return module


def _imports(path, root):
    """(line, imported module, the names it takes) of every import of
    the package in ``path``."""
    package = root.name
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split('.')[0] == package:
                    yield node.lineno, alias.name, ()
        elif (isinstance(node, ast.ImportFrom) and not node.level and
              node.module and node.module.split('.')[0] == package):
            for alias in node.names:
                yield (node.lineno, _target(root, node.module, alias.name),
                       (alias.name,))


def back_pointing(root):
    """Every import of a module of a layer above the importer's."""
    package = root.name
    found = []
    for path in sorted(root.rglob('*.py')):
        module = _module(path, root)
        own = layer_of(module, package)
        for lineno, target, _ in _imports(path, root):
            theirs = layer_of(target, package)
            if own is None or theirs is None:
                found.append('%s:%d: %s or %s is in no layer'
                             % (path.relative_to(root.parent), lineno,
                                module, target))
            elif theirs < own:
                found.append('%s:%d: %s (%s) imports %s (%s)' % (
                    path.relative_to(root.parent), lineno, module,
                    LAYERS[own][0], target, LAYERS[theirs][0]))
    return found


def private_names(root):
    """Every use of another module's private name: ``from m import _x``,
    or ``m._x`` of a module ``m`` imported from the package."""
    package = root.name
    found = []
    for path in sorted(root.rglob('*.py')):
        tree = ast.parse(path.read_text(), str(path))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split('.')[0] == package:
                for alias in node.names:
                    if alias.name.startswith('_'):
                        found.append('%s:%d: from %s import %s' % (
                            path.relative_to(root.parent), node.lineno,
                            node.module, alias.name))
                    modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split('.')[0] == package and alias.asname:
                        modules.add(alias.asname)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and
                    isinstance(node.value, ast.Name) and
                    node.value.id in modules and
                    node.attr.startswith('_') and
                    not node.attr.startswith('__')):
                found.append('%s:%d: %s.%s' % (
                    path.relative_to(root.parent), node.lineno,
                    node.value.id, node.attr))
    return found


def test_no_module_imports_from_a_layer_above_its_own():
    assert back_pointing(PACKAGE) == []


def test_no_module_uses_another_modules_private_names():
    assert private_names(PACKAGE) == []


def _tree(tmp_path, files):
    root = tmp_path / 'scheduler_split'
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for directory in [root] + [p for p in root.rglob('*') if p.is_dir()]:
        (directory / '__init__.py').touch()
    return root


def test_the_contract_catches_an_import_pointing_back_up(tmp_path):
    root = _tree(tmp_path, {
        'objects/instance.py': (
            'from scheduler_split.db import models\n'
            'def save():\n'
            '    from scheduler_split.conductor import records\n'),
        'conductor/records.py': 'from scheduler_split import objects\n',
        'db/models.py': 'import scheduler_split.api.wsgi\n',
        'api/wsgi.py': '',
    })
    assert back_pointing(root) == [
        'scheduler_split/db/models.py:1: scheduler_split.db.models (db) '
        'imports scheduler_split.api.wsgi (api)',
        'scheduler_split/objects/instance.py:3: '
        'scheduler_split.objects.instance (objects) imports '
        'scheduler_split.conductor.records (conductor)',
    ]


def test_the_contract_catches_a_private_name_of_another_module(tmp_path):
    root = _tree(tmp_path, {
        'api/hosts.py': (
            'from scheduler_split.api import services\n'
            'from scheduler_split.api.services import _zones\n'
            'def index():\n'
            '    return services._cell_services(), services.public()\n'),
        'api/services.py': 'def _zones(): pass\n',
    })
    assert private_names(root) == [
        'scheduler_split/api/hosts.py:2: from scheduler_split.api.services '
        'import _zones',
        'scheduler_split/api/hosts.py:4: services._cell_services',
    ]


# A module longer than this holds more than one job: split it where the
# jobs part.
MAX_LINES = 600


def too_long(root, limit=MAX_LINES):
    """Every module of ``root`` over ``limit`` lines, with its count."""
    found = []
    for path in sorted(root.rglob('*.py')):
        with open(path) as f:
            count = sum(1 for _ in f)
        if count > limit:
            found.append('%s: %d lines' % (path.relative_to(root.parent),
                                           count))
    return found


def test_no_module_is_over_600_lines():
    assert too_long(PACKAGE) == []


def test_the_contract_catches_a_module_over_the_limit(tmp_path):
    root = _tree(tmp_path, {
        'api/long.py': 'x = 1\n' * 601,
        'api/short.py': 'x = 1\n' * 600,
    })
    assert too_long(root) == ['scheduler_split/api/long.py: 601 lines']

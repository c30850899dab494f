"""The scheduler library is the only seam between the scheduler and the
rest: no module outside scheduler_split/scheduler/ imports any other part
of the scheduler package."""

import ast
import pathlib

import scheduler_split

PACKAGE = pathlib.Path(scheduler_split.__file__).parent
SCHEDULER = PACKAGE / 'scheduler'
ALLOWED = 'scheduler_split.scheduler.client'


def _imports(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                continue
            for alias in node.names:
                yield node.lineno, '%s.%s' % (node.module, alias.name)


def _violations(root):
    found = []
    for path in sorted(root.rglob('*.py')):
        if SCHEDULER in path.parents:
            continue
        for lineno, name in _imports(path):
            if name == 'scheduler_split.scheduler' or name.startswith(
                    'scheduler_split.scheduler.'):
                if name != ALLOWED and not name.startswith(ALLOWED + '.'):
                    found.append('%s:%d imports %s'
                                 % (path.relative_to(root.parent), lineno,
                                    name))
    return found


def test_only_the_client_library_is_imported_from_the_scheduler():
    assert _violations(PACKAGE) == []


def test_the_contract_catches_an_import_of_scheduler_internals(tmp_path):
    pkg = tmp_path / 'scheduler_split'
    (pkg / 'scheduler').mkdir(parents=True)
    (pkg / 'conductor').mkdir()
    (pkg / 'conductor' / 'manager.py').write_text(
        'from scheduler_split.scheduler import client\n'
        'from scheduler_split.scheduler import host_manager\n'
        'import scheduler_split.scheduler.claims\n')
    global SCHEDULER
    saved, SCHEDULER = SCHEDULER, pkg / 'scheduler'
    try:
        assert _violations(pkg) == [
            'scheduler_split/conductor/manager.py:2 imports '
            'scheduler_split.scheduler.host_manager',
            'scheduler_split/conductor/manager.py:3 imports '
            'scheduler_split.scheduler.claims',
        ]
    finally:
        SCHEDULER = saved


# The other direction: the scheduler knows nothing of orchestration. It
# answers calls; it calls no conductor, compute or API, and imports none.
FORBIDDEN_IN_SCHEDULER = ('scheduler_split.conductor',
                          'scheduler_split.compute', 'scheduler_split.api')


def _scheduler_violations(scheduler_root):
    found = []
    for path in sorted(scheduler_root.rglob('*.py')):
        for lineno, name in _imports(path):
            for package in FORBIDDEN_IN_SCHEDULER:
                if name == package or name.startswith(package + '.'):
                    found.append('%s:%d imports %s' % (
                        path.relative_to(scheduler_root.parent), lineno,
                        name))
    return found


def test_the_scheduler_imports_no_conductor_compute_or_api():
    assert _scheduler_violations(SCHEDULER) == []


def test_the_contract_catches_a_scheduler_importing_the_conductor(
        tmp_path):
    scheduler = tmp_path / 'scheduler_split' / 'scheduler'
    scheduler.mkdir(parents=True)
    (scheduler / 'heal.py').write_text(
        'from scheduler_split.conductor import rpcapi\n'
        'import scheduler_split.compute.rpcapi\n'
        'from scheduler_split.api import servers\n'
        'from scheduler_split.scheduler import claims\n'
        'from scheduler_split import objects\n')
    assert _scheduler_violations(scheduler) == [
        'scheduler/heal.py:1 imports scheduler_split.conductor.rpcapi',
        'scheduler/heal.py:2 imports scheduler_split.compute.rpcapi',
        'scheduler/heal.py:3 imports scheduler_split.api.servers',
    ]

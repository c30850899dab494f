import collections
import re

import pytest

from tests.integration import deployment as deployment_mod

# The database servers a test runs on, for
# ``@pytest.mark.parametrize(<fixture>, [...], indirect=True)`` on a
# fixture that passes ``database(request)`` to its Deployment. MariaDB
# runs carry the marker ``mariadb`` (``-m 'not mariadb'`` leaves them
# out).
POSTGRESQL = pytest.param('postgresql', id='postgresql')
MARIADB = pytest.param('mariadb', id='mariadb', marks=pytest.mark.mariadb)


def database(request):
    """The database server a deployment fixture is asked for:
    PostgreSQL unless the test is parametrised with another."""
    return getattr(request, 'param', 'postgresql')


@pytest.fixture(scope='module')
def deployment(request, tmp_path_factory):
    """Two cells of separate processes over RabbitMQ and PostgreSQL (or
    the database server the test is parametrised with)."""
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('deployment'),
                                    database=database(request))
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()


# How many kinds of WARNING or ERROR line a failed test's report shows
# per deployment.
LOG_KINDS = 40
_MASKS = (
    (re.compile(r'^\S+ \S+ \d+ '), ''),
    (re.compile(r'\[(None )?req-[^\]]*\] '), ''),
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                r'[0-9a-f]{12}|\b[0-9a-f]{32}\b'), '<id>'),
    (re.compile(r'\b\d+(\.\d+)?\b'), '<n>'),
)


def _log_kinds(dep, sizes):
    """The WARNING and ERROR lines each process of ``dep`` wrote since
    ``sizes``, alike lines counted as one kind: ``count  first-seen
    file: line``, the most frequent first."""
    counts = collections.Counter()
    first_seen = {}
    sizes = sizes or dict.fromkeys(dep.log_sizes(), 0)
    for name, text in sorted(dep.written_since(sizes).items()):
        for line in text.splitlines():
            if ' WARNING ' not in line and ' ERROR ' not in line:
                continue
            kind = line
            for pattern, mask in _MASKS:
                kind = pattern.sub(mask, kind)
            key = (name, kind[:200])
            counts[key] += 1
            first_seen.setdefault(key, line[11:23])
    lines = ['%5d  %s  %s: %s' % (count, first_seen[key], key[0], key[1])
             for key, count in counts.most_common(LOG_KINDS)]
    if len(counts) > LOG_KINDS:
        lines.append('... and %d kinds more, in %s'
                     % (len(counts) - LOG_KINDS, dep.log_dir))
    return '\n'.join(lines) or 'none, in %s' % dep.log_dir


def _deployments(item):
    funcargs = getattr(item, 'funcargs', {})
    return [(name, value) for name, value in funcargs.items()
            if isinstance(value, deployment_mod.Deployment)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    item._log_sizes = {name: dep.log_sizes()
                       for name, dep in _deployments(item)}
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report names what its deployments warned of
    while it ran: a CI run keeps no logs."""
    outcome = yield
    report = outcome.get_result()
    if report.when != 'call' or not report.failed:
        return
    sizes = getattr(item, '_log_sizes', {})
    for name, dep in _deployments(item):
        try:
            text = _log_kinds(dep, sizes.get(name, {}))
        except Exception as exc:    # a report must not fail
            text = 'cannot be read: %s' % exc
        report.sections.append(
            ('WARNING and ERROR lines of %s while the test ran' % name, text))

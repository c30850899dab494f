"""OpenStack Placement's own gabbi tests against the all-in-one's
Placement API.

Usage::

    python -m tests.gabbi.run [--results FILE] [--update-pass-list]
                              [FILE.yaml ...]

What it does, everything in this process and on 127.0.0.1:

1. Reads the 79 gabbi files of openstack-placement 16.0.0
   (``placement/tests/functional/gabbits/``) out of its wheel, which
   ``pip download`` fetches once into the cache (``source``).
2. Starts the all-in-one in this process as the functional tests do
   (``tests.functional.fixtures.System``): one cell without compute
   hosts, so that the Placement API starts empty, as Placement's tests
   start on an empty database. The API is served a second time on
   another port with the gabbits' identities (``auth``): what their
   ``X-Auth-Token``, ``X-Roles``, ``X-Project-Id`` and
   ``OpenStack-System-Scope`` headers name is handed to the API's
   Keystone context middleware, and the API's policy decides.
3. Runs every file (``EXCLUDED`` lists those left out, each with why) with
   gabbi against ``<that URL>/placement``, one after the other, each with
   the fixtures it names (``fixtures``: made through the API, tidied up
   through the API when the file ends), and every test of a file, whether
   the tests before it passed or not.
4. Prints, per file and in all, how many tests passed, failed, were
   skipped and errored, the writes the fixtures could not make and the
   most common reasons of the failures, and writes all of it, with every
   test's outcome, as JSON to ``$SCHEDULER_SPLIT_GABBI_RESULTS`` (else
   ``.pytest_cache/gabbi/results.json``), beside the all-in-one's log.
5. Checks the pass list (``pass_list.txt``, one ``file.yaml::test name``
   a line): every test it lists must pass; more passing is said, not
   failed. ``--update-pass-list`` adds the new passes to it. The exit
   status is 1 when a listed test did not pass.

A test is named ``<file>.yaml::<its name>``; a name repeated in one file
gets `` #2``, `` #3``, ... after its second and later uses.
"""

import argparse
import collections
import contextlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

from tests.gabbi import source

HERE = os.path.dirname(os.path.abspath(__file__))
PASS_LIST = os.path.join(HERE, 'pass_list.txt')
RESULTS_ENV = 'SCHEDULER_SPLIT_GABBI_RESULTS'
LOADER_NAME = 'tests.gabbi.placement'
STATUSES = ('passed', 'failed', 'skipped', 'errored')
WRITES = ('POST', 'PUT', 'PATCH', 'DELETE')

# Files of openstack-placement's gabbits that are not run, each with why.
# None today: every file runs, and what the API does not serve yet fails
# in the counts rather than being left out.
EXCLUDED = {}

_UUID = re.compile(r'[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
                   r'[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}')


def results_path():
    return os.environ.get(RESULTS_ENV) or os.path.join(
        source.cache_dir(), 'results.json')


# --- the all-in-one ---------------------------------------------------------

@contextlib.contextmanager
def all_in_one():
    """The all-in-one, in this process, without compute hosts; yields the
    URL of its Placement API served with the gabbits' identities."""
    from scheduler_split.api import http_server
    from scheduler_split import conf
    from tests.functional import fixtures as functional
    from tests.gabbi import auth

    state_dir = tempfile.mkdtemp(prefix='gabbi-all-in-one-')
    system = functional.System(state_dir, cells=1, hosts_per_cell=0)
    server = None
    try:
        system.start()
        server = http_server.APIServer(
            auth.app(), http_server.listen_socket('127.0.0.1', 0)).start()
        yield server.url + '/placement'
    finally:
        if server is not None:
            server.stop(graceful=False)
        system.stop()
        conf.CONF.reset()
        shutil.rmtree(state_dir, ignore_errors=True)


@contextlib.contextmanager
def logging_to(path):
    """The process's log (the all-in-one's) into ``path`` meanwhile."""
    handler = logging.FileHandler(path, mode='w')
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(levelname)s %(name)s %(message)s'))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()


# --- running the files ------------------------------------------------------

class Outcomes(unittest.TestResult):
    """Each test's outcome; a failure or an error is not overwritten (gabbi
    reports a fixture's failure as an error of the first test, then skips
    every test of the file)."""

    def __init__(self):
        super().__init__()
        self.outcomes = {}

    def _set(self, test, status, err=None):
        if self.outcomes.get(test, ('',))[0] in ('failed', 'errored'):
            return
        reason = ''
        if err is not None:
            reason = ('%s: %s' % (err[0].__name__, err[1])).strip()
        self.outcomes[test] = (status, reason)

    def addSuccess(self, test):
        self._set(test, 'passed')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, 'failed', err)

    def addError(self, test, err):
        super().addError(test, err)
        self._set(test, 'errored', err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if test not in self.outcomes:
            self.outcomes[test] = ('skipped', reason)

    def addExpectedFailure(self, test, err):
        self._set(test, 'passed')

    def addUnexpectedSuccess(self, test):
        self.outcomes[test] = ('failed', 'passed although marked xfail')


def _path(url):
    """A request's path without its query, uuids as ``{uuid}``: the key
    failures are grouped by."""
    path = (url or '').split('?', 1)[0]
    return _UUID.sub('{uuid}', path)


def _reason(record):
    """What a failed or errored test's failure comes down to: the key the
    report groups failures by."""
    expected = str(record['expected_status'])
    got = record['got_status']
    where = '%s %s' % (record['method'], _path(record['url']))
    first = record['reason'].split('\n', 1)[0]
    if record['status'] == 'errored':
        return 'error on %s: %s' % (where, first[:120])
    if got is None:
        needs = re.search(r'unable to replace (\$[A-Z_]+)', first)
        if needs:
            return ('not sent: it needs %s from an earlier answer, '
                    'which lacks it' % needs.group(1))
        return 'not sent (%s): %s' % (where, first[:120])
    if got not in [s.strip() for s in expected.split('||')]:
        return '%s (not %s) on %s' % (got, expected, where)
    if re.search(r"'(/[^']*)' != '/placement\1'", record['reason']):
        # Placement's links carry the prefix it is served under; its own
        # tests serve it at the root.
        return 'links carry the /placement prefix on %s' % where
    return 'body or headers differ on %s (status %s)' % (where, got)


def _categorize(records, refused_by_fixture):
    """Each failure's kind (``category``), in the order of the file: a
    write refused with a 405, a provider that is not there, a request
    built on an earlier one that failed, an answer that differs where
    the data the file needs could not be made (the fixture's writes or
    an earlier test's were refused) or where it could, another status,
    an error."""
    refused = refused_by_fixture
    for record in records:
        status, got = record['status'], record['got_status']
        expected = [s.strip() for s in
                    str(record['expected_status']).split('||')]
        write_refused = (got == '405' and '405' not in expected
                         and record['method'] in WRITES)
        if status == 'errored':
            record['category'] = 'errored'
        elif status == 'failed':
            if write_refused:
                record['category'] = 'write refused (405)'
            elif got == '404' and '/resource_providers/' in record['url']:
                record['category'] = 'provider not there (404)'
            elif got is None:
                record['category'] = 'builds on an earlier failed request'
            elif got in expected:
                record['category'] = (
                    'answer differs, data the file needs not made'
                    if refused else 'answer differs')
            else:
                record['category'] = 'status differs'
        refused = refused or write_refused


def run_file(path, url, fixture_module):
    """Run one gabbi file against ``url``; its tests' records, in order,
    and the notes of its fixtures."""
    from gabbi import handlers
    from gabbi import suitemaker
    from gabbi import utils

    host, port, prefix, _ = utils.host_info_from_target(url)
    name = os.path.basename(path)
    report = fixture_module.new_report()
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(), os.path.splitext(name)[0],
        utils.load_yaml(yaml_file=path, safe=True), os.path.dirname(path),
        host, port, fixture_module, None, prefix=prefix,
        handlers=[handler() for handler in handlers.RESPONSE_HANDLERS],
        test_loader_name=LOADER_NAME)
    tests = list(suite)
    result = Outcomes()
    suite.run(result)
    records, seen = [], collections.Counter()
    for test in tests:
        test_name = test.test_data['name']
        seen[test_name] += 1
        if seen[test_name] > 1:
            test_name = '%s #%d' % (test_name, seen[test_name])
        status, reason = result.outcomes.get(test, ('errored', 'not run'))
        response = getattr(test, 'response', None)
        record = {
            'id': '%s::%s' % (name, test_name), 'file': name,
            'name': test_name, 'status': status, 'reason': reason[:2000],
            'method': test.test_data['method'].upper(),
            'url': getattr(test, 'url', test.test_data['url']),
            'expected_status': test.test_data['status'],
            'got_status': response.get('status') if response else None,
        }
        if status in ('failed', 'errored'):
            record['why'] = _reason(record)
        records.append(record)
    _categorize(records, bool(report['refused']))
    return records, report


def counts(records):
    found = collections.Counter(r['status'] for r in records)
    result = {status: found.get(status, 0) for status in STATUSES}
    result['total'] = len(records)
    return result


def run_all(only=(), results=None, log=None):
    """Run the gabbi files (``only`` those named, if any); the summary,
    also written as JSON to ``results``."""
    import gabbi

    from tests.gabbi import fixtures as fixture_module

    results = results or results_path()
    os.makedirs(os.path.dirname(os.path.abspath(results)), exist_ok=True)
    log = log or os.path.join(os.path.dirname(os.path.abspath(results)),
                              'all-in-one.log')
    directory = source.gabbit_files()
    files = sorted(f for f in os.listdir(directory) if f.endswith('.yaml'))
    unknown = set(only) - set(files)
    if unknown:
        raise ValueError('no such gabbi file: %s' % ', '.join(sorted(unknown)))
    chosen = [f for f in files
              if f not in EXCLUDED and (not only or f in only)]
    started = time.monotonic()
    per_file, records = {}, []
    with logging_to(log), all_in_one() as url:
        fixture_module.connect(url)
        for name in chosen:
            began = time.monotonic()
            file_records, report = run_file(
                os.path.join(directory, name), url, fixture_module)
            records.extend(file_records)
            per_file[name] = dict(counts(file_records),
                                  seconds=round(time.monotonic() - began, 2),
                                  fixture=report)
    why = collections.Counter(r['why'] for r in records if 'why' in r)
    kinds = collections.Counter(r['category'] for r in records
                                if 'category' in r)
    refused = collections.Counter(
        '%s %s -> %s' % (n['method'], _path(n['path']), n['status'])
        for f in per_file.values() for n in f['fixture']['refused'])
    summary = {
        'placement': '%s %s' % (source.PACKAGE, source.VERSION),
        'gabbi': gabbi.__version__,
        'seconds': round(time.monotonic() - started, 1),
        'totals': counts(records),
        'excluded': {f: EXCLUDED[f] for f in files if f in EXCLUDED},
        'files': per_file,
        'failure_kinds': kinds.most_common(),
        'failure_reasons': why.most_common(),
        'fixture_writes_refused': refused.most_common(),
        'pass_list': check_pass_list(records, read_pass_list(),
                                     partial=bool(only)),
        'log': log,
        'tests': records,
    }
    with open(results + '.new', 'w') as f:
        json.dump(summary, f, indent=1)
    os.replace(results + '.new', results)
    summary['results'] = results
    return summary


# --- the pass list ----------------------------------------------------------

def read_pass_list(path=PASS_LIST):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip('\n') for line in f
                if line.strip() and not line.startswith('#')]


def check_pass_list(records, listed, partial=False):
    """Which listed tests did not pass (``regressions``; with
    ``partial``, only among the files that ran) and which tests pass
    without being listed (``new_passes``)."""
    status = {r['id']: r['status'] for r in records}
    ran = {r['file'] for r in records}
    regressions = [
        '%s (%s)' % (test_id, status.get(test_id, 'not found'))
        for test_id in listed
        if status.get(test_id) != 'passed'
        and not (partial and test_id.split('::', 1)[0] not in ran)]
    listed_set = set(listed)
    new = [r['id'] for r in records
           if r['status'] == 'passed' and r['id'] not in listed_set]
    return {'listed': len(listed), 'regressions': regressions,
            'new_passes': new}


def update_pass_list(summary, path=PASS_LIST):
    """Append the new passes; how many."""
    new = summary['pass_list']['new_passes']
    if new:
        with open(path, 'a') as f:
            f.write(''.join(test_id + '\n' for test_id in new))
    return len(new)


# --- the report -------------------------------------------------------------

def render(summary, reasons=15):
    """The figures, as the terminal shows them."""
    lines = ['Placement gabbi tests (%s, gabbi %s) against the all-in-one, '
             '%ss' % (summary['placement'], summary['gabbi'],
                      summary['seconds']), '']
    head = '%-48s %6s %6s %7s %7s %5s %8s' % (
        'file', 'passed', 'failed', 'skipped', 'errored', 'total',
        'refused')
    lines += [head, '-' * len(head)]
    for name, figures in summary['files'].items():
        lines.append('%-48s %6d %6d %7d %7d %5d %8d' % (
            name, figures['passed'], figures['failed'], figures['skipped'],
            figures['errored'], figures['total'],
            len(figures['fixture']['refused'])))
    totals = summary['totals']
    lines += ['-' * len(head), '%-48s %6d %6d %7d %7d %5d' % (
        'total', totals['passed'], totals['failed'], totals['skipped'],
        totals['errored'], totals['total'])]
    lines.append('(refused: writes of the file\'s fixtures the API refused)')
    for name, why in summary['excluded'].items():
        lines.append('excluded: %s: %s' % (name, why))
    lines += ['', 'In all, of %d tests: %d passed, %d failed, %d skipped, '
              '%d errored.' % (totals['total'], totals['passed'],
                               totals['failed'], totals['skipped'],
                               totals['errored'])]
    if summary['fixture_writes_refused']:
        lines += ['', 'Fixture writes refused:']
        lines += ['  %5d  %s' % (n, what) for what, n in
                  summary['fixture_writes_refused'][:reasons]]
    if summary['failure_kinds']:
        lines += ['', 'Failures and errors by kind:']
        lines += ['  %5d  %s' % (n, kind) for kind, n in
                  summary['failure_kinds']]
    if summary['failure_reasons']:
        lines += ['', 'Most common reasons of failures and errors:']
        lines += ['  %5d  %s' % (n, why) for why, n in
                  summary['failure_reasons'][:reasons]]
    check = summary['pass_list']
    lines += ['', 'Pass list: %d tests listed, %d of them did not pass; '
              '%d tests pass that it does not list.'
              % (check['listed'], len(check['regressions']),
                 len(check['new_passes']))]
    lines += ['  REGRESSION %s' % test_id
              for test_id in check['regressions']]
    lines.append('Results: %s' % summary.get('results', results_path()))
    return '\n'.join(lines) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('files', nargs='*', metavar='FILE.yaml',
                        help='run only these gabbi files')
    parser.add_argument('--results', default=None,
                        help='the JSON results file (default $%s, else %s)'
                        % (RESULTS_ENV, results_path()))
    parser.add_argument('--update-pass-list', action='store_true',
                        help='append the tests that pass and are not '
                             'listed to %s' % PASS_LIST)
    args = parser.parse_args(argv)
    summary = run_all(args.files, args.results)
    sys.stdout.write(render(summary))
    if args.update_pass_list:
        print('Pass list: %d tests added.' % update_pass_list(summary))
    return 1 if summary['pass_list']['regressions'] else 0


if __name__ == '__main__':
    sys.exit(main())

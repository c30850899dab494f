"""Tempest's compute API tests against the all-in-one behind Keystone.

Usage::

    python -m tests.tempest.run [--full] [--include-list FILE]
                                [--run-dir DIR] [--concurrency N]

What it does, everything on 127.0.0.1 and stopped at the end:

1. Installs PyPI's Keystone (``tests/keystone.py``) and Tempest
   (``tempest>=47,<48``) into virtualenvs of their own, apart from the
   project's: ``.venv-keystone`` and ``.venv-tempest`` (or
   ``$SCHEDULER_SPLIT_KEYSTONE_VENV`` and ``$SCHEDULER_SPLIT_TEMPEST_VENV``);
   a venv that is already there is reused.
2. Starts Keystone, creates the API's service user, starts the all-in-one
   (2 cells x 2 hosts) behind it and registers its ``compute``,
   ``placement`` and ``image`` endpoints.
3. Writes a ``tempest.conf`` that says what the cloud has and has not
   (see ``tempest_conf``), and runs the tests of the include list
   (``tests/tempest/include-list.txt``). The step fails if any of them
   fails, errors or is skipped, or if a line of the list matches no
   test.
4. With ``--full`` (or ``SCHEDULER_SPLIT_TEMPEST_FULL=1``) it then also runs
   all of ``tempest.api.compute`` and prints how many tests passed, failed
   and were skipped, and how many of the passes are real (see
   ``missing_route_passes``); that run never fails the step. With
   ``--update-include-list`` it appends the real passes the include list
   does not match yet (``--no-include`` skips the include-list run).

Results stay in the run directory (``.tempest-run`` by default, emptied at
the start): ``include.subunit``/``include-results.jsonl`` and
``full.subunit``/``full-results.jsonl`` (one JSON line per test: id,
status, skip reason or traceback), ``full-passed.txt`` (the real passes),
``full-missing-route-passes.txt``, the Tempest workspace with its
``tempest.conf`` and logs, and the all-in-one's log.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import urllib.parse

from tests import keystone as keystone_mod

ROOT = keystone_mod.ROOT
HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE_LIST = os.path.join(HERE, 'include-list.txt')
REQUIREMENTS = ['tempest>=47,<48']
PLUGIN = os.path.join(HERE, 'plugin')
FULL_REGEX = r'^tempest\.api\.compute\.'
CELLS = 2
HOSTS_PER_CELL = 2
SERVICE_USER = 'scheduler-split'


def _cloud_facts():
    """The image and flavor references and the scheduler filters, read
    from the code that serves them, so that the configuration cannot
    drift from the API."""
    from scheduler_split import cells
    from scheduler_split.conf import scheduler
    from scheduler_split.image import catalog as images
    filters = next(o for o in scheduler.filter_scheduler_opts
                   if o.name == 'enabled_filters').default
    return {'image_ref': images.find('cirros')[0],
            'image_ref_alt': images.find('ubuntu-24.04')[0],
            'flavor_ref': cells.DEFAULT_FLAVORS[0][0],       # m1.tiny
            'flavor_ref_alt': cells.DEFAULT_FLAVORS[1][0],   # m1.small
            'filters': ','.join(filters)}


def full_requested():
    return os.environ.get('SCHEDULER_SPLIT_TEMPEST_FULL', '').lower() in (
        '1', 'true', 'yes', 'on')


def venv_dir():
    return os.environ.get('SCHEDULER_SPLIT_TEMPEST_VENV',
                          os.path.join(ROOT, '.venv-tempest'))


def install_plugin(tempest_venv):
    """The project's Tempest plugin (``tests/tempest/plugin``), installed
    afresh into Tempest's virtualenv on every run: it runs the compute
    classes that ask for a network on this cloud without one."""
    subprocess.run([os.path.join(tempest_venv, 'bin', 'pip'), 'install',
                    '-q', '--force-reinstall', '--no-deps', PLUGIN],
                   check=True, timeout=600)


def ensure_venvs():
    """Keystone's and Tempest's virtualenvs, installed side by side (or
    into one, if both variables name the same directory), and the
    project's plugin in Tempest's."""
    keystone_venv, tempest_venv = keystone_mod.venv_dir(), venv_dir()
    if os.path.abspath(keystone_venv) == os.path.abspath(tempest_venv):
        keystone_mod.ensure_venv(
            tempest_venv, keystone_mod.REQUIREMENTS + REQUIREMENTS,
            'tempest')
        install_plugin(tempest_venv)
        return keystone_mod.ensure_venv(), tempest_venv
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        keystone = pool.submit(keystone_mod.ensure_venv)
        tempest = pool.submit(keystone_mod.ensure_venv, venv_dir(),
                              REQUIREMENTS, 'tempest')
        keystone, tempest = keystone.result(), tempest.result()
    install_plugin(tempest)
    return keystone, tempest


def tempest_conf(keystone, compute_url, workspace):
    """What the cloud is, told honestly.

    - Only Nova's API is here: no Neutron, Cinder or Swift, so every test
      that needs a network, a volume or an object store is skipped by
      Tempest itself; ``create_isolated_networks`` is off for the same
      reason. The server classes that only ask for a default network (and
      would be skipped whole without Neutron) run without one, through the
      project's plugin (``tests/tempest/plugin``).
    - Glance: the all-in-one's ``/image`` is the built-in image catalog
      in the Image API v2 shapes: three built-in images, and the images
      users create, upload (only size and checksums are kept), patch, tag
      and delete. It is in the service catalog as ``image`` and ``glance
      = true`` (Tempest's admin base class, every
      ``tempest.api.compute.admin`` class, builds an image client only
      when Glance is available and errors in its setup without one).
      ``snapshot = true``: createImage and createBackup make an image of
      the server, active at once (the fake driver has no disk to upload),
      and the compute API's ``/images`` proxy answers up to 2.35.
    - Microversions 2.1 to 2.96, what the API announces.
    - Pause and suspend are on (with stop, start, reboot, lock, rebuild
      and soft delete, which Tempest does not gate), and so are resize,
      cold migration, live migration (not block migration, which the
      fake driver does not tell apart), the console output and shelve
      (offloaded at once, Tempest's default ``shelved_offload_time`` of
      0 matching the service's) and snapshots. Every other server action
      (rescue, remote consoles,
      change password, interface attach, config drive, metadata service,
      personality) is off: those routes do not exist. A create and a
      rebuild answer with an ``adminPass``, as Nova does with
      ``enable_instance_password``. Servers are never reachable (fake
      driver): no validation.
    - The extension list, the usage audit log, ``os-server-password``
      and ``os-server-external-events`` (sent by Tempest's user with the
      ``service`` role) have no switch: Tempest always runs their tests.
    - The scheduler filters are the ones the scheduler runs by default.
    """
    values = {
        'uri': keystone.auth_url,
        'password': keystone.admin_password,
        'hosts': CELLS * HOSTS_PER_CELL,
        'workspace': workspace,
        'region': keystone_mod.REGION,
    }
    values.update(_cloud_facts())
    return textwrap.dedent("""\
        [DEFAULT]
        log_dir = %(workspace)s/logs
        log_file = tempest.log

        [auth]
        use_dynamic_credentials = true
        create_isolated_networks = false
        admin_username = admin
        admin_password = %(password)s
        admin_project_name = admin
        admin_domain_name = Default

        [identity]
        auth_version = v3
        uri_v3 = %(uri)s
        region = %(region)s
        disable_ssl_certificate_validation = true

        [identity-feature-enabled]
        api_v2 = false

        [service_available]
        nova = true
        neutron = false
        cinder = false
        swift = false
        glance = true
        horizon = false

        [compute]
        region = %(region)s
        catalog_type = compute
        endpoint_type = publicURL
        image_ref = %(image_ref)s
        image_ref_alt = %(image_ref_alt)s
        flavor_ref = %(flavor_ref)s
        flavor_ref_alt = %(flavor_ref_alt)s
        min_microversion = 2.1
        max_microversion = 2.96
        min_compute_nodes = %(hosts)d
        build_timeout = 60
        build_interval = 1
        fixed_network_name =

        [compute-feature-enabled]
        scheduler_enabled_filters = %(filters)s
        disk_config = false
        change_password = false
        console_output = true
        resize = true
        pause = true
        shelve = true
        shelve_migrate = false
        suspend = true
        cold_migration = true
        live_migration = true
        live_migrate_back_and_forth = false
        block_migration_for_live_migration = false
        can_migrate_between_any_hosts = false
        metadata_service = false
        vnc_console = false
        spice_console = false
        serial_console = false
        rescue = false
        stable_rescue = false
        enable_instance_password = true
        interface_attach = false
        snapshot = true
        personality = false
        attach_encrypted_volume = false
        config_drive = false
        swap_volume = false
        volume_backed_live_migration = false
        volume_multiattach = false
        ide_bus = false
        unified_limits = false
        hostname_fqdn_sanitization = false
        vtpm_live_migration = false

        [image]
        region = %(region)s
        catalog_type = image

        [image-feature-enabled]
        api_v2 = true

        [validation]
        run_validation = false
        """) % values


class Cloud:
    """Keystone and the all-in-one behind it, in ``run_dir``."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.keystone = None
        self.proc = None
        self.url = None

    def start(self):
        self.keystone = keystone_mod.Keystone(self.run_dir).start()
        password = secrets.token_hex(12)
        state = os.path.join(self.run_dir, 'all-in-one')
        os.makedirs(state)
        conf = os.path.join(state, 'keystone.conf')
        with open(conf, 'w') as f:
            f.write(self.keystone.api_config(SERVICE_USER, password))
        self.out_path = os.path.join(state, 'stdout.log')
        self.out = open(self.out_path, 'w')
        env = dict(os.environ)
        env.pop('SCHEDULER_SPLIT_EVENTLET', None)
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'scheduler_split.cmd.all_in_one',
             '--state-dir', state, '--port', '0',
             '--cells', str(CELLS), '--hosts-per-cell', str(HOSTS_PER_CELL),
             '--config-file', conf],
            stdout=self.out, stderr=subprocess.STDOUT, env=env,
            cwd=ROOT, start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and self.proc.poll() is None:
            with open(self.out_path) as f:
                found = re.search(r'compute API (http://\S+)/v2\.1',
                                  f.read())
            if found:
                self.url = found.group(1)
                break
            time.sleep(0.3)
        if self.url is None:
            with open(self.out_path) as f:
                raise RuntimeError('The all-in-one did not start:\n'
                                   + f.read())
        self.keystone.register_api(self.url)
        self.keystone.register_service('image', 'glance',
                                       self.url + '/image')
        return self

    def stop(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            if self.proc is not None:
                self.out.close()
        finally:
            if self.keystone is not None:
                self.keystone.stop()


# --- running Tempest and reading its results --------------------------------

def _base_name(test_id):
    """A test id without its ``[id-...,smoke]`` attributes."""
    return test_id.split('[', 1)[0]


def include_patterns(path):
    """The regexes of an include list: one a line, ``#`` comments."""
    with open(path) as f:
        return [line.strip() for line in f
                if line.strip() and not line.lstrip().startswith('#')]


def anchored(test_id):
    """The include-list line that matches exactly ``test_id``."""
    return '^%s\\[' % re.escape(_base_name(test_id))


def read_results(tempest_venv, subunit_path):
    with open(subunit_path, 'rb') as stream:
        out = subprocess.run(
            [os.path.join(tempest_venv, 'bin', 'python'),
             os.path.join(HERE, 'subunit_results.py')],
            stdin=stream, capture_output=True, check=True, timeout=600)
    return [json.loads(line) for line in out.stdout.decode().splitlines()
            if line.strip()]


def counts(results):
    by_status = collections.Counter(r['status'] for r in results)
    return {'passed': by_status['success'],
            'failed': len(results) - by_status['success'] - by_status[
                'skip'] - by_status['xfail'],
            'skipped': by_status['skip'] + by_status['xfail'],
            'total': len(results)}


_CLASS_FIXTURE = re.compile(r'^(setUpClass|tearDownClass) \((\S+)\)$')


def per_test(listed, entries):
    """One result per listed test.

    stestr records a class whose ``setUpClass`` failed or skipped as one
    ``setUpClass (module.Class)`` entry, not one per test: every test of
    that class gets the class's status and reason (``"class": true``), so
    that the counts are of tests, as listed. A listed test with no result
    at all is ``"notrun"`` (a failure).
    """
    by_id = {_base_name(e['id']): e for e in entries}
    by_class = {}
    for entry in entries:
        found = _CLASS_FIXTURE.match(entry['id'])
        if found and found.group(1) == 'setUpClass':
            by_class[found.group(2)] = entry
    results = []
    for test_id in listed:
        entry = by_id.get(_base_name(test_id))
        if entry is not None:
            results.append(dict(entry, id=test_id, **{'class': False}))
            continue
        entry = by_class.get(_base_name(test_id).rsplit('.', 1)[0])
        if entry is not None:
            results.append({'id': test_id, 'status': entry['status'],
                            'reason': entry['reason'], 'class': True})
        else:
            results.append({'id': test_id, 'status': 'notrun',
                            'reason': 'no result', 'class': False})
    return results


def run_tempest(tempest_venv, workspace, name, selection, concurrency,
                timeout):
    """``tempest run`` with ``selection`` (its selection arguments).

    Returns the stream's entries (tests and class fixtures) and one result
    per selected test (``per_test``); saves the subunit stream and the
    per-test results as ``<name>.subunit`` and ``<name>-results.jsonl`` in
    the run directory, the runner's output as ``<name>.log``.
    """
    bin_dir = os.path.join(tempest_venv, 'bin')
    env = dict(os.environ, OS_TEST_TIMEOUT='300',
               PATH=bin_dir + os.pathsep + os.environ.get('PATH', ''))
    env.pop('OS_CLOUD', None)
    run_dir = os.path.dirname(workspace)
    tempest = [os.path.join(bin_dir, 'tempest'), 'run', '--config-file',
               os.path.join(workspace, 'etc', 'tempest.conf')]
    listed = subprocess.run(
        [*tempest, '--list-tests', *selection], cwd=workspace, env=env,
        capture_output=True, text=True, check=True, timeout=600).stdout
    listed = [line.strip() for line in listed.splitlines()
              if line.startswith('tempest.')]
    log_path = os.path.join(run_dir, name + '.log')
    started = time.monotonic()
    with open(log_path, 'w') as log:
        proc = subprocess.Popen(
            [*tempest, '--concurrency', str(concurrency), *selection],
            cwd=workspace, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        finally:
            # Tempest's workers are its children: a timeout or an
            # interrupted runner takes them all down.
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    elapsed = time.monotonic() - started
    subunit_path = os.path.join(run_dir, name + '.subunit')
    with open(subunit_path, 'wb') as f:
        subprocess.run([os.path.join(bin_dir, 'stestr'), 'last',
                        '--subunit'], cwd=workspace, env=env, stdout=f,
                       check=False, timeout=600)
    entries = read_results(tempest_venv, subunit_path)
    results = per_test(listed, entries)
    with open(os.path.join(run_dir, name + '-results.jsonl'), 'w') as f:
        for result in results:
            f.write(json.dumps(result) + '\n')
    return entries, results, elapsed


def check_include_run(entries, results, patterns):
    """The problems of an include-list run: every selected test passed, no
    class fixture failed, and every line of the list matched a test (a
    renamed or removed test must not drop out of the gate silently)."""
    problems = []
    fixtures = [e for e in entries if _CLASS_FIXTURE.match(e['id'])
                and e['status'] not in ('success', 'skip')]
    for result in results + fixtures:
        if result['status'] != 'success':
            reason = result['reason'].strip().splitlines()
            problems.append('%s %s%s' % (
                result['status'].upper(), result['id'],
                (': ' + reason[-1]) if reason else ''))
    selected = [_base_name(r['id']) for r in results]
    for pattern in patterns:
        regex = re.compile(pattern)
        if not any(regex.search(name + '[') for name in selected):
            problems.append('NOT RUN %s: this line of the include list '
                            'matches no test' % pattern)
    return problems


_REQUEST = re.compile(r'Request \((\w+):(\w+)\): (\d{3}) (\w+) (\S+)')


def missing_route_passes(results, tempest_log, compute_url):
    """The passed tests that only pass because a route is missing.

    A negative test that expects a 404 (or accepts one) passes against a
    route the API does not have at all: the router's "The resource could
    not be found." Tempest's log names the test of every request; a passed
    test that got a 404 from a path no route of the all-in-one matches (the
    API's ``ROUTES`` and its stand-in identity and image endpoints) is such
    a pass, not a real one.
    """
    from scheduler_split.api import wsgi
    from scheduler_split.identity import api as identity
    from scheduler_split.image import api as image_api
    mapper = wsgi._mapper(dict(wsgi.ROUTES, **identity.ROUTES,
                               **image_api.ROUTES))
    missing = collections.defaultdict(set)
    with open(tempest_log, errors='replace') as f:
        for line in f:
            found = _REQUEST.search(line)
            if not found or found.group(3) != '404':
                continue
            url = found.group(5)
            if not url.startswith(compute_url):
                continue
            path = url[len(compute_url):].split('?', 1)[0] or '/'
            path = urllib.parse.unquote(path)
            if mapper.match(path) is None:
                missing[(found.group(1), found.group(2))].add(
                    '%s %s' % (found.group(4), path))
    false = {}
    for result in results:
        if result['status'] != 'success':
            continue
        cls, _, method = _base_name(result['id']).rpartition('.')
        routes = missing.get((cls.rpartition('.')[2], method))
        if routes:
            false[result['id']] = sorted(routes)
    return false


def grow_include_list(path, results, false):
    """Appends the real passes that no line of the list matches yet."""
    regexes = [re.compile(p) for p in include_patterns(path)]
    new = sorted({anchored(r['id']) for r in results
                  if r['status'] == 'success' and r['id'] not in false
                  and not any(x.search(_base_name(r['id']) + '[')
                              for x in regexes)})
    if new:
        with open(path, 'a') as f:
            for line in new:
                f.write(line + '\n')
    return len(new)


def _print_counts(label, results, elapsed):
    c = counts(results)
    print('%s: %d tests, %d passed, %d failed, %d skipped (%.0f s)'
          % (label, c['total'], c['passed'], c['failed'], c['skipped'],
             elapsed), flush=True)
    return c


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tests.tempest.run', description=__doc__.split(
            '\n\n')[0])
    parser.add_argument('--include-list', default=INCLUDE_LIST,
                        help='the tests that must pass (default: %(default)s)')
    parser.add_argument('--full', action='store_true',
                        default=full_requested(),
                        help='also run all of tempest.api.compute and print '
                             'its counts (SCHEDULER_SPLIT_TEMPEST_FULL=1)')
    parser.add_argument('--no-include', action='store_true',
                        help='skip the include-list run (with --full: only '
                             'measure)')
    parser.add_argument('--update-include-list', action='store_true',
                        help='with --full: add every real pass not yet in '
                             'the include list to it (it only grows)')
    parser.add_argument('--run-dir', default=os.path.join(ROOT,
                                                          '.tempest-run'))
    parser.add_argument('--concurrency', type=int, default=2)
    parser.add_argument('--regex', default=FULL_REGEX,
                        help='with --full: the tests to run and count '
                             '(default: %(default)s)')
    args = parser.parse_args(argv)

    # SIGTERM unwinds like Ctrl-C, so that everything started is stopped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    started = time.monotonic()
    run_dir = os.path.abspath(args.run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    _, tempest_venv = ensure_venvs()
    print('Keystone and Tempest are installed (%.0f s).'
          % (time.monotonic() - started), flush=True)

    cloud = Cloud(run_dir)
    failed = False
    try:
        cloud.start()
        print('Keystone %s; the all-in-one %s (%d cells x %d hosts) behind '
              'it.' % (cloud.keystone.auth_url, cloud.url, CELLS,
                       HOSTS_PER_CELL), flush=True)
        workspace = os.path.join(run_dir, 'workspace')
        subprocess.run(
            [os.path.join(tempest_venv, 'bin', 'tempest'), 'init',
             '--workspace-path', os.path.join(run_dir, 'workspace.yaml'),
             '--name', 'scheduler-split', workspace],
            check=True, capture_output=True, timeout=300)
        with open(os.path.join(workspace, 'etc', 'tempest.conf'), 'w') as f:
            f.write(tempest_conf(cloud.keystone, cloud.url, workspace))

        if not args.no_include:
            patterns = include_patterns(args.include_list)
            entries, results, elapsed = run_tempest(
                tempest_venv, workspace, 'include',
                ['--include-list', os.path.abspath(args.include_list)],
                args.concurrency, timeout=1800)
            _print_counts('Include list (%d lines)' % len(patterns),
                          results, elapsed)
            problems = check_include_run(entries, results, patterns)
            for problem in problems:
                print('  ' + problem, flush=True)
            failed = bool(problems)

        if args.full:
            _, results, elapsed = run_tempest(
                tempest_venv, workspace, 'full', ['--regex', args.regex],
                args.concurrency, timeout=5400)
            c = _print_counts('Full tempest.api.compute', results, elapsed)
            false = missing_route_passes(
                results, os.path.join(workspace, 'logs', 'tempest.log'),
                cloud.url)
            print('Of the %d passed, %d are real and %d only pass because '
                  'the route they probe does not exist (%s).'
                  % (c['passed'], c['passed'] - len(false), len(false),
                     os.path.join(run_dir, 'full-missing-route-passes.txt')),
                  flush=True)
            with open(os.path.join(run_dir, 'full-passed.txt'), 'w') as f:
                for result in sorted(results, key=lambda r: r['id']):
                    if (result['status'] == 'success'
                            and result['id'] not in false):
                        f.write(result['id'] + '\n')
            with open(os.path.join(run_dir,
                                   'full-missing-route-passes.txt'),
                      'w') as f:
                for test_id, routes in sorted(false.items()):
                    f.write('%s  %s\n' % (test_id, '; '.join(routes)))
            if args.update_include_list:
                added = grow_include_list(args.include_list, results,
                                          false)
                print('Added %d test(s) to %s.' % (added,
                                                   args.include_list),
                      flush=True)
            print('Results: %s' % os.path.join(run_dir, 'full-results.jsonl'),
                  flush=True)
    finally:
        cloud.stop()
    print('Tempest step %s in %.0f s.' % (
        'FAILED' if failed else 'passed', time.monotonic() - started),
        flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

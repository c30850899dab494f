"""How the Tempest runner reads results: per test, with class setups
spread over their tests, and the include list as a gate."""

from tests.tempest import run

CLS = 'tempest.api.compute.servers.test_x.XTest'
OTHER = 'tempest.api.compute.admin.test_y.YTest'


def _entry(test_id, status, reason=''):
    return {'id': test_id, 'status': status, 'reason': reason}


def test_a_failed_class_setup_fails_every_test_of_its_class():
    listed = [CLS + '.test_a[id-1]', CLS + '.test_b[id-2,smoke]',
              OTHER + '.test_c[id-3]', OTHER + '.test_d[id-4]']
    entries = [_entry(CLS + '.test_a[id-1]', 'success'),
               _entry(CLS + '.test_b[id-2,smoke]', 'skip', 'no network'),
               _entry('setUpClass (%s)' % OTHER, 'fail', 'Traceback: 404')]
    results = run.per_test(listed, entries)
    assert [(r['status'], r['class']) for r in results] == [
        ('success', False), ('skip', False), ('fail', True), ('fail', True)]
    assert run.counts(results) == {'passed': 1, 'failed': 2, 'skipped': 1,
                                   'total': 4}


def test_a_listed_test_without_a_result_counts_as_failed():
    results = run.per_test([CLS + '.test_a[id-1]'], [])
    assert results[0]['status'] == 'notrun'
    assert run.counts(results)['failed'] == 1


def test_the_include_list_gate():
    line = run.anchored(CLS + '.test_a[id-1]')
    assert line == r'^tempest\.api\.compute\.servers\.test_x\.XTest\.test_a\['
    passed = [_entry(CLS + '.test_a[id-1]', 'success')]
    assert run.check_include_run(passed, passed, [line]) == []

    # A skip hides a regression: it fails the gate, as does a failure.
    skipped = [_entry(CLS + '.test_a[id-1]', 'skip', 'Neutron is required')]
    [problem] = run.check_include_run(skipped, skipped, [line])
    assert problem.startswith('SKIP ') and 'Neutron' in problem

    # A line that matches no test (renamed, removed) fails it too.
    gone = run.anchored(CLS + '.test_gone[id-9]')
    [problem] = run.check_include_run(passed, passed, [line, gone])
    assert problem.startswith('NOT RUN ')

    # So does a class teardown that failed after its tests passed.
    teardown = _entry('tearDownClass (%s)' % CLS, 'fail', 'leaked')
    assert run.check_include_run(passed + [teardown], passed, [line])


def test_a_pass_on_a_missing_route_is_not_a_real_pass(tmp_path):
    url = 'http://127.0.0.1:8774'
    log = tmp_path / 'tempest.log'
    log.write_text(
        'INFO Request (XTest:test_a): 404 GET %(u)s/v2.1/servers/abc 0.01s\n'
        'INFO Request (XTest:test_b): 404 GET %(u)s/v2.1/os-networks/abc'
        ' 0.01s\n'
        'INFO Request (XTest:test_c): 404 GET %(u)s/v2.1/os-hypervisors/x'
        ' 0.01s\n' % {'u': url})
    results = [_entry(CLS + '.test_a[id-1]', 'success'),
               _entry(CLS + '.test_b[id-2]', 'success'),
               _entry(CLS + '.test_c[id-3]', 'fail')]
    false = run.missing_route_passes(results, str(log), url)
    # test_a's 404 came from a route the API has (an unknown server);
    # test_b's from a route it does not have. test_c did not pass.
    assert false == {CLS + '.test_b[id-2]': ['GET /v2.1/os-networks/abc']}


def test_the_include_list_only_grows(tmp_path):
    path = tmp_path / 'include-list.txt'
    kept = run.anchored(CLS + '.test_old[id-0]')
    path.write_text('# comment\n%s\n' % kept)
    results = [_entry(CLS + '.test_old[id-0]', 'success'),
               _entry(CLS + '.test_a[id-1]', 'success'),
               _entry(CLS + '.test_b[id-2]', 'success'),
               _entry(CLS + '.test_c[id-3]', 'fail')]
    false = {CLS + '.test_b[id-2]': ['GET /v2.1/os-networks']}
    assert run.grow_include_list(str(path), results, false) == 1
    assert run.include_patterns(str(path)) == [
        kept, run.anchored(CLS + '.test_a[id-1]')]

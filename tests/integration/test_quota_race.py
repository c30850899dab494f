"""Two API processes race creates for the last slot of a project's quota
against one PostgreSQL database: never both get it, and one always does.
"""

import threading

import pytest
import requests

from scheduler_split.image import catalog as images

from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

PROJECT = 'p-race'
ROUNDS = 12


@pytest.fixture(scope='module')
def two_apis(tmp_path_factory):
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('two-apis'),
                                    extra_apis=1)
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()


def _session(token):
    session = requests.Session()
    session.headers.update({'X-Auth-Token': token,
                            'OpenStack-API-Version': 'compute 2.96'})
    return session


def _boot_body(name):
    return {'server': {'name': name, 'flavorRef': '1', 'networks': 'none',
                       'imageRef': images.find('cirros')[0]}}


def test_two_api_processes_never_both_take_the_last_slot(two_apis):
    first_url, second_url = two_apis.api_urls
    admin = _session('admin:admin')
    user = _session('racer:' + PROJECT)
    outcomes = []
    for round_ in range(ROUNDS):
        # Exactly one more server fits.
        resp = admin.put('%s/v2.1/os-quota-sets/%s' % (first_url, PROJECT),
                         json={'quota_set': {'instances': round_ + 1}},
                         timeout=30)
        assert resp.status_code == 200, resp.text
        barrier = threading.Barrier(2, timeout=30)
        answers = {}

        def create(url, body):
            # A session per thread: requests' sessions are not shared.
            session = _session('racer:' + PROJECT)
            barrier.wait()
            answers[url] = session.post(url + '/v2.1/servers', json=body,
                                        timeout=60)

        threads = [threading.Thread(
            target=create, args=(url, _boot_body('r%d-%d' % (round_, i))))
            for i, url in enumerate((first_url, second_url))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
        assert len(answers) == 2, 'a create did not answer'
        codes = sorted(a.status_code for a in answers.values())
        assert codes == [202, 403], [a.text for a in answers.values()]
        refused = next(a for a in answers.values() if a.status_code == 403)
        assert refused.json()['forbidden']['message'] == (
            'Quota exceeded for instances: Requested 1, but already used '
            '%d of %d instances' % (round_ + 1, round_ + 1))
        outcomes.append(next(url for url, a in answers.items()
                             if a.status_code == 202))
    listed = user.get(first_url + '/v2.1/servers', timeout=30).json()
    assert len(listed['servers']) == ROUNDS
    limits = user.get(second_url + '/v2.1/limits', timeout=30).json()
    assert limits['limits']['absolute']['totalInstancesUsed'] == ROUNDS
    # Both processes won some rounds: the turn is the database's, not one
    # process's lock.
    print('winners per API process:',
          {url: outcomes.count(url) for url in (first_url, second_url)})

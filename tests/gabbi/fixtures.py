"""The fixtures Placement's gabbi files name (``fixtures:``), made through
the HTTP API of the all-in-one they run against.

Each class has the name of one of Placement's gabbi fixtures and sets the
same environment variables (``$ENVIRON['RP_UUID']``, ``CN1_UUID``, ...)
for the same things: providers, their inventories, aggregates and traits,
resource classes and allocations. It makes them only through the
Placement API, as an admin, with the requests Placement documents
(``POST /resource_providers``, ``POST .../inventories``, ``PUT
.../aggregates``, ``PUT .../traits``, ``PUT /allocations/{consumer}``,
``PUT /resource_classes/{name}``, ``PUT /traits/{name}``), never in a
database. A write the API refuses is noted in ``REPORT`` (and the writes
that needed what it would have made are counted, not sent) and the file
runs all the same, its tests passing or failing on what is there.

What is configuration rather than data, the fixtures set in the running
process as Placement's fixtures set it in theirs: the open policy of
``OpenPolicyFixture`` (a policy file opening the API's ``placement:*``
rules) and ``[oslo_policy] enforce_new_defaults`` of the RBAC fixtures.

Placement's tests start every file on an empty database. Here one
all-in-one (without compute hosts, so without providers of its own)
serves every file, and each fixture leaves it as it found it when the
file ends, again through the API: the allocations of every provider, the
providers (children first), every custom trait and every custom resource
class are deleted. What could not be deleted is noted in ``REPORT``
(``leftovers``).

``connect(url)`` (the Placement API's URL) comes first; ``new_report()``
starts the notes of one file.
"""

import os
import tempfile
import urllib.parse
import uuid as uuid_mod

from gabbi import fixture
import requests
import yaml

from scheduler_split import conf
from scheduler_split.policies import placement as placement_policies
from scheduler_split import policy

CONF = conf.CONF

# The microversions the fixtures write at: the newest for most writes, and
# for allocations the first with consumer generations (null: a new
# consumer) but before consumer types, which the fixtures do not set.
LATEST = 'placement latest'
ALLOCATIONS = 'placement 1.28'

_CLIENT = None
REPORT = None


def connect(url):
    """Make the fixtures write to the Placement API at ``url``."""
    global _CLIENT
    _CLIENT = _Admin(url)


def new_report():
    """Start the notes of one file's fixtures; returns them."""
    global REPORT
    REPORT = {'refused': [], 'not_attempted': 0, 'leftovers': [],
              'made': 0}
    return REPORT


def _note(kind, **entry):
    if REPORT is not None:
        REPORT[kind].append(entry)


def _new_uuid():
    return str(uuid_mod.uuid4())


class _Admin:
    """Requests to the Placement API as Placement's tests' admin."""

    def __init__(self, url):
        self.url = url.rstrip('/')
        self.session = requests.Session()
        self.session.headers.update({
            'X-Auth-Token': 'admin', 'Accept': 'application/json'})

    def request(self, method, path, body=None, version=LATEST):
        return self.session.request(
            method, self.url + path, json=body, timeout=60,
            headers={'OpenStack-API-Version': version})

    def write(self, fixture_name, method, path, body=None, version=LATEST,
              ok=(200, 201, 204)):
        """Send one write; True when the API made it, else noted."""
        resp = self.request(method, path, body, version)
        if resp.status_code in ok:
            if REPORT is not None:
                REPORT['made'] += 1
            return True
        _note('refused', fixture=fixture_name, method=method, path=path,
              status=resp.status_code, detail=_detail(resp))
        return False

    def generation(self, rp_uuid):
        resp = self.request('GET', '/resource_providers/' + rp_uuid)
        if resp.status_code != 200:
            return None
        return resp.json().get('generation')


def _detail(resp):
    try:
        return resp.json()['errors'][0]['detail'][:300]
    except (ValueError, KeyError, IndexError, TypeError):
        return resp.text[:300]


def _quote(text):
    return urllib.parse.quote(text, safe='')


class APIFixture(fixture.GabbiFixture):
    """Placement's basic fixture: the environment variables every file
    may use (random uuids for providers, projects, users and consumers
    the tests make themselves, and three custom resource class names);
    subclasses make data in ``make``."""

    # [oslo_policy] enforce_new_defaults while the file runs: off, as
    # Placement's own fixture runs its files (the deprecated defaults,
    # for admins, still decide too), but for the secure RBAC files.
    enforce_new_defaults = False
    # The API's placement:* rules opened to anyone with a token.
    open_policy = False

    def start_fixture(self):
        if _CLIENT is None:
            raise RuntimeError('tests.gabbi.fixtures.connect(url) first')
        self.client = _CLIENT
        self.saved_environ = {}
        self.providers = {}      # name -> uuid, of the providers asked
        self.made = set()        # uuids of the providers the API made
        self.policy_dir = None
        self._configure_policy()
        for name in ('RP_UUID', 'RP_NAME', 'RP_UUID1', 'RP_NAME1',
                     'RP_UUID2', 'RP_NAME2', 'PROJECT_ID',
                     'ADMIN_PROJECT_ID', 'SERVICE_PROJECT_ID', 'USER_ID',
                     'PROJECT_ID_ALT', 'USER_ID_ALT', 'INSTANCE_UUID',
                     'MIGRATION_UUID', 'CONSUMER_UUID',
                     'PARENT_PROVIDER_UUID', 'ALT_PARENT_PROVIDER_UUID'):
            self.setenv(name, _new_uuid())
        self.setenv('CUSTOM_RES_CLASS', 'CUSTOM_IRON_NFV')
        self.setenv('CUSTOM_RES_CLASS1', 'CUSTOM_IRON_NFV1')
        self.setenv('CUSTOM_RES_CLASS2', 'CUSTOM_IRON_NFV2')
        self.make()

    def stop_fixture(self):
        try:
            self._restore_policy()
            tidy(type(self).__name__)
        finally:
            for name, value in self.saved_environ.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def make(self):
        """Make the fixture's data (none here)."""

    # --- configuration -------------------------------------------------

    def _configure_policy(self):
        if self.open_policy:
            self.policy_dir = tempfile.mkdtemp(prefix='gabbi-policy-')
            path = os.path.join(self.policy_dir, 'policy.yaml')
            rules = {rule.name: '@'
                     for rule in placement_policies.list_rules()}
            with open(path, 'w') as f:
                yaml.safe_dump(rules, f)
            CONF.set_override('policy_file', path, group='oslo_policy')
        if self.enforce_new_defaults is not None:
            CONF.set_override('enforce_new_defaults',
                              self.enforce_new_defaults,
                              group='oslo_policy')
        if self.open_policy or self.enforce_new_defaults is not None:
            policy.reset()

    def _restore_policy(self):
        if self.open_policy:
            CONF.clear_override('policy_file', group='oslo_policy')
            for name in os.listdir(self.policy_dir):
                os.remove(os.path.join(self.policy_dir, name))
            os.rmdir(self.policy_dir)
        if self.enforce_new_defaults is not None:
            CONF.clear_override('enforce_new_defaults', group='oslo_policy')
        if self.open_policy or self.enforce_new_defaults is not None:
            policy.reset()

    # --- data, through the API -----------------------------------------

    def setenv(self, name, value):
        self.saved_environ.setdefault(name, os.environ.get(name))
        os.environ[name] = value
        return value

    def _write(self, method, path, body=None, version=LATEST,
               ok=(200, 201, 204)):
        return self.client.write(type(self).__name__, method, path, body,
                                 version, ok)

    def _needs(self, rp_uuid):
        """Whether the provider a write is for exists; a write for one the
        API did not make is counted, not sent."""
        if rp_uuid in self.made:
            return True
        if REPORT is not None:
            REPORT['not_attempted'] += 1
        return False

    def provider(self, name, *aggregates, parent=None, uuid=None,
                 env=None):
        """Ask for a provider; its uuid (made here, so that the tests get
        one whether the API made the provider or not), also set as the
        environment variable ``env``."""
        rp_uuid = uuid or _new_uuid()
        self.providers[name] = rp_uuid
        if env:
            self.setenv(env, rp_uuid)
        body = {'name': name, 'uuid': rp_uuid}
        if parent is not None:
            body['parent_provider_uuid'] = parent
        if parent is not None and parent not in self.made:
            if REPORT is not None:
                REPORT['not_attempted'] += 1
            return rp_uuid
        if self._write('POST', '/resource_providers', body, ok=(200, 201)):
            self.made.add(rp_uuid)
        if aggregates:
            self.aggregates(rp_uuid, *aggregates)
        return rp_uuid

    def aggregates(self, rp_uuid, *aggregates):
        if not self._needs(rp_uuid):
            return
        self._write('PUT', '/resource_providers/%s/aggregates' % rp_uuid,
                    {'aggregates': list(aggregates),
                     'resource_provider_generation':
                         self.client.generation(rp_uuid)})

    def resource_class(self, name):
        """Make a custom resource class (a standard one is there)."""
        if name.startswith('CUSTOM_'):
            self._write('PUT', '/resource_classes/' + _quote(name))

    def inventory(self, rp_uuid, rc, total, **fields):
        """Set one inventory; ``max_unit`` is the total unless given."""
        self.resource_class(rc)
        if not self._needs(rp_uuid):
            return
        body = dict(fields, total=total, resource_class=rc)
        body.setdefault('max_unit', total)
        self._write('POST', '/resource_providers/%s/inventories' % rp_uuid,
                    body)

    def traits(self, rp_uuid, *names):
        """Set the provider's traits, making the custom ones first."""
        for name in names:
            if name.startswith('CUSTOM_'):
                self._write('PUT', '/traits/' + _quote(name))
        if not self._needs(rp_uuid):
            return
        self._write('PUT', '/resource_providers/%s/traits' % rp_uuid,
                    {'traits': list(names),
                     'resource_provider_generation':
                         self.client.generation(rp_uuid)})

    def allocation(self, rp_uuid, resources, project_id, user_id,
                   consumer=None):
        """Allocate ``resources`` of one provider to a consumer (a new one
        unless given); the consumer's uuid."""
        consumer = consumer or _new_uuid()
        if not self._needs(rp_uuid):
            return consumer
        self._write('PUT', '/allocations/' + consumer,
                    {'allocations': {rp_uuid: {'resources': resources}},
                     'project_id': project_id, 'user_id': user_id,
                     'consumer_generation': None}, version=ALLOCATIONS)
        return consumer


def tidy(fixture_name):
    """Leave the API as the next file expects it, empty: every allocation
    of every provider, the providers (children first), every custom trait
    and every custom resource class deleted. What stays is noted."""
    client = _CLIENT

    def gone(method, path):
        resp = client.request(method, path)
        if resp.status_code not in (200, 204, 404):
            _note('leftovers', fixture=fixture_name, method=method,
                  path=path, status=resp.status_code, detail=_detail(resp))

    resp = client.request('GET', '/resource_providers')
    providers = (resp.json().get('resource_providers', [])
                 if resp.status_code == 200 else [])
    parents = {p['uuid']: p.get('parent_provider_uuid') for p in providers}
    for rp_uuid in parents:
        resp = client.request('GET',
                              '/resource_providers/%s/allocations' % rp_uuid)
        if resp.status_code == 200:
            for consumer in resp.json().get('allocations', {}):
                gone('DELETE', '/allocations/' + consumer)
        gone('DELETE', '/resource_providers/%s/traits' % rp_uuid)

    def depth(rp_uuid):
        level = 0
        while parents.get(rp_uuid):
            rp_uuid, level = parents[rp_uuid], level + 1
        return level

    for rp_uuid in sorted(parents, key=depth, reverse=True):
        gone('DELETE', '/resource_providers/' + rp_uuid)
    resp = client.request('GET', '/traits?name=startswith:CUSTOM_')
    if resp.status_code == 200:
        for name in resp.json().get('traits', []):
            gone('DELETE', '/traits/' + _quote(name))
    resp = client.request('GET', '/resource_classes')
    if resp.status_code == 200:
        for rc in resp.json().get('resource_classes', []):
            if rc['name'].startswith('CUSTOM_'):
                gone('DELETE', '/resource_classes/' + _quote(rc['name']))


class OpenPolicyFixture(APIFixture):
    """Every placement rule of the API open to any token."""

    open_policy = True


class SecureRBACPolicyFixture(APIFixture):
    """The policies' new defaults enforced."""

    enforce_new_defaults = True


class LegacyRBACPolicyFixture(APIFixture):
    """The policies' deprecated defaults still honoured."""

    enforce_new_defaults = False


class CORSFixture(APIFixture):
    """CORS allowed for one origin, as Placement's fixture configures its
    middleware; set only where the API has the ``[cors]`` options (it
    has no CORS middleware today, so the file runs without)."""

    def make(self):
        self.cors = 'cors' in CONF and 'allowed_origin' in CONF.cors
        if self.cors:
            CONF.set_override('allowed_origin',
                              ['http://valid.example.com'], group='cors')
            CONF.set_override('allow_headers', ['openstack-api-version'],
                              group='cors')

    def stop_fixture(self):
        if getattr(self, 'cors', False):
            CONF.clear_override('allowed_origin', group='cors')
            CONF.clear_override('allow_headers', group='cors')
        super().stop_fixture()


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048 in steps of 10) with three
    consumers of one project: DISK_GB 1000 and VCPU 6 of ``USER_ID``,
    DISK_GB 20 and VCPU 1 of ``ALT_USER_ID``."""

    def make(self):
        project = os.environ['PROJECT_ID']
        user = os.environ['USER_ID']
        alt_user = self.setenv('ALT_USER_ID', _new_uuid())
        rp = self.provider(os.environ['RP_NAME'],
                           uuid=os.environ['RP_UUID'])
        self.inventory(rp, 'DISK_GB', 2048, step_size=10, min_unit=10,
                       max_unit=1000)
        self.inventory(rp, 'VCPU', 10, max_unit=10)
        self.setenv('CONSUMER_0', self.allocation(
            rp, {'DISK_GB': 1000}, project, user))
        self.setenv('CONSUMER_ID', self.allocation(
            rp, {'VCPU': 6}, project, user))
        self.setenv('ALT_CONSUMER_ID', self.allocation(
            rp, {'DISK_GB': 20, 'VCPU': 1}, project, alt_user))
        # A provider the fixture does not make.
        self.setenv('ALT_RP_UUID', _new_uuid())
        self.setenv('ALT_RP_NAME', _new_uuid())


class SharedStorageFixture(APIFixture):
    """Two compute nodes in one aggregate with two sharing storage
    providers: cn1 (VCPU, MEMORY_MB, two SSE traits) and cn2 (VCPU,
    MEMORY_MB, DISK_GB), each with two NUMA children of one PF (8
    SRIOV_NET_VF) each; ss and ss2 share 2000 DISK_GB (100 reserved)."""

    def make(self):
        agg = self.setenv('AGG_UUID', _new_uuid())
        cns = [self.provider(name, agg, env=name.upper() + '_UUID')
               for name in ('cn1', 'cn2')]
        shared = [self.provider(name, agg, env=name.upper() + '_UUID')
                  for name in ('ss', 'ss2')]
        numas = []
        for c, cn in enumerate(cns, 1):
            for n in (1, 2):
                suffix = '%d_%d' % (c, n)
                numas.append((suffix, self.provider(
                    'numa' + suffix, parent=cn, env='NUMA%s_UUID' % suffix)))
        pfs = [self.provider('pf' + suffix, parent=numa,
                             env='PF%s_UUID' % suffix)
               for suffix, numa in numas]
        for cn in cns:
            self.inventory(cn, 'VCPU', 24, allocation_ratio=16.0)
            self.inventory(cn, 'MEMORY_MB', 128 * 1024,
                           allocation_ratio=1.5)
        self.traits(cns[0], 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2')
        self.inventory(cns[1], 'DISK_GB', 2000, reserved=100,
                       allocation_ratio=1.0)
        for ss in shared:
            self.inventory(ss, 'DISK_GB', 2000, reserved=100,
                           allocation_ratio=1.0)
            self.traits(ss, 'MISC_SHARES_VIA_AGGREGATE')
        for pf in pfs:
            self.inventory(pf, 'SRIOV_NET_VF', 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two compute nodes without inventory, each with two NUMA children of
    24 VCPU; cn1 and ss1 in aggregate A, cn2 in A and B, numa1_1 and ss2
    in C; ss1 and ss2 share 2000 DISK_GB (100 reserved)."""

    def make(self):
        agg_a, agg_b, agg_c = (self.setenv('AGG%s_UUID' % x, _new_uuid())
                               for x in 'ABC')
        cn1 = self.provider('cn1', agg_a, env='CN1_UUID')
        cn2 = self.provider('cn2', agg_a, agg_b, env='CN2_UUID')
        ss1 = self.provider('ss1', agg_a, env='SS1_UUID')
        ss2 = self.provider('ss2', agg_c, env='SS2_UUID')
        numas = [
            self.provider('numa1_1', agg_c, parent=cn1, env='NUMA1_1_UUID'),
            self.provider('numa1_2', parent=cn1, env='NUMA1_2_UUID'),
            self.provider('numa2_1', parent=cn2, env='NUMA2_1_UUID'),
            self.provider('numa2_2', parent=cn2, env='NUMA2_2_UUID')]
        for numa in numas:
            self.inventory(numa, 'VCPU', 24, allocation_ratio=16.0)
        for ss in (ss1, ss2):
            self.inventory(ss, 'DISK_GB', 2000, reserved=100,
                           allocation_ratio=1.0)
            self.traits(ss, 'MISC_SHARES_VIA_AGGREGATE')


class NUMANetworkFixture(APIFixture):
    """cn1 (no inventory, COMPUTE_VOLUME_MULTI_ATTACH) with NUMA children
    (VCPU, MEMORY_MB with unit constraints, HW_NUMA_ROOT; 2 VCPU of numa0
    allocated) holding FPGA and VGPU devices, and two network agents with
    bandwidth devices on physnets; cn2 (VCPU with 3 allocated, MEMORY_MB,
    DISK_GB, CUSTOM_FOO) with three NICs of PFs with CUSTOM_VF on
    physnets; ss1 shares DISK_GB with both through aggregate A."""

    # The compute nodes' uuids when a subclass made them (with parents).
    cn1 = cn2 = None

    def make(self):
        agg_a = self.setenv('AGGA_UUID', _new_uuid())
        ss1 = self.provider('ss1', agg_a, env='SS1_UUID')
        self.traits(ss1, 'MISC_SHARES_VIA_AGGREGATE')
        self.inventory(ss1, 'DISK_GB', 2000)

        cn1 = self.cn1 or self.provider('cn1')
        self.setenv('CN1_UUID', cn1)
        self.aggregates(cn1, agg_a)
        self.traits(cn1, 'COMPUTE_VOLUME_MULTI_ATTACH')
        numas = []
        for i in (0, 1):
            numa = self.provider('numa%d' % i, parent=cn1,
                                 env='NUMA%d_UUID' % i)
            self.traits(numa, 'HW_NUMA_ROOT',
                        *(['CUSTOM_FOO'] if i == 1 else []))
            self.inventory(numa, 'VCPU', 4)
            numas.append(numa)
        self.inventory(numas[0], 'MEMORY_MB', 2048, min_unit=512,
                       step_size=256)
        self.inventory(numas[1], 'MEMORY_MB', 2048, min_unit=256,
                       max_unit=1024)
        user, project = 'numafx-user', 'numafx-project'
        self.allocation(numas[0], {'VCPU': 2}, project, user)

        fpga = self.provider('fpga0', parent=numas[0], env='FPGA0_UUID')
        self.inventory(fpga, 'FPGA', 1)
        pgpu = self.provider('pgpu0', parent=numas[0], env='PGPU0_UUID')
        self.inventory(pgpu, 'VGPU', 8)
        for i in (0, 1):
            fpga = self.provider('fpga1_%d' % i, parent=numas[1],
                                 env='FPGA1_%d_UUID' % i)
            self.inventory(fpga, 'FPGA', 1)

        agent = self.provider('sriov_agent', parent=cn1,
                              env='SRIOV_AGENT_UUID')
        self.traits(agent, 'CUSTOM_VNIC_TYPE_DIRECT')
        for i in (1, 2):
            esn = self.provider('esn%d' % i, parent=agent,
                                env='ESN%d_UUID' % i)
            self.traits(esn, 'CUSTOM_PHYSNET%d' % i)
            self.inventory(esn, 'NET_BW_EGR_KILOBIT_PER_SEC', 10000 * i)
        agent = self.provider('ovs_agent', parent=cn1,
                              env='OVS_AGENT_UUID')
        self.traits(agent, 'CUSTOM_VNIC_TYPE_NORMAL')
        br_int = self.provider('br_int', parent=agent, env='BR_INT_UUID')
        self.traits(br_int, 'CUSTOM_PHYSNET0')
        self.inventory(br_int, 'NET_BW_EGR_KILOBIT_PER_SEC', 1000)

        cn2 = self.cn2 or self.provider('cn2')
        self.setenv('CN2_UUID', cn2)
        self.aggregates(cn2, agg_a)
        self.inventory(cn2, 'VCPU', 8)
        self.allocation(cn2, {'VCPU': 3}, project, user)
        self.inventory(cn2, 'MEMORY_MB', 2048, min_unit=1024,
                       step_size=128)
        self.inventory(cn2, 'DISK_GB', 1000)
        self.traits(cn2, 'CUSTOM_FOO')
        # (NIC, [(physnet, CUSTOM_VF), ...] of its PFs)
        nics = [(1, [(1, 4), (2, 4)]),
                (2, [(1, 2), (2, 2), (1, 2), (2, 2)]),
                (3, [(1, 8)])]
        made = []
        for n, _ in nics:
            nic = self.provider('nic%d' % n, parent=cn2,
                                env='NIC%d_UUID' % n)
            self.traits(nic, 'CUSTOM_HW_NIC_ROOT')
            made.append(nic)
        for nic, (n, pfs) in zip(made, nics):
            for p, (physnet, vfs) in enumerate(pfs, 1):
                suffix = '%d_%d' % (n, p)
                pf = self.provider('pf' + suffix, parent=nic,
                                   env='PF%s_UUID' % suffix)
                self.traits(pf, 'CUSTOM_PHYSNET%d' % physnet)
                self.inventory(pf, 'CUSTOM_VF', vfs)


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """``NUMANetworkFixture`` with cn1 and cn2 under parents p1 and p2 of
    one grandparent gp1, without inventory."""

    def make(self):
        gp1 = self.provider('gp1')
        p1 = self.provider('p1', parent=gp1)
        p2 = self.provider('p2', parent=gp1)
        self.cn1 = self.provider('cn1', parent=p1)
        self.cn2 = self.provider('cn2', parent=p2)
        super().make()


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with VCPU, MEMORY_MB and local DISK_GB, and
    three aggregate uuids no provider is in."""

    def make(self):
        for x in 'ABC':
            self.setenv('AGG%s_UUID' % x, _new_uuid())
        for name in ('cn1', 'cn2', 'cn3'):
            cn = self.provider(name, env=name.upper() + '_UUID')
            self.inventory(cn, 'VCPU', 24)
            self.inventory(cn, 'MEMORY_MB', 128 * 1024)
            self.inventory(cn, 'DISK_GB', 2000)


class GranularFixture(APIFixture):
    """cn_left, cn_middle and cn_right with CPU, memory, disk, GPU and
    network inventories and CPU traits; shr_disk_1 (aggregate A),
    shr_disk_2 (A and B) and shr_net (C) sharing DISK_GB and network
    resources; cn_left in A, cn_middle in A and B, cn_right in B and C."""

    def make(self):
        self.resource_class('CUSTOM_NET_MBPS')
        agg = {x: self.setenv('AGG' + x, _new_uuid()) for x in 'ABC'}

        left = self.provider('cn_left', agg['A'], env='CN_LEFT')
        for rc, total in (('VCPU', 8), ('MEMORY_MB', 4096),
                          ('DISK_GB', 500), ('VGPU', 8),
                          ('SRIOV_NET_VF', 8), ('CUSTOM_NET_MBPS', 4000)):
            self.inventory(left, rc, total)
        self.traits(left, 'HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2',
                    'HW_GPU_API_DXVA', 'HW_NIC_DCB_PFC', 'CUSTOM_FOO')

        middle = self.provider('cn_middle', agg['A'], agg['B'],
                               env='CN_MIDDLE')
        for rc, total in (('VCPU', 8), ('MEMORY_MB', 4096),
                          ('SRIOV_NET_VF', 8), ('CUSTOM_NET_MBPS', 4000)):
            self.inventory(middle, rc, total)
        self.traits(middle, 'HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2',
                    'HW_CPU_X86_SSE', 'HW_NIC_ACCEL_TLS')

        right = self.provider('cn_right', agg['B'], agg['C'],
                              env='CN_RIGHT')
        for rc, total in (('VCPU', 8), ('MEMORY_MB', 4096),
                          ('DISK_GB', 500)):
            self.inventory(right, rc, total)
        self.inventory(right, 'VGPU', 8, max_unit=2)
        self.traits(right, 'HW_CPU_X86_MMX', 'HW_GPU_API_DXVA',
                    'CUSTOM_DISK_SSD')

        disk1 = self.provider('shr_disk_1', agg['A'], env='SHR_DISK_1')
        self.inventory(disk1, 'DISK_GB', 1000)
        self.traits(disk1, 'MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_DISK_SSD')
        disk2 = self.provider('shr_disk_2', agg['A'], agg['B'],
                              env='SHR_DISK_2')
        self.inventory(disk2, 'DISK_GB', 1000)
        self.traits(disk2, 'MISC_SHARES_VIA_AGGREGATE')
        net = self.provider('shr_net', agg['C'], env='SHR_NET')
        self.inventory(net, 'SRIOV_NET_VF', 16)
        self.inventory(net, 'CUSTOM_NET_MBPS', 40000)
        self.traits(net, 'MISC_SHARES_VIA_AGGREGATE')


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as Neutron's QoS minimum bandwidth and packet
    rate features make them on multi-segment networks: each compute
    (VCPU, MEMORY_MB, DISK_GB) has an Open vSwitch agent (packet rate,
    CUSTOM_VNIC_TYPE_NORMAL) with bridges and a NIC Switch agent (the
    direct VNIC types) with PFs, the bridges and PFs holding bandwidth on
    a physnet. compute0 is on CUSTOM_PHYSNET_OTHER, compute1 on segment 1,
    compute2 on segment 2, compute3 (less bandwidth) on both."""

    DIRECT = ('CUSTOM_VNIC_TYPE_DIRECT', 'CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL',
              'CUSTOM_VNIC_TYPE_MACVTAP')
    # compute: ([(bridge, physnet)], [(pf, physnet)], bandwidth)
    COMPUTES = {
        'compute0': ([('br-ex', 'OTHER')], [('enp129s0f0', 'OTHER')],
                     (5000, 10000)),
        'compute1': ([('br-ex', 'MSN_S1')], [('enp129s0f0', 'MSN_S1')],
                     (5000, 10000)),
        'compute2': ([('br-ex', 'MSN_S2')], [('enp129s0f0', 'MSN_S2')],
                     (5000, 10000)),
        'compute3': ([('br-ex', 'MSN_S1'), ('br-ex2', 'MSN_S2')],
                     [('enp129s0f0', 'MSN_S1'), ('enp129s0f1', 'MSN_S2')],
                     (1000, 1000)),
    }

    def _bandwidth(self, rp, kbps):
        for rc in ('NET_BW_EGR_KILOBIT_PER_SEC', 'NET_BW_IGR_KILOBIT_PER_SEC'):
            self.inventory(rp, rc, kbps)

    def make(self):
        for name, (bridges, pfs, (br_bw, pf_bw)) in self.COMPUTES.items():
            compute = self.provider(name, env=name)
            self.inventory(compute, 'VCPU', 8)
            self.inventory(compute, 'MEMORY_MB', 4096)
            self.inventory(compute, 'DISK_GB', 500)
            ovs = self.provider(name + ':Open vSwitch agent', parent=compute,
                                env=name + ':ovs_agent')
            self.inventory(ovs, 'NET_PACKET_RATE_KILOPACKET_PER_SEC', 1000)
            self.traits(ovs, 'CUSTOM_VNIC_TYPE_NORMAL')
            for bridge, physnet in bridges:
                br = self.provider(
                    '%s:Open vSwitch agent:%s' % (name, bridge), parent=ovs,
                    env='%s:%s' % (name, bridge.replace('-', '_')))
                self._bandwidth(br, br_bw)
                self.traits(br, 'CUSTOM_VNIC_TYPE_NORMAL',
                            'CUSTOM_PHYSNET_' + physnet)
            sriov = self.provider(name + ':NIC Switch agent',
                                  parent=compute, env=name + ':sriov_agent')
            self.traits(sriov, *self.DIRECT)
            for index, (pf_name, physnet) in enumerate(pfs):
                pf = self.provider('%s:NIC Switch agent:%s' % (name, pf_name),
                                   parent=sriov,
                                   env='%s:pf%d' % (name, index))
                self._bandwidth(pf, pf_bw)
                self.traits(pf, *self.DIRECT, 'CUSTOM_PHYSNET_' + physnet)

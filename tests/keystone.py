"""A real Keystone for the tests: PyPI's keystone, SQLite, one worker.

Keystone is installed into a virtualenv of its own (``.venv-keystone`` at
the top of the repository, or ``$SCHEDULER_SPLIT_KEYSTONE_VENV``), so that
its pins never meet the project's; the first use installs it, later ones
reuse it. It serves the Identity API v3 under gunicorn on a free port of
127.0.0.1, with fernet tokens, from a temporary directory, and is stopped
(its directory removed) at the end.

Usable from a test (``Keystone(tmp_path).start()``) and from the command
line, which keeps it running until interrupted::

    python -m tests.keystone --base-dir DIR [--port PORT]
"""

import argparse
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIREMENTS = ['keystone>=30,<31', 'gunicorn>=21.2,<28']
REGION = 'RegionOne'


def free_port():
    from tests.integration import backends
    return backends.free_port()


def venv_dir():
    return os.environ.get('SCHEDULER_SPLIT_KEYSTONE_VENV',
                          os.path.join(ROOT, '.venv-keystone'))


def ensure_venv(path=None, requirements=REQUIREMENTS, probe='keystone-manage'):
    """A virtualenv at ``path`` with ``requirements``, made if missing."""
    path = path or venv_dir()
    # Test processes running side by side make it once: the others wait.
    with open(path.rstrip('/') + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(path, 'bin', probe)):
            return path
        subprocess.run([sys.executable, '-m', 'venv', path], check=True)
        subprocess.run([os.path.join(path, 'bin', 'pip'), 'install', '-q',
                        *requirements], check=True, timeout=1200)
    return path


# Keystone's WSGI application parses sys.argv with oslo.config when it is
# imported; under gunicorn that is gunicorn's own command line, so the
# worker hides it before loading the application.
_GUNICORN_CONF = """\
import sys
sys.argv[1:] = []
"""


class Keystone:
    """One Keystone, bootstrapped with an ``admin`` user in project ``admin``
    holding the ``admin`` role (which implies ``member`` and ``reader``)."""

    def __init__(self, base_dir=None, port=None):
        self.base = tempfile.mkdtemp(prefix='keystone-', dir=base_dir)
        self.port = port or free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.admin_password = secrets.token_hex(12)
        self.proc = None
        self._admin_token = None

    @property
    def auth_url(self):
        return self.url + '/v3'

    def _path(self, *parts):
        return os.path.join(self.base, *parts)

    def _write_config(self):
        for name in ('fernet-keys', 'credential-keys', 'log'):
            os.makedirs(self._path(name), mode=0o700, exist_ok=True)
        with open(self._path('keystone.conf'), 'w') as f:
            f.write(textwrap.dedent("""\
                [DEFAULT]
                log_file = %(log)s
                [database]
                connection = sqlite:///%(db)s
                [token]
                provider = fernet
                [fernet_tokens]
                key_repository = %(fernet)s
                [credential]
                key_repository = %(credential)s
                [cache]
                # In-process caching (one worker, so never stale): token
                # validation and role lookups otherwise take a second
                # each on a busy machine.
                enabled = true
                backend = dogpile.cache.memory
                [identity]
                # bcrypt's fewest rounds: the tests create users and
                # issue tokens by the hundred (Tempest's dynamic
                # credentials), and nothing here guards a real password.
                password_hash_rounds = 4
                """ % {'log': self._path('log', 'keystone.log'),
                       'db': self._path('keystone.sqlite'),
                       'fernet': self._path('fernet-keys'),
                       'credential': self._path('credential-keys')}))
        with open(self._path('gunicorn.conf.py'), 'w') as f:
            f.write(_GUNICORN_CONF)

    def _manage(self, venv, *args):
        user = os.environ.get('USER') or 'root'
        result = subprocess.run(
            [os.path.join(venv, 'bin', 'keystone-manage'), '--config-file',
             self._path('keystone.conf'), *args], capture_output=True,
            text=True, timeout=300,
            env=dict(os.environ, USER=user))
        if result.returncode != 0:
            raise RuntimeError('keystone-manage %s failed: %s%s' % (
                ' '.join(args), result.stdout, result.stderr))

    def start(self):
        venv = ensure_venv()
        self._write_config()
        uid_gid = ['--keystone-user', str(os.getuid()),
                   '--keystone-group', str(os.getgid())]
        self._manage(venv, 'db_sync')
        self._manage(venv, 'fernet_setup', *uid_gid)
        self._manage(venv, 'credential_setup', *uid_gid)
        self._manage(venv, 'bootstrap',
                     '--bootstrap-password', self.admin_password,
                     '--bootstrap-admin-url', self.auth_url,
                     '--bootstrap-internal-url', self.auth_url,
                     '--bootstrap-public-url', self.auth_url,
                     '--bootstrap-region-id', REGION)
        self.out = open(self._path('log', 'gunicorn.out'), 'w')
        # One thread: SQLite refuses concurrent writers ("database is
        # locked", a 500) as soon as two requests write at once, which
        # Tempest's parallel workers do all the time.
        self.proc = subprocess.Popen(
            [os.path.join(venv, 'bin', 'gunicorn'), '--config',
             self._path('gunicorn.conf.py'), '--bind',
             '127.0.0.1:%d' % self.port, '--workers', '1',
             '--worker-class', 'gthread', '--threads', '1',
             '--timeout', '120', 'keystone.wsgi.api:application'],
            env=dict(os.environ, OS_KEYSTONE_CONFIG_FILES=self._path(
                'keystone.conf')),
            stdout=self.out, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if requests.get(self.auth_url, timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError('Keystone did not start; see %s'
                           % self._path('log'))

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            self.proc = None
            self.out.close()
        shutil.rmtree(self.base, ignore_errors=True)

    # --- tokens and accounts ------------------------------------------------

    def token(self, user='admin', password=None, project='admin',
              domain='Default'):
        """A project-scoped token for ``user`` (password auth)."""
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': user, 'domain': {'name': domain},
                'password': password or self.admin_password}}},
            'scope': {'project': {'name': project,
                                  'domain': {'name': domain}}}}}
        resp = requests.post(self.auth_url + '/auth/tokens', json=body,
                             timeout=30)
        if resp.status_code != 201:
            raise RuntimeError('No token for %s in %s: %s %s' % (
                user, project, resp.status_code, resp.text))
        return resp.headers['X-Subject-Token']

    def _admin(self, method, path, **kwargs):
        if self._admin_token is None:
            self._admin_token = self.token()
        resp = requests.request(method, self.auth_url + path, timeout=30,
                                headers={'X-Auth-Token': self._admin_token},
                                **kwargs)
        if resp.status_code >= 400 and resp.status_code != 409:
            raise RuntimeError('%s %s: %s %s' % (method, path,
                                                 resp.status_code, resp.text))
        return resp.json() if resp.content else None

    def _find(self, collection, name):
        found = self._admin('GET', '/%s' % collection,
                            params={'name': name})[collection]
        return found[0]['id'] if found else None

    def project(self, name):
        """The id of project ``name``, created if missing."""
        return self._find('projects', name) or self._admin(
            'POST', '/projects', json={'project': {
                'name': name, 'domain_id': 'default'}})['project']['id']

    def role(self, name):
        """The id of role ``name``, created if missing."""
        return self._find('roles', name) or self._admin(
            'POST', '/roles', json={'role': {'name': name}})['role']['id']

    def create_user(self, name, password, project, roles=('member',)):
        """User ``name`` with ``roles`` on ``project`` (both made if
        missing); returns ``(user_id, project_id)``."""
        project_id = self.project(project)
        user_id = self._find('users', name) or self._admin(
            'POST', '/users', json={'user': {
                'name': name, 'password': password,
                'domain_id': 'default',
                'default_project_id': project_id}})['user']['id']
        for role in roles:
            self._admin('PUT', '/projects/%s/users/%s/roles/%s' % (
                project_id, user_id, self.role(role)))
        return user_id, project_id

    def register_service(self, service_type, name, url):
        """A service and its public/internal/admin endpoints in the
        catalog."""
        found = [s for s in self._admin('GET', '/services')['services']
                 if s['type'] == service_type]
        service_id = found[0]['id'] if found else self._admin(
            'POST', '/services', json={'service': {
                'type': service_type, 'name': name}})['service']['id']
        for interface in ('public', 'internal', 'admin'):
            self._admin('POST', '/endpoints', json={'endpoint': {
                'service_id': service_id, 'interface': interface,
                'url': url, 'region_id': REGION}})
        return service_id

    def register_api(self, url):
        """The API at ``url`` in the catalog, as an operator registers
        it: its compute API (``compute``, ``<url>/v2.1``) and its
        read-only Placement API (``placement``, ``<url>/placement``)."""
        self.register_service('compute', 'nova', url + '/v2.1')
        self.register_service('placement', 'placement', url + '/placement')

    def api_config(self, user, password):
        """A service user for the API (roles ``service`` and ``admin`` in
        project ``service``) and the configuration that puts the API
        behind this Keystone with it: ``[api]`` and
        ``[keystone_authtoken]``."""
        self.create_user(user, password, 'service',
                         roles=('service', 'admin'))
        return textwrap.dedent("""\
            [api]
            auth_strategy = keystone
            [keystone_authtoken]
            www_authenticate_uri = %(uri)s
            auth_url = %(uri)s
            auth_type = password
            username = %(user)s
            password = %(password)s
            project_name = service
            user_domain_name = Default
            project_domain_name = Default
            region_name = %(region)s
            service_token_roles = service
            service_token_roles_required = true
            """ % {'uri': self.auth_url, 'user': user, 'password': password,
                   'region': REGION})

    def openstack_env(self, user='admin', password=None, project='admin'):
        """The ``OS_*`` variables that point the openstack CLI here."""
        return {'OS_AUTH_URL': self.auth_url, 'OS_AUTH_TYPE': 'password',
                'OS_USERNAME': user,
                'OS_PASSWORD': password or self.admin_password,
                'OS_PROJECT_NAME': project,
                'OS_USER_DOMAIN_NAME': 'Default',
                'OS_PROJECT_DOMAIN_NAME': 'Default',
                'OS_REGION_NAME': REGION,
                'OS_IDENTITY_API_VERSION': '3'}


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tests.keystone',
        description='Run a test Keystone until interrupted.')
    parser.add_argument('--base-dir', default=None)
    parser.add_argument('--port', type=int, default=None)
    args = parser.parse_args(argv)
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    keystone = Keystone(args.base_dir, args.port).start()
    print(json.dumps({'auth_url': keystone.auth_url,
                      'admin_password': keystone.admin_password}),
          flush=True)
    try:
        signal.sigwait(stop_signals)
    finally:
        keystone.stop()


if __name__ == '__main__':
    main()

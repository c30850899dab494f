"""The files operators deploy with: systemd units and sample configs."""

import configparser
import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys

import pytest

from oslo_config import cfg
from oslo_config import generator
from oslo_policy import generator as policy_generator

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNITS = ROOT / 'etc' / 'systemd'
SAMPLE = ROOT / 'etc' / 'scheduler-split' / 'scheduler-split.conf.sample'
GENERATOR = (ROOT / 'etc' / 'scheduler-split' /
             'scheduler-split-config-generator.conf')
POLICY_SAMPLE = ROOT / 'etc' / 'scheduler-split' / 'policy.yaml.sample'
MULTI_CELL = ROOT / 'etc' / 'scheduler-split' / 'multi-cell'

# The production install's steps.
PRODUCTION = ROOT / 'doc' / 'source' / 'install' / 'production.md'
# The virtualenv the production steps install into.
VENV = '/opt/scheduler-split'

# What a template unit is instantiated with in the multi-cell example.
INSTANCES = {'scheduler-split-cell-conductor@.service': 'cell1',
             'scheduler-split-compute@.service': 'cell1-compute1'}


def _installed_copy(unit, tmp_path):
    """The unit as installed in this environment: the scripts the units
    name in the production venv live in this interpreter's bin
    directory."""
    bindir = os.path.dirname(sys.executable)
    name = unit.name
    if name in INSTANCES:
        name = name.replace('@.', '@%s.' % INSTANCES[name])
    text = unit.read_text().replace(VENV + '/bin/', bindir + '/')
    path = tmp_path / unit.name
    path.write_text(text)
    return path, name


@pytest.mark.skipif(shutil.which('systemd-analyze') is None,
                    reason='systemd-analyze is not installed')
@pytest.mark.parametrize('unit', sorted(UNITS.glob('*.service')),
                         ids=lambda p: p.name)
def test_systemd_unit_passes_systemd_analyze_verify(unit, tmp_path):
    path, name = _installed_copy(unit, tmp_path)
    target = path.parent / name
    if target != path:
        target.symlink_to(path)
    result = subprocess.run(['systemd-analyze', 'verify', str(target)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # verify accepts a unit with warnings; a clean unit has none of its own.
    own = [line for line in result.stderr.splitlines()
           if unit.name.split('@')[0] in line]
    assert own == []


def test_every_service_has_a_unit():
    names = {p.name for p in UNITS.glob('*.service')}
    assert names == {'scheduler-split-api.service',
                     'scheduler-split-conductor.service',
                     'scheduler-split-cell-conductor@.service',
                     'scheduler-split-scheduler.service',
                     'scheduler-split-compute@.service'}


def _production_steps():
    """The steps of the production install guide."""
    return PRODUCTION.read_text()


def _unit_settings(unit):
    """{key: value} of a unit's [Service] section (keys given once)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read_string(unit.read_text())
    return dict(parser['Service'])


def test_readme_installs_into_the_virtualenv_the_units_run_from():
    steps = _production_steps()
    venvs = re.findall(r'python3 -m venv (\S+)', steps)
    assert venvs == [VENV]
    # From a clone: the package is not on PyPI.
    assert re.search(r"%s/bin/pip install '/\S+\[deploy\]'" % VENV, steps)
    # No step installs into the system's Python.
    assert not re.search(r'^\s*pip3? install', steps, re.M)
    manage = re.search(r'M="(\S+) --config-file', steps).group(1)
    assert manage == VENV + '/bin/scheduler-split-manage'
    for unit in sorted(UNITS.glob('*.service')):
        binary = _unit_settings(unit)['ExecStart'].split()[0]
        assert binary.startswith(VENV + '/bin/'), (unit.name, binary)
        # The package (or its deploy extra) installs what the unit runs.
        name = os.path.basename(binary)
        assert name == 'gunicorn' or name in (ROOT / 'pyproject.toml') \
            .read_text(), (unit.name, name)


def test_units_run_as_the_readme_user_in_its_home():
    useradd = re.search(r'useradd ([^`]*?)\n\s*```',
                        _production_steps(), re.S).group(1)
    words = useradd.replace('\\\n', ' ').split()
    assert '--create-home' in words
    home = words[words.index('--home-dir') + 1]
    user = words[-1]
    for unit in sorted(UNITS.glob('*.service')):
        service = _unit_settings(unit)
        assert service['User'] == user, unit.name
        assert service['WorkingDirectory'] == home, unit.name
        # systemd creates /var/lib/<StateDirectory> for the user too.
        assert '/var/lib/' + service['StateDirectory'] == home, unit.name


def test_gunicorn_listens_where_the_environment_says(monkeypatch):
    conf = str(MULTI_CELL / 'gunicorn.conf.py')
    monkeypatch.delenv('SCHEDULER_SPLIT_API_BIND', raising=False)
    assert runpy.run_path(conf)['bind'] == '127.0.0.1:8774'
    monkeypatch.setenv('SCHEDULER_SPLIT_API_BIND', '0.0.0.0:18774')
    assert runpy.run_path(conf)['bind'] == '0.0.0.0:18774'


def test_sample_config_is_generated_from_the_options_in_code(tmp_path):
    fresh = tmp_path / 'sample.conf'
    conf = generator.cfg.ConfigOpts()
    generator.register_cli_opts(conf)
    conf(['--config-file', str(GENERATOR), '--output-file', str(fresh)])
    generator.generate(conf)
    assert fresh.read_text() == SAMPLE.read_text(), (
        'etc/scheduler-split/scheduler-split.conf.sample is stale: '
        'run tox -e genconfig')


# What the services import before they read their configuration: every
# command, the API application (and keystonemiddleware, which it loads
# with [api] auth_strategy = keystone). The option each of them registers,
# on the global CONF, is printed as "group option".
_REGISTERED = """
import warnings
warnings.simplefilter('ignore')
from oslo_config import cfg
from scheduler_split.cmd import all_in_one, api, compute, conductor
from scheduler_split.cmd import manage, scheduler
from scheduler_split.api import auth, wsgi
from keystonemiddleware import auth_token
fresh = cfg.ConfigOpts()
fresh([])
for name in sorted(set(cfg.CONF._opts) - set(fresh._opts)):
    print('DEFAULT', name)
for group in sorted(cfg.CONF._groups):
    for name in sorted(cfg.CONF._groups[group]._opts):
        print(group, name)
"""

# Groups a library registers at import but lists in none of its
# oslo.config.opts namespaces, so that no generator can document them.
_UNLISTED = {'oslo_messaging_metrics': 'oslo.messaging',
             'oslo_messaging_tracing': 'oslo.messaging'}


def _sample_options():
    """{section: [option names]} as the sample documents them, an option
    documented twice listed twice."""
    found, section = {}, None
    for line in SAMPLE.read_text().splitlines():
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1]
            found.setdefault(section, [])
        elif line.startswith('#') and ' = ' in line or line.endswith(' ='):
            name = line[1:].split(' =')[0]
            if name.isidentifier():
                found[section].append(name)
    return found


def test_sample_documents_every_option_the_services_register():
    result = subprocess.run([sys.executable, '-c', _REGISTERED],
                            capture_output=True, text=True, timeout=120,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    registered = [line.split() for line in result.stdout.splitlines()]
    groups = {group for group, name in registered}
    # Guard against a check that looks at nothing.
    assert {'DEFAULT', 'oslo_messaging_rabbit', 'keystone_authtoken',
            'api_database'} <= groups
    sample = _sample_options()
    from oslo_messaging import opts as messaging_opts
    listed = {group for group, opts in messaging_opts.list_opts()}
    missing = []
    for group, name in registered:
        if group in _UNLISTED:
            # Once the library lists them, they must be documented too.
            assert group not in listed, group
            continue
        if name not in sample.get(group, ()):
            missing.append('[%s] %s' % (group, name))
    assert missing == [], (
        'options the services register but the sample does not document: '
        'add their namespace to %s' % GENERATOR.name)


def test_sample_documents_each_option_once():
    twice = sorted('[%s] %s' % (section, name)
                   for section, names in _sample_options().items()
                   for name in set(names) if names.count(name) > 1)
    assert twice == []


def test_sample_documents_durable_queues_the_readme_asks_for():
    assert 'amqp_durable_queues' in _sample_options()[
        'oslo_messaging_rabbit']
    assert re.search(r'\[oslo_messaging_rabbit\]\s+amqp_durable_queues '
                     r'= true', PRODUCTION.read_text())


def _auth_plugin_options(section):
    """The options the keystoneauth plugin named by ``auth_type`` adds to
    a section (the sample cannot list every plugin's)."""
    if 'auth_type' not in section:
        return set()
    from keystoneauth1 import loading
    return {opt.dest for opt in loading.get_auth_plugin_conf_options(
        section['auth_type'])}


def test_policy_sample_is_generated_from_the_rules_in_code(tmp_path):
    fresh = tmp_path / 'policy.yaml.sample'
    policy_generator.generate_sample(
        args=['--namespace', 'scheduler_split', '--output-file', str(fresh)],
        conf=cfg.ConfigOpts())
    assert fresh.read_text() == POLICY_SAMPLE.read_text(), (
        'etc/scheduler-split/policy.yaml.sample is stale: '
        'run tox -e genpolicy')


def test_oslopolicy_tools_find_the_rules_and_an_override(tmp_path):
    """What an operator runs to see the rules in effect: the defaults in
    code merged with the policy.yaml the services find (here in
    ~/.scheduler-split/, searched like /etc/scheduler-split/)."""
    config_dir = tmp_path / '.scheduler-split'
    config_dir.mkdir()
    (config_dir / 'policy.yaml').write_text(
        '"os_compute_api:servers:create": "rule:context_is_admin"\n')
    tool = os.path.join(os.path.dirname(sys.executable),
                        'oslopolicy-policy-generator')
    result = subprocess.run(
        [tool, '--namespace', 'scheduler_split'], capture_output=True,
        text=True, cwd=tmp_path, timeout=60,
        env=dict(os.environ, HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert ('"os_compute_api:servers:create": "rule:context_is_admin"'
            in result.stdout)
    assert ('"os_compute_api:servers:delete": '
            '"rule:project_member_or_admin"' in result.stdout)


def test_multi_cell_example_uses_only_options_the_sample_documents():
    sample = configparser.ConfigParser(allow_no_value=True,
                                       interpolation=None)
    sample.read_string(
        '\n'.join(line[1:] if line.startswith('#') and '=' in line
                  else line for line in SAMPLE.read_text().splitlines()
                  if not line.startswith('# ') and line != '#'))
    for path in MULTI_CELL.rglob('*.conf'):
        example = configparser.ConfigParser(interpolation=None)
        example.read(path)
        for section in example.sections():
            assert sample.has_section(section) or section == 'DEFAULT', \
                '%s: unknown section [%s]' % (path.name, section)
            for option in example[section]:
                if option in example.defaults() and section != 'DEFAULT':
                    continue
                assert (sample.has_option(section, option) or
                        option in _auth_plugin_options(example[section])), \
                    '%s: [%s] %s is not an option' % (path.name, section,
                                                      option)
        for option in example.defaults():
            assert option in sample.defaults(), \
                '%s: [DEFAULT] %s is not an option' % (path.name, option)


def test_the_wheel_lists_every_package_of_the_source_tree():
    # pyproject.toml names its packages one by one: a package missing
    # there is missing from the wheel, and every install dies importing
    # it while this source tree works.
    import tomllib
    listed = set(tomllib.loads((ROOT / 'pyproject.toml').read_text())[
        'tool']['setuptools']['packages'])
    found = {'.'.join(path.parent.relative_to(ROOT).parts)
             for path in (ROOT / 'scheduler_split').rglob('__init__.py')}
    assert found - listed == set()

"""Every devstack function the plugin calls exists in the devstack it is
tested against. Fast: only reads files."""

import re
import shutil
import subprocess

import pytest

from tests.devstack import locate

DEVSTACK_DIR = locate.devstack_dir()
PLUGIN_FILES = [locate.PLUGIN_DIR / 'plugin.sh',
                locate.PLUGIN_DIR / 'settings',
                locate.PLUGIN_DIR / 'lib' / 'scheduler-split']

needs_devstack = pytest.mark.skipif(DEVSTACK_DIR is None,
                                    reason=locate.SKIP_REASON)

SHELL_WORDS = {
    'if', 'then', 'else', 'elif', 'fi', 'for', 'in', 'do', 'done', 'while',
    'until', 'case', 'esac', 'function', 'return', 'local', 'echo',
    'export', 'unset', 'source', '.', 'set', 'shift', 'true', 'false',
    'break', 'continue', 'exit', 'read', 'declare', 'printf', 'test',
    'eval', 'exec', 'cd', 'trap', 'wait', 'type', 'command', 'let', 'time',
}
# Programs, not functions, that the plugin runs.
PROGRAMS = {'sudo', 'rm', 'chmod', 'install', 'seq', 'wc', 'grep', 'sleep',
            'curl'}

_DEFINITION = re.compile(
    r'^\s*(?:function\s+([\w-]+)|([\w-]+)\s*\(\)\s*\{?)', re.M)
_SEPARATOR = re.compile(r'&&|\|\||[;|&]|\b(?:then|do|else)\b')
_LEADING = re.compile(r'^(?:(?:if|elif|while|until|!|time)\s+)+')


def defined_functions(paths):
    names = set()
    for path in paths:
        for match in _DEFINITION.finditer(path.read_text(errors='replace')):
            names.add(match.group(1) or match.group(2))
    return names


def devstack_functions(top):
    """What stack.sh has defined when it runs a plugin."""
    paths = [top / 'functions', top / 'functions-common', top / 'stackrc']
    paths += [p for p in (top / 'inc').iterdir() if p.is_file()]
    paths += [p for p in (top / 'lib').rglob('*') if p.is_file()]
    return defined_functions(paths)


def called_commands(text):
    """The words a bash script runs as commands (a close reading of the
    plugin's plain style: no heredocs, no case statements)."""
    text = re.sub(r'\\\n', ' ', text)
    text = re.sub(r'(^|\s)#.*', r'\1', text)
    text = re.sub(r"'[^']*'", "''", text)
    words = set(re.findall(r'\$\(\s*([\w./-]+)', text))
    text = re.sub(r'"[^"]*"', '""', text)
    for line in text.splitlines():
        if re.match(r'\s*function\s', line):
            continue
        for segment in _SEPARATOR.split(line.replace('$(', ';')):
            segment = _LEADING.sub('', segment.strip())
            word = segment.split(None, 1)[0].rstrip(')}') if segment else ''
            if not word or '=' in word or word[0] in '$[{}()"\'/':
                continue
            words.add(word)
    return words - SHELL_WORDS


def _unknown(commands, known):
    return sorted(c for c in commands
                  if c not in known and c not in PROGRAMS
                  and shutil.which(c) is None)


@needs_devstack
def test_every_function_the_plugin_calls_exists_in_devstack_or_the_plugin():
    known = devstack_functions(DEVSTACK_DIR) | defined_functions(PLUGIN_FILES)
    commands = set()
    for path in PLUGIN_FILES:
        commands |= called_commands(path.read_text())
    assert _unknown(commands, known) == []
    # The parse sees the devstack calls the plugin is built on.
    assert {'run_process', 'stop_process', 'iniset', 'iniset_rpc_backend',
            'rpc_backend_add_vhost', 'get_transport_url', 'recreate_database',
            'database_connection_url', 'get_or_create_user',
            'get_or_add_user_project_role', 'get_or_create_service',
            'get_or_create_endpoint',
            'configure_keystone_authtoken_middleware', 'setup_develop',
            'wait_for_service', 'die', 'enable_service',
            'is_service_enabled',
            'get_python_exec_prefix'} <= commands & known


@needs_devstack
def test_a_misspelt_devstack_function_is_reported():
    known = devstack_functions(DEVSTACK_DIR)
    script = ('if is_service_enabled keystone; then\n'
              '    get_or_create_usr foo "$(get_transport_ulr api)" \\\n'
              '        bar && run_proces baz\n'
              'fi\n')
    assert _unknown(called_commands(script), known) == [
        'get_or_create_usr', 'get_transport_ulr', 'run_proces']


def test_setup_cfg_gives_devstack_the_project_name():
    # inc/python's _setup_package_with_constraints_edit reads it this way.
    result = subprocess.run(
        ['awk', '/^name.*=/ {print $3}', str(locate.ROOT / 'setup.cfg')],
        capture_output=True, text=True, check=True)
    assert result.stdout.split() == ['scheduler-split']


def test_the_plugin_installs_what_the_deploy_extra_adds_but_the_driver():
    """devstack installs a project without extras: the plugin installs
    the deploy extra's other packages itself, at the same bounds, and
    leaves the database driver to devstack."""
    pyproject = (locate.ROOT / 'pyproject.toml').read_text()
    deploy = re.findall(r'"([^"]+)"', re.search(
        r'^deploy = \[(.*?)^\]', pyproject, re.M | re.S).group(1))
    drivers = [req for req in deploy
               if req.lower().startswith(('pymysql', 'psycopg2'))]
    assert len(drivers) == 2, deploy
    settings = (locate.PLUGIN_DIR / 'settings').read_text()
    installed = re.findall(
        r'^SCHEDULER_SPLIT_(?:GUNICORN|KEYSTONEMIDDLEWARE)=\$\{\w+:-(\S+)\}$',
        settings, re.M)
    assert sorted(installed) == sorted(set(deploy) - set(drivers))
    lib = (locate.PLUGIN_DIR / 'lib' / 'scheduler-split').read_text()
    install = lib[lib.index('function install_scheduler_split {'):]
    install = install[:install.index('\n}\n')]
    assert re.search(r'^\s*setup_develop \$SCHEDULER_SPLIT_DIR$', install,
                     re.M), install
    assert '"$SCHEDULER_SPLIT_GUNICORN"' in install
    assert '"$SCHEDULER_SPLIT_KEYSTONEMIDDLEWARE"' in install

"""The system packages the test tiers need are in bindep.txt, and
tools/install-test-packages installs the missing ones of a profile."""

import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _profiles():
    found = set()
    for line in (ROOT / 'bindep.txt').read_text().splitlines():
        match = re.match(r'\s*[^#\s]\S*\s+\[([^]]*)\]', line)
        if match:
            found.update(p for p in match.group(1).split()
                         if not p.startswith('platform:'))
    return found


def test_every_profile_a_tier_installs_is_in_bindep():
    asked = set()
    for path in (ROOT / 'tests').rglob('*.py'):
        asked.update(re.findall(r"install_packages\(([^)]*)\)",
                                path.read_text()))
    profiles = {p.strip(" '") for call in asked for p in call.split(',')}
    profiles.discard('*profiles')
    assert profiles, 'no tier installs packages'
    assert profiles <= _profiles(), profiles - _profiles()


@pytest.mark.skipif(shutil.which('dpkg-query') is None,
                    reason='needs dpkg-query (a Debian machine)')
def test_the_script_lists_the_missing_packages_of_a_profile(tmp_path):
    (tmp_path / 'tools').mkdir()
    shutil.copy(ROOT / 'tools' / 'install-test-packages', tmp_path / 'tools')
    (tmp_path / 'bindep.txt').write_text(
        '# installed on every Debian machine\n'
        'dpkg [platform:dpkg base]\n'
        'scheduler-split-no-such-package [platform:dpkg extra other]\n')
    script = str(tmp_path / 'tools' / 'install-test-packages')

    def listed(*profiles):
        return subprocess.run(['bash', script, '--list', *profiles],
                              capture_output=True, text=True,
                              check=True).stdout.split()

    assert listed('base') == []
    assert listed('other') == ['scheduler-split-no-such-package']
    assert listed() == ['scheduler-split-no-such-package']
    assert listed('none-such') == []

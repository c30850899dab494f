"""The tree passes the checks of the pre-commit configuration that read
the code: flake8 with the hacking checks, and codespell."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _tracked(*patterns):
    result = subprocess.run(['git', 'ls-files', *patterns], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    return result.stdout.split()


@pytest.fixture(scope='module')
def checkout():
    if not (ROOT / '.git').exists():
        pytest.skip('not a git checkout')


def test_flake8_with_the_hacking_checks_is_clean(checkout):
    result = subprocess.run(
        [sys.executable, '-m', 'flake8', *_tracked('*.py')], cwd=ROOT,
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    # The hacking checks ran: flake8 knows their codes.
    codes = subprocess.run([sys.executable, '-m', 'flake8', '--version'],
                           capture_output=True, text=True).stdout
    assert 'hacking' in codes


def test_codespell_is_clean(checkout):
    files = [f for f in _tracked() if not f.endswith('.sample') and
             (ROOT / f).is_file()]
    result = subprocess.run(
        [sys.executable, '-m', 'codespell_lib', *files], cwd=ROOT,
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr

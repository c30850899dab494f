"""The documentation and the release notes build, with warnings as
errors, as ``tox -e docs`` and ``tox -e releasenotes`` build them: the
generated references included (every option and policy rule of the
code, every console script's --help)."""

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docs

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _build(source, out):
    result = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-b',
         'html', str(ROOT / source), str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return out


def _text(page):
    return page.read_text()


def test_the_docs_build_without_a_warning(tmp_path):
    out = _build('doc/source', tmp_path / 'html')
    # The generated references hold what the code holds.
    config = _text(out / 'configuration' / 'config.html')
    assert 'retry_timeout' in config and 'fake_driver' in config
    policy = _text(out / 'configuration' / 'policy.html')
    assert 'placement:resource_providers:list' in policy
    assert 'os_compute_api:servers:create' in policy
    manage = _text(out / 'cli' / 'services.html')
    assert 'usage: scheduler-split-scheduler' in manage


def test_the_release_notes_build_without_a_warning(tmp_path):
    if not (ROOT / '.git').exists():
        pytest.skip('reno reads the notes from git: not a git checkout')
    out = _build('releasenotes/source', tmp_path / 'html')
    notes = _text(out / 'unreleased.html')
    assert 'Prelude' in notes

"""OpenStack Placement's own gabbi files, from its wheel on PyPI.

``gabbit_files()`` answers the directory holding the YAML files of
``placement/tests/functional/gabbits/`` of openstack-placement
``VERSION``. The wheel is fetched once with ``pip download --no-deps``
(the package registry is the only network this needs), checked against
``WHEEL_SHA256`` and kept in the cache directory
(``$SCHEDULER_SPLIT_GABBI_CACHE``, else ``.pytest_cache/gabbi`` of the
repository); the YAML files are read out of it with :mod:`zipfile`. Nothing
of openstack-placement is installed or imported.
"""

import glob
import hashlib
import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE = 'openstack-placement'
VERSION = '16.0.0'
WHEEL = 'openstack_placement-%s-py3-none-any.whl' % VERSION
WHEEL_SHA256 = ('3286f433f9c2aa365de847539a60ce99'
                'cd07fedc1cd782ffa4b2bcdc5eb30b55')
GABBITS = 'placement/tests/functional/gabbits/'
# What the wheel holds; fewer files means a wrong or damaged wheel.
FILE_COUNT = 79


def cache_dir():
    return os.environ.get('SCHEDULER_SPLIT_GABBI_CACHE',
                          os.path.join(ROOT, '.pytest_cache', 'gabbi'))


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 16), b''):
            digest.update(chunk)
    return digest.hexdigest()


def wheel(cache=None):
    """The wheel's path in the cache, downloaded when it is not there."""
    cache = cache or cache_dir()
    path = os.path.join(cache, WHEEL)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        result = subprocess.run(
            [sys.executable, '-m', 'pip', 'download', '--no-deps',
             '--only-binary=:all:', '--disable-pip-version-check',
             '--quiet', '--dest', cache, '%s==%s' % (PACKAGE, VERSION)],
            capture_output=True, text=True, timeout=600)
        if result.returncode != 0 or not os.path.exists(path):
            raise RuntimeError('pip download %s==%s failed:\n%s%s'
                               % (PACKAGE, VERSION, result.stdout,
                                  result.stderr))
    found = _sha256(path)
    if found != WHEEL_SHA256:
        os.remove(path)
        raise RuntimeError('%s has sha256 %s, not %s: removed, try again'
                           % (path, found, WHEEL_SHA256))
    return path


def gabbit_files(cache=None):
    """The directory of the gabbi YAML files, extracted on first use."""
    cache = cache or cache_dir()
    target = os.path.join(cache, '%s-%s' % (PACKAGE, VERSION), 'gabbits')
    if len(glob.glob(os.path.join(target, '*.yaml'))) != FILE_COUNT:
        with zipfile.ZipFile(wheel(cache)) as archive:
            names = [n for n in archive.namelist()
                     if n.startswith(GABBITS) and n.endswith('.yaml')]
            if len(names) != FILE_COUNT:
                raise RuntimeError('%s holds %d gabbi files, not %d'
                                   % (WHEEL, len(names), FILE_COUNT))
            os.makedirs(target, exist_ok=True)
            for name in names:
                dest = os.path.join(target, os.path.basename(name))
                with open(dest + '.new', 'wb') as f:
                    f.write(archive.read(name))
                os.replace(dest + '.new', dest)
    return target

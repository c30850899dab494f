import pytest

from tests.packaging import installs


@pytest.fixture(scope='session')
def wheel(tmp_path_factory):
    """The wheel of this tree, built once for every install of a run."""
    return installs.build_wheel(str(tmp_path_factory.mktemp('wheel')))

"""A database URL whose driver is not installed."""

import pytest

from scheduler_split.db import engines


def test_a_url_whose_driver_is_missing_names_the_extra_to_install():
    # mysqlclient (MySQLdb), SQLAlchemy's default MySQL driver, is not
    # among the project's dependencies.
    pytest.importorskip('pymysql')
    with pytest.raises(ImportError) as info:
        engines.get_engine('mysql+mysqldb://nova:secret@127.0.0.1/nova')
    message = str(info.value)
    assert "pip install 'scheduler-split[deploy]'" in message
    assert 'mysql+pymysql://' in message
    assert 'secret' not in message

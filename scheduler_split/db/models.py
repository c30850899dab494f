"""What the tables of the three databases (API, cell, one per cell, and
scheduler) share: the ``created_at`` and ``updated_at`` columns and the
clock that fills them. The tables themselves, each database's on its own
declarative base (so each has its own metadata and its own alembic tree
under ``migrations/``), are in ``api_models``, ``cell_models`` and
``scheduler_models``.
"""

import datetime

import sqlalchemy as sa

from scheduler_split.db import types


def now():
    """The current UTC time, naive, as the columns hold it."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Timestamps:
    created_at = sa.Column(types.DateTime(), default=now, nullable=False)
    updated_at = sa.Column(types.DateTime(), onupdate=now)

"""Column types whose MySQL/MariaDB form differs from the generic one.

Each is the generic type on SQLite and PostgreSQL; on MySQL it keeps
what the others give: microseconds in timestamps (MySQL's DATETIME
drops them, and the code orders reports, status changes and actions by
time) and room for serialized objects beyond TEXT's 64 KiB (a server's
128 metadata items alone can pass it).
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

_MYSQL = ('mysql', 'mariadb')


def DateTime():
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), *_MYSQL)


def MediumText():
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), *_MYSQL)

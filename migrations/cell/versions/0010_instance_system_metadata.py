"""instances: system metadata

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27

What the services keep of a server that its user does not set, as a
JSON object of strings (Nova's system metadata): a shelved server's
image, host and time, the password its image asked for. Nullable: rows
of the release before read as having none.
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('instances') as batch_op:
        batch_op.add_column(sa.Column('system_metadata', types.MediumText(),
                                      nullable=True))

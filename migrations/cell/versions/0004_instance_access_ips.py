"""instances: the access addresses a user gives a server

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

accessIPv4 and accessIPv6 of the compute API, as Nova stores them
(``access_ip_v4``, ``access_ip_v6``). Nullable: services of the release
before keep inserting instances without them while a rolling upgrade
runs; such an instance shows empty addresses.
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('instances') as batch_op:
        batch_op.add_column(sa.Column('access_ip_v4', sa.String(39),
                                      nullable=True))
        batch_op.add_column(sa.Column('access_ip_v6', sa.String(39),
                                      nullable=True))

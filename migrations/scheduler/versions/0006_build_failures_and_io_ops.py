"""what computes count of their builds: consecutive failures and builds
in flight

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('resource_providers') as batch:
        batch.add_column(sa.Column('failed_builds', sa.Integer(),
                                   nullable=False, server_default='0'))
        batch.add_column(sa.Column('num_io_ops', sa.Integer(),
                                   nullable=False, server_default='0'))


def downgrade():
    with op.batch_alter_table('resource_providers') as batch:
        batch.drop_column('num_io_ops')
        batch.drop_column('failed_builds')

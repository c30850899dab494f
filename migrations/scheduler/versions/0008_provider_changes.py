"""when and by which scheduler each resource provider last changed, and
which scheduler wrote its last report's time

The periodic reload of the host states reads only the providers another
scheduler changed since its last one, through the index on
``changed_at``, and the report times other schedulers wrote.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from alembic import op
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('resource_providers') as batch:
        batch.add_column(sa.Column('reported_by', sa.String(36),
                                   nullable=True))
        batch.add_column(sa.Column('changed_by', sa.String(36),
                                   nullable=True))
        batch.add_column(sa.Column('changed_at', types.DateTime(),
                                   nullable=True))
    op.create_index('resource_providers_changed_at_idx',
                    'resource_providers', ['changed_at'])


def downgrade():
    op.drop_index('resource_providers_changed_at_idx',
                  table_name='resource_providers')
    with op.batch_alter_table('resource_providers') as batch:
        batch.drop_column('changed_at')
        batch.drop_column('changed_by')
        batch.drop_column('reported_by')

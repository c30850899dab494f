"""indexes for the hosts the operator disabled or forced down

Every select re-reads the status of those hosts; with the indexes that
read stays a lookup of the few such rows, whatever the number of hosts.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('resource_providers_service_disabled_idx',
                    'resource_providers', ['service_disabled'])
    op.create_index('resource_providers_forced_down_idx',
                    'resource_providers', ['forced_down'])


def downgrade():
    op.drop_index('resource_providers_forced_down_idx',
                  table_name='resource_providers')
    op.drop_index('resource_providers_service_disabled_idx',
                  table_name='resource_providers')

"""operator status and hypervisor details of compute nodes; scheduler
service uuids

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from alembic import op
from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split.db import types

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('resource_providers') as batch:
        batch.add_column(sa.Column('service_disabled', sa.Boolean(),
                                   nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column('disabled_reason', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('forced_down', sa.Boolean(),
                                   nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column('status_updated_at', types.DateTime(),
                                   nullable=True))
        batch.add_column(sa.Column('host_ip', sa.String(39), nullable=True))
        batch.add_column(sa.Column('hypervisor_type', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('hypervisor_version', sa.Integer(),
                                   nullable=True))
        batch.add_column(sa.Column('cpu_arch', sa.String(32),
                                   nullable=True))
        batch.add_column(sa.Column('cpu_info', sa.Text(), nullable=True))
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('uuid', sa.String(36), nullable=True))
    services = sa.table('services', sa.column('id', sa.Integer),
                        sa.column('uuid', sa.String))
    conn = op.get_bind()
    for (service_id,) in conn.execute(sa.select(services.c.id)).all():
        conn.execute(services.update().where(services.c.id == service_id)
                     .values(uuid=uuidutils.generate_uuid()))
    op.create_index('services_uuid_idx', 'services', ['uuid'], unique=True)

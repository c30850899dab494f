"""services: a uuid (the id of the compute API from 2.53) and forced_down

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

Existing records get a uuid here; services of the release before create
records without one, which the API gives one the first time it lists
them.
"""

from alembic import op
from oslo_utils import uuidutils
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('uuid', sa.String(36), nullable=True))
        batch.add_column(sa.Column('forced_down', sa.Boolean(),
                                   nullable=False, server_default=sa.false()))
    services = sa.table('services', sa.column('id', sa.Integer),
                        sa.column('uuid', sa.String))
    conn = op.get_bind()
    for (service_id,) in conn.execute(sa.select(services.c.id)).all():
        conn.execute(services.update().where(services.c.id == service_id)
                     .values(uuid=uuidutils.generate_uuid()))
    op.create_index('services_uuid_idx', 'services', ['uuid'], unique=True)

"""service versions: what the code behind each service record understands

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

Nullable: services of the release before keep inserting records without
it while a rolling upgrade runs; such a record reads as version 0.
"""

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('services') as batch_op:
        batch_op.add_column(sa.Column('version', sa.Integer(),
                                      nullable=True))

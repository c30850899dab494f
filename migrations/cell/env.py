from alembic import context

from scheduler_split.db import migration

migration.run_env(context, 'cell')

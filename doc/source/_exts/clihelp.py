"""``.. cli-help:: MODULE [SUBCOMMAND ...]``: what ``--help`` of the
console script whose ``main()`` is in ``MODULE`` prints, run as the docs
are built, so that the reference never drifts from the code."""

import os
import subprocess
import sys

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


class CliHelp(SphinxDirective):
    required_arguments = 1
    optional_arguments = 4

    def run(self):
        module, *subcommands = self.arguments
        program = 'scheduler-split-' + module.rsplit('.', 1)[1].replace(
            '_', '-')
        code = ('import sys; sys.argv = %r; from %s import main; main()'
                % ([program] + subcommands + ['--help'], module))
        result = subprocess.run(
            [sys.executable, '-c', code], capture_output=True, text=True,
            timeout=120, env=dict(os.environ, COLUMNS='79'))
        if result.returncode != 0:
            raise self.error('%s %s --help failed: %s' % (
                program, ' '.join(subcommands), result.stderr))
        block = nodes.literal_block(result.stdout, result.stdout)
        block['language'] = 'text'
        return [block]


def setup(app):
    app.add_directive('cli-help', CliHelp)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}

"""Sphinx configuration of the scheduler-split documentation."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '_exts'))

project = 'scheduler-split'
copyright = 'the scheduler-split authors'
author = 'the scheduler-split authors'

extensions = [
    # Markdown pages beside reStructuredText ones.
    'myst_parser',
    # The configuration and policy references, generated from the code.
    'oslo_config.sphinxext',
    'oslo_policy.sphinxext',
    # The --help of each console script, run as the docs build.
    'clihelp',
]

source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build']

# Sphinx's own theme: it needs nothing beyond Sphinx, and nothing of
# OpenStack's infrastructure (openstackdocstheme reads the project's
# repository and bug tracker names from it).
html_theme = 'alabaster'
html_theme_options = {'description': 'A compute control plane with a '
                      'split scheduler', 'page_width': '1100px'}
html_title = 'scheduler-split'

myst_heading_anchors = 3
myst_enable_extensions = ['deflist']
# The pages name files of the repository (etc/..., tests/...) in code,
# never as links; a link that goes nowhere is an error.
nitpicky = False

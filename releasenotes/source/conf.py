"""Sphinx configuration of the scheduler-split release notes."""

project = 'scheduler-split release notes'
copyright = 'the scheduler-split authors'
author = 'the scheduler-split authors'

extensions = ['reno.sphinxext']
root_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'

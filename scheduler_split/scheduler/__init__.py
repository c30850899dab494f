"""The scheduler service.

Code outside this package talks to the scheduler only through
:mod:`scheduler_split.scheduler.client`; a test enforces that.
"""

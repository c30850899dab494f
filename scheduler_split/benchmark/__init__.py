"""How fast the system boots servers, how the scheduler alone scales with
its hosts, and how fast the server list pages.

``scheduler-split-bench`` (:mod:`scheduler_split.cmd.bench`) runs these:

- :mod:`.boot`: boots through the compute API, timed server by server;
  it speaks only HTTP to a compute endpoint (:mod:`.api_client`), as a
  user's client does.
- :mod:`.scheduler_only`: the scheduler alone, spoken to through the
  scheduler library on the buses, as the conductors and computes do;
  :mod:`.report_stream`, the steady stream of reports it times selects
  under, from a process of its own.
- :mod:`.system`: the all-in-one a run starts when it is given no
  endpoint.
- :mod:`.cpu`: the CPU time of the system's processes, read from
  ``/proc``, which a boot run measures.
- :mod:`.stats` and :mod:`.tables`: the figures of a report and the
  tables they are printed in; :mod:`.plot`, a boot run drawn over time
  and a scheduler run over the number of hosts.
- :mod:`.base`: what stops a run, and the progress it shows.
"""

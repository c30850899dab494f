"""The reports of the runs as tables, as ``scheduler-split-bench``
prints them without ``--json``."""


def format_boot(report):
    """The report of a boot run as a table."""
    where = (report['endpoint'] if report['endpoint'] else
             'an all-in-one of %d hosts in %d cells'
             % (report['hosts'], report['cells']))
    lines = [
        'Boot: %d servers of %s (%s), %d client thread%s, against %s'
        % (report['servers'], report['flavor'], report['image'],
           report['concurrency'], 's' if report['concurrency'] > 1 else '',
           where),
        '',
        '  posted          %8d   (failed POSTs: %d)'
        % (report['posted'], report['failed_posts']),
        '  ACTIVE          %8d' % report['active'],
        '  ERROR           %8d' % report['error'],
        '  still BUILD     %8d%s' % (report['still_building'],
                                     '   (timed out)' if report['timed_out']
                                     else ''),
        '  reschedules     %8d   (servers rescheduled: %d)'
        % (report['reschedules'], report['rescheduled_servers']),
    ]
    if report['boots_per_s'] is not None:
        lines.append('  boots/s         %8.2f   (%d ACTIVE in %.2f s, '
                     'first POST to last ACTIVE)'
                     % (report['boots_per_s'], report['active'],
                        report['duration_s']))
    else:
        lines.append('  boots/s              n/a   (no server ACTIVE)')
    lines += ['', '  %-16s%10s%10s%10s' % ('', 'p50', 'p95', 'p99')]
    for label, key, fmt in (('POST latency ms', 'post_latency_ms', '%10.1f'),
                            ('time to ACTIVE s', 'time_to_active_s',
                             '%10.3f')):
        values = report[key]
        lines.append('  %-16s' % label + ''.join(
            fmt % values[p] if values[p] is not None else '%10s' % 'n/a'
            for p in ('p50', 'p95', 'p99')))
    for title, key in (('ERROR reasons', 'error_reasons'),
                       ('failed POSTs', 'failed_post_reasons')):
        if report[key]:
            lines += ['', '  %s:' % title]
            lines += ['  %6d  %s' % (count, reason)
                      for reason, count in report[key].items()]
    if report['failed_polls']:
        lines += ['', '  (%d looks at the server list failed and were '
                      'made again)' % report['failed_polls']]
    if report['servers_without_actions_read']:
        lines += ['', '  (the actions of %d servers could not be read: '
                      'their reschedules are not counted)'
                  % report['servers_without_actions_read']]
    return '\n'.join(lines)


def format_scheduler(report):
    """The report of a scheduler run as a table, a row per size."""
    def number(value, fmt):
        return fmt % value if value is not None else 'n/a'

    header = ('hosts', 'reports/s', 'lost', 'unchanged/s', 'lost',
              'select p50 ms', 'p95 ms', 'p99 ms', 'RSS KiB/host',
              'untrimmed')
    rows = [header]
    for row in report['rows']:
        rows.append((
            str(row['hosts']), number(row['reports_per_s'], '%.1f'),
            str(row['reports_lost']),
            number(row['unchanged_reports_per_s'], '%.1f'),
            str(row['unchanged_reports_lost']),
            number(row['select_ms']['p50'], '%.2f'),
            number(row['select_ms']['p95'], '%.2f'),
            number(row['select_ms']['p99'], '%.2f'),
            number(row['rss_kib_per_host'], '%.2f'),
            number(row.get('rss_kib_per_host_untrimmed'), '%.2f')))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ['Scheduler alone: %d cells, %d selects of one %s each '
             '(%d alternates), per size'
             % (report['cells'], report['selects'], report['flavor'],
                report['num_alternates']), '']
    lines += ['  ' + '  '.join(cell.rjust(width)
                               for cell, width in zip(r, widths))
              for r in rows]
    lines += ['', '  RSS KiB/host: growth from before the first report to '
              'after the first select, once the memory freed since is '
              'back with the system; untrimmed: before that']
    failures = sum(row['select_failures'] for row in report['rows'])
    if failures:
        lines += ['', '  %d selects found no valid host' % failures]
    return '\n'.join(lines)

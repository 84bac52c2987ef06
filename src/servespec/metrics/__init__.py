"""Live engine metrics and monitoring configuration, from the metric names of each engine release.

``facts``: the metric names a release serves (``engines/<unit>/metrics.json``, built by
scripts/catalog/metrics.py from that release's source) and the metric each role maps to;
``view``: a ``/metrics`` text parsed with prometheus-client into per-role numbers between two looks;
``live``: reading each host's endpoint for ``deploy status --metrics``;
``monitoring``: the Prometheus scrape configuration and Grafana dashboards of ``deploy render --monitoring``.
Nothing here is imported by ``deploy validate``.
"""

"""What servespec knows without touching a host: GPUs, model architectures, engine options.

Each catalog is a data file under ``data/`` recording its upstream sources, plus a small
typed loader here. Nothing in this package reaches the network.
"""

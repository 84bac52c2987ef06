"""What servespec knows without touching a host: GPU and model catalogs, model facts, each deployment's ``Resolved``.

The catalogs are data files under ``data/`` (GPUs, model architectures), each recording its
upstream sources, read by a small typed loader here; the engines' option and release catalogs
live with the engines (:mod:`servespec.engines`). A model's facts come from its local files,
the lock file or the catalog (:mod:`~servespec.knowledge.sources`) and, only where the command
allows it (``deploy lock``, ``--hub``), from the Hugging Face Hub (:mod:`~servespec.knowledge.hub`),
the one module here that reaches the network.
"""

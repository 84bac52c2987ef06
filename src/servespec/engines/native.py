"""What a host-native engine unit (a systemd service on the host, not a container) must never be handed.

A container engine's environment stays inside its container; a host-native unit's environment
reaches processes on the host itself. Variables that make the dynamic loader, a language runtime or
a shell load code of the spec author's choosing (``LD_PRELOAD``, ``NODE_OPTIONS``, ``PYTHONPATH``,
a ``PATH`` or ``HOME`` that points elsewhere) would turn "run lms with these arguments" into "run
any program on the host". ENG008 reports them where the spec sets them and the renderer refuses them.
"""

from __future__ import annotations

INJECTION_ENV = frozenset(
    {
        "PATH", "HOME", "SHELL", "ENV", "BASH_ENV", "IFS",
        "NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS", "NODE_REPL_EXTERNAL_MODULE",
        "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
        "PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYLIB", "RUBYOPT", "GCONV_PATH", "HOSTALIASES", "RESOLV_HOST_CONF",
        "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "OPENSSL_CONF", "OPENSSL_ENGINES", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
    }
)  # fmt: skip
"""Variables that choose which code, libraries, configuration or home folder a process loads."""
INJECTION_PREFIXES = ("LD_", "DYLD_", "MALLOC_", "PYTHON", "NODE_", "NPM_CONFIG_", "ELECTRON_")
"""Families of such variables: the dynamic loader's (``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``LD_AUDIT``), the
allocator's, Python's and Node's (lms is a Node program)."""


def injects_code(name: str) -> bool:
    """Whether an environment variable of a host-native unit could make it load code or files it should not."""
    upper = name.upper()
    return upper in INJECTION_ENV or upper.startswith(INJECTION_PREFIXES)

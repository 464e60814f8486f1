"""The project's exception hierarchy; catch ``JEvalError`` to catch them all."""


class JEvalError(Exception):
    """Base class of every error jeval_ray raises on purpose."""


class ConfigError(JEvalError, ValueError):
    """A configuration, knob or command-line value is invalid. CLIs exit with code 2."""


class UnknownTaskError(ConfigError):
    """A task id that is not in the catalogue."""


class TaskNotAvailableError(ConfigError):
    """A catalogued task whose world generator has not landed yet."""

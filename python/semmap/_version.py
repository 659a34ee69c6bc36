"""semmap's version, readable without the compiled core (the manifest writer
records it). The wheel's tests check it against the core's and the
distribution's."""

__version__ = "2.0.0"

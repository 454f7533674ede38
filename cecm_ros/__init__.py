"""Capability estimation (CE-CM) and capability-aware joint planning for human-robot teams."""

# The generated interface modules (cecm_ros.msg/srv/action) exist only in the
# install space; let this package span both when the source tree shadows it
# (e.g. `python -c ...` run from the repository root).
__path__ = __import__('pkgutil').extend_path(__path__, __name__)

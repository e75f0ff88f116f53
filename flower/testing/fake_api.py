"""The scripted Messages API on loopback that tests point the real SDK at.

It lives in :mod:`flower.demo.scripted_api`, which ``flower demo`` uses too; this
module is its name for tests and plugin authors.
"""

from flower.demo.scripted_api import *  # noqa: F403
from flower.demo.scripted_api import __all__ as __all__

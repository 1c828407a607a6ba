"""The package logger. omnisync never prints; turn logging on to see its warnings."""

import logging

logger = logging.getLogger("omnisync")
logger.addHandler(logging.NullHandler())

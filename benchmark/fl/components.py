"""Imports every module that registers server rules, client terms, codecs and presets."""

from benchmark.fl import codecs, servers, terms  # noqa: F401
from benchmark.fl import adam, agm, decorr, dyn, fedcm, feddc, logit_terms, mlb, moon, qsgd, scaffold  # noqa: F401
from benchmark.fl import fedac  # noqa: F401

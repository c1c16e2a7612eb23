"""Cohort lifecycle, burn, binding, audit and import.

Pure functions over JSON values: ``definition`` (projection and digests), ``lifecycle``
(stages, immutability, freeze gate), ``burn`` (burn notices), ``binding`` (successor
gate, cohort bindings), ``audit`` (audit reports). The ledger is read only through
``lookup.CohortLookup``; see docs/COHORTS.md.
"""

"""Cohort lifecycle, burn, binding, audit and import."""

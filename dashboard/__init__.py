"""Isoscope dashboard: a thin Streamlit layer over ``core``."""

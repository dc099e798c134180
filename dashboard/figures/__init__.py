"""Figures and display tables, one module per page (or per figure several pages share).

Pure functions of their arguments: no Streamlit, no page globals, no caches (the services cache what is
expensive). Pages read widgets, call services, pass the results here and show what comes back; the tests
call these functions directly (tests/dashboard/figures).
"""

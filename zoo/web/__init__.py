"""`zoo ui` and `zoo report`: the store seen in a browser.

``views`` builds each view's data from the store (read-only, through the same functions as
`zoo runs`, `zoo compare` and `zoo show`); ``app`` serves them as a Starlette application
with Jinja2 templates; ``report`` writes them into one self-contained HTML file. Charts are
drawn by plotly.js, shipped inside the ``plotly`` package. Nothing here is imported unless
one of these two commands runs.
"""

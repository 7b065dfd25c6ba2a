"""The certification service: HTTP API (app, routes, state), SQLite archive and job queue
(store), workers that sign (worker), limited child processes that compute (sandbox, tasks),
bearer tokens (auth).

    sigmacert serve --tokens tokens.txt      # docs/service.md
"""

"""The certification service: HTTP API (app), SQLite archive and job queue (store), worker
processes (worker), bearer tokens (auth), exact sigma and verification pools (compute).

    sigmacert serve --tokens tokens.txt      # docs/service.md
"""

"""The PostgreSQL journal store (``--journal-store postgresql://…``; the extra ``postgres``).

Nothing here is imported unless such a URL is used: ``psycopg`` is imported by these modules
at their top. ``schema.py`` holds the tables and the connection helper, ``lease.py`` the
ownership of a session (advisory lock, fencing epoch, renewal), ``sink.py`` the writer's
``Sink`` (one transaction per barrier), ``store.py`` the ``JournalStore``.
"""

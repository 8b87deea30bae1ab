"""One owner of a process's life, for stdio and ``serve --listen`` alike.

``setup.py`` checks the configuration before anything is served (light: step 1 of
``launch.py`` imports it); ``life.py`` owns the signals, the shutdown deadline and the forced
exit over every connection; ``serving.py`` serves one connection's sessions to their end.
"""

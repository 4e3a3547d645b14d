"""Configuration turned into exact commands and back: ``tc`` command lines
(``render.py``), the link emulator's JSON (``emuconf.py``), mahimahi's command
(``mahimahi.py``), and ``tc -s`` statistics read into records (``tcparse.py``). Pure
functions: nothing here runs a command."""

"""The results on disk: job folders, their files read and written typed, locks, heartbeats, the suite views and
the migration from the layout before the job store. Imports nothing of run/."""

"""The embedded store, in one index folder and SQLite files (the default; its twin is core/postgres/):
pages.py the page store, page_search.py a question's search, page_builds.py a build, index_folder.py
the folder's files and snapshots, snapshot_format.py a snapshot in memory, disk.py crash-safe writes
and the build lock, recovery.py building over damage, threads.py thread memory and claims."""

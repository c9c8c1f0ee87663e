"""A local cluster on one machine: a real ZooKeeper and kafkalite brokers as child processes.

``kafkalite cluster up``, ``kafkalite console`` and ``kafkalite tour`` run on it, and so do the
tests (``kafkalite.testing``'s pytest plugin) and the benchmarks:

- ``cluster``: ``LocalCluster`` -- ``python -m kafkalite broker`` processes on free ports, with
  kill/pause/stop/restart; ``request`` sends one request to a broker; ``wait_until``.
- ``zookeeper``: ``ZooKeeperServer``, ``start_zookeeper`` (an existing server, Docker or the local
  install); ``zookeeper_install``, ``zookeeper_process``, ``zookeeper_container``,
  ``zookeeper_ensemble`` are its parts.
- ``procs``: children that die with their launcher, pids checked before they are signalled;
  ``ports``: free loopback ports; ``docker_engine``: whether Docker may and can be used.

Nothing here imports pytest or ``kafkalite.testing``.
"""

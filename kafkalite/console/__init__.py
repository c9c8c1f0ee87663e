"""The live web console: the classic architecture drawn as it moves (``kafkalite console``).

- :mod:`.zk_watcher` follows the znodes with watches and feeds :mod:`.model` (pure), whose updates
  come back as :class:`~.model.Change` values worded by :mod:`.sentences` (pure);
- :mod:`.sampler` / :mod:`.broker_reader` ask the brokers for offsets and coordinator groups;
- :mod:`.views` shapes the JSON API, :mod:`.hub` and :mod:`.sse` stream the events,
  :mod:`.web` serves them with the page in ``static/`` (package data), :mod:`.service` wires it.
"""

"""Neutral data types shared by every layer, importing nothing else of ``htam_core``.

* :mod:`~htam_core.types.profile`: :class:`~htam_core.types.profile.Profile` (the state HTAM ranks from,
  the ``htam profile --json`` contract), :class:`~htam_core.types.profile.TimeStats`,
  :class:`~htam_core.types.profile.Bottleneck` and :data:`~htam_core.types.profile.BOTTLENECK_CLASSES`;
* :mod:`~htam_core.types.errors`: :class:`~htam_core.types.errors.ProfileError`, the one-line failure of a
  profile (static or measured) that the CLI and the editor show.
* :mod:`~htam_core.types.files`: :func:`~htam_core.types.files.read_data_text`, a data file read the same
  whether stored plain or gzip-compressed (the committed result tables).

They sit below ``runtime``, ``harness``, ``verify``, ``measure`` and ``profile`` so that the measurement
layers can build a profile and the static profiler can fill one without importing each other.
"""

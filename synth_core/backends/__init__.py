"""Counting backends: where the marginals of the private data are counted.

Counting marginals is the only step of every mechanism that reads records.
The engine reads the private data through the small interface
:class:`MarginalCounter` (``n``, ``size_of``, ``cells``, ``marginal``,
``marginals``, ``stats``); three backends implement it and return identical
counts for the same data and schema:

* ``memory`` -- :class:`~synth_core.marginals.CodedTable`, numpy arrays of
  codes in this process (the default);
* ``duckdb`` -- :class:`~synth_core.backends.duckdb_backend.DuckDBTable`,
  a Parquet or CSV file counted by DuckDB without loading it into pandas;
* ``spark`` -- :class:`~synth_core.backends.spark_backend.SparkTable`, a
  file or a Spark DataFrame counted by Apache Spark (local or a cluster).

A run reaches them through one input path,
:func:`synth_core.backends.inputs.prepare_inputs`, which imports the chosen
backend's module by name (the memory path imports neither DuckDB nor Spark)
and asks it only for what the :class:`Backend` contract
(:mod:`synth_core.backends.base`) states; the public rows and columns are
handled there once for all three.

The engine backends encode raw values with SQL generated from the schema's
own column objects (:mod:`synth_core.backends.encoding`), and count a batch
of cliques per pass (``GROUP BY GROUPING SETS``). Marginals of subsets of a
counted clique are derived from it without another pass. Public rows flagged
by a column of the private file (``public_flag``) are split off in the
engine: the counter counts the rows whose flag reads false, and the (small)
flagged rows are read as the public table. Conditional generation needs the
private records' own values of the public columns:
:meth:`CountingBackend.record_values` loads those columns only.
"""

from .base import Backend, CountStats, FlagSummary, MarginalCounter
from .counting import CountingBackend, EngineBackend, prefetch
from .inputs import BACKENDS, make_backend, open_backend, open_rows, prepare_inputs

__all__ = ["BACKENDS", "Backend", "CountStats", "CountingBackend", "EngineBackend",
           "FlagSummary", "MarginalCounter", "make_backend", "open_backend", "open_rows",
           "prefetch", "prepare_inputs"]

"""Spark backend: count marginals where a Spark cluster holds the data.

The source is a Spark DataFrame or a Parquet/CSV path that Spark reads
(local files, HDFS, S3, ... whatever the session can read). Every schema
column is encoded with a Spark SQL expression generated from the schema
(:mod:`synth_core.backends.encoding`, the same generator as DuckDB's); the
codes are persisted (memory, then disk) by the first action, which also
counts the rows and checks that every value fits. Each batch of cliques is
one ``GROUP BY GROUPING SETS`` job; only the counts (at most the cells of the
batch's cliques) come back to the driver. Model fitting stays local.

Sessions: pass ``spark=`` (any SparkSession: local, standalone, YARN,
Kubernetes, Spark Connect), or let :func:`spark_session` reuse the active
session or start one with master ``$SYNTH_SPARK_MASTER`` (default
``local[*]``).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataError
from ..schema import Schema
from ..tables import CSV_SUFFIXES, PARQUET_SUFFIXES, _clean_cells
from .base import FlagSummary
from .counting import CountingBackend, EngineBackend, grouping_id, parquet_column_bytes
from .encoding import (FLAG_FALSE, FLAG_INVALID, FLAG_TRUE, NOT_IN_SCHEMA,
                       SPARK, code_expression, code_type, flag_expression)

_TYPE_BYTES = {"TINYINT": 1, "SMALLINT": 2, "INTEGER": 4}


def _import_pyspark():
    try:
        importlib.import_module("pyspark")
    except ImportError:  # an optional extra: pip install -e ".[spark]"
        raise ConfigError("the spark backend needs the 'pyspark' package (an optional extra).",
                          hint='Install it with: pip install -e ".[spark]" (Java 17 is needed too).'
                          ) from None


def spark_session(master: str | None = None, **conf):
    """The active SparkSession, or a new one (master ``$SYNTH_SPARK_MASTER`` or local)."""
    _import_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    builder = (SparkSession.builder.appName("synth-workbench")
               .master(master or os.environ.get("SYNTH_SPARK_MASTER", "local[*]"))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def spark_kind(data_type) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.BooleanType):
        return "boolean"
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integer"
    if isinstance(data_type, (T.FloatType, T.DoubleType, T.DecimalType)):
        return "float"
    return "string"


class SparkTable(CountingBackend):
    """The private data as a Spark DataFrame (or a file Spark reads).

    Args:
        source: a ``pyspark.sql.DataFrame``, or a path (.parquet/.pq file or
            directory, .csv/.csv.gz) readable by the session.
        schema: the declared (or public) schema; its encoding is pushed into Spark SQL.
        spark: the SparkSession (default: :func:`spark_session`).
        persist: keep the codes (MEMORY_AND_DISK) after the first pass (default).
        batch_size: cliques per grouping-sets job.
        public_flag: a column whose true rows are public: only the rows where
            it reads false are counted (check it with :meth:`SparkFile.flag_summary`).
    """

    batch_size = 64
    backend = "spark"

    def __init__(self, source, schema: Schema, *, name: str | None = None, spark=None,
                 persist: bool = True, batch_size: int | None = None,
                 public_flag: str | None = None):
        _import_pyspark()
        from pyspark import StorageLevel
        from pyspark.sql import DataFrame, functions as F

        if isinstance(source, DataFrame):
            frame, label, self._file_bytes = source, name or "Spark DataFrame", None
            spark = source.sparkSession
        else:
            spark = spark or spark_session()
            label = name or Path(str(source)).name
            frame, self._file_bytes = self._read(spark, str(source), label)
        super().__init__(schema, name=label, batch_size=batch_size)
        self.spark = spark
        by_name = {f.name.strip(): f for f in frame.schema.fields}
        self._require_columns(by_name)
        self._raw = {c: by_name[c].name for c in self.columns}
        self._file_frame = frame
        self.public_flag = public_flag
        self._flag_raw = None
        if public_flag is not None:
            if public_flag not in by_name:
                raise DataError(f"the public-rows flag column '{public_flag}' is not in "
                                f"'{label}'.", hint="Its columns are: "
                                + ", ".join(repr(n) for n in by_name) + ".", column=public_flag)
            if public_flag in self.columns:
                raise DataError(f"the public-rows flag column '{public_flag}' is also a schema "
                                "column.", hint="Remove it from the schema.", column=public_flag)
            field = by_name[public_flag]
            self._flag_raw = field.name
            test = flag_expression(SPARK.ident(field.name), spark_kind(field.dataType))
            frame = frame.where(F.expr(f"{test} = {FLAG_FALSE}"))
        self._source = frame
        self._exprs = {c.name: code_expression(c, SPARK.ident(self._raw[c.name]),
                                               spark_kind(by_name[c.name].dataType), SPARK)
                       for c in schema.columns}
        self._types = {c.name: code_type(c.size) for c in schema.columns}
        codes = frame.select([F.expr(e).cast(self._types[c]).alias(c)
                              for c, e in self._exprs.items()])
        self.persisted = persist
        if persist:
            codes = codes.persist(StorageLevel.MEMORY_AND_DISK)
        self._codes = codes
        self._view = f"synth_codes_{id(self):x}"
        codes.createOrReplaceTempView(self._view)

    @staticmethod
    def _read(spark, path: str, label: str):
        lower = path.lower().rstrip("/")
        local = Path(path)
        if "://" not in path and not local.exists():
            raise DataError(f"file '{label}' not found.", path=path)
        if lower.endswith(CSV_SUFFIXES):
            frame = spark.read.csv(path, header=True, inferSchema=True,
                                   ignoreLeadingWhiteSpace=True, ignoreTrailingWhiteSpace=True)
            return frame, (local.stat().st_size if local.exists() else None)
        if lower.endswith(PARQUET_SUFFIXES) or local.is_dir():
            frame = spark.read.parquet(path)
            files = ([local] if local.is_file() else sorted(local.rglob("*.parquet"))
                     if local.exists() else [])
            return frame, (parquet_column_bytes(files) if files else None)
        raise DataError(f"cannot read '{label}' with Spark: unsupported file type.",
                        hint=f"Supported: {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} "
                             "or a Parquet directory.", path=path)

    def _file_scan_bytes(self, columns) -> int:
        if self._file_bytes is None:
            return 0  # unknown (a DataFrame or a remote path)
        if isinstance(self._file_bytes, int):
            return self._file_bytes
        raw = [self._raw[c] for c in columns] + ([self._flag_raw] if self._flag_raw else [])
        return int(sum(self._file_bytes.get(r, 0) for r in raw))

    def record_values(self, columns: Sequence[str]) -> pd.DataFrame:
        """The raw values of ``columns`` of every counted record (collected to
        the driver: n x len(columns) values), in the DataFrame's order."""
        return SparkFile(self._file_frame, name=self.name).rows(
            list(columns), flag=self.public_flag,
            flagged=False if self.public_flag else None)

    def _sql(self, text: str):
        self.stats.queries += 1
        try:
            return self.spark.sql(text)
        except Exception as exc:
            if type(exc).__module__.startswith("pyspark"):
                raise DataError(f"Spark could not count '{self.name}': "
                                f"{str(exc).strip().splitlines()[0]}") from exc
            raise

    def _count_rows(self) -> int:
        row = self._collect(self._sql(f"SELECT {self._check_count_sql(SPARK.ident)} "
                                      f"FROM {self._view}"))[0]
        self.stats.passes += 1
        self.stats.bytes_scanned += self._file_scan_bytes(self.columns)
        return self._rows_after_check(row)

    def _examples(self, column: str) -> list[tuple[object, int]]:
        from pyspark.sql import functions as F

        raw = self._raw[column]
        rows = (self._source.where(F.expr(f"{self._exprs[column]} = {NOT_IN_SCHEMA}"))
                .groupBy(raw).count().orderBy(F.desc("count")).limit(6).collect())
        return [(r[0], int(r[1])) for r in rows]

    @staticmethod
    def _collect(frame):
        return frame.collect()

    def _count(self, batch):
        q = SPARK.ident
        # Spark orders grouping columns by first appearance in the grouping sets
        union = list(dict.fromkeys(c for cl in batch for c in cl))
        if len(batch) == 1:
            cols = ", ".join(q(c) for c in batch[0])
            res = _fetch(self._sql(f"SELECT {cols}, count(*) AS k FROM {self._view} "
                            f"GROUP BY {cols}"))
            out = {batch[0]: self._flat_counts(batch[0], [res[c] for c in batch[0]], res["k"])}
        else:
            sets = ", ".join("(" + ", ".join(q(c) for c in cl) + ")" for cl in batch)
            select = ", ".join(f"coalesce({q(c)}, 0) AS {q(c)}" for c in union)
            gid = ", ".join(q(c) for c in union)
            res = _fetch(self._sql(f"SELECT {select}, grouping_id({gid}) AS g, count(*) AS k "
                                   f"FROM {self._view} GROUP BY GROUPING SETS ({sets})"))
            g = res["g"]
            out = {}
            for cl in batch:
                rows = g == grouping_id(union, cl)
                out[cl] = self._flat_counts(cl, [res[c][rows] for c in cl], res["k"][rows])
        self.stats.passes += 1
        self.stats.bytes_scanned += (self.n * sum(_TYPE_BYTES[self._types[c]] for c in union)
                                     if self.persisted else self._file_scan_bytes(union))
        return out

    def close(self) -> None:
        codes, self._codes = getattr(self, "_codes", None), None
        if codes is not None:
            try:
                self.spark.catalog.dropTempView(self._view)
                if self.persisted:
                    codes.unpersist()
            except Exception:
                pass


class SparkFile:
    """A Spark DataFrame (or a file Spark reads) without a schema: its columns,
    row count, a flag column's counts, and the rows or columns meant to be
    loaded (collected to the driver through Arrow, cleaned as
    :func:`synth_core.tables.load_table` cleans a table)."""

    def __init__(self, source, *, name: str | None = None, spark=None):
        _import_pyspark()
        from pyspark.sql import DataFrame

        if isinstance(source, DataFrame):
            self.frame, self.name = source, name or "Spark DataFrame"
        else:
            spark = spark or spark_session()
            self.name = name or Path(str(source)).name
            self.frame, _ = SparkTable._read(spark, str(source), self.name)
        self._fields = {f.name.strip(): f for f in self.frame.schema.fields}

    @property
    def columns(self) -> dict[str, tuple[str, str]]:
        """Column name (spaces around it removed) -> (the source's name, Spark type)."""
        return {n: (f.name, f.dataType.simpleString()) for n, f in self._fields.items()}

    def kind(self, column: str) -> str:
        return spark_kind(self._field(column).dataType)

    def _field(self, column: str):
        if column not in self._fields:
            raise DataError(f"column '{column}' is not in '{self.name}'.",
                            hint="Its columns are: " + ", ".join(repr(n) for n in self._fields)
                            + ".", column=column)
        return self._fields[column]

    def _flag_test(self, column: str):
        from pyspark.sql import functions as F

        f = self._field(column)
        return F.expr(flag_expression(SPARK.ident(f.name), spark_kind(f.dataType)))

    def count(self) -> int:
        return int(self.frame.count())

    def flag_summary(self, column: str) -> FlagSummary:
        from pyspark.sql import functions as F

        test = self._flag_test(column)
        row = self.frame.agg(
            F.sum(F.when(test == FLAG_TRUE, 1).otherwise(0)),
            F.sum(F.when(test == FLAG_FALSE, 1).otherwise(0)),
            F.sum(F.when(test == FLAG_INVALID, 1).otherwise(0))).collect()[0]
        true, false, bad = (int(v or 0) for v in row)
        examples = []
        if bad:
            raw = self._field(column).name
            examples = [(r[0], int(r[1])) for r in
                        self.frame.where(test == FLAG_INVALID).groupBy(raw).count()
                        .orderBy(F.desc("count")).limit(6).collect()]
        return FlagSummary(column, true, false, bad, examples)

    def flag_candidates(self) -> list[str]:
        from pyspark.sql import functions as F

        names = list(self._fields)
        row = self.frame.agg(*[F.min(F.when(self._flag_test(c) == FLAG_INVALID, 0).otherwise(1))
                               for c in names]).collect()[0]
        return [c for c, ok in zip(names, row) if ok is None or int(ok) == 1]

    def rows(self, columns: Sequence[str] | None = None, *, flag: str | None = None,
             flagged: bool | None = None, limit: int | None = None) -> pd.DataFrame:
        """Rows as a cleaned DataFrame (see :meth:`DuckDBFile.rows`)."""
        if columns is None:
            columns = [c for c in self._fields if c != flag]
        frame = self.frame
        if flagged is not None:
            if flag is None:
                raise ConfigError("rows(flagged=...) needs the flag column.")
            frame = frame.where(self._flag_test(flag) == (FLAG_TRUE if flagged else FLAG_FALSE))
        frame = frame.select([frame[self._field(c).name].alias(c) for c in columns])
        if limit is not None:
            frame = frame.limit(int(limit))
        return _clean_cells(frame.toArrow().to_pandas()).reset_index(drop=True)


def _fetch(frame) -> dict[str, np.ndarray]:
    """The (small) result of a counting query as numpy columns, through Arrow."""
    table = frame.toArrow()
    return {name: table.column(name).to_numpy(zero_copy_only=False)
            for name in table.column_names}


class SparkBackend(EngineBackend):
    """:class:`~synth_core.backends.base.Backend` of a file or a Spark DataFrame counted by
    Apache Spark (``options``: :class:`SparkTable`'s; the reader takes ``spark``)."""

    backend = "spark"

    def _accepts(self, source) -> bool:
        return is_spark_frame(source)

    def _also_accepted(self) -> str:
        return " or a Spark DataFrame"

    def _default_name(self) -> str:
        return "Spark DataFrame"

    def _open_reader(self) -> SparkFile:
        return SparkFile(self.source, name=self.name, spark=self.options.get("spark"))

    def _table(self, schema: Schema, **options) -> SparkTable:
        return SparkTable(self.source, schema, name=self.name, **options)


def is_spark_frame(obj) -> bool:
    """Whether ``obj`` is a Spark DataFrame (False when pyspark is not installed)."""
    try:
        from pyspark.sql import DataFrame
    except ImportError:
        return False
    return isinstance(obj, DataFrame)

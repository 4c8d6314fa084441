"""The in-memory backend: a :class:`~synth_core.marginals.CodedTable`.

numpy arrays of codes in this process, one ``np.bincount`` per clique. It is
the default and the reference the other backends are tested against.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..marginals import CodedTable
from ..schema import Schema
from ..tables import load_table


def memory_table(source, schema: Schema, *, name: str = "data") -> CodedTable:
    """Load ``source`` (a path or a DataFrame), encode it with ``schema``."""
    if isinstance(source, (str, Path)):
        frame = load_table(source, name=name)
    elif isinstance(source, pd.DataFrame):
        frame = source
    else:
        raise DataError(f"the memory backend needs a DataFrame or a file path, "
                        f"not {type(source).__name__}.")
    codes = schema.encode(frame, table_name=name, role="private table")
    return CodedTable.from_frame(codes, schema.sizes)

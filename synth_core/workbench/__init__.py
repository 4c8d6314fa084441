"""The workbench: a session's state and the services it is composed of (no Streamlit).

Modules, one per concept:

* :mod:`.session`: :class:`Workbench`, the session object the pages call;
* :mod:`.source`, :mod:`.memory`, :mod:`.disk`: where the private table lives
  (the :class:`~.source.TableSource` contract; in memory; on disk via DuckDB);
* :mod:`.public`: the public-information choice (a value);
* :mod:`.compare`, :mod:`.what_if`, :mod:`.budget`: the comparison, what-if
  and budget-account services;
* :mod:`.runs`, :mod:`.command`: finished runs, release files and the
  reproduce command;
* :mod:`.domain`: the schema in use, how it was made, its editing;
* :mod:`.catalog`, :mod:`.uploads`: what the pages offer, reading uploads;
* :mod:`.guide`: the mechanism list and which entries fit the public information.
"""

from .catalog import (DELTA_GRID, DOMAIN_SOURCE_TEXT, EPSILON_GRID, RunSettings, describe_domain,
                      mechanism_description, mechanism_parameters, parse_epsilons,
                      supports_public_columns, workload_spec)
from .command import comment as _comment
from .compare import REFUSED, compare_dir
from .guide import (ChoiceFit, MechanismChoice, choice_by_key, choice_of, guided_choices,
                    mechanism_choices, mechanism_title)
from .public import FILTER_FLAG, PublicChoice
from .runs import (FinishedRun, candidates_frame, events_frame, frame_parquet_bytes,
                   ledger_frame, measurements_frame)
from .session import Workbench
from .uploads import parse_schema_upload

__all__ = ["DELTA_GRID", "DOMAIN_SOURCE_TEXT", "EPSILON_GRID", "FILTER_FLAG", "REFUSED",
           "ChoiceFit", "FinishedRun", "MechanismChoice", "choice_by_key", "choice_of",
           "guided_choices", "mechanism_choices", "mechanism_title", "PublicChoice", "RunSettings", "Workbench", "candidates_frame",
           "compare_dir", "describe_domain", "events_frame", "frame_parquet_bytes",
           "ledger_frame", "measurements_frame", "mechanism_description",
           "mechanism_parameters", "parse_epsilons", "parse_schema_upload", "supports_public_columns",
           "workload_spec"]

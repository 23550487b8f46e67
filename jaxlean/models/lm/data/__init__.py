"""Language-model data: the synthetic corpus, and the text path a TRL user brings.

- :mod:`.synthetic`: :func:`synthetic_batch`, learnable integer batches, the same in every process.
- :mod:`.tokenizer`: a model directory's own tokenizer and chat template (``transformers``).
- :mod:`.records`: conversational / prompt-completion / text records from JSON, JSONL,
  parquet files or a ``datasets.Dataset``, each remembering its file line.
- :mod:`.conversations`: records to ``input_ids`` and ``labels`` as TRL's ``SFTTrainer``
  makes them (``assistant_only_loss``, ``completion_only_loss``).
- :mod:`.packing`: best-fit-decreasing packing into rows with segment ids and positions.
- :mod:`.preferences`: prompt/chosen/rejected records to DPO batches, as TRL's ``DPOTrainer``.
- :mod:`.batches`: padded or packed batches, shuffled per epoch from a seed, resumable.

Nothing here imports ``transformers``, ``tokenizers`` or ``datasets`` until it is used
(the ``text`` extra, ``pip install "jaxlean[text]"``; parquet files and
``datasets.Dataset``: the ``datasets`` extra).
"""

from __future__ import annotations

from jaxlean.models.lm.data.batches import Batches, BatchState
from jaxlean.models.lm.data.conversations import (
    IGNORE_INDEX,
    Example,
    tokenize_example,
    tokenize_records,
)
from jaxlean.models.lm.data.packing import (
    PackedBatch,
    Packing,
    best_fit_decreasing,
    collate,
    pack,
    packing_efficiency,
)
from jaxlean.models.lm.data.preferences import (
    PreferenceBatches,
    PreferenceExample,
    collate_preferences,
    tokenize_preferences,
)
from jaxlean.models.lm.data.records import FORMATS, Record, read_records, record_format
from jaxlean.models.lm.data.synthetic import synthetic_batch
from jaxlean.models.lm.data.tokenizer import Tokenizer, load_tokenizer

__all__ = [
    "FORMATS",
    "IGNORE_INDEX",
    "BatchState",
    "Batches",
    "Example",
    "PackedBatch",
    "Packing",
    "PreferenceBatches",
    "PreferenceExample",
    "Record",
    "Tokenizer",
    "best_fit_decreasing",
    "collate",
    "collate_preferences",
    "load_tokenizer",
    "pack",
    "packing_efficiency",
    "read_records",
    "record_format",
    "synthetic_batch",
    "tokenize_example",
    "tokenize_preferences",
    "tokenize_records",
]

"""Models that leave zoo: `zoo export` as a function."""

from __future__ import annotations

from pathlib import Path

from zoo.results import Export


def export(
    run_id: str,
    folder: str | Path,
    *,
    format: str | None = None,
    force: bool = False,
    license: str | None = None,
    base_model: str | None = None,
) -> Export:
    """Write a finished run as a folder that loads without zoo (`zoo export`): ONNX, or
    transformers' layout where the architecture has one (``format`` chooses), with its
    tokenizer and a model card; checked against zoo's own predictions on validation texts
    before anything is written. ``force`` replaces a folder zoo exported before (never any
    other folder). ``license`` and ``base_model`` go into the card. Returns a ``zoo.Export``:
    the run id, the folder, the format, a summary, how many texts were compared and the
    largest probability difference."""
    from zoo.operations.export import export_run

    done = export_run(
        run_id, folder, format=format, force=force, license=license, base_model=base_model
    )
    return Export(
        done["run_id"],
        Path(done["folder"]),
        done["format"],
        done["summary"],
        done["compared"],
        done["max_difference"],
        done["labels_agree"],
    )

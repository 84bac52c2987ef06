"""A renamed Hugging Face repo's old id (the Hub redirects it) finds the catalogued model under its new id.

Start-up logs of 2024 name the Llama 3.1 repos by their first ids (meta-llama/Meta-Llama-3.1-70B-Instruct); the
catalogue holds them under the current ones (meta-llama/Llama-3.1-70B-Instruct;
data/hub_renames.yaml gives the sources).
"""

from __future__ import annotations

from servespec.knowledge.datafile import load_yaml_data
from servespec.knowledge.models import catalogued, renamed


def test_the_old_id_is_the_new_id_s_model() -> None:
    old, new = catalogued("meta-llama/Meta-Llama-3.1-70B-Instruct"), catalogued("meta-llama/Llama-3.1-70B-Instruct")
    assert old is not None and new is not None
    assert (old.layers, old.kv_heads, old.head_dim, old.vocab_size) == (80, 8, 128, 128256)
    assert old == new


def test_every_rename_points_at_a_catalogued_model_and_has_a_source() -> None:
    for old, entry in load_yaml_data("hub_renames.yaml")["renames"].items():
        assert entry["source"] and renamed(old) == entry["to"]
        assert catalogued(old) is not None, old
        assert catalogued(old.upper()) == catalogued(entry["to"])


def test_an_unknown_id_is_still_unknown() -> None:
    assert renamed("meta-llama/Meta-Llama-3.1-9B") is None
    assert catalogued("meta-llama/Meta-Llama-3.1-9B") is None

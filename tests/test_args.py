"""The shared argument normalisers: one string is one name, old keywords name the new one."""

import pytest

from jaxlean._args import as_int, as_names, reject_renamed
from jaxlean.errors import ConfigError


def test_one_string_is_one_name_not_characters():
    assert as_names("i_na", "states") == ("i_na",)
    assert as_names(["q_proj", "v_proj"], "targets") == ("q_proj", "v_proj")
    assert as_names(None, "states") is None


def test_bad_names_are_refused_by_argument():
    with pytest.raises(ConfigError, match="targets"):
        as_names(3, "targets")
    with pytest.raises(ConfigError, match="non-empty"):
        as_names(["a", ""], "targets")
    with pytest.raises(ConfigError, match=r"accepted: \['a', 'b'\]"):
        as_names("c", "states", allowed=["a", "b"])


def test_renamed_keyword_names_the_new_one():
    with pytest.raises(ConfigError, match="'checkpoint' is now called 'remat'"):
        reject_renamed({"checkpoint": 4}, {"checkpoint": "remat"}, "simulate")
    with pytest.raises(TypeError, match="unexpected keyword"):
        reject_renamed({"nope": 1}, {"checkpoint": "remat"}, "simulate")
    reject_renamed({}, {"checkpoint": "remat"}, "simulate")


def test_counts_refuse_floats_and_bools():
    assert as_int(4, "ncomp", minimum=1) == 4
    for bad in (4.0, True, "4"):
        with pytest.raises(ConfigError, match="ncomp must be an integer"):
            as_int(bad, "ncomp")
    with pytest.raises(ConfigError, match=">= 1"):
        as_int(0, "ncomp", minimum=1)


def test_indices_beside_names_where_a_section_may_be_numbered():
    assert as_names(3, "sections", indices=True) == (3,)
    assert as_names(["soma[0]", 2], "sections", indices=True) == ("soma[0]", 2)
    with pytest.raises(ConfigError, match="non-empty strings or integers"):
        as_names([1.5], "sections", indices=True)
    with pytest.raises(ConfigError, match="states must be a name or a list of names"):
        as_names(3, "states")

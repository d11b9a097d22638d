"""A cache key's ``[hash] name: value`` items are split without a regex per item (a run has hundreds of
thousands); the split must be exactly the documented pattern's."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import fixture_path

from pt2logs.analysis.cache_keys import _LINE, parse_components, split_line


def _regex(item: str):
    m = _LINE.match(item)
    return (m.group(1), m.group(2).strip(), m.group(3)) if m else None


def _fixture_items() -> list[str]:
    items = []
    for log in fixture_path("tlparse").glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("\t{") and '"components"' in line:
                d = json.loads(line[1:])
                items += [x for x in d.get("components") or [] if isinstance(x, str)]
    return items


def test_real_key_items_split_as_the_pattern_says():
    items = _fixture_items()
    assert len(items) > 100 and sum(split_line(x) is not None for x in items) > 50
    assert [split_line(x) for x in items] == [_regex(x) for x in items]
    assert parse_components(items)  # and they make components


_HASHISH = st.text(alphabet="abcxyz0189AZ]", min_size=10, max_size=70)


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="[]: \nabz09_-é", max_size=80),
        st.builds(
            lambda h, sep, rest: f"[{h}]{sep}{rest}",
            _HASHISH,
            st.sampled_from([" ", "", "  "]),
            st.text(alphabet=": \nabz09[]_é", max_size=60),
        ),
        st.builds(
            lambda h, rest: f"[{h}{rest}", _HASHISH, st.text(alphabet=": \nabz09_é", max_size=20)
        ),
    )
)
def test_any_text_splits_as_the_pattern_says(item):
    assert split_line(item) == _regex(item)


def test_no_closing_bracket_is_no_line():
    """Without a ``"] "`` after the hash, ``find`` gives -1: ``item[1:-1]`` must not pass as the hash."""
    for item in [
        "[" + "a" * 20 + ":",
        "[" + "a" * 20 + ": x",
        "[" + "0" * 16 + "x:",
        "[" + "a" * 16 + "]:" + "b",
    ]:
        assert split_line(item) is None and _regex(item) is None, item
    assert parse_components(["[" + "a" * 20 + ":"]) == []

"""Numbers made with numpy become Arrow arrays through tables.rows.from_numpy: the same arrays as
``pa.array(values, mask=...)`` gives, without the ``numpy.ma`` import that ``pa.array`` makes when it is
handed an ndarray (~0.05 s of CPU, a tenth of a one-trace ingest: issue 36)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import fixture_path

from pt2logs.tables.rows import from_numpy

_DTYPES = st.sampled_from([np.int32, np.int64, np.uint8, np.float64])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=70),
    st.data(),
    _DTYPES,
    st.integers(1, 3),
)
def test_from_numpy_is_pa_array(ints, data, dtype, step):
    values = np.array(ints, dtype=np.int64).astype(dtype)[::step]  # a strided view too
    null = np.array(data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))))
    null = null.astype(bool)
    want = pa.array(values, mask=null if len(values) else None)
    got = from_numpy(values, null=null)
    got.validate(full=True)
    assert got.type == want.type and got.equals(want)
    assert from_numpy(values).equals(pa.array(values))
    if dtype is np.int64:  # a type of the same width (event timestamps)
        ts = pa.timestamp("us")
        assert from_numpy(values, ts, null=null).equals(want.cast(ts))


def test_booleans_are_refused():
    with pytest.raises(TypeError):
        from_numpy(np.array([True, False]))


def test_an_ingest_does_not_import_numpy_ma(tmp_path):
    """A GPU trace ingested (payload store, event timestamps with a NULL among them or not, segment rows)
    makes its Arrow arrays without loading numpy.ma."""
    trace = next(fixture_path("gpu/compile_failure/trace").glob("*.log"))
    code = (
        "import sys, pt2logs; pt2logs.ingest([sys.argv[1]], sys.argv[2]); "
        "print('numpy.ma' in sys.modules, 'numpy' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-c", code, str(trace), str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]

"""Build hook: compile the native TORCH_TRACE splitter (src/pt2logs/_native/records.c) into the wheel.

hatchling stays the build backend (the queries/ and dashboards/ force-includes keep working as they
are); this hook only compiles one extension (records.c, events.c, phases.c, phase_cols.c, components.c, buffers.c) with setuptools'
compiler driver, which knows the platform's flags. If that fails (no C compiler), the wheel is built
without it and pt2logs splits traces in pure Python (``pt2logs ingest`` says so). ``python hatch_build.py`` builds it in place (for PYTHONPATH=src).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
NATIVE = HERE / "src" / "pt2logs" / "_native"


def compile_native(out_dir: Path) -> Path:
    """Compile pt2logs._native._records into out_dir; return the path of the built module."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    ext = Extension(
        "pt2logs._native._records",
        [
            str(NATIVE / n)
            for n in (
                "records.c",
                "events.c",
                "phases.c",
                "phase_cols.c",
                "components.c",
                "buffers.c",
            )
        ],
        depends=[
            str(NATIVE / n)
            for n in (
                "md5.h",
                "md5x8.h",
                "envelope.h",
                "gbuf.h",
                "canon.h",
                "arrowcol.h",
                "phase_cols.h",
            )
        ],
        extra_compile_args=os.environ.get("PT2LOGS_CFLAGS", "-O3").split(),
    )
    with tempfile.TemporaryDirectory() as tmp:
        dist = Distribution({"name": "pt2logs-native", "ext_modules": [ext]})
        cmd = build_ext(dist)
        cmd.build_lib = str(Path(tmp) / "lib")
        cmd.build_temp = str(Path(tmp) / "tmp")
        cmd.ensure_finalized()
        cmd.run()
        built = Path(cmd.get_ext_fullpath(ext.name))
        out_dir.mkdir(parents=True, exist_ok=True)
        dest = out_dir / built.name
        tmp_dest = out_dir / (built.name + ".tmp")
        shutil.copyfile(built, tmp_dest)
        os.replace(
            tmp_dest, dest
        )  # a new file, not a rewrite: processes that loaded the old one keep it
    return dest


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script, not by hatchling
    BuildHookInterface = object  # type: ignore[assignment,misc]


class NativeBuildHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or os.environ.get("PT2LOGS_NATIVE_BUILD") == "0":
            return
        try:
            if version == "editable":  # the editable wheel points at src/: the module goes there
                so = compile_native(NATIVE)
            else:
                so = compile_native(Path(self.directory) / "native-build")
        except Exception as e:  # no compiler: a pure-Python wheel, still fully working
            self.app.display_warning(
                f"pt2logs: native splitter not built ({e}); traces will be split in pure Python"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            build_data["force_include"][str(so)] = f"pt2logs/_native/{so.name}"


if __name__ == "__main__":
    print(compile_native(NATIVE), file=sys.stderr)

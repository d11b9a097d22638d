"""The Spyre line shapes and messages, as patterns (whitespace-tolerant: each shape spaces the same
message differently)."""

import re

WORKER = re.compile(r"^\(([^()]*?)\s*pid=(\d{1,18})\)\s+")
LEGACY = re.compile(r"^\[ ([A-Za-z_~][\w:~<>]*) \]\s+(.*)$")
LEVELED = re.compile(
    r"^\[(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)\] \[([\w.-]*spyre[\w.-]*)\] ?(.*)$",
    re.I,
)
#: SPYRE_INDUCTOR_LOG=1 (deprecated): ``logging.Formatter("[%(levelname)s] [%(module)s] %(message)s")``, the
#: module being the Python file's name without ``.py`` (torch_spyre/_inductor/logging_utils.py, torch-spyre
#: 3caea17); the unified logging_utils.get_logger names loggers ``spyre.inductor.<name>`` instead (LEVELED)
#: Only the modules of torch_spyre/_inductor count (``[INFO] [vllm] ...`` is another program's line): the
#: file names under torch_spyre/_inductor/ in torch-spyre's history (torch-spyre/torch-spyre, 2025-2026).
MODULE_LEVELED = re.compile(r"^\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\] \[([A-Za-z_]\w*)\] ?(.*)$")
INDUCTOR_MODULES = frozenset(
    (
        "allocator",
        "async_compile",
        "bundle",
        "choices",
        "coarse_tile",
        "coarse_tiling",
        "collective_decomposer",
        "compute_ops",
        "config",
        "constants",
        "conversions",
        "cooling_schedules",
        "cooptimization_scorer",
        "core_division",
        "core_mapping",
        "cost_model",
        "cost_model_pass",
        "cost_objective",
        "cost_tables",
        "customops",
        "data_ops",
        "deadcode_elimination",
        "decomposition_context",
        "decompositions",
        "dedup_constants",
        "dense_padding",
        "division_generation",
        "dsc",
        "dtype_ops",
        "dump_common",
        "dump_cost_model",
        "ea_rules",
        "enforce_indirect_access_layout",
        "errors",
        "exhaustive_search",
        "fake_ops",
        "fusion",
        "graph_validation",
        "hbm_pool_planning",
        "hoist_collectives",
        "indirect_access",
        "insert_restickify",
        "ir",
        "kernel_cache",
        "kernel_launchspec",
        "kernel_provenance",
        "kernel_runner",
        "ktir",
        "layout_hints",
        "logging_utils",
        "loop_info",
        "lowering",
        "lx_relayout",
        "memory_planning",
        "model_utils",
        "multi_dim_reduction_pass",
        "nonstick_dim_order",
        "normalize_indices",
        "op_spec",
        "op_spec_validation",
        "operation_scheduling",
        "opfuncs",
        "opoverrides",
        "opspec_utils",
        "optimize_restickify",
        "padding",
        "pass_counters",
        "pass_utils",
        "passes",
        "patches",
        "preload",
        "profiler_event",
        "propagate_hints",
        "propagate_layouts",
        "propagate_named_dims",
        "propagate_real_dims",
        "propagate_real_dims2",
        "provenance",
        "provenance_artifact",
        "provenance_writer",
        "read_copy_elision",
        "require_layout_pass",
        "scheduler",
        "scratchpad",
        "sdsc_compile",
        "spyre_library",
        "stickify",
        "superdsc",
        "unroll",
    )
)
DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))? (.*)$")
CFUNC = re.compile(r"^([A-Za-z_~][\w:~<>]*): ?(.*)$")
ILLUS = re.compile(r"^\[TORCH_SPYRE_DEBUG\] (?:([A-Za-z_]\w*): ?)?(.*)$")
ILLUS_CONT = re.compile(r"^\s+(device_layout|host_layout|layout|transfer|status)\b:?\s*(.*)$")
ILLUS_COPY = re.compile(r"^copy_(?:to|from)_(?:device|host|cpu)$")
#: spyre.inductor.passes: ``logger.info("elapsed %5dms  %s", elapsed_ms, pass_name)`` after each pre-scheduling
#: pass (torch_spyre/_inductor/passes.py, CustomPreSchedulingPasses.__call__, torch-spyre 02607a9)
PASS_ELAPSED = re.compile(r"^elapsed\s+(\d{1,12})ms\s+(\S+)\s*$")
RUN = re.compile(r"^RUN:\s*(\S+)(?:\s+(\S+))?\s*$")
GENERATING = re.compile(r"^Generating\s+(\S+\.(?:json|mlir)|\S*spyre\S*)\s*$")
TENSOR_INFO = re.compile(
    r"Tensor info on CPU\s*\(\s*Size:\s*\[([^\]]*)\]\s*,\s*Stride:\s*\[([^\]]*)\]\s*,\s*dtype:\s*([^)]*?)\s*\)"
    r"\s*to be mapped onto device\s*(\S*)"
)
ALLOCATING = re.compile(r"^allocating\s*(\d{1,18})\s*\(bytes\)(?:\s*on\s*Spyre\s*(\S*))?")
ALLOCATED_N = re.compile(r"^Allocated\s+(\d{1,18})\s*bytes", re.I)
ALLOCATED = re.compile(r"^allocated\s*(.*)$")
SRC = re.compile(r"^(?:src|self)\s*\(\s*([^)]*?)\s*\)\s*is\s*on:?\s*(\S+)")
DST = re.compile(r"^dst\s*\(\s*([^)]*?)\s*\)\s*(?:is\s*)?on:?\s*(\S+)")
DCI = re.compile(r"DataConversionInfo:\s*(.*)$")
MODEL_TENSOR = re.compile(r"^\s*([\w.\[\]/-]+):\s*shape=\[([^\]]*)\]\s*->\s*(.*)$")
KV_SHAPE = re.compile(r"shape=\[([^\]]*)\]")
KV_DTYPE = re.compile(r"dtype=([\w.:]+)")
TOTAL = re.compile(r"total_size=(\d{1,18})")
NCHUNKS = re.compile(r"num_chunks=(\d{1,9})")
CHUNK = re.compile(
    r"Chunk\{addr=LogicalAddress\{region_id=(\w+),\s*offset=(\w+)\},\s*size=(\d{1,18})(?:,\s*domain_id=(\d{1,9}))?"
)
JSON_STR = re.compile(r'"(?:[^"\\]|\\.)*"')
JSON_KEY = re.compile(r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+|\[[^\[\]{}]*\])')
DCI_KEYS = (
    "dsName_",
    "isHostToSen_",
    "dataformat_src_",
    "dataformat_dst_",
    "input_shape_",
    "output_shape_",
    "dcsi_",
)

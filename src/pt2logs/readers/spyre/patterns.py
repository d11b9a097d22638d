"""The Spyre line shapes and messages, as patterns (whitespace-tolerant: each shape spaces the same
message differently)."""

import re

WORKER = re.compile(r"^\(([^()]*?)\s*pid=(\d{1,18})\)\s+")
LEGACY = re.compile(r"^\[ ([A-Za-z_~][\w:~<>]*) \]\s+(.*)$")
LEVELED = re.compile(r"^\[(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)\] \[([\w.-]*spyre[\w.-]*)\] ?(.*)$", re.I)
DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))? (.*)$")
CFUNC = re.compile(r"^([A-Za-z_~][\w:~<>]*): ?(.*)$")
ILLUS = re.compile(r"^\[TORCH_SPYRE_DEBUG\] (?:([A-Za-z_]\w*): ?)?(.*)$")
ILLUS_CONT = re.compile(r"^\s+(device_layout|host_layout|layout|transfer|status)\b:?\s*(.*)$")
ILLUS_COPY = re.compile(r"^copy_(?:to|from)_(?:device|host|cpu)$")
RUN = re.compile(r"^RUN:\s*(\S+)(?:\s+(\S+))?\s*$")
GENERATING = re.compile(r"^Generating\s+(\S+\.(?:json|mlir)|\S*spyre\S*)\s*$")
TENSOR_INFO = re.compile(
    r"Tensor info on CPU\s*\(\s*Size:\s*\[([^\]]*)\]\s*,\s*Stride:\s*\[([^\]]*)\]\s*,\s*dtype:\s*([^)]*?)\s*\)"
    r"\s*to be mapped onto device\s*(\S*)")
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
CHUNK = re.compile(r"Chunk\{addr=LogicalAddress\{region_id=(\w+),\s*offset=(\w+)\},\s*size=(\d{1,18})(?:,\s*domain_id=(\d{1,9}))?")
JSON_STR = re.compile(r'"(?:[^"\\]|\\.)*"')
JSON_KEY = re.compile(r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+|\[[^\[\]{}]*\])')
DCI_KEYS = ("dsName_", "isHostToSen_", "dataformat_src_", "dataformat_dst_", "input_shape_", "output_shape_", "dcsi_")

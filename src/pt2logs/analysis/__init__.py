"""Pure text analysis shared by the readers: recompile reasons, graph breaks, output code."""

"""The YAML reader: spec files to plain data, with the file, line and column of every node."""

from host.spec.yaml.load import Document, load_file, load_paths, load_text, spec_files
from host.spec.yaml.positions import Loc, Locs, YPath

__all__ = [
    "Document",
    "Loc",
    "Locs",
    "YPath",
    "load_file",
    "load_paths",
    "load_text",
    "spec_files",
]

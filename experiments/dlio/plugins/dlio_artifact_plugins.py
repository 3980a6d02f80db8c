"""A DLIO reader plugin, imported by DLIO itself (``reader.reader_classname``) in .venv-dlio.

This folder is on DLIO's PYTHONPATH (experiments.dlio.runner); it imports only DLIO.

``IndexedBinaryReaderQuietMap`` is DLIO 2.0.0's ``IndexedBinaryReader`` with one line less in
``read_index``: DLIO's ``FormatReader.read_index`` runs ``logging.debug(f"{self.global_index_map}")``
for every sample it reads; the f-string formats the rank's whole sample map whatever the log
level, so one sample costs O(samples per rank) (10 ms at 4,096 samples, 1 s at 500,000 on the
2-core reference box) and DLRM-sized files cannot be read in any reasonable time. Everything
else, and every I/O call, is DLIO's: the same open/seek/read/close per sample (``read_type``
on_demand), through DLIO's own ``open``, ``get_sample`` and ``close``.
"""

from dlio_benchmark.common.enumerations import ReadType
from dlio_benchmark.reader.indexed_binary_reader import IndexedBinaryReader
from dlio_benchmark.reader.reader_handler import FormatReader


class IndexedBinaryReaderQuietMap(IndexedBinaryReader):
    def read_index(self, global_sample_idx, step):
        # FormatReader.read_index of DLIO 2.0.0 without logging.debug(f"{self.global_index_map}")
        self.step = step
        self.image_idx = global_sample_idx
        filename, sample_index = self.global_index_map[global_sample_idx]
        FormatReader.read_images += 1
        if (self._args.read_type is ReadType.ON_DEMAND or filename not in self.open_file_map
                or self.open_file_map[filename] is None):
            self.open_file_map[filename] = self.open(filename)
        self.get_sample(filename, sample_index)
        self.preprocess()
        if self._args.read_type is ReadType.ON_DEMAND:
            self.close(filename)
            self.open_file_map[filename] = None
        return self._args.resized_image

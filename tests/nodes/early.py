"""The node ClusterSet, started in a thread as soon as the session knows it will run node tests.

Building the images and starting three clusters with nodes takes a couple of minutes, mostly
waiting on pip, mmdebstrap, containerd and the kubelets; the tests before tests/nodes run
meanwhile instead of after it.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from hack.nodeset.clusterset import NodeClusterSet, start


class EarlyStart:
    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._clusterset: NodeClusterSet | None = None
        self._error: BaseException | None = None
        self._workdir: Path | None = None

    def begin(self) -> None:
        if self._thread is not None:
            return
        self._workdir = Path(tempfile.mkdtemp(prefix="mchub-nodes-"))
        self._thread = threading.Thread(target=self._run, name="node-clusterset", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self._workdir is not None
        try:
            self._clusterset = start(self._workdir / "ct", log=False)
        except BaseException as err:  # handed to the fixture that waits for it
            self._error = err

    def result(self) -> NodeClusterSet:
        self.begin()
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise RuntimeError(f"the node ClusterSet did not start: {self._error}") from self._error
        assert self._clusterset is not None
        return self._clusterset

    def stop(self) -> None:
        if self._thread is None:
            return
        self._thread.join()
        if self._clusterset is not None:
            self._clusterset.down()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._thread = None


EARLY = EarlyStart()

"""The node ClusterSet, started in a thread as soon as the session knows it will run node tests.

Building the images and starting three clusters with nodes takes a couple of minutes, mostly
waiting on pip, mmdebstrap, containerd and the kubelets; the tests before tests/nodes run
meanwhile instead of after it. When the session also runs the upstream conformance suite
(tests/nodes/test_conformance.py), the same thread runs it next, on the fresh ClusterSet: its five
minutes, spent mostly waiting on Pods, overlap the tests before tests/nodes too. Every node test
waits for the thread, so none changes the ClusterSet (a mode, a failed node) under the suite.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from hack.nodeset import conformance
from hack.nodeset.clusterset import Mode, NodeClusterSet, start


class EarlyStart:
    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._clusterset: NodeClusterSet | None = None
        self._error: BaseException | None = None
        self._workdir: Path | None = None
        self._with_conformance = False
        self._report: conformance.Report | None = None
        self._conformance_error: BaseException | None = None

    def begin(self, *, with_conformance: bool = False) -> None:
        """Start the ClusterSet in the background; ``with_conformance``: then run the suite on it."""
        if self._thread is not None:
            return
        self._with_conformance = with_conformance and conformance.suite_archive() is not None
        self._workdir = Path(tempfile.mkdtemp(prefix="mchub-nodes-"))
        self._thread = threading.Thread(target=self._run, name="node-clusterset", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self._workdir is not None
        try:
            self._clusterset = start(self._workdir / "ct", log=False)
        except BaseException as err:  # handed to the fixture that waits for it
            self._error = err
            return
        if not self._with_conformance:
            return
        try:
            clusterset = self._clusterset
            clusterset.ensure(Mode())
            contexts = conformance.contexts(clusterset.clusters, overlapping=clusterset.overlapping)
            self._report = conformance.run(contexts)
        except BaseException as err:  # handed to the conformance test
            self._conformance_error = err

    def conformance_report(self) -> conformance.Report | None:
        """The suite's report of the run begun with the ClusterSet (after ``result``); None when
        this session did not run it so (a ClusterSet left running, a user's clusters)."""
        if self._conformance_error is not None:
            raise RuntimeError(f"the conformance suite did not run: {self._conformance_error}") from (
                self._conformance_error
            )
        return self._report

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

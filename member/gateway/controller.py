"""GatewayController: elects the Gateway Node, keeps its Gateway CR, exports ClusterInfo,
and flags ClusterInfoImports whose ranges overlap.

Three informers (Nodes; Gateways and ClusterInfoImports in the member Namespace) feed one
work queue with two keys:

* ``election``: candidates from the Nodes -> ``elect`` (keep the current Gateway while it
  is eligible, else the lowest-named eligible candidate) -> the Gateway CR named after it
  (gatewayIP, internalIP, serviceCIDR, wireGuard.publicKey), every other Gateway CR in the
  Namespace deleted first (at most one Gateway at a time, as Antrea's webhook enforces) ->
  the ClusterInfo export follows (withdrawn while there is no Gateway). With ``gatewayMode:
  active-active`` every candidate ``elect_all`` keeps has its Gateway CR, and the ClusterInfo
  lists each one's gatewayIP; a cluster whose candidates publish WireGuard keys stays single-active
  (a ClusterInfo has room for one key) and says why.
* ``overlap``: the condition ``CIDRConflict`` on every ClusterInfoImport (status
  subresource only; the importer's ``Ready`` and everything else is left alone).

Its sink is the hub session, given at construction: ``start()`` (Service CIDR known,
informers synced, one election done) hands it the ClusterInfo before the session's first sync
bracket, so a restarted member does not churn its ClusterInfo. How each remote Gateway answers
our agent's probes (the ``GatewayReachable`` condition of its ClusterInfoImport) goes to the
hub too, as that import's status, so its dashboard shows the links' health.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter

from kube.apply import delete_if_owned, ensure
from kube.client import KubeClient, WatchEvent
from kube.conditions import find_condition
from kube.errors import NotFound
from kube.events import EventRecorder
from kube.informer import Informer
from kube.kernel_probe import answers
from kube.manager import Watches
from kube.metrics import once_per_registry
from kube.queue_worker import QueueWorker
from kube.resources import NODES, Obj, name_of
from kube.workqueue import WorkQueue
from mcapi import names
from mcapi.config import MultiClusterConfig
from mcapi.gateway_nodes import ANNOTATION_HANDING_OVER
from mcapi.resources import CLUSTER_INFO_IMPORTS, GATEWAYS
from member.gateway.cluster_info import ClusterInfoPublisher, ClusterRanges
from member.gateway.election import Candidate, candidates_from_nodes, elect, elect_all, reported_unreachable
from member.gateway.overlap import CONDITION_CIDR_CONFLICT, Ranges, find_overlaps, ranges_from_import
from member.gateway.service_cidr import discover_service_cidr
from member.hubclient.sink import ExportSink
from member.imports.cluster_info_status import set_cluster_info_import_condition

log = logging.getLogger(__name__)

# After a report of an unreachable Gateway moved it, further reports wait this long (seconds):
# a flapping link, or a reporter that is itself the one cut off, moves the Gateway at most
# once per period; Node readiness and cordons act at once all the same.
REPORT_HOLD_SECONDS = 30.0
# How long a cordoned Gateway hands over before the member moves it (seconds): its agent learns
# of it through its watch in milliseconds; a request it took before it masqueraded lasts well under.
HANDOVER_SECONDS = 1.0
# How often the member knocks on a Gateway it took out on a report (active-active), or on one
# reported unreachable that still answered its knock.
QUARANTINE_RECHECK_SECONDS = 1.0
# How long the member's knock waits for a Node's kernel: the agents' own probe interval (0.3 s
# by default). A kernel on the cluster's network answers a SYN in well under a millisecond, and
# a failover waits this long on the knock after the reporter's probes, so a longer limit (1 s
# once) only slows it; a Gateway wrongly kept out is knocked on again a second later.
KNOCK_WITHIN_SECONDS = 0.3

Key = Literal["election", "overlap"]
ELECTION: Key = "election"
OVERLAP: Key = "overlap"


def desired_gateway(gateway: Candidate, namespace: str, service_cidr: str, *, handing_over: bool | None = None) -> Obj:
    """The Gateway CR for an eligible candidate (wireGuard absent without a key). ``handing_over``:
    True adds ANNOTATION_HANDING_OVER, False removes it, None leaves annotations alone."""
    metadata: Obj = {"name": gateway.name, "namespace": namespace}
    if handing_over is not None:
        metadata["annotations"] = {ANNOTATION_HANDING_OVER: "true" if handing_over else None}
    body: Obj = {
        "apiVersion": GATEWAYS.api_version,
        "kind": GATEWAYS.kind,
        "metadata": metadata,
        "gatewayIP": gateway.gateway_ip,
        "internalIP": gateway.internal_ip,
        "serviceCIDR": service_cidr,
    }
    body["wireGuard"] = {"publicKey": gateway.wireguard_public_key} if gateway.wireguard_public_key else None
    return body


class GatewayController:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        config: MultiClusterConfig,
        cluster_id: str,
        sink: ExportSink,
        *,
        recorder: EventRecorder | None = None,
        sync_timeout: float | None = 30.0,
        registry: CollectorRegistry | None = None,
        probe: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        """``sink``: the hub session. ``sync_timeout``: seconds start() waits for the informers' first lists.
        ``registry``: the member's metrics (mchub_member_gateway_transitions_total). ``probe``: whether a
        Node's internalIP answers (kube.kernel_probe), to check a report before acting on it."""
        self._metrics = _Metrics(None) if registry is None else once_per_registry(_Metrics, registry)
        self._client = client
        self._namespace = namespace
        self._config = config
        self._recorder = recorder
        self._sink = sink
        self._probe = probe or _knock_health_port
        self._sync_timeout = sync_timeout
        self._publisher = ClusterInfoPublisher(cluster_id, namespace, sink)
        self._queue: WorkQueue[Key] = WorkQueue(f"gateway-{cluster_id}")
        self._watches = Watches()
        self._nodes: Informer | None = None
        self._gateways: Informer | None = None
        self._imports: Informer | None = None
        self._worker: QueueWorker[Key] = QueueWorker(self._queue, self._reconcile)
        self._ranges: ClusterRanges | None = None
        self._active: list[Candidate] = []
        # Why active-active was last found unavailable (logged once per reason).
        self._told_single: str | None = None
        # Active-active: Nodes taken out on a confirmed report, until they answer the member again.
        self._quarantined: set[str] = set()
        # Nodes reported unreachable that answered the member's own knock (not acted on).
        self._unconfirmed: set[str] = set()
        self._handover: dict[str, float] = {}  # cordoned Gateway -> when its handover began (loop time)
        self._told_answering: set[str] = set()  # logged already
        # Loop time until which reports of an unreachable Gateway are not acted on (damping).
        self._distrust_reports_until = 0.0
        # Reachability verdicts already told to the hub, by ClusterInfoImport name.
        self._reported: dict[str, tuple[str, str, str]] = {}

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Discover the Service CIDR (unless configured), sync the informers, elect once (the
        ClusterInfo goes to the sink), then reconcile on every change.

        Raises ServiceCIDRUnknown when the Service CIDR cannot be found, a KubeError when the
        API cannot be read, TimeoutError when the informers do not sync in time."""
        service_cidr = self._config.service_cidr or await discover_service_cidr(self._client, self._namespace)
        self._ranges = ClusterRanges(service_cidr, tuple(self._config.pod_cidrs))
        self._nodes = Informer(self._client, NODES, handler=self._on_election_input)
        self._gateways = Informer(self._client, GATEWAYS, namespace=self._namespace, handler=self._on_election_input)
        self._imports = Informer(self._client, CLUSTER_INFO_IMPORTS, namespace=self._namespace, handler=self._on_import)
        self._watches = Watches(self._nodes, self._gateways, self._imports, sync_timeout=self._sync_timeout)
        await self._watches.start()
        try:
            await self._reconcile_election()
        except Exception as err:  # the worker retries it
            log.warning("gatewayElectionDeferred", extra={"namespace": self._namespace, "error": str(err)})
        self._worker.start()
        self._queue.add(ELECTION)
        self._queue.add(OVERLAP)

    async def stop(self) -> None:
        """Stop reconciling; the ClusterInfo stays exported (a stop is not a leave)."""
        await self._worker.close()
        await self._watches.stop()

    async def remove_gateways(self) -> None:
        """Delete every Gateway CR of the Namespace (when leaving the ClusterSet); call after stop()."""
        listed = await self._client.list(GATEWAYS, self._namespace)
        for obj in listed.items:
            await delete_if_owned(self._client, GATEWAYS, name_of(obj), self._namespace)
        self._active = []

    async def wait_idle(self) -> None:
        """Until every change so far was reconciled once (a quarantine's periodic recheck may be pending)."""
        await self._queue.wait_quiet()

    # ---- events --------------------------------------------------------------

    async def _on_election_input(self, event: WatchEvent) -> None:
        self._queue.add(ELECTION)

    async def _on_import(self, event: WatchEvent) -> None:
        self._queue.add(OVERLAP)

    # ---- reconcile -----------------------------------------------------------

    async def _reconcile(self, key: Key) -> float | None:
        if key == ELECTION:
            handing_over = await self._reconcile_election()
            if handing_over is not None:
                return handing_over
            # A Gateway kept out on a report comes back once the member's knock is answered again:
            # nothing else would tell (its peers stop probing a Node that is no longer a Gateway).
            if self._quarantined:
                return QUARANTINE_RECHECK_SECONDS
            # A report the member's knock did not confirm stands until the reporter's probes are
            # answered again; if the Node stops answering meanwhile, no Node event would tell.
            if self._unconfirmed:
                return QUARANTINE_RECHECK_SECONDS
            # A report that came during the hold is acted on when the hold ends: no Node event
            # may come to ask again before the reported Node turns NotReady.
            held = self._distrust_reports_until - asyncio.get_running_loop().time()
            active = {c.name for c in self._active}
            if held > 0 and active & set(reported_unreachable(self.candidates())):
                return held + 0.1
            return None
        await self._reconcile_overlap()
        return None

    def _current_name(self) -> str | None:
        if self._active:
            return self._active[0].name
        assert self._gateways is not None
        names = sorted(name_of(obj) for obj in self._gateways.list(self._namespace))
        return names[0] if names else None

    def candidates(self) -> list[Candidate]:
        """The Gateway candidates among the Nodes now, by name."""
        assert self._nodes is not None
        return candidates_from_nodes(self._nodes.list(), self._config.gateway_ip_precedence)

    def active_active_blocked(self, candidates: list[Candidate]) -> str | None:
        """Why active-active mode cannot be used now ("": it can; None: it is not configured)."""
        if self._config.gateway_mode != "active-active":
            return None
        if any(c.wireguard_public_key for c in candidates if c.eligible):
            return "trafficEncryptionMode is wireGuard"
        return ""

    async def _elect(self, candidates: list[Candidate], trust_reports: bool) -> list[Candidate]:
        blocked = self.active_active_blocked(candidates)
        if blocked == "":
            eligible = {c.name: c for c in candidates if c.eligible}
            held = [eligible[name] for name in sorted(self._quarantined) if name in eligible]
            self._quarantined = {c.name for c in held} - await self._answering(held)
            immune = set() if trust_reports else {c.name for c in self._active}
            reported = [c for c in candidates if c.name in reported_unreachable(candidates)]
            unsettled = [c for c in reported if c.name not in immune | self._quarantined]
            answering = await self._answering(unsettled)
            immune |= answering
            self._quarantined |= {c.name for c in unsettled if c.name not in immune and c.name in eligible}
            self._unconfirmed = answering
            return elect_all(candidates, immune=immune, out=self._quarantined)
        if blocked is not None and blocked != self._told_single:
            log.warning("gatewayModeActiveActiveUnavailable", extra={"namespace": self._namespace, "why": blocked})
        self._told_single = blocked
        unconfirmed: set[str] = set()
        if trust_reports:
            named = reported_unreachable(candidates)
            unconfirmed = await self._answering([c for c in candidates if c.name in named and c.eligible])
        winner = elect(candidates, self._current_name(), trust_reports=trust_reports, immune=unconfirmed)
        self._unconfirmed = unconfirmed
        return [winner] if winner is not None else []

    async def _answering(self, candidates: list[Candidate]) -> set[str]:
        """Those of ``candidates`` whose internalIP answers the member's own knock: a report is acted
        on only when the member cannot reach the Node either. One agent's probes miss for reasons
        of its own (its Node so busy that its probes wait past their deadline, a cut between it and
        the Gateway alone); in active-active mode the Gateways probe each other, and a cut between
        two of them (or one cut off from everything but the API server) makes each report the
        other: the member, a third party, settles it; and it keeps a Gateway it took out on a report
        out until it answers again."""
        verdicts = await asyncio.gather(*(self._probe(c.internal_ip or "") for c in candidates))
        answering = {c.name for c, answered in zip(candidates, verdicts, strict=True) if answered}
        if answering - self._told_answering:
            log.info("gatewayReportNotConfirmed", extra={"namespace": self._namespace, "answering": sorted(answering)})
        self._told_answering = answering
        return answering

    async def _reconcile_election(self) -> float | None:
        """Elect and write the Gateways; returns in how many seconds to come back while a cordoned
        Gateway hands over before it moves (None: nothing pending)."""
        assert self._gateways is not None and self._ranges is not None
        candidates = self.candidates()
        previous = self._active
        now = asyncio.get_running_loop().time()
        winners = await self._elect(candidates, trust_reports=now >= self._distrust_reports_until)
        handing_over = await self._hand_over(previous, winners, candidates)
        if handing_over is not None:
            return handing_over
        wanted = {c.name for c in winners}
        departed = [p.name for p in previous if p.name not in wanted]
        moved_on_report = any(_departure(name, winners, candidates)[0] == "unreachable" for name in departed)
        # Gateways only leaving: the other members re-pair at once, before our own writes. A Gateway
        # joining is announced only after its Gateway CR, which its agent programs its datapath from.
        only_leaving = wanted <= {p.name for p in previous}
        if only_leaving:
            self._publisher.publish(winners, self._ranges)
        # The new Gateways' CRs before the departed ones go: an agent that saw none at all in
        # between would take its tunnel down (no Gateway, nothing to carry) and drop what the
        # other clusters still send to the departing Gateway until they learn of the move.
        for winner in winners:
            await ensure(self._client, GATEWAYS, desired_gateway(winner, self._namespace, self._ranges.service_cidr))
        for obj in self._gateways.list(self._namespace):
            if name_of(obj) not in wanted:
                await delete_if_owned(self._client, GATEWAYS, name_of(obj), self._namespace)
        self._active = winners
        for name in departed:
            self._handover.pop(name, None)  # handed over: a later cordon hands over afresh
        if moved_on_report:
            # Moved on a report (not on a cordon or NotReady that came with one): the next report
            # is believed only after a while, so a link that comes and goes (or a reporter that
            # is the one cut off) does not bounce the Gateway. Only once the move is written: a
            # write that failed is retried with the report still believed, not undone by the hold.
            self._distrust_reports_until = asyncio.get_running_loop().time() + REPORT_HOLD_SECONDS
        if not only_leaving:
            self._publisher.publish(winners, self._ranges)
        await self._announce(previous, winners, candidates)
        return None

    async def _hand_over(
        self, previous: list[Candidate], winners: list[Candidate], candidates: list[Candidate]
    ) -> float | None:
        """A Gateway that leaves because an operator cordoned its Node (which still forwards: a
        drain) hands over first: its Gateway CR says so (mcapi.gateway_nodes.ANNOTATION_HANDING_OVER)
        HANDOVER_SECONDS before the move, and its agent masquerades what arrives meanwhile, so the
        replies of requests it took just before the move come back to it, not through the Node
        that becomes the Gateway, which never saw them. Returns how long until the move (None: now)."""
        assert self._ranges is not None
        loop, wanted = asyncio.get_running_loop(), {c.name: c for c in winners}
        leaving = [
            p for p in previous if p.name not in wanted and _departure(p.name, winners, candidates)[0] == "cordoned"
        ]
        for name in [n for n in self._handover if n not in {p.name for p in leaving}]:
            if name in wanted:  # uncordoned in time: it stays a Gateway, and stops handing over
                body = desired_gateway(wanted[name], self._namespace, self._ranges.service_cidr, handing_over=False)
                await ensure(self._client, GATEWAYS, body)
            del self._handover[name]
        waits = []
        for gateway in leaving:
            if gateway.name not in self._handover:
                body = desired_gateway(gateway, self._namespace, self._ranges.service_cidr, handing_over=True)
                await ensure(self._client, GATEWAYS, body)
                self._handover[gateway.name] = loop.time()
                log.info("gatewayHandingOver", extra={"namespace": self._namespace, "gateway": gateway.name})
            remaining = self._handover[gateway.name] + HANDOVER_SECONDS - loop.time()
            if remaining > 0:
                waits.append(remaining)
        return max(waits) if waits else None

    async def _announce(self, previous: list[Candidate], winners: list[Candidate], candidates: list[Candidate]) -> None:
        before, after = {c.name for c in previous}, {c.name for c in winners}
        if before == after:
            return
        departed = sorted(before - after)
        if departed:
            reason, words = _departure(departed[0], winners, candidates)
        else:
            reason, words = ("added", "another eligible candidate") if before else ("first", "first")
        self._metrics.transitions.labels(reason=reason).inc()
        problems = {c.name: c.problem for c in candidates if c.problem}
        extra: dict[str, Any] = {
            "namespace": self._namespace,
            "previous": ",".join(sorted(before)),
            "gateway": ",".join(sorted(after)),
            "ineligible": problems,
        }
        if not winners:
            log.warning("noEligibleGateway", extra=extra)
            return
        log.info("gatewayElected", extra=extra)
        if self._recorder is None or self._nodes is None:
            return
        why = f"replaces {', '.join(departed)} ({words})" if departed else words
        for winner in winners:
            node = self._nodes.get(winner.name)
            if winner.name in before or node is None:
                continue
            article = "an" if len(after) > 1 else "the"
            message = f"Node is {article} active Multi-cluster Gateway ({why})"
            await self._recorder.normal(node, "GatewayElected", message, NODES)
        for name in departed:
            node = self._nodes.get(name)
            if node is not None and after:
                message = f"Node is no longer an active Multi-cluster Gateway ({words})"
                await self._recorder.normal(node, "GatewayRemoved", message, NODES)

    def _forward_reachability(self, imports: dict[str, dict[str, Any]]) -> None:
        for name, live in imports.items():
            found = find_condition((live.get("status") or {}).get("conditions"), names.CONDITION_GATEWAY_REACHABLE)
            if found is None or found.get("status") not in ("True", "False"):
                continue
            verdict = (str(found["status"]), str(found.get("reason", "")), str(found.get("message", "")))
            if self._reported.get(name) != verdict:
                self._sink.report_import_status(name, verdict[0] == "True", verdict[1], verdict[2])
                self._reported[name] = verdict

    async def _reconcile_overlap(self) -> None:
        assert self._imports is not None and self._ranges is not None
        imports = {name_of(obj): obj for obj in self._imports.list(self._namespace)}
        local = Ranges("", self._ranges.service_cidr, self._ranges.pod_cidrs)
        verdicts = find_overlaps(local, {name: ranges_from_import(obj) for name, obj in imports.items()})
        self._forward_reachability(imports)
        for name, verdict in verdicts.items():
            live = imports[name]
            if live.get("metadata", {}).get("deletionTimestamp"):
                continue
            current = find_condition((live.get("status") or {}).get("conditions"), CONDITION_CIDR_CONFLICT)
            wanted = {"status": verdict.status, "reason": verdict.reason, "message": verdict.message}
            if current is not None and all(current.get(k) == v for k, v in wanted.items()):
                continue
            try:
                await set_cluster_info_import_condition(
                    self._client,
                    live,
                    CONDITION_CIDR_CONFLICT,
                    "True" if verdict.status == "True" else "False",
                    reason=verdict.reason,
                    message=verdict.message,
                )
            except NotFound:
                continue
            if verdict.status == "True":
                log.warning(
                    "clusterInfoImportOverlaps",
                    extra={
                        "clusterInfoImport": f"{self._namespace}/{name}",
                        "reason": verdict.reason,
                        "detail": verdict.message,
                    },
                )
                await self._tell_overlap(live, verdict.message)

    async def _tell_overlap(self, live: dict[str, Any], detail: str) -> None:
        """A Warning Event on the ClusterInfoImport naming both clusters: its ranges cannot be
        routed (agent exclusions), which only a global CIDR on the hub resolves."""
        if self._recorder is None:
            return
        remote = str((live.get("spec") or {}).get("clusterID") or name_of(live))
        message = (
            f"The ranges of cluster {remote} overlap this cluster's ({self._publisher.cluster_id}) or another "
            f"member's and are not routed where they overlap: {detail} Give the hub a global CIDR "
            "(--global-cidr) to reach overlapping clusters through global addresses."
        )
        await self._recorder.warning(live, CONDITION_CIDR_CONFLICT, message, CLUSTER_INFO_IMPORTS)


async def _knock_health_port(ip: str) -> bool:
    return await answers(ip, names.GATEWAY_HEALTH_PORT, KNOCK_WITHIN_SECONDS)


class _Metrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.transitions = Counter(
            "mchub_member_gateway_transitions",
            "Changes of the active Gateway(s), by why one left: first, ineligible (not Ready, "
            "no address), unreachable (a candidate's probes), cordoned, gone (Node or annotation), none "
            "(no eligible candidate left); added (active-active: one more Gateway).",
            ["reason"],
            registry=registry,
        )


def _departure(name: str, winners: list[Candidate], candidates: list[Candidate]) -> tuple[str, str]:
    """Why the Gateway ``name`` is no longer one: the metric's reason and the Event's words."""
    if not winners:
        return "none", "no eligible candidate"
    found = next((c for c in candidates if c.name == name), None)
    if found is None:
        return "gone", "gone"
    if found.problem:
        return "ineligible", found.problem
    if found.cordoned:  # an operator's cordon first: a report that came with it did not move it
        return "cordoned", "cordoned"
    reporters = reported_unreachable(candidates).get(name)
    if reporters:
        return "unreachable", f"unreachable: probes from {', '.join(reporters)} unanswered"
    return "replaced", "replaced"

"""DatapathAgent: what the kube wiring drives.

``update(inputs)`` computes the desired datapath and reconciles the kernel, one update
at a time (a lock serialises them). Then, until newer inputs supersede them, the agent
keeps the kernel at those inputs in the background (level-based, as a controller keeps
its objects): a temporary failure is retried with capped exponential backoff
(kube.backoff); after a success, and after a permanent datapath failure (a missing tool,
a read-only /proc/sys), the same inputs are applied again every ``resync_interval``, so a
device, route, rule or nft table changed or removed from outside comes back. The
programmer writes only what differs, so a resync of an undisturbed kernel writes
nothing. Inputs that cannot be turned into a datapath (bad local inputs) wait for new
ones. ``readiness()`` says whether the latest inputs are applied, and if not, why.
The verdicts of the Node's own Gateway probes go into the desired datapath too: a Gateway
found unreachable is set aside at once and taken back once it has answered for
``health.rejoin_after_seconds`` (agent.desired, ``unreachable``), without waiting for the
member to change any Gateway CR or ClusterInfo. A Node that stops being a Gateway while it runs
(a drain, a move) retires: for ``tunnel.retireSeconds`` it still takes what remote Gateways send
it (agent.desired, ``retiring``), since they learn of the change after this cluster does.
Only cancellation escapes; every other failure is returned as a typed error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Protocol

from prometheus_client import CollectorRegistry

from agent.config import AgentConfig
from agent.desired import Unreachable, compute_desired
from agent.errors import AgentError, DatapathError
from agent.health import GatewayProber, HealthCallback, PeerHealth, ProbeResponder, Reachability
from agent.inputs import AgentInputs
from agent.reconcile_metrics import ReconcileMetrics, Trigger
from agent.state import DesiredDatapath, Role
from kube.backoff import Backoff
from kube.waiting import cancel_and_wait

log = logging.getLogger(__name__)

DEFAULT_RESYNC_INTERVAL = 10.0
"""Seconds between two applies of unchanged inputs (the longest a change made from outside lasts)."""
_REASON_CHARS = 500


class Datapath(Protocol):
    """The kernel programmer (agent.linux.programmer.LinuxDatapath, or a fake in tests)."""

    async def apply(self, desired: DesiredDatapath) -> list[str]: ...

    async def cleanup(self) -> list[str]: ...


@dataclass(frozen=True)
class ReconcileOutcome:
    """Result of one reconcile attempt."""

    desired: DesiredDatapath | None
    """What was computed (None if the inputs could not be turned into a datapath)."""
    changes: tuple[str, ...] = ()
    error: AgentError | None = None
    retrying: bool = False
    """True when a temporary error will be retried in the background."""

    @property
    def applied(self) -> bool:
        return self.error is None


class DatapathAgent:
    """One Node's agent: inputs in, kernel state and Gateway health out."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        netns: str | None = None,
        wireguard_private_key: str | None = None,
        datapath: Datapath | None = None,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        resync_interval: float | None = DEFAULT_RESYNC_INTERVAL,
        registry: CollectorRegistry | None = None,
    ) -> None:
        """``resync_interval`` None: apply only on new inputs and on retries (tests that
        change the kernel behind the agent's back on purpose). The reconcile counters
        (agent.reconcile_metrics) go on ``registry``, by default one of the agent's own."""
        if resync_interval is not None and resync_interval <= 0:
            raise ValueError(f"resync interval must be positive, got {resync_interval}")
        self.config = config
        self.netns = netns
        if datapath is None:
            from agent.linux.programmer import LinuxDatapath  # noqa: PLC0415 - keeps unit tests kernel-free

            datapath = LinuxDatapath(
                netns,
                wireguard_private_key=wireguard_private_key,
                managed_link_names=(config.tunnel.interface, config.wireguard.interface),
            )
        self._datapath = datapath
        self.backoff = Backoff(backoff_initial, backoff_max)
        self.resync_interval = resync_interval
        self.registry = registry if registry is not None else CollectorRegistry()
        self._metrics = ReconcileMetrics(self.registry)
        self._lock = asyncio.Lock()
        self._attempted = asyncio.Condition()  # notified after every reconcile, whatever started it
        self._inputs: AgentInputs | None = None
        self._generation = 0
        self._converging: asyncio.Task[None] | None = None
        self._prober: GatewayProber | None = None
        self._health_task: asyncio.Task[object] | None = None
        self._desired: DesiredDatapath | None = None
        self.last_outcome: ReconcileOutcome | None = None
        # Gateways this Node's probes last found unreachable (compute_desired's ``unreachable``),
        # and a reconcile under way for a change of them (another change during it runs it again).
        self._unreachable: set[Unreachable] = set()
        self._reapply_wanted = False
        self._reapplying: asyncio.Task[None] | None = None
        self._rejoins: dict[Unreachable, asyncio.TimerHandle] = {}  # set aside, answering again
        self._reapply_trigger = Trigger.HEALTH
        # The gatewayIP of this Node while its last desired state was a Gateway's; once it is not,
        # the address it retires from, until the timer ends it.
        self._gateway_ip: IPv4Address | None = None
        self._retiring: IPv4Address | None = None
        self._retire_timer: asyncio.TimerHandle | None = None

    @property
    def desired(self) -> DesiredDatapath | None:
        """The last desired state applied successfully."""
        return self._desired

    async def update(self, inputs: AgentInputs) -> ReconcileOutcome:
        """Reconcile to ``inputs`` now; then keep the kernel there in the background (retries, resyncs)."""
        async with self._lock:
            # Holding the lock, the background task is between two applies, never inside one.
            await self._stop_converging()
            self._inputs = inputs
            self._generation += 1
            outcome = await self._attempt(inputs, Trigger.INPUTS)
            self._converging = asyncio.create_task(
                self._keep_converging(self._generation, outcome), name="datapath-converge"
            )
            return outcome

    def readiness(self) -> tuple[bool, str]:
        """(ready, one-line reason): ready once the latest inputs were applied without error."""
        outcome = self.last_outcome
        if outcome is None:
            return False, "the datapath was not reconciled yet"
        if outcome.error is None:
            return True, "ok"
        reason = " ".join(f"datapath not reconciled: {outcome.error}".split())
        return False, reason[:_REASON_CHARS]

    async def run_health(self, on_change: HealthCallback | None = None) -> None:
        """Answer remote probes and, while this Node is the Gateway, probe remote Gateways.

        Runs until cancelled (or until ``stop``); ``on_change`` gets every reachability flip.
        """
        responder = ProbeResponder(self.netns, self.config.health.port)
        await responder.start()
        self._prober = GatewayProber(
            self.netns,
            port=self.config.health.port,
            interval=self.config.health.interval_seconds,
            miss_threshold=self.config.health.miss_threshold,
            on_change=lambda health: self._verdict(health, on_change),
        )
        self._prober.set_targets(self._desired.probe_targets if self._desired else ())
        self._health_task = asyncio.current_task()
        try:
            await self._prober.run()
        finally:
            responder.close()
            self._prober = None
            self._health_task = None

    def health(self) -> dict[str, PeerHealth]:
        """Current reachability of remote Gateways per cluster ID (empty if not probing)."""
        return self._prober.snapshot() if self._prober is not None else {}

    @property
    def unreachable(self) -> frozenset[Unreachable]:
        """The Gateways this Node stopped using on its own probes' verdicts (see compute_desired)."""
        return frozenset(self._unreachable)

    def _verdict(self, health: PeerHealth, then: HealthCallback | None) -> None:
        """A probe's verdict changed: the datapath follows it at once (agent.desired), then the
        kube wiring is told (reports, annotations)."""
        self._metrics.verdicts.labels(reachability=health.reachability.value).inc()
        gateway: Unreachable = (health.cluster_id, IPv4Address(health.gateway_ip))
        pending = self._rejoins.pop(gateway, None)
        if pending is not None:
            pending.cancel()  # it missed again before its hold ended
        if health.reachability is Reachability.UNREACHABLE and gateway not in self._unreachable:
            self._unreachable.add(gateway)
            log.info("gatewaySetAside", extra={"clusterID": gateway[0], "gatewayIP": str(gateway[1])})
            self._reapply_soon(Trigger.HEALTH)
        elif health.reachability is Reachability.REACHABLE and gateway in self._unreachable:
            self._hold(gateway, health.misses)
        if then is not None:
            then(health)

    def _hold(self, gateway: Unreachable, misses: int) -> None:
        hold = self.config.health.rejoin_after_seconds
        self._rejoins[gateway] = asyncio.get_running_loop().call_later(hold, self._rejoin, gateway, misses)

    def _rejoin(self, gateway: Unreachable, misses: int) -> None:
        """A hold ended: a Gateway set aside that answered throughout takes flows again; one that
        missed a probe meanwhile (fewer than make a verdict) starts a new hold."""
        del self._rejoins[gateway]
        if gateway not in self._unreachable:
            return
        now = next((h for h in self.health().values() if (h.cluster_id, IPv4Address(h.gateway_ip)) == gateway), None)
        if now is None or now.reachability is not Reachability.REACHABLE:
            return  # no longer probed, or a verdict of its own is on its way
        if now.misses != misses:
            self._hold(gateway, now.misses)
            return
        self._unreachable.discard(gateway)
        log.info("gatewayTakenBack", extra={"clusterID": gateway[0], "gatewayIP": str(gateway[1])})
        self._reapply_soon(Trigger.HEALTH)

    def _reapply_soon(self, trigger: Trigger) -> None:
        """The current inputs applied again, soon, for what changed beside them (``trigger``)."""
        self._reapply_wanted, self._reapply_trigger = True, trigger
        if self._reapplying is None or self._reapplying.done():
            self._reapplying = asyncio.get_running_loop().create_task(self._reapply_pending(), name="datapath-verdicts")

    async def _reapply_pending(self) -> None:
        while self._reapply_wanted:
            self._reapply_wanted = False
            async with self._lock:
                if self._inputs is None:
                    return
                await self._stop_converging()
                outcome = await self._attempt_in_background(self._inputs, self._reapply_trigger)
                self._converging = asyncio.create_task(
                    self._keep_converging(self._generation, outcome), name="datapath-converge"
                )

    async def stop(self, *, cleanup: bool) -> None:
        """Stop retries, resyncs and probing; with ``cleanup`` remove everything the agent created."""
        self._generation += 1  # a converge loop that missed its cancellation ends at its next turn
        await cancel_and_wait(self._health_task)  # first: its verdicts start reconciles
        for pending in self._rejoins.values():
            pending.cancel()
        self._rejoins.clear()
        self._end_retiring()
        await cancel_and_wait(self._reapplying)
        await self._stop_converging()
        if cleanup:
            async with self._lock:
                changes = await self._datapath.cleanup()
                self._desired = None
                log.info("datapathCleanedUp", extra={"netns": self.netns, "changes": len(changes)})

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Until ``predicate()`` holds, looked at after every reconcile: of new inputs, and of the
        agent's own (retries, resyncs, verdicts, a retiring Gateway's end)."""
        async with self._attempted:
            await self._attempted.wait_for(predicate)

    async def _attempt(self, inputs: AgentInputs, trigger: Trigger) -> ReconcileOutcome:
        outcome = await self._reconcile(inputs)
        self._metrics.observe(trigger, len(outcome.changes), failed=outcome.error is not None)
        async with self._attempted:
            self._attempted.notify_all()
        return outcome

    async def _reconcile(self, inputs: AgentInputs) -> ReconcileOutcome:
        try:
            desired = self._compute(inputs)
        except AgentError as err:
            outcome = ReconcileOutcome(None, error=err)
            self._log_failure(outcome)
            self.last_outcome = outcome
            return outcome
        try:
            changes = await self._datapath.apply(desired)
        except AgentError as err:
            outcome = ReconcileOutcome(desired, error=err, retrying=err.temporary)
        except OSError as err:  # e.g. a subprocess that could not start
            outcome = ReconcileOutcome(desired, error=DatapathError(str(err)), retrying=True)
        else:
            outcome = ReconcileOutcome(desired, changes=tuple(changes))
            self._desired = desired
            # A Gateway this Node no longer probes has no verdict of its own any more: forget it
            # (one set aside is still probed, on standby, until it answers).
            self._unreachable &= {(t.cluster_id, t.gateway_ip) for t in desired.probe_targets}
            for gateway in set(self._rejoins) - self._unreachable:
                self._rejoins.pop(gateway).cancel()
            if self._prober is not None:
                self._prober.set_targets(desired.probe_targets)
        if outcome.error is not None:
            self._log_failure(outcome)
        self.last_outcome = outcome
        return outcome

    def _compute(self, inputs: AgentInputs) -> DesiredDatapath:
        """compute_desired with this Node's verdicts, and its retiring address when it has just
        stopped being a Gateway."""
        desired = compute_desired(inputs, self.config, self._unreachable, self._retiring)
        if desired.role is Role.GATEWAY:
            self._end_retiring()
            mine = next(g for g in inputs.all_gateways if g.node_name == inputs.node.name)
            self._gateway_ip = IPv4Address(mine.gateway_ip)  # compute_desired validated it
        elif desired.role is Role.MEMBER and self._gateway_ip is not None and self._retiring is None:
            self._retiring, self._gateway_ip = self._gateway_ip, None
            delay = self.config.tunnel.retire_seconds
            self._retire_timer = asyncio.get_running_loop().call_later(delay, self._retired)
            log.info("gatewayRetiring", extra={"gatewayIP": str(self._retiring), "retireSeconds": delay})
            desired = compute_desired(inputs, self.config, self._unreachable, self._retiring)
        return desired

    def _retired(self) -> None:
        log.info("gatewayRetired", extra={"gatewayIP": str(self._retiring)})
        self._retire_timer = self._retiring = None
        self._reapply_soon(Trigger.RETIRED)

    def _end_retiring(self) -> None:
        if self._retire_timer is not None:
            self._retire_timer.cancel()
        self._retire_timer = self._retiring = None

    async def _keep_converging(self, generation: int, outcome: ReconcileOutcome) -> None:
        """Apply the inputs of ``generation`` again while they are the latest: after a
        temporary failure with backoff, otherwise every resync interval."""
        failures = 0
        while True:
            trigger = Trigger.RETRY if outcome.retrying else Trigger.RESYNC
            if trigger is Trigger.RETRY:
                delay = self.backoff.delay(failures)
                failures += 1
            elif outcome.desired is None or self.resync_interval is None:
                return  # inputs that make no datapath wait for new ones
            else:
                delay, failures = self.resync_interval, 0
            await asyncio.sleep(delay)
            async with self._lock:
                if generation != self._generation or self._inputs is None:
                    return
                outcome = await self._attempt_in_background(self._inputs, trigger)
            if trigger is Trigger.RESYNC and outcome.changes:
                # Something else changed what the agent owns (or the kernel lost it): say so.
                log.warning("datapathDriftRepaired", extra={"netns": self.netns, "changes": list(outcome.changes)})

    async def _attempt_in_background(self, inputs: AgentInputs, trigger: Trigger) -> ReconcileOutcome:
        """``_attempt`` where no caller waits for it: a bug must not end the retries and resyncs
        silently, so it is logged and retried like a temporary failure."""
        try:
            return await self._attempt(inputs, trigger)
        except Exception:
            log.exception("datapathRetryCrashed", extra={"netns": self.netns, "trigger": trigger.value})
            outcome = ReconcileOutcome(None, retrying=True, error=DatapathError("internal error"))
            self.last_outcome = outcome
            return outcome

    async def _stop_converging(self) -> None:
        task, self._converging = self._converging, None
        await cancel_and_wait(task)

    def _log_failure(self, outcome: ReconcileOutcome) -> None:
        log.warning(
            "datapathReconcileFailed",
            extra={
                "netns": self.netns,
                "error": str(outcome.error),
                "errorType": type(outcome.error).__name__,
                "retrying": outcome.retrying,
            },
        )


async def run_datapath_agent(
    agent: DatapathAgent,
    inputs: AsyncIterable[AgentInputs],
    *,
    on_health: HealthCallback | None = None,
    cleanup_on_stop: bool = False,
) -> None:
    """Feed every new AgentInputs to ``agent`` while probing health; the entry point
    agent/main.py wraps around its kube watches. Ends when ``inputs`` ends or on cancel."""
    health = asyncio.create_task(_supervised_health(agent, on_health), name="datapath-health")
    try:
        async for current in inputs:
            await agent.update(current)
    finally:
        await cancel_and_wait(health)
        await agent.stop(cleanup=cleanup_on_stop)


async def _supervised_health(agent: DatapathAgent, on_health: HealthCallback | None) -> None:
    """run_health until cancelled; a failure (e.g. the probe port is taken) is logged and
    retried with capped backoff, so it neither dies unnoticed nor escapes into the caller's
    shutdown (where it would skip the cleanup)."""
    failures = 0
    while True:
        try:
            await agent.run_health(on_health)
            return
        except Exception as err:
            delay = agent.backoff.delay(failures)
            failures += 1
            log.error(
                "gatewayHealthFailed",
                extra={"netns": agent.netns, "error": str(err), "errorType": type(err).__name__, "retryIn": delay},
            )
        await asyncio.sleep(delay)

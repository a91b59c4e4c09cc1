"""GlobalAddressing: what the ServiceExportController does with its exports while the member is
globally addressed (its ranges overlap another member's, hub.merge.global_addressing).

The hub tells the member its block and verdict in every AnnounceResponse (``set_verdict``).
While it is globally addressed:

* ``localize`` gives each valid export its global addresses from the AddressBook: with
  endpointIPType ClusterIP one per Service (its Endpoints export's address carries it as
  ``global_ip``, and its shadow Service makes kube-proxy answer there: member.global_addresses.
  shadow); with PodIP, and for Headless Services, one per Pod endpoint (the agent on the Gateway
  translates it). An export whose addresses do not all fit (``GlobalAddressExhausted``) or whose
  Service has no selector to shadow (``SelectorlessService``) is not exported at all, and its
  ServiceExport says why; what it held is let go.
* ``ensure_shadow`` keeps the export's shadow Service as ``localize`` wants it (or deletes it).
* The book goes to the ConfigMap ``mchub-global-addresses`` (mcapi.global_addresses) after every
  change, coalesced: the agents read it, and the member reads it back on start.

Otherwise exports are left as they are, shadows are deleted, and the record says so.

On start the record is read first: its verdict is taken as the current one until the hub
answers, so the exports of a restarted member (the session's first sync bracket) carry the
addresses they had, and nothing churns.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, replace
from ipaddress import IPv4Network

from kube.apply import FromCache, LiveSource, NameTaken, delete_if_owned, delete_object, ensure
from kube.client import KubeClient, WatchEvent
from kube.errors import NotFound
from kube.informer import Informer
from kube.manager import Watches
from kube.queue_worker import QueueWorker
from kube.resources import CONFIG_MAPS, SERVICES, Obj
from kube.workqueue import WorkQueue
from kube.writecache import WriteThroughCache
from mcapi.config import EndpointIPType
from mcapi.global_addresses import CONFIGMAP, GlobalAddresses, parse_block
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.exports.evaluate import Blocked, Evaluation, Key
from member.global_addresses.book import AddressBook, Exhausted, pod_key, service_key
from member.global_addresses.shadow import LABEL_SHADOW_OF, desired_shadow, has_selector, owns, shadow_name

log = logging.getLogger(__name__)

REASON_EXHAUSTED = "GlobalAddressExhausted"
REASON_SELECTORLESS = "SelectorlessService"
REASON_SHADOW_TAKEN = "GlobalAddressServiceTaken"
_RECORD = "record"


@dataclass(frozen=True)
class Localized:
    """An export as a globally addressed member sends it, and the shadow Service it needs."""

    evaluation: Evaluation
    shadow: Obj | None = None
    exhausted: bool = False


class GlobalAddressing:
    def __init__(
        self, client: KubeClient, namespace: str, ip_type: EndpointIPType, *, sync_timeout: float | None = None
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._ip_type = ip_type
        self._block: IPv4Network | None = None
        self._addressed = False
        self._book: AddressBook | None = None
        self._recorded: GlobalAddresses | None = None
        self._shadows = Informer(client, SERVICES, label_selector=LABEL_SHADOW_OF, handler=self._on_shadow)
        self._watches = Watches(self._shadows, sync_timeout=sync_timeout)
        self._cache = WriteThroughCache(self._shadows)
        self._source: LiveSource = FromCache(client, self._cache)
        self._queue: WorkQueue[str] = WorkQueue(f"global-addresses-{namespace}")
        self._worker: QueueWorker[str] = QueueWorker(self._queue, self._write_record)

    # ---- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Read the record (the verdict until the hub answers) and the shadows."""
        try:
            live = await self._client.get(CONFIG_MAPS, CONFIGMAP, self._namespace)
        except NotFound:
            live = None
        record = GlobalAddresses.from_data((live or {}).get("data"))
        self._recorded = record if live is not None else None
        self._adopt(record.block, record.globally_addressed, record)
        await self._watches.start()
        self._worker.start()

    async def stop(self) -> None:
        await self._worker.close()
        await self._watches.stop()

    async def _on_shadow(self, event: WatchEvent) -> None:
        self._cache.observe(event)

    # ---- the hub's verdict -----------------------------------------------------

    @property
    def active(self) -> bool:
        return self._addressed and self._book is not None

    @property
    def block(self) -> str:
        return str(self._block) if self._block is not None else ""

    def set_verdict(self, block: str, addressed: bool) -> bool:
        """What the hub said in its last AnnounceResponse; True when it changed what exports carry."""
        network = parse_block(block)
        if network == self._block and addressed == self._addressed:
            return False
        previous = self._book.record(self._addressed) if self._book is not None else GlobalAddresses()
        self._adopt(block, addressed, previous)
        log.info("globalAddressingChanged", extra={"globalCIDR": block, "globallyAddressed": addressed})
        self._queue.add(_RECORD)
        return True

    def _adopt(self, block: str, addressed: bool, record: GlobalAddresses) -> None:
        network = parse_block(block)
        self._block, self._addressed = network, addressed and network is not None
        # Off, the book is emptied: a cluster reached at its own addresses holds none.
        self._book = AddressBook.from_record(network, record) if network is not None and self._addressed else None

    def settle(self) -> None:
        """Every ServiceExport was looked at once: what the record held for exports that went
        away while the member was not running is freed."""
        if self._book is not None:
            self._book.forget_unclaimed()
        self._queue.add(_RECORD)

    # ---- exports -----------------------------------------------------------------

    def localize(self, evaluation: Evaluation, service: Obj | None) -> Localized:
        """``evaluation`` as this member exports it now (see the module doc)."""
        book, key = self._book, evaluation.key
        if book is None or not self._addressed:
            return Localized(evaluation)
        if not evaluation.valid or not evaluation.exports or service is None:
            self.release(key)
            return Localized(evaluation)
        service_export, endpoints_export = evaluation.exports
        spec = service_export.service
        by_service = self._ip_type == "ClusterIP" and spec.cluster_ip not in ("", "None")
        if by_service and not has_selector(service):
            self.release(key)
            message = (
                f"Service {key[0]}/{key[1]} has no selector: this cluster's ranges overlap another member's, so "
                "other members reach it only at a global address, which needs a Service with a selector "
                "(or endpointIPType PodIP)"
            )
            return Localized(replace(evaluation, exports=(), blocked=Blocked(REASON_SELECTORLESS, message)))
        subsets = endpoints_export.endpoints.subsets
        keys = {service_key(*key)} if by_service else {pod_key(a.ip) for s in subsets for a in s.addresses}
        try:
            held = book.assign(key, keys)
        except Exhausted as err:
            self.release(key)
            message = f"no global address left for Service {key[0]}/{key[1]}: {err}"
            blocked = Blocked(REASON_EXHAUSTED, message)
            return Localized(replace(evaluation, exports=(), blocked=blocked), exhausted=True)
        self._queue.add(_RECORD)
        translated = pb.ResourceExport()
        translated.CopyFrom(endpoints_export)
        for subset in translated.endpoints.subsets:
            for address in subset.addresses:
                wanted = service_key(*key) if by_service else pod_key(address.ip)
                address.global_ip = str(held[wanted])
        shadow = desired_shadow(service, str(held[service_key(*key)])) if by_service else None
        return Localized(replace(evaluation, exports=(service_export, translated)), shadow=shadow)

    def release(self, key: Key) -> None:
        """The export ``key`` holds no address any more."""
        if self._book is not None and key in self._book.owners():
            self._book.release(key)
            self._queue.add(_RECORD)

    async def ensure_shadow(self, key: Key, localized: Localized) -> Blocked | None:
        """Make the export's shadow Service what ``localized`` wants (absent: deleted). A Service
        of the shadow's name that is not mchub's blocks the export (returned)."""
        namespace, name = key
        shadow = localized.shadow
        try:
            if shadow is None:
                await delete_if_owned(self._client, SERVICES, shadow_name(name), namespace, owns, source=self._source)
                return None
            await ensure(self._client, SERVICES, shadow, owns, source=self._source)
        except NameTaken:
            self.release(key)
            message = (
                f"Service {namespace}/{shadow_name(name)} is not mchub's: it needs that name for the "
                f"global address of Service {namespace}/{name}"
            )
            return Blocked(REASON_SHADOW_TAKEN, message)
        return None

    def shadowed(self) -> list[Key]:
        """The exports whose shadow Services are there (by the watch), whatever their state."""
        found = []
        for obj in self._cache.list():
            meta = obj.get("metadata") or {}
            owner = (meta.get("labels") or {}).get(LABEL_SHADOW_OF)
            if owner and meta.get("namespace"):
                found.append((str(meta["namespace"]), str(owner)))
        return found

    async def remove_all(self) -> None:
        """Delete every shadow Service and the record (leaving the ClusterSet; call after stop())."""
        listed = await self._client.list_all(SERVICES, label_selector=LABEL_SHADOW_OF)
        for obj in listed.items:
            await delete_object(self._client, SERVICES, obj)
        with contextlib.suppress(NotFound):
            await self._client.delete(CONFIG_MAPS, CONFIGMAP, self._namespace)
        self._book, self._recorded = None, None

    # ---- the record ----------------------------------------------------------------

    def record(self) -> GlobalAddresses:
        if self._book is not None:
            return self._book.record(self._addressed)
        return GlobalAddresses(self.block, self._addressed)

    async def _write_record(self, _: str) -> None:
        wanted = self.record()
        if wanted == self._recorded:
            return
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP, "namespace": self._namespace},
            "data": wanted.to_data(),
        }
        await ensure(self._client, CONFIG_MAPS, body)
        self._recorded = wanted
        log.info(
            "globalAddressesRecorded",
            extra={
                "globalCIDR": wanted.block,
                "globallyAddressed": wanted.globally_addressed,
                "services": len(wanted.services),
                "pods": len(wanted.pods),
            },
        )

"""The kube store's measured CRs (hub.store.kube_measured) stay within their memory budget,
counting what each kept entry holds: the CR's JSON and its key, the record's encoding."""

from __future__ import annotations

from typing import Any

import pytest

from hub.store import kube_measured
from hub.store.kube_codec import cr_bytes, measured_cr
from hub.store.kube_measured import MeasuredCRs
from tests.contract.samples import service_export

NAMESPACE = "antrea-multicluster"


def _conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []

    def counted(record: Any, namespace: str, kind: Any) -> Any:
        made.append(record.export_name)
        return measured_cr(record, namespace, kind)

    monkeypatch.setattr(kube_measured, "measured_cr", counted)
    return made


def test_a_record_whose_cr_and_key_fit_the_budget_is_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    record = service_export("east", "default", "web")
    held = cr_bytes(measured_cr(record, NAMESPACE, type(record))) + record.ByteSize()
    made = _conversions(monkeypatch)
    measured = MeasuredCRs(NAMESPACE, budget=held)
    size = measured.size(record)
    assert measured.take(record, type(record))[1] == size
    assert made == [record.export_name]


def test_a_record_whose_cr_fits_but_not_with_its_key_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    record = service_export("east", "default", "web")
    only_the_cr = cr_bytes(measured_cr(record, NAMESPACE, type(record)))
    made = _conversions(monkeypatch)
    measured = MeasuredCRs(NAMESPACE, budget=only_the_cr)
    measured.size(record)
    measured.take(record, type(record))
    assert made == [record.export_name] * 2, "kept although the CR and its key together exceed the budget"

"""Cluster selection for multi-cluster Services (KEP-5939, alpha), as pure functions.

A ServiceExport's ``spec.clusterSelectors`` is an ordered list of property selectors over the
ClusterProperties (KEP-2149) of the ClusterSet's clusters. For one importing cluster, each
selector selects the exporting clusters whose properties it matches: a ``propertySelector`` is
``metav1.LabelSelector`` with ``matchProperties`` for ``matchLabels`` (the requirements ANDed),
and the value ``@SameAsImporter@`` stands for the importing cluster's value of that property; a
selector that names it for a property the importer does not have matches no cluster.

The hub resolves the selectors for every member (``selections``); a consumer, such as the
member's importer, then uses the clusters of the first result that holds a ready endpoint, and
every exporting cluster when none does (``preferred_clusters``). Both sides use these functions,
so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from mcapi import names
from mcapi.crds.mcs import MAX_CLUSTER_SELECTORS, SAME_AS_IMPORTER, ClusterSelector
from mcapi.mchub.v1 import common_area_pb2 as pb

OPERATOR_IN = "In"
OPERATOR_NOT_IN = "NotIn"
OPERATOR_EXISTS = "Exists"
OPERATOR_DOES_NOT_EXIST = "DoesNotExist"
OPERATORS = (OPERATOR_IN, OPERATOR_NOT_IN, OPERATOR_EXISTS, OPERATOR_DOES_NOT_EXIST)
# A ClusterProfile property value holds at most this many characters (cluster-inventory-api).
MAX_VALUE_CHARS = 1024

Properties = Mapping[str, str]
Results = list[list[str]]


class InvalidClusterSelectors(ValueError):
    """Cluster selectors that cannot be evaluated; the message says what to fix."""


def _short(value: str) -> str:
    return repr(value if len(value) <= 64 else value[:32] + "…")


def _key_problem(where: str, key: str) -> str | None:
    if not key:
        return f"{where} has an empty property name"
    if not names.is_dns1123_subdomain(key):
        return f"{where} names property {_short(key)}, which is not a ClusterProperty name (a DNS-1123 subdomain)"
    return None


def _value_problem(where: str, value: str) -> str | None:
    if not value:
        return f"{where} has an empty value"
    if len(value) > MAX_VALUE_CHARS:
        return f"{where} has a value of {len(value)} characters; at most {MAX_VALUE_CHARS}"
    return None


def _requirement_problems(where: str, requirement: pb.PropertySelectorRequirement) -> list[str]:
    problems = [p for p in (_key_problem(where, requirement.key),) if p]
    operator, values = requirement.operator, list(requirement.values)
    if operator not in OPERATORS:
        problems.append(f"{where} has operator {_short(operator)}; it must be one of {', '.join(OPERATORS)}")
    elif operator in (OPERATOR_IN, OPERATOR_NOT_IN) and not values:
        problems.append(f"{where} ({operator}) needs at least one value")
    elif operator in (OPERATOR_EXISTS, OPERATOR_DOES_NOT_EXIST) and values:
        problems.append(f"{where} ({operator}) takes no values")
    problems.extend(p for p in (_value_problem(where, v) for v in values) if p)
    return problems


def selector_problems(selectors: Sequence[pb.ClusterSelector]) -> list[str]:
    """Why these cluster selectors are invalid, a phrase each (empty when valid): at most 16; each
    entry a non-empty propertySelector; names ClusterProperty names; operators and values as
    metav1.LabelSelector's."""
    problems: list[str] = []
    if len(selectors) > MAX_CLUSTER_SELECTORS:
        problems.append(f"there are {len(selectors)} cluster selectors; at most {MAX_CLUSTER_SELECTORS}")
    for index, selector in enumerate(selectors):
        where = f"clusterSelectors[{index}]"
        if not selector.HasField("property_selector"):
            problems.append(f"{where} has no propertySelector")
            continue
        chosen = selector.property_selector
        if not chosen.match_properties and not chosen.match_expressions:
            problems.append(f"{where}.propertySelector is empty; it must match on at least one property")
        for key, value in sorted(chosen.match_properties.items()):
            at = f"{where}.propertySelector.matchProperties"
            problems.extend(p for p in (_key_problem(at, key), _value_problem(f"{at}[{_short(key)}]", value)) if p)
        for number, requirement in enumerate(chosen.match_expressions):
            problems.extend(_requirement_problems(f"{where}.propertySelector.matchExpressions[{number}]", requirement))
    return problems


def check_selectors(selectors: Sequence[pb.ClusterSelector]) -> None:
    """Raise InvalidClusterSelectors naming every problem."""
    problems = selector_problems(selectors)
    if problems:
        raise InvalidClusterSelectors("; ".join(problems))


# ---- JSON (ServiceExport and ServiceImport spec.clusterSelectors) <-> the wire ------------------


def selectors_from_json(value: Any) -> list[pb.ClusterSelector]:
    """spec.clusterSelectors as the API server returns it -> the wire's selectors, checked;
    InvalidClusterSelectors when it is not a valid list of cluster selectors."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidClusterSelectors("clusterSelectors is not a list")
    selectors: list[pb.ClusterSelector] = []
    for index, entry in enumerate(value):
        if not isinstance(entry, dict) or not isinstance(entry.get("propertySelector"), dict):
            raise InvalidClusterSelectors(f"clusterSelectors[{index}] has no propertySelector")
        try:
            model = ClusterSelector.model_validate(entry)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InvalidClusterSelectors(f"clusterSelectors[{index}].{where}: {first['msg']}") from None
        chosen = model.property_selector
        selectors.append(
            pb.ClusterSelector(
                property_selector=pb.PropertySelector(
                    match_properties=dict(chosen.match_properties),
                    match_expressions=[
                        pb.PropertySelectorRequirement(key=r.key, operator=r.operator, values=list(r.values))
                        for r in chosen.match_expressions
                    ],
                )
            )
        )
    check_selectors(selectors)
    return selectors


def selectors_to_json(selectors: Sequence[pb.ClusterSelector]) -> list[dict[str, Any]]:
    """The wire's selectors as spec.clusterSelectors (empty parts left out)."""
    entries: list[dict[str, Any]] = []
    for selector in selectors:
        chosen = selector.property_selector
        body: dict[str, Any] = {}
        if chosen.match_properties:
            body["matchProperties"] = dict(sorted(chosen.match_properties.items()))
        if chosen.match_expressions:
            body["matchExpressions"] = [_requirement_json(r) for r in chosen.match_expressions]
        entries.append({"propertySelector": body})
    return entries


def _requirement_json(requirement: pb.PropertySelectorRequirement) -> dict[str, Any]:
    body: dict[str, Any] = {"key": requirement.key, "operator": requirement.operator}
    if requirement.values:
        body["values"] = list(requirement.values)
    return body


# ---- evaluation --------------------------------------------------------------------------------


def _resolved(values: Sequence[str], key: str, importer: Properties) -> set[str] | None:
    """The values with the placeholder replaced by the importer's value; None when the importer
    lacks the property the placeholder stands for (the selector then matches nothing)."""
    out = set(values)
    if SAME_AS_IMPORTER in out:
        if key not in importer:
            return None
        out.discard(SAME_AS_IMPORTER)
        out.add(importer[key])
    return out


def _requirements(chosen: pb.PropertySelector) -> list[pb.PropertySelectorRequirement]:
    """matchProperties as In requirements of one value each, then matchExpressions."""
    given = [
        pb.PropertySelectorRequirement(key=key, operator=OPERATOR_IN, values=[value])
        for key, value in sorted(chosen.match_properties.items())
    ]
    return given + list(chosen.match_expressions)


def _matches(requirement: pb.PropertySelectorRequirement, values: set[str] | None, candidate: Properties) -> bool:
    key, operator = requirement.key, requirement.operator
    if operator == OPERATOR_EXISTS:
        return key in candidate
    if operator == OPERATOR_DOES_NOT_EXIST:
        return key not in candidate
    assert values is not None
    if operator == OPERATOR_IN:
        return key in candidate and candidate[key] in values
    return key not in candidate or candidate[key] not in values  # NotIn, as label selectors read it


def select(selector: pb.ClusterSelector, importer: Properties, candidates: Mapping[str, Properties]) -> list[str]:
    """The candidate clusters (ID -> properties) the selector matches for this importer, sorted."""
    requirements = _requirements(selector.property_selector)
    if not requirements:
        return []
    prepared: list[tuple[pb.PropertySelectorRequirement, set[str] | None]] = []
    for requirement in requirements:
        values = None
        if requirement.operator in (OPERATOR_IN, OPERATOR_NOT_IN):
            values = _resolved(requirement.values, requirement.key, importer)
            if values is None:
                return []
        prepared.append((requirement, values))
    return sorted(
        cluster
        for cluster, properties in candidates.items()
        if all(_matches(requirement, values, properties) for requirement, values in prepared)
    )


def resolve(
    selectors: Sequence[pb.ClusterSelector], importer: Properties, candidates: Mapping[str, Properties]
) -> Results:
    """One result per selector, in order: the candidate clusters each selects for this importer."""
    return [select(selector, importer, candidates) for selector in selectors]


def selections(
    selectors: Sequence[pb.ClusterSelector],
    exporters: Collection[str],
    members: Mapping[str, Properties],
) -> list[pb.ClusterSelection]:
    """The selectors' results for every member (ID -> its properties), among the exporting
    clusters; members with the same results share one entry. Sorted, so equal inputs give equal
    messages."""
    candidates = {cluster: members.get(cluster, {}) for cluster in exporters}
    grouped: dict[tuple[tuple[str, ...], ...], list[str]] = {}
    for importer in sorted(members):
        results = resolve(selectors, members[importer], candidates)
        grouped.setdefault(tuple(tuple(r) for r in results), []).append(importer)
    return [
        pb.ClusterSelection(importers=importers, results=[pb.ClusterSelectorResult(clusters=list(r)) for r in results])
        for results, importers in sorted(grouped.items(), key=lambda item: item[1])
    ]


def results_for(spec: pb.ServiceImportSpec, importer: str) -> Results | None:
    """This importer's results of the import's selectors; None when the import has no selectors
    or names no selection for it (a member that joined since: every cluster, until the hub says)."""
    if not spec.cluster_selectors:
        return None
    for selection in spec.selections:
        if importer in selection.importers:
            return [list(result.clusters) for result in selection.results]
    return None


def preferred_clusters(results: Results | None, ready: Collection[str], exporters: Collection[str]) -> set[str]:
    """The clusters an importer sends traffic to (KEP-5939's consuming rule): those of the first
    result that holds a cluster with a ready endpoint (``ready``); with none, every exporting
    cluster. Without selectors (None): every exporting cluster."""
    if results is not None:
        for result in results:
            if any(cluster in ready for cluster in result):
                return set(result)
    return set(exporters)

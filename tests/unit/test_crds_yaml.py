from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcapi import crds
from mcapi.crds.crd import all_crd_files as _generate_crd_files
from mcapi.crds.crd import build_crd, crd_file_name, group_versions
from mcapi.crds.openapi import structural_problems, structural_schema, validation_errors
from tests.unit.test_crds_samples import SAMPLES

# Generating takes a few hundred milliseconds; the tests share one generation.
all_crd_files = functools.cache(_generate_crd_files)
ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "deploy" / "crds"

EXPECTED_COLUMNS: dict[str, list[tuple[str, str, str]]] = {
    "ClusterSet": [
        ("Leader Cluster Namespace", ".spec.namespace", "string"),
        ("Total Clusters", ".status.totalClusters", "string"),
        ("Ready Clusters", ".status.readyClusters", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
    "MemberClusterAnnounce": [
        ("Cluster ID", ".clusterID", "string"),
        ("ClusterSet ID", ".clusterSetID", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
    "ResourceExport": [
        ("Cluster ID", ".spec.clusterID", "string"),
        ("Kind", ".spec.kind", "string"),
        ("Namespace", ".spec.namespace", "string"),
        ("Name", ".spec.name", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
    "ResourceImport": [
        ("Kind", ".spec.kind", "string"),
        ("Namespace", ".spec.namespace", "string"),
        ("Name", ".spec.name", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
    "Gateway": [
        ("Gateway IP", ".gatewayIP", "string"),
        ("Internal IP", ".internalIP", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
    "ClusterInfoImport": [
        ("Cluster ID", ".spec.clusterID", "string"),
        ("Service CIDR", ".spec.serviceCIDR", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
    "LabelIdentity": [
        ("Label", ".spec.label", "string"),
        ("ID", ".spec.id", "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
}


def _checked_in() -> dict[str, dict[str, Any]]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(CRD_DIR.glob("*.yaml"))}


def _walk(schema: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [schema]
    for sub in schema.get("properties", {}).values():
        nodes.extend(_walk(sub))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            nodes.extend(_walk(schema[key]))
    return nodes


def test_the_checked_in_crds_equal_a_fresh_generation() -> None:
    wanted = all_crd_files()
    on_disk = {p.name: p.read_text() for p in CRD_DIR.glob("*.yaml")}
    assert on_disk == wanted, "deploy/crds is stale: run python hack/gen_crds.py"


def test_generation_is_deterministic() -> None:
    assert _generate_crd_files() == all_crd_files()


def _gen_crds_main() -> Any:
    spec = importlib.util.spec_from_file_location("gen_crds", ROOT / "hack" / "gen_crds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def test_gen_crds_check_fails_on_a_stale_directory_and_passes_after_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main = _gen_crds_main()
    args = ["--dir", str(tmp_path)]
    assert main([*args, "--check"]) == 1
    assert main(args) == 0
    assert main([*args, "--check"]) == 0
    (tmp_path / "multicluster.crd.antrea.io_gateways.yaml").write_text("# edited\n")
    assert main([*args, "--check"]) == 1
    (tmp_path / "multicluster.crd.antrea.io_gateways.yaml").unlink()
    assert main([*args, "--check"]) == 1
    assert "stale" in capsys.readouterr().err


def test_gen_crds_check_passes_on_the_checked_in_directory() -> None:
    assert _gen_crds_main()(["--check"]) == 0


def test_there_is_one_crd_file_per_group_and_plural() -> None:
    names = set(_checked_in())
    assert names == {
        "about.k8s.io_clusterproperties.yaml",
        "multicluster.crd.antrea.io_clusterclaims.yaml",
        "multicluster.crd.antrea.io_clusterinfoimports.yaml",
        "multicluster.crd.antrea.io_clustersets.yaml",
        "multicluster.crd.antrea.io_gateways.yaml",
        "multicluster.crd.antrea.io_labelidentities.yaml",
        "multicluster.crd.antrea.io_memberclusterannounces.yaml",
        "multicluster.crd.antrea.io_resourceexports.yaml",
        "multicluster.crd.antrea.io_resourceimports.yaml",
        "multicluster.x-k8s.io_clusterprofiles.yaml",
        "multicluster.x-k8s.io_serviceexports.yaml",
        "multicluster.x-k8s.io_serviceimports.yaml",
    }


@pytest.mark.parametrize("name", sorted(all_crd_files()))
def test_every_crd_schema_is_structural(name: str) -> None:
    crd = yaml.safe_load(all_crd_files()[name])
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        assert structural_problems(schema) == []
        for node in _walk(schema):
            assert "$ref" not in node and "$defs" not in node
            assert (
                "type" in node
                or node.get("x-kubernetes-int-or-string")
                or node.get("x-kubernetes-preserve-unknown-fields")
            )
            assert "default" not in node
        assert schema["properties"]["metadata"] == {"type": "object"}


def test_printer_columns_are_the_ones_antrea_prints() -> None:
    for crd in _checked_in().values():
        kind = crd["spec"]["names"]["kind"]
        if kind not in EXPECTED_COLUMNS:
            continue
        for version in crd["spec"]["versions"]:
            columns = [(c["name"], c["jsonPath"], c["type"]) for c in version["additionalPrinterColumns"]]
            assert columns == EXPECTED_COLUMNS[kind], (kind, version["name"])


def test_short_names_exist_only_for_the_mcs_kinds() -> None:
    short = {c["spec"]["names"]["kind"]: c["spec"]["names"].get("shortNames") for c in _checked_in().values()}
    assert short.pop("ServiceExport") == ["svcex", "svcexport"]
    assert short.pop("ServiceImport") == ["svcim", "svcimport"]
    assert set(short.values()) == {None}


def test_scopes_and_storage_versions_are_antreas_and_mcs_apis() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c["spec"] for c in _checked_in().values()}
    assert {k for k, s in by_kind.items() if s["scope"] == "Cluster"} == {"LabelIdentity", "ClusterProperty"}
    storage = {k: [v["name"] for v in s["versions"] if v["storage"]] for k, s in by_kind.items()}
    served = {k: [v["name"] for v in s["versions"] if v["served"]] for k, s in by_kind.items()}
    assert storage["ClusterSet"] == ["v1alpha2"] and served["ClusterSet"] == ["v1alpha1", "v1alpha2"]
    assert storage["ClusterClaim"] == ["v1alpha2"]
    assert storage["ServiceImport"] == ["v1beta1"] and served["ServiceImport"] == ["v1alpha1", "v1beta1"]
    assert storage["ServiceExport"] == ["v1beta1"] and served["ServiceExport"] == ["v1alpha1", "v1beta1"]
    assert storage["ClusterProperty"] == ["v1beta1"] and served["ClusterProperty"] == ["v1alpha1", "v1beta1"]
    assert storage["ClusterProfile"] == ["v1alpha1"] and by_kind["ClusterProfile"]["scope"] == "Namespaced"


def test_cluster_selectors_are_alpha_fields_of_v1beta1_only() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c["spec"] for c in _checked_in().values()}
    for kind, place in (("ServiceExport", "spec"), ("ServiceImport", "spec")):
        versions = {v["name"]: v["schema"]["openAPIV3Schema"]["properties"][place] for v in by_kind[kind]["versions"]}
        assert "clusterSelectors" in versions["v1beta1"]["properties"]
        assert "clusterSelectors" not in versions["v1alpha1"].get("properties", {})
        selectors = versions["v1beta1"]["properties"]["clusterSelectors"]
        assert selectors["maxItems"] == 16 and selectors["description"].startswith("Alpha (KEP-5939)")
        entry = selectors["items"]
        assert entry["required"] == ["propertySelector"]
        requirement = entry["properties"]["propertySelector"]["properties"]["matchExpressions"]["items"]
        assert requirement["properties"]["operator"]["enum"] == ["In", "NotIn", "Exists", "DoesNotExist"]
    status = {
        v["name"]: v["schema"]["openAPIV3Schema"]["properties"]["status"] for v in by_kind["ServiceImport"]["versions"]
    }
    assert {"clusterSelectorResults", "observedGeneration"} <= set(status["v1beta1"]["properties"])


def test_cluster_profiles_have_the_cluster_inventory_api_shape() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c["spec"] for c in _checked_in().values()}
    (version,) = by_kind["ClusterProfile"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    manager = schema["spec"]["properties"]["clusterManager"]
    assert manager["x-kubernetes-validations"] == [
        {"message": "ClusterManager is immutable", "rule": "self == oldSelf"}
    ]
    status = schema["status"]["properties"]
    assert set(status) == {"conditions", "version", "properties", "accessProviders", "credentialProviders"}
    item = status["properties"]["items"]["properties"]
    assert (item["name"]["maxLength"], item["value"]["maxLength"]) == (253, 1024)
    assert status["properties"]["x-kubernetes-list-map-keys"] == ["name"]
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]


def test_kinds_with_a_status_have_a_status_subresource() -> None:
    for versions in group_versions():
        crd = build_crd(versions)
        for model, version in zip(versions, crd["spec"]["versions"], strict=True):
            if "status" in model.model_fields:
                assert version.get("subresources") == {"status": {}}, model.__name__


def test_the_acnp_payload_and_foreign_types_preserve_unknown_fields() -> None:
    spec = structural_schema(crds.ResourceExport)["properties"]["spec"]["properties"]
    assert spec["clusterNetworkPolicy"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert spec["service"]["properties"]["serviceSpec"]["x-kubernetes-preserve-unknown-fields"] is True
    port = spec["service"]["properties"]["serviceSpec"]["properties"]["ports"]["items"]
    assert port["properties"]["targetPort"]["x-kubernetes-int-or-string"] is True
    assert port["required"] == ["port"]


@pytest.mark.parametrize("model", list(SAMPLES), ids=lambda m: m.API_VERSION + "/" + m.KIND)
def test_a_sample_of_each_kind_validates_against_its_model_and_its_schema(model: type[crds.KubeObject]) -> None:
    sample = SAMPLES[model]
    model.model_validate(sample)
    assert validation_errors(structural_schema(model), sample) == []


def test_the_schema_check_reports_wrong_types_missing_fields_and_bad_enums() -> None:
    schema = structural_schema(crds.ServiceImportV1beta1)
    bad = {"spec": {"type": "LoadBalancer", "ports": [{"port": "80"}], "ips": ["a", "b", "c"]}}
    errors = validation_errors(schema, bad)
    assert any(".spec.type" in e for e in errors)
    assert any(".spec.ports[0].port" in e for e in errors)
    assert any(".spec.ips" in e for e in errors)
    assert validation_errors(structural_schema(crds.ClusterSet), {"spec": {"leaders": []}}) != []


def test_crd_file_names_follow_controller_gen() -> None:
    assert crd_file_name(crds.LabelIdentity) == "multicluster.crd.antrea.io_labelidentities.yaml"

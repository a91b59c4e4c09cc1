"""Strategic merge patch on plain objects, including the directives kubectl sends."""

from __future__ import annotations

from sandbox.strategic_merge import strategic_merge_patch


def test_lists_with_a_merge_key_are_merged_item_by_item() -> None:
    service = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    patched = strategic_merge_patch("Service", service, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}})
    assert patched["spec"]["ports"] == [
        {"port": 80, "name": "http"},
        {"port": 443, "name": "https", "targetPort": 8443},
    ]


def test_a_patch_delete_directive_removes_the_keyed_item() -> None:
    node = {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname"}]}}
    patch = {"status": {"addresses": [{"type": "Hostname", "$patch": "delete"}]}}
    assert strategic_merge_patch("Node", node, patch)["status"]["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.1"}
    ]


def test_conditions_merge_by_type() -> None:
    node = {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "DiskPressure"}]}}
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    conditions = strategic_merge_patch("Node", node, patch)["status"]["conditions"]
    assert conditions == [{"type": "Ready", "status": "True"}, {"type": "DiskPressure"}]


def test_lists_without_a_strategy_are_replaced() -> None:
    endpoints = {"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}
    patch = {"subsets": [{"addresses": [{"ip": "10.0.0.2"}]}]}
    assert strategic_merge_patch("Endpoints", endpoints, patch)["subsets"] == patch["subsets"]


def test_finalizers_merge_as_a_set_and_null_deletes_a_field() -> None:
    obj = {"metadata": {"finalizers": ["a"], "labels": {"x": "1", "y": "2"}}}
    patched = strategic_merge_patch("ConfigMap", obj, {"metadata": {"finalizers": ["b", "a"], "labels": {"x": None}}})
    assert patched["metadata"] == {"finalizers": ["a", "b"], "labels": {"y": "2"}}


def test_set_element_order_reorders_the_merged_list() -> None:
    deployment = {"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}}
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                    "containers": [{"name": "b", "image": "x"}],
                }
            }
        }
    }
    containers = strategic_merge_patch("Deployment", deployment, patch)["spec"]["template"]["spec"]["containers"]
    assert containers == [{"name": "b", "image": "x"}, {"name": "a"}]


def test_retain_keys_drops_keys_not_listed() -> None:
    obj = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert strategic_merge_patch("Deployment", obj, patch)["spec"]["strategy"] == {"type": "Recreate"}


def test_patch_replace_replaces_a_whole_map() -> None:
    obj = {"data": {"a": "1", "b": "2"}}
    patched = strategic_merge_patch("ConfigMap", obj, {"data": {"$patch": "replace", "c": "3"}})
    assert patched["data"] == {"c": "3"}


def test_the_original_object_is_not_modified() -> None:
    original = {"spec": {"ports": [{"port": 80}]}}
    strategic_merge_patch("Service", original, {"spec": {"ports": [{"port": 80, "name": "x"}]}})
    assert original == {"spec": {"ports": [{"port": 80}]}}

"""knowledge.rank_table: HCCL's rank table, versions 1.0 and 1.2, and every problem HCCL would reject."""
from __future__ import annotations

import json

from ascend_compat.knowledge import rank_table


def table(version="1.0", servers=2, devices=2, **top):
    data = {"status": "completed", "version": version, "server_count": str(servers), "server_list": [
        {"server_id": f"10.0.0.{11 + s}",
         "device": [{"device_id": str(d), "device_ip": f"192.168.{s}.{8 + d}", "rank_id": str(s * devices + d)}
                    for d in range(devices)]} for s in range(servers)]}
    if version == "1.2":
        for s in data["server_list"]:
            s["host_ip"] = s["server_id"]
        data["super_pod_list"] = [{"super_pod_id": "0", "server_list": [{"server_id": "10.0.0.11"}]}]
    data.update(top)
    return data


def test_valid_tables_of_both_versions():
    for version in ("1.0", "1.2"):
        t = rank_table.parse(json.dumps(table(version)))
        assert t.problems == ()
        assert t.world_size == 4 and [len(s.devices) for s in t.servers] == [2, 2]
        assert t.server_of_rank(3).server_id == "10.0.0.12"
    assert rank_table.parse(json.dumps(table("1.2"))).servers[0].host_ip == "10.0.0.11"


def test_structural_problems_are_each_named():
    assert "not valid JSON" in rank_table.parse("{").problems[0]
    t = table(status="initializing", version="2.0", server_count="3")
    problems = rank_table.parse(json.dumps(t)).problems
    assert any("'initializing'" in p for p in problems)
    assert any("version '2.0'" in p for p in problems)
    assert any("server_count is 3 but server_list has 2" in p for p in problems)
    del t["server_list"][0]["device"][0]["rank_id"]
    assert any("lacks rank_id" in p for p in rank_table.parse(json.dumps(t)).problems)
    t12 = table("1.2")
    del t12["super_pod_list"]
    assert any("super_pod_list" in p for p in rank_table.parse(json.dumps(t12)).problems)


def test_rank_ids_unique_and_without_gaps_device_ips_unique_and_valid():
    t = table()
    t["server_list"][1]["device"][1]["rank_id"] = "5"
    assert any("0..3 without gaps (missing 3)" in p for p in rank_table.parse(json.dumps(t)).problems)
    t = table()
    t["server_list"][1]["device"][0]["rank_id"] = "0"
    assert any("rank_id 0 is given to server" in p for p in rank_table.parse(json.dumps(t)).problems)
    t = table()
    t["server_list"][1]["device"][0]["device_ip"] = t["server_list"][0]["device"][0]["device_ip"]
    assert any("device_ip 192.168.0.8 is used by" in p for p in rank_table.parse(json.dumps(t)).problems)
    t = table()
    t["server_list"][0]["device"][1]["device_ip"] = "192.168.0.999"
    assert any("not an IPv4 or IPv6 address" in p for p in rank_table.parse(json.dumps(t)).problems)
    t = table()
    t["server_list"][1]["server_id"] = t["server_list"][0]["server_id"]
    assert any("appears twice" in p for p in rank_table.parse(json.dumps(t)).problems)

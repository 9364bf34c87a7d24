"""Clusters from Python: generated as `devplace generate cluster` draws
them, and this machine detected as `devplace clusters --detect` measures it."""

import json
import subprocess

import pytest

import devplace


def same_devices(a, b):
    """Equal device lists; a file holds speeds in TFLOP/s and GB/s, so
    numbers read back may differ in the last bit."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            if isinstance(x[key], float):
                assert x[key] == pytest.approx(y[key], rel=1e-12), key
            else:
                assert x[key] == y[key], key


@pytest.mark.parametrize("profile", ["mixed", "hetero", "tight"])
def test_generated_cluster_is_the_command_lines(devplace_binary, tmp_path, profile):
    path = tmp_path / f"{profile}.json"
    subprocess.run([devplace_binary, "generate", "cluster", "--seed", "7", "--profile", profile, "-o", str(path)],
                   check=True, capture_output=True)
    from_file = devplace.Cluster(str(path))
    generated = devplace.generate_cluster(7, profile)
    assert generated.name == from_file.name
    same_devices(generated.devices, from_file.devices)
    # The same seed again: the same cluster; another seed: another one.
    assert devplace.generate_cluster(7, profile).devices == generated.devices
    assert devplace.generate_cluster(8, profile).devices != generated.devices


def test_generated_cluster_takes_a_device_count_and_simulates():
    cluster = devplace.generate_cluster(3, "hetero", devices=5)
    assert cluster.num_devices == 5
    assert devplace.place("tiny", cluster, "m_etf")["step_time_s"] > 0


@pytest.mark.parametrize("kwargs", [dict(profile="roomy"), dict(devices=10**6), dict(min_devices=9, max_devices=3)])
def test_bad_generator_options_are_one_line_errors(kwargs):
    with pytest.raises(devplace.Error) as raised:
        devplace.generate_cluster(1, **kwargs)
    assert "\n" not in str(raised.value)


def test_detected_cluster_has_the_cpu_devices_asked_for(tmp_path):
    path = tmp_path / "here.json"
    cluster = devplace.detect_cluster(cpu_devices=2, gpus=False, path=path)
    assert cluster.device_names == ["cpu:0", "cpu:1"]
    assert [d["name"] for d in json.loads(path.read_text())["devices"]] == ["cpu:0", "cpu:1"]


@pytest.mark.parametrize("cpu_devices", [0, 65, 1.5, True, "2"])
def test_detect_refuses_a_bad_device_count(cpu_devices):
    with pytest.raises(devplace.Error) as raised:
        devplace.detect_cluster(cpu_devices=cpu_devices)
    assert "\n" not in str(raised.value)

